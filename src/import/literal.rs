//! Text that must reach the model exactly as written, put in a minijinja template (the
//! instructions, a connection's command): Claude Code does not expand `{{ … }}`, eve
//! would, and an imported `{{ PLACEHOLDER }}` would fail the build or, worse, read a
//! variable.

/// The openers minijinja acts on.
const OPENERS: [&str; 3] = ["{{", "{%", "{#"];

/// `text` as a template that renders to `text`: unchanged when it holds no template
/// syntax, wrapped in `{% raw %}…{% endraw %}` when it does, or, when it also holds an
/// `endraw` tag that would end the raw block early, with every opener written as an
/// expression (`{{ "{{" }}`).
pub fn literal(text: &str) -> String {
    if !OPENERS.iter().any(|o| text.contains(o)) {
        return text.to_string();
    }
    if !has_endraw(text) {
        return format!("{{% raw %}}{text}{{% endraw %}}");
    }
    let mut out = String::with_capacity(text.len() * 2);
    let mut rest = text;
    while let Some(at) = OPENERS.iter().filter_map(|o| rest.find(o)).min() {
        out.push_str(&rest[..at]);
        out.push_str(&format!("{{{{ \"{}\" }}}}", &rest[at..at + 2]));
        rest = &rest[at + 2..];
    }
    out.push_str(rest);
    out
}

/// Whether `text` holds `{%`, maybe `-` or `+`, spaces, then `endraw`.
fn has_endraw(text: &str) -> bool {
    text.match_indices("{%").any(|(at, _)| {
        let after = text[at + 2..].trim_start_matches(['-', '+']);
        after.trim_start().starts_with("endraw")
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::manifest::{InstructionPart, Instructions};
    use pretty_assertions::assert_eq;

    fn rendered(template: &str) -> String {
        let instructions = Instructions {
            parts: vec![InstructionPart {
                path: "instructions.md".into(),
                template: template.into(),
            }],
            env: Vec::new(),
        };
        let context = crate::template::Context {
            agent: crate::template::AgentInfo {
                name: "a".into(),
                description: String::new(),
                model: "m".into(),
            },
            tools: Vec::new(),
            skills: Vec::new(),
            workspace: "/w".into(),
            date: "2000-01-01".into(),
            env: Default::default(),
        };
        crate::template::render(&instructions, &context).unwrap()
    }

    #[test]
    fn every_text_renders_to_itself() {
        for text in [
            "Plain text, with } and { and %}.",
            "Fill in {{PLACEHOLDER}} and {{ env.SECRET }}.",
            "{% if x %}not a condition{% endif %} {# not a comment #}",
            "Ends the block early: {% endraw %} then {{ env.HOME }}",
            "Spaced: {%- endraw -%} and {{{ triple }}} and {#",
            "{{",
        ] {
            assert_eq!(rendered(&literal(text)), text, "{text}");
        }
        assert_eq!(literal("no syntax"), "no syntax");
        assert_eq!(literal("a {{b}}"), "{% raw %}a {{b}}{% endraw %}");
    }
}
