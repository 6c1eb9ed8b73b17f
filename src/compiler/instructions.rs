//! The system prompt templates: `instructions.md` or `instructions/*.md`, checked in strict mode.

use std::collections::HashMap;

use super::diagnostic::{Diagnostic, Diagnostics, code};
use super::inputs::{InstructionFiles, Loaded};
use super::source::SourceFile;
use crate::manifest::{InstructionPart, Instructions};
use crate::suggest;
use crate::template::{
    AGENT_FIELDS, Budget, CONTEXT_VARIABLES, Context, FUEL, environment, render_part,
};

/// Checks the instruction templates and returns them for the manifest.
pub fn compile(
    files: &InstructionFiles,
    display_prefix: &str,
    env_vars: &[String],
    sample: &Context,
    diags: &mut Diagnostics,
) -> (Instructions, Option<String>) {
    let at = |rel: &str| {
        if display_prefix.is_empty() {
            rel.to_string()
        } else {
            format!("{display_prefix}/{rel}")
        }
    };
    let parts: Vec<&Loaded> = match files {
        InstructionFiles::Missing => {
            diags.push(
                Diagnostic::error(code::MISSING_INSTRUCTIONS, "missing `instructions.md`")
                    .file(at("instructions.md"))
                    .help("write the agent's system prompt in `instructions.md`, or in `*.md` files under `instructions/`"),
            );
            Vec::new()
        }
        InstructionFiles::Both => {
            diags.push(
                Diagnostic::error(
                    code::MISSING_INSTRUCTIONS,
                    "both `instructions.md` and `instructions/` exist",
                )
                .file(at("instructions.md"))
                .help("keep one: a single file, or a folder of parts joined in file-name order"),
            );
            Vec::new()
        }
        InstructionFiles::Unreadable => Vec::new(),
        InstructionFiles::File(file) => vec![file],
        InstructionFiles::Dir(parts) => {
            if parts.is_empty() {
                diags.push(
                    Diagnostic::error(
                        code::EMPTY_INSTRUCTIONS_DIR,
                        "`instructions/` holds no `*.md` files",
                    )
                    .file(at("instructions")),
                );
            }
            parts.iter().collect()
        }
    };
    let globals: Vec<String> = environment(FUEL)
        .globals()
        .map(|(n, _)| n.to_string())
        .collect();
    let sample = minijinja::Value::from(minijinja::value::Serde(sample));
    let mut budget = Budget::new();
    let mut out = Vec::new();
    // What the trial render gave, joined as the run joins the parts: the context budget
    // measures it instead of rendering again.
    let mut rendered = Some(Vec::with_capacity(parts.len()));
    for file in parts {
        let src = SourceFile::new(&file.display, &file.text);
        let env = environment(budget.fuel);
        let part = Part {
            env: &env,
            globals: &globals,
            src: &src,
        };
        match check_part(&part, env_vars, &sample, &mut budget, diags) {
            Some(text) => {
                if let Some(texts) = &mut rendered {
                    texts.push(text.trim_end().to_string());
                }
                out.push(InstructionPart {
                    path: file.path.clone(),
                    template: file.text.clone(),
                });
            }
            None => rendered = None,
        }
    }
    let instructions = Instructions {
        parts: out,
        env: env_vars.to_vec(),
    };
    (instructions, rendered.map(|texts| texts.join("\n\n")))
}

/// One instruction file and the environment it is checked in.
struct Part<'a> {
    env: &'a minijinja::Environment<'static>,
    globals: &'a [String],
    src: &'a SourceFile,
}

/// Checks one part: syntax, the variables it uses, then a trial render with the sample
/// context inside what is left of the budget (the same limits as at run time). Returns
/// the rendered text when the part is sound.
fn check_part(
    part: &Part<'_>,
    env_vars: &[String],
    sample: &minijinja::Value,
    budget: &mut Budget,
    diags: &mut Diagnostics,
) -> Option<String> {
    let Part { env, globals, src } = *part;
    let template = match env.template_from_named_str(&src.path, &src.text) {
        Ok(t) => t,
        Err(e) => {
            diags.push(
                Diagnostic::error(
                    code::TEMPLATE_SYNTAX,
                    format!(
                        "template syntax error: {}",
                        e.detail().unwrap_or("invalid syntax")
                    ),
                )
                .at_line(src, e.line().unwrap_or(1), None),
            );
            return None;
        }
    };
    let mut undeclared: Vec<String> = template.undeclared_variables(true).into_iter().collect();
    undeclared.sort();
    let mut ok = true;
    let uses = Uses::new(&src.text);
    for var in &undeclared {
        let (head, attr) = match var.split_once('.') {
            Some((head, attr)) => (head, Some(attr)),
            None => (var.as_str(), None),
        };
        if globals.iter().any(|g| g == head) {
            continue;
        }
        let problem = match (head, attr) {
            (h, _) if !CONTEXT_VARIABLES.contains(&h) => Some(
                Diagnostic::error(code::UNDEFINED_VARIABLE, format!("undefined variable `{h}`"))
                    .note(format!(
                        "instructions can use {}",
                        super::toml_reader::list(CONTEXT_VARIABLES)
                    ))
                    .suggest(suggest::closest(h, CONTEXT_VARIABLES.iter().copied())),
            ),
            ("agent", Some(a)) if !AGENT_FIELDS.contains(&a) => Some(
                Diagnostic::error(code::UNDEFINED_VARIABLE, format!("`agent` has no field `{a}`"))
                    .note(format!("`agent` has {}", super::toml_reader::list(AGENT_FIELDS)))
                    .suggest(suggest::closest(a, AGENT_FIELDS.iter().copied())),
            ),
            ("env", Some(a)) if !env_vars.iter().any(|v| v == a) => Some(
                Diagnostic::error(
                    code::UNDECLARED_ENV,
                    format!("`env.{a}` is not listed in `[instructions] env`"),
                )
                .help(format!(
                    "add it to agent.toml: `[instructions]` then `env = [\"{a}\"]`; only listed variables reach the prompt"
                )),
            ),
            _ => None,
        };
        if let Some(problem) = problem {
            let problem = match uses.find(var, head) {
                Some(span) => problem.at(src, Some(span)),
                None => problem.at_line(src, 1, None),
            };
            diags.push(problem);
            ok = false;
        }
    }
    if !ok {
        return None;
    }
    match render_part(&template, sample, budget) {
        Ok(text) => Some(text),
        Err(failure) => {
            let code = if failure.undefined {
                code::UNDEFINED_VARIABLE
            } else {
                code::TEMPLATE_RENDER
            };
            diags.push(
                Diagnostic::error(code, format!("template error: {}", failure.message)).at_line(
                    src,
                    failure.line.unwrap_or(1),
                    None,
                ),
            );
            None
        }
    }
}

