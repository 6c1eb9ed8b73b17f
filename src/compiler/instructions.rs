//! The system prompt templates: `instructions.md` or `instructions/*.md`, checked in strict mode.

use std::collections::BTreeMap;

use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use super::diagnostic::{Diagnostic, Diagnostics, code};
use super::inputs::{InstructionFiles, Loaded};
use super::source::SourceFile;
use crate::manifest::{InstructionPart, Instructions};
use crate::suggest;

/// The variables an instructions template may use.
pub const CONTEXT_VARIABLES: &[&str] = &["agent", "tools", "skills", "workspace", "date", "env"];
const AGENT_FIELDS: &[&str] = &["name", "description", "model"];

/// What instructions templates are rendered with.
#[derive(Debug, Clone, Serialize)]
pub struct Context {
    pub agent: AgentInfo,
    pub tools: Vec<Named>,
    pub skills: Vec<Named>,
    /// Absolute path of the workspace.
    pub workspace: String,
    /// Today, `YYYY-MM-DD`.
    pub date: String,
    /// Only the variables listed in `[instructions] env`; unset ones are empty.
    pub env: BTreeMap<String, String>,
}

/// `agent` in the template context.
#[derive(Debug, Clone, Serialize)]
pub struct AgentInfo {
    pub name: String,
    pub description: String,
    pub model: String,
}

/// A tool or skill in the template context.
#[derive(Debug, Clone, Serialize)]
pub struct Named {
    pub name: String,
    pub description: String,
}

fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env
}

/// Renders the instruction parts and joins them with a blank line.
pub fn render(instructions: &Instructions, context: &Context) -> Result<String, String> {
    let env = environment();
    let mut out = Vec::with_capacity(instructions.parts.len());
    for part in &instructions.parts {
        let rendered = env
            .render_named_str(
                &part.path,
                &part.template,
                minijinja::Value::from(minijinja::value::Serde(context)),
            )
            .map_err(|e| {
                let line = e.line().map(|l| format!(":{l}")).unwrap_or_default();
                format!(
                    "{}{line}: {}",
                    part.path,
                    e.detail().unwrap_or("cannot render")
                )
            })?;
        out.push(rendered.trim_end().to_string());
    }
    Ok(out.join("\n\n"))
}

/// Checks the instruction templates and returns them for the manifest.
pub fn compile(
    files: &InstructionFiles,
    display_prefix: &str,
    env_vars: &[String],
    sample: &Context,
    diags: &mut Diagnostics,
) -> Instructions {
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
    let env = environment();
    let globals: Vec<String> = env.globals().map(|(n, _)| n.to_string()).collect();
    let mut out = Vec::new();
    for file in parts {
        let src = SourceFile::new(&file.display, &file.text);
        if check_part(&env, &globals, &src, env_vars, sample, diags) {
            out.push(InstructionPart {
                path: file.path.clone(),
                template: file.text.clone(),
            });
        }
    }
    Instructions {
        parts: out,
        env: env_vars.to_vec(),
    }
}

fn check_part(
    env: &Environment<'static>,
    globals: &[String],
    src: &SourceFile,
    env_vars: &[String],
    sample: &Context,
    diags: &mut Diagnostics,
) -> bool {
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
            return false;
        }
    };
    let mut undeclared: Vec<String> = template.undeclared_variables(true).into_iter().collect();
    undeclared.sort();
    let mut ok = true;
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
            let (line, column, width) = find_variable(&src.text, var, head);
            let mut problem = problem.at_line(src, line, column);
            problem.width = width;
            diags.push(problem);
            ok = false;
        }
    }
    if ok && let Err(e) = template.render(minijinja::Value::from(minijinja::value::Serde(sample))) {
        let code = if e.kind() == minijinja::ErrorKind::UndefinedError {
            code::UNDEFINED_VARIABLE
        } else {
            code::TEMPLATE_RENDER
        };
        diags.push(
            Diagnostic::error(
                code,
                format!("template error: {}", e.detail().unwrap_or("cannot render")),
            )
            .at_line(src, e.line().unwrap_or(1), None),
        );
        ok = false;
    }
    ok
}

/// Finds where a variable is used inside `{{ }}` or `{% %}`: 1-based line, column and width.
/// The full dotted name is looked for first, then its first part.
fn find_variable(text: &str, dotted: &str, head: &str) -> (usize, Option<usize>, usize) {
    for needle in [dotted, head] {
        let mut pos = 0;
        while let Some(open) = find_tag(&text[pos..]) {
            let start = pos + open + 2;
            let close = text[start..]
                .find(['}', '%'])
                .map_or(text.len(), |c| start + c);
            if let Some(at) = find_identifier(&text[start..close], needle) {
                let offset = start + at;
                let line = text[..offset].matches('\n').count() + 1;
                let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
                let column = text[line_start..offset].chars().count() + 1;
                return (line, Some(column), needle.chars().count());
            }
            pos = close.max(start);
        }
    }
    (1, None, 1)
}

fn find_tag(text: &str) -> Option<usize> {
    match (text.find("{{"), text.find("{%")) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

fn find_identifier(haystack: &str, needle: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut from = 0;
    while let Some(i) = haystack[from..].find(needle) {
        let at = from + i;
        let before = haystack[..at].chars().next_back();
        let after = haystack[at + needle.len()..].chars().next();
        if !before.is_some_and(|c| is_ident(c) || c == '.') && !after.is_some_and(is_ident) {
            return Some(at);
        }
        from = at + needle.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }

    #[test]
    fn renders_parts_joined_by_a_blank_line() {
        let instructions = Instructions {
            parts: vec![
                InstructionPart {
                    path: "a.md".into(),
                    template: "Hi {{ agent.name }}\n".into(),
                },
                InstructionPart {
                    path: "b.md".into(),
                    template: "{{ env.X }}on {{ date }}".into(),
                },
            ],
            env: vec!["X".into()],
        };
        let context = Context {
            agent: AgentInfo {
                name: "bot".into(),
                description: String::new(),
                model: "m".into(),
            },
            tools: Vec::new(),
            skills: Vec::new(),
            workspace: "/w".into(),
            date: "2026-01-02".into(),
            env: BTreeMap::from([("X".into(), "x ".into())]),
        };
        assert_eq!(
            render(&instructions, &context).unwrap(),
            "Hi bot\n\nx on 2026-01-02"
        );
    }
}
