//! The system prompt templates: `instructions.md` or `instructions/*.md`, checked in strict mode.

use std::collections::{BTreeMap, HashMap};

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

/// The work rendering all instruction parts may do together, in minijinja's fuel: about
/// one unit per instruction run and per 64 bytes of data made. Enough for any prompt a
/// person writes; nested loops that would run for minutes stop at once instead.
pub const FUEL: u64 = 1_000_000;
/// The longest system prompt the instructions may render to (far beyond any context window).
pub const MAX_RENDERED_BYTES: usize = 4 * 1024 * 1024;

fn environment(fuel: u64) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(fuel));
    env
}

/// What is left of [`FUEL`] and [`MAX_RENDERED_BYTES`] for the parts not rendered yet.
struct Budget {
    fuel: u64,
    bytes: usize,
}

impl Budget {
    fn new() -> Budget {
        Budget {
            fuel: FUEL,
            bytes: MAX_RENDERED_BYTES,
        }
    }
}

/// Why a part did not render, and where.
struct RenderFailure {
    line: Option<usize>,
    message: String,
    /// A strict-mode undefined value, not a limit or another error.
    undefined: bool,
}

/// Writes into `out` until `room` bytes are used, then refuses whole writes (so the
/// text stays valid UTF-8) and remembers that it did.
struct Capped<'a> {
    out: &'a mut Vec<u8>,
    room: usize,
    overflowed: bool,
}

impl std::io::Write for Capped<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if buf.len() > self.room {
            self.overflowed = true;
            return Err(std::io::Error::other(
                "the rendered instructions are too long",
            ));
        }
        self.room -= buf.len();
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Renders one part within what is left of the budget, and takes what it used.
fn render_part(
    template: &minijinja::Template<'_, '_>,
    context: &minijinja::Value,
    budget: &mut Budget,
) -> Result<String, RenderFailure> {
    let mut out = Vec::new();
    let mut writer = Capped {
        out: &mut out,
        room: budget.bytes,
        overflowed: false,
    };
    let rendered = template.render_captured_to(context.clone(), &mut writer);
    let overflowed = writer.overflowed;
    match rendered {
        Ok(captured) => {
            budget.fuel = captured
                .state()
                .fuel_levels()
                .map_or(budget.fuel, |(_, left)| left);
            budget.bytes -= out.len().min(budget.bytes);
            Ok(String::from_utf8_lossy(&out).into_owned())
        }
        Err(e) => {
            let message = if overflowed {
                format!(
                    "the instructions render to more than {} MiB",
                    MAX_RENDERED_BYTES / (1024 * 1024)
                )
            } else if e.kind() == minijinja::ErrorKind::OutOfFuel {
                format!(
                    "the template does too much work (nested loops, or a huge value?): rendering stopped at its budget of {FUEL} steps"
                )
            } else {
                e.detail().unwrap_or("cannot render").to_string()
            };
            Err(RenderFailure {
                line: e.line(),
                message,
                undefined: e.kind() == minijinja::ErrorKind::UndefinedError,
            })
        }
    }
}

/// Renders the instruction parts and joins them with a blank line. All parts together
/// do at most [`FUEL`] work and render at most [`MAX_RENDERED_BYTES`].
pub fn render(instructions: &Instructions, context: &Context) -> Result<String, String> {
    let context = minijinja::Value::from(minijinja::value::Serde(context));
    let mut budget = Budget::new();
    let mut out = Vec::with_capacity(instructions.parts.len());
    for part in &instructions.parts {
        let env = environment(budget.fuel);
        let failed = |line: Option<usize>, message: &str| {
            let line = line.map(|l| format!(":{l}")).unwrap_or_default();
            format!("{}{line}: {message}", part.path)
        };
        let template = env
            .template_from_named_str(&part.path, &part.template)
            .map_err(|e| failed(e.line(), e.detail().unwrap_or("invalid syntax")))?;
        let rendered = render_part(&template, &context, &mut budget)
            .map_err(|f| failed(f.line, &f.message))?;
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
    let globals: Vec<String> = environment(FUEL)
        .globals()
        .map(|(n, _)| n.to_string())
        .collect();
    let sample = minijinja::Value::from(minijinja::value::Serde(sample));
    let mut budget = Budget::new();
    let mut out = Vec::new();
    for file in parts {
        let src = SourceFile::new(&file.display, &file.text);
        let env = environment(budget.fuel);
        let part = Part {
            env: &env,
            globals: &globals,
            src: &src,
        };
        if check_part(&part, env_vars, &sample, &mut budget, diags) {
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

/// One instruction file and the environment it is checked in.
struct Part<'a> {
    env: &'a Environment<'static>,
    globals: &'a [String],
    src: &'a SourceFile,
}

/// Checks one part: syntax, the variables it uses, then a trial render with the sample
/// context inside what is left of the budget (the same limits as at run time).
fn check_part(
    part: &Part<'_>,
    env_vars: &[String],
    sample: &minijinja::Value,
    budget: &mut Budget,
    diags: &mut Diagnostics,
) -> bool {
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
            return false;
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
    if ok {
        if let Err(failure) = render_part(&template, sample, budget) {
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
            ok = false;
        }
    }
    ok
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

    fn one_part(template: &str) -> Instructions {
        Instructions {
            parts: vec![InstructionPart {
                path: "instructions.md".into(),
                template: template.into(),
            }],
            env: Vec::new(),
        }
    }

    fn context() -> Context {
        Context {
            agent: AgentInfo {
                name: "bot".into(),
                description: String::new(),
                model: "m".into(),
            },
            tools: Vec::new(),
            skills: Vec::new(),
            workspace: "/w".into(),
            date: "2026-01-02".into(),
            env: BTreeMap::new(),
        }
    }

    #[test]
    fn the_run_time_render_stops_at_the_work_and_size_budgets() {
        let loops = "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}x{% endfor %}{% endfor %}{% endfor %}";
        let error = render(&one_part(loops), &context()).unwrap_err();
        assert!(
            error.starts_with("instructions.md:1: the template does too much work"),
            "{error}"
        );
        let big = "{% for i in range(80) %}{{ \"x\" * 60000 }}{% endfor %}";
        assert_eq!(
            render(&one_part(big), &context()).unwrap_err(),
            "instructions.md: the instructions render to more than 4 MiB"
        );
        let fits = "{% for i in range(60) %}{{ \"x\" * 60000 }}{% endfor %}";
        assert_eq!(
            render(&one_part(fits), &context()).unwrap().len(),
            3_600_000
        );
    }

    #[test]
    fn the_budgets_are_shared_by_all_parts() {
        let part = |i: usize| InstructionPart {
            path: format!("instructions/{i}.md"),
            template: "{% for i in range(30) %}{{ \"x\" * 60000 }}{% endfor %}".into(),
        };
        let instructions = Instructions {
            parts: (0..3).map(part).collect(),
            env: Vec::new(),
        };
        assert_eq!(
            render(&instructions, &context()).unwrap_err(),
            "instructions/2.md: the instructions render to more than 4 MiB"
        );
    }
}