/// Where each variable is first used inside `{{ }}` or `{% %}`, found in one pass over
/// the template: a template with tens of thousands of unknown names must not take
/// quadratic time to report them.
struct Uses {
    /// Every dotted name used (`agent`, `agent.name`, … up to [`MAX_PARTS`] parts) → the
    /// byte offset of its first use.
    first: HashMap<String, usize>,
}

/// Dotted names longer than this are found by their first parts only.
const MAX_PARTS: usize = 4;

impl Uses {
    fn new(text: &str) -> Uses {
        let mut first = HashMap::new();
        let mut pos = 0;
        while let Some(open) = find_tag(&text[pos..]) {
            let start = pos + open + 2;
            let close = text[start..]
                .find(['}', '%'])
                .map_or(text.len(), |c| start + c);
            record_names(&text[start..close], start, &mut first);
            pos = close.max(start);
        }
        Uses { first }
    }

    /// The byte range of the first use of `dotted`, else of `head`.
    fn find(&self, dotted: &str, head: &str) -> Option<std::ops::Range<usize>> {
        [dotted, head].into_iter().find_map(|needle| {
            let offset = *self.first.get(needle)?;
            Some(offset..offset + needle.len())
        })
    }
}

/// Records each name in a tag's text: a run of `a.b.c` whose first character follows
/// neither an identifier character nor a dot, and each of its leading parts.
fn record_names(tag: &str, offset: usize, first: &mut HashMap<String, usize>) {
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = tag.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts_name =
            is_ident(bytes[i]) && (i == 0 || !is_ident(bytes[i - 1]) && bytes[i - 1] != b'.');
        if !starts_name {
            i += 1;
            continue;
        }
        let begin = i;
        let mut parts = 0;
        loop {
            while i < bytes.len() && is_ident(bytes[i]) {
                i += 1;
            }
            parts += 1;
            if parts <= MAX_PARTS {
                first
                    .entry(tag[begin..i].to_string())
                    .or_insert(offset + begin);
            }
            if i + 1 < bytes.len() && bytes[i] == b'.' && is_ident(bytes[i + 1]) {
                i += 1;
            } else {
                break;
            }
        }
    }
}

/// Where the next `{{` or `{%` starts; only the text up to it is read.
fn find_tag(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    bytes
        .windows(2)
        .position(|pair| pair[0] == b'{' && (pair[1] == b'{' || pair[1] == b'%'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn find_variable(text: &str, dotted: &str, head: &str) -> (usize, Option<usize>, usize) {
        match Uses::new(text).find(dotted, head) {
            Some(span) => {
                let pos = SourceFile::new("i.md", text).locate(span);
                (pos.line, Some(pos.column), pos.width)
            }
            None => (1, None, 1),
        }
    }

    #[test]
    fn finds_variables_inside_tags_only() {
        let text = "agent here\n{{ agent.nmae }}\n{% if usr %}x{% endif %}";
        assert_eq!(find_variable(text, "agent.nmae", "agent"), (2, Some(4), 10));
        assert_eq!(find_variable(text, "usr", "usr"), (3, Some(7), 3));
        assert_eq!(find_variable(text, "missing", "missing"), (1, None, 1));
        let earlier = "{{ agent.name }}\n{{ agent.modle }}";
        assert_eq!(
            find_variable(earlier, "agent.modle", "agent"),
            (2, Some(4), 11)
        );
        let nested = "{{ x2agent }} {{ a.agent }} {{ agent.nmae.first | upper }}";
        assert_eq!(
            find_variable(nested, "agent.nmae", "agent"),
            (1, Some(32), 10)
        );
        assert_eq!(find_variable(nested, "agent.x", "agent"), (1, Some(32), 5));
    }
}
