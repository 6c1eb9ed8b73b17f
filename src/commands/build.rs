//! `eve build`: compile, print diagnostics, write the manifest.

use std::process::ExitCode;
use std::time::Instant;

use crate::cli::{BuildArgs, Format};
use crate::compiler::{self, render};

pub fn run(args: &BuildArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let base = args.dir.to_string_lossy().into_owned();
    if !args.dir.is_dir() {
        eprintln!("error: `{base}` is not a folder");
        return Ok(ExitCode::from(super::EXIT_USAGE));
    }
    // A change the agent made waits for the person: this build shows it, and starts
    // none of its servers (they are listed by the next build, once it has been seen).
    let (build, held) =
        crate::connections::reviewed(&args.dir, args.refresh, args.strict, &[], None);
    let diagnostics: Vec<_> = build.diagnostics.iter().cloned().collect();
    let budget = build.manifest.as_ref().map(compiler::budget::Budget::of);
    match args.format {
        Format::Json => println!("{}", render::json(&diagnostics, budget.as_ref(), &base)),
        Format::Human => eprint!(
            "{}",
            render::human_report(&diagnostics, &base, false, args.verbose)
        ),
    }
    let cached = build.cached;
    let Some(manifest) = build.manifest else {
        if args.format == Format::Human {
            eprintln!(
                "error: could not build `{}`: {}",
                compiler::agent_name(&args.dir),
                counts(
                    build.diagnostics.error_count(),
                    build.diagnostics.warning_count()
                )
            );
        }
        return Ok(ExitCode::FAILURE);
    };
    if let Some(change) = crate::review::waiting(&args.dir, &manifest.inputs_hash)? {
        if args.format == Format::Human {
            let servers = if held.is_some() && !manifest.connections.is_empty() {
                "; it started none of the changed definition's servers: the next build lists their tools"
            } else {
                ""
            };
            eprintln!(
                "note: the agent's definition changed while it ran: {}; this build accepts it{servers}",
                change.summary
            );
        }
        crate::review::accept(&args.dir)?;
    }
    if !cached {
        compiler::write_manifest(&args.dir, &manifest)?;
    }
    if args.format == Format::Human {
        let elapsed = started.elapsed();
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
        let evals = if build.eval_count == 0 {
            String::new()
        } else {
            format!(", {}", plural(build.eval_count, "eval case"))
        };
        eprintln!(
            "built `{}`: {tools}, {}, {}{connections}{evals}, sandbox {} in {:.1} ms → {}",
            manifest.agent.name,
            plural(manifest.skills.len(), "skill"),
            plural(manifest.subagents.len(), "subagent"),
            crate::manifest::diff::describe_sandbox(&manifest.agent.sandbox),
            elapsed.as_secs_f64() * 1000.0,
            render::join_path(&base, ".eve/manifest.json"),
        );
        for line in budget.iter().flat_map(|b| b.lines()) {
            eprintln!("{line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
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
