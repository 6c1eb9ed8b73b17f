//! A command tool's argv: templates rendered for one call, and the guard that keeps model
//! input from becoming an option of the program.
//!
//! An element *comes from model input* when its template uses the variable `input`. Such an
//! element may not render to something that starts with `-` (after leading whitespace),
//! unless the author wrote the `-` as the start of the template's own text, as in
//! `--limit={{ input.n }}`: there the author chose the option and the model only its value.
//! `--` gets no special treatment: what it means is up to each program (`find -- -delete`
//! still deletes), so an element after `--` is checked like any other.

use minijinja::{Environment, UndefinedBehavior};
use serde_json::{Value, json};

/// One argv element of a command tool.
#[derive(Debug, Clone)]
pub struct Argument {
    /// A minijinja template over `input` and `agent_dir`.
    pub template: String,
    /// The input values the template reads (`input.path`…); empty when it reads none.
    reads: Vec<String>,
    /// The template's own text starts with `-`: the author wrote the option.
    author_option: bool,
}

impl Argument {
    /// The element for `template`.
    pub fn new(template: &str) -> Argument {
        let env = Environment::new();
        let mut reads: Vec<String> = env
            .template_from_str(template)
            .map(|t| t.undeclared_variables(true))
            .unwrap_or_default()
            .into_iter()
            .filter(|name| name == "input" || name.starts_with("input."))
            .collect();
        reads.sort();
        let tag = ["{{", "{%", "{#"]
            .iter()
            .filter_map(|open| template.find(open))
            .min();
        let literal = tag.map_or(template, |at| &template[..at]);
        Argument {
            template: template.to_string(),
            reads,
            author_option: literal.trim_start().starts_with('-'),
        }
    }
}

/// Renders `argv` for one call: `input` is the call's arguments, `agent_dir` the agent
/// directory. Unless `allow_options`, an element that comes from the input and would start
/// with `-` is refused, with an error for the model that names the input value.
pub fn render(
    tool: &str,
    argv: &[Argument],
    input: &Value,
    agent_dir: &str,
    allow_options: bool,
) -> Result<Vec<String>, String> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    let context = minijinja::Value::from(minijinja::value::Serde(
        json!({"input": input, "agent_dir": agent_dir}),
    ));
    let mut out = Vec::with_capacity(argv.len());
    for (i, arg) in argv.iter().enumerate() {
        let rendered = env.render_str(&arg.template, &context).map_err(|e| {
            format!(
                "cannot build argument {} of the command from `{}`: {}",
                i + 1,
                arg.template,
                e.detail().unwrap_or("invalid template")
            )
        })?;
        let option =
            !arg.reads.is_empty() && !arg.author_option && rendered.trim_start().starts_with('-');
        if option && !allow_options {
            return Err(refusal(tool, i, arg, &rendered));
        }
        out.push(rendered);
    }
    Ok(out)
}

fn refusal(tool: &str, i: usize, arg: &Argument, rendered: &str) -> String {
    let names: Vec<String> = arg
        .reads
        .iter()
        .map(|r| format!("`{}`", r.strip_prefix("input.").unwrap_or(r)))
        .collect();
    let from = match names.as_slice() {
        [one] => format!("the value of {one}"),
        _ => format!("the values of {}", names.join(", ")),
    };
    let shown: String = rendered.chars().take(80).collect();
    format!(
        "Refused: argument {} of `{tool}` would be `{shown}`, built from {from}. It starts with \
         `-`, so the program would read it as an option, not as a value. Pass a value that \
         does not start with `-` (for a file or folder, write `./` before its name).",
        i + 1
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn argv(templates: &[&str]) -> Vec<Argument> {
        templates.iter().map(|t| Argument::new(t)).collect()
    }

    fn render_one(template: &str, input: Value) -> Result<String, String> {
        render("t", &argv(&["prog", template]), &input, "/a", false).map(|mut v| v.remove(1))
    }

    #[test]
    fn templates_see_input_and_agent_dir() {
        let argv = argv(&[
            "{{ agent_dir }}/x",
            "-n",
            "{{ input.n | default(20) }}",
            "{{ input.path }}",
        ]);
        assert_eq!(
            render("t", &argv, &json!({"path": "src"}), "/a", false).unwrap(),
            ["/a/x", "-n", "20", "src"]
        );
        let err = render("t", &argv, &json!({}), "/a", false).unwrap_err();
        assert!(
            err.starts_with("cannot build argument 4 of the command from `{{ input.path }}`"),
            "{err}"
        );
    }

    #[test]
    fn an_element_from_the_input_may_not_start_with_a_dash() {
        assert_eq!(
            render_one("{{ input.path }}", json!({"path": "-delete"})).unwrap_err(),
            "Refused: argument 2 of `t` would be `-delete`, built from the value of `path`. It \
             starts with `-`, so the program would read it as an option, not as a value. Pass a \
             value that does not start with `-` (for a file or folder, write `./` before its name)."
        );
        for (template, input) in [
            ("{{ input.a }}{{ input.b }}", json!({"a": "", "b": "-rf"})),
            ("{{ input.a }}{{ input.b }}", json!({"a": "-", "b": "x"})),
            ("  {{ input.path }}", json!({"path": "-x"})),
            ("{{ input.path }}", json!({"path": " \t--output=/etc/x"})),
            ("{{ input.n }}", json!({"n": -5})),
            ("{{ input.path | default('.') }}", json!({"path": "--help"})),
            ("{{ input['path'] }}", json!({"path": "-x"})),
            ("{% if input.v %}--verbose{% endif %}", json!({"v": true})),
        ] {
            let err = render_one(template, input.clone()).unwrap_err();
            assert!(
                err.starts_with("Refused: argument 2"),
                "{template} {input}: {err}"
            );
        }
        let err =
            render_one("{{ input.a }}{{ input.b }}", json!({"a": "", "b": "-rf"})).unwrap_err();
        assert!(err.contains("built from the values of `a`, `b`."), "{err}");
    }

    #[test]
    fn authors_options_values_and_non_input_elements_pass() {
        for (template, input, expected) in [
            (
                "./{{ input.path }}",
                json!({"path": "-delete"}),
                "./-delete",
            ),
            ("--limit={{ input.n }}", json!({"n": -1}), "--limit=-1"),
            ("-n{{ input.n }}", json!({"n": 3}), "-n3"),
            ("{{ input.path }}", json!({"path": "a-b"}), "a-b"),
            ("{{ input.path }}", json!({"path": ""}), ""),
            ("--", json!({}), "--"),
            ("{{ agent_dir }}", json!({}), "/a"),
        ] {
            assert_eq!(render_one(template, input).unwrap(), expected, "{template}");
        }
    }

    #[test]
    fn the_opt_out_lets_options_through() {
        let argv = argv(&["prog", "{{ input.flag }}"]);
        assert_eq!(
            render("t", &argv, &json!({"flag": "--fast"}), "/a", true).unwrap(),
            ["prog", "--fast"]
        );
    }
}
