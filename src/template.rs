//! Rendering the instructions templates (minijinja, strict, within a budget of work and
//! size): the context they see, and the one renderer both the build's trial render and
//! the run's real one use.

use std::collections::BTreeMap;

use minijinja::{Environment, UndefinedBehavior};
use serde::Serialize;

use crate::manifest::{Agent, Instructions, Skill, Tool};

/// The variables an instructions template may use.
pub const CONTEXT_VARIABLES: &[&str] = &["agent", "tools", "skills", "workspace", "date", "env"];
pub(crate) const AGENT_FIELDS: &[&str] = &["name", "description", "model"];

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

impl Context {
    /// The context for an agent: its settings, `model` as the person wrote it, the tools
    /// it offers, its skills; `workspace`, `date` and the `[instructions] env` values.
    pub fn new<'a>(
        agent: &Agent,
        model: &str,
        tools: impl IntoIterator<Item = &'a Tool>,
        skills: &[Skill],
        workspace: String,
        date: String,
        env: BTreeMap<String, String>,
    ) -> Context {
        Context {
            agent: AgentInfo {
                name: agent.name.clone(),
                description: agent.description.clone().unwrap_or_default(),
                model: model.to_string(),
            },
            tools: tools
                .into_iter()
                .map(|t| Named {
                    name: t.name.clone(),
                    description: t.description.clone(),
                })
                .collect(),
            // A deferred skill is out of the system prompt, however it is written.
            skills: skills
                .iter()
                .filter(|s| !s.deferred)
                .map(|s| Named {
                    name: s.name.clone(),
                    description: s.description.clone(),
                })
                .collect(),
            workspace,
            date,
            env,
        }
    }
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

pub(crate) fn environment(fuel: u64) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_fuel(Some(fuel));
    env
}

/// What is left of [`FUEL`] and [`MAX_RENDERED_BYTES`] for the parts not rendered yet.
pub(crate) struct Budget {
    pub(crate) fuel: u64,
    bytes: usize,
}

impl Budget {
    pub(crate) fn new() -> Budget {
        Budget {
            fuel: FUEL,
            bytes: MAX_RENDERED_BYTES,
        }
    }
}

/// Why a part did not render, and where.
pub(crate) struct RenderFailure {
    pub(crate) line: Option<usize>,
    pub(crate) message: String,
    /// A strict-mode undefined value, not a limit or another error.
    pub(crate) undefined: bool,
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
pub(crate) fn render_part(
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::manifest::InstructionPart;

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
