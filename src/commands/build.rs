//! `eve build`: compile, print diagnostics, write the manifest.

use std::process::ExitCode;
use std::time::Instant;

use super::out;
use crate::agent::{self, Changes, Refusal};
use crate::cli::{BuildArgs, Format};
use crate::compiler::{self, render};

pub fn run(args: &BuildArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let base = args.dir.to_string_lossy().into_owned();
    // A change the agent made waits for the person: this build shows it, and starts
    // none of its servers (they are listed by the next build, once it has been seen).
    let opening = agent::open(
        &args.dir,
        agent::Options {
            changes: Changes::Accept,
            refresh: args.refresh,
            strict: args.strict,
            ..agent::Options::default()
        },
    )?;
    let agent = match &opening.agent {
        Err(Refusal::NotAFolder) => return out::usage(format!("`{base}` is not a folder")),
        Err(_) => None,
        Ok(agent) => Some(agent),
    };
    let diagnostics: Vec<_> = opening.diagnostics.iter().cloned().collect();
    let budget = agent.map(|a| compiler::budget::Budget::of(&a.manifest));
    match args.format {
        Format::Json => println!("{}", render::json(&diagnostics, budget.as_ref(), &base)),
        Format::Human => eprint!(
            "{}",
            render::human_report(&diagnostics, &base, false, args.verbose)
        ),
    }
    let Some(agent) = agent else {
        if args.format == Format::Human {
            eprintln!(
                "error: could not build `{}`: {}",
                compiler::agent_name(&args.dir),
                counts(
                    opening.diagnostics.error_count(),
                    opening.diagnostics.warning_count()
                )
            );
        }
        return Ok(ExitCode::FAILURE);
    };
    if args.format == Format::Human {
        note_accepted(opening.accepted.as_ref());
        eprintln!("{}", summary(agent, &base, started.elapsed()));
        let hooks = hooks_line(&agent.manifest.hooks).into_iter();
        for line in budget.iter().flat_map(|b| b.lines()).chain(hooks) {
            eprintln!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The note of a build that accepts a change the agent made while it ran.
fn note_accepted(accepted: Option<&agent::Accepted>) {
    if let Some(accepted) = accepted {
        let servers = if accepted.servers_held {
            "; it started none of the changed definition's servers: the next build lists their tools"
        } else {
            ""
        };
        let summary = &accepted.change.summary;
        eprintln!(
            "note: the agent's definition changed while it ran: {summary}; this build accepts it{servers}"
        );
    }
}

/// `built `name`: 3 tools, 1 skill, 0 subagents, sandbox … in 2.1 ms → .eve/manifest.json`.
fn summary(agent: &agent::Agent, base: &str, elapsed: std::time::Duration) -> String {
    let manifest = &agent.manifest;
    let deferred = manifest.tools.iter().filter(|t| t.defer).count();
    let tools = if deferred > 0 {
        format!(
            "{} ({deferred} deferred)",
            plural(manifest.tools.len(), "tool")
        )
    } else {
        plural(manifest.tools.len(), "tool")
    };
    let connections = if manifest.connections.is_empty() {
        String::new()
    } else {
        format!(", {}", plural(manifest.connections.len(), "connection"))
    };
    let hooks = if manifest.hooks.is_empty() {
        String::new()
    } else {
        format!(", {}", plural(manifest.hooks.len(), "hook"))
    };
    let evals = if agent.eval_count == 0 {
        String::new()
    } else {
        format!(", {}", plural(agent.eval_count, "eval case"))
    };
    format!(
        "built `{}`: {tools}, {}, {}{connections}{hooks}{evals}, sandbox {} in {:.1} ms → {}",
        manifest.agent.name,
        plural(manifest.skills.len(), "skill"),
        plural(manifest.subagents.len(), "subagent"),
        crate::manifest::diff::describe_sandbox(&manifest.agent.sandbox),
        elapsed.as_secs_f64() * 1000.0,
        render::join_path(base, ".eve/manifest.json"),
    )
}

/// `hooks: no-rm-rf (before_tool: bash), tests-first (stop)`: the agent's hooks in the
/// order they run.
fn hooks_line(hooks: &[crate::manifest::hook::Hook]) -> Option<String> {
    if hooks.is_empty() {
        return None;
    }
    let shown: Vec<String> = hooks
        .iter()
        .map(|h| {
            if h.tools.is_empty() {
                format!("{} ({})", h.name, h.event.name())
            } else {
                format!("{} ({}: {})", h.name, h.event.name(), h.tools.join(", "))
            }
        })
        .collect();
    Some(format!("hooks: {}", shown.join(", ")))
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{} {word}s", crate::console::lines::thousands(n as u64))
    }
}

fn counts(errors: usize, warnings: usize) -> String {
    if warnings == 0 {
        plural(errors, "error")
    } else {
        format!(
            "{}, {}",
            plural(errors, "error"),
            plural(warnings, "warning")
        )
    }
}
