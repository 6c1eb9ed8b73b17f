//! `eve eval`: build the agent and its cases, select, run, print, exit 0 (all passed),
//! 1 (a case failed) or 2 (invalid cases, a usage error).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{EvalArgs, EvalFormat};
use crate::compiler::{self, render};
use crate::console::escape::for_terminal;
use crate::evals::{self, junit, record, report};

/// `eve eval fix-typo` inside an agent directory means the current folder and that filter.
pub fn split_positionals(mut args: EvalArgs) -> EvalArgs {
    if !args.dir.is_dir() && Path::new("agent.toml").is_file() {
        args.filters
            .insert(0, args.dir.to_string_lossy().into_owned());
        args.dir = PathBuf::from(".");
    }
    args
}

pub fn run(args: &EvalArgs) -> anyhow::Result<ExitCode> {
    let base = args.dir.to_string_lossy().into_owned();
    let usage = |message: &str| {
        eprintln!("error: {message}");
        Ok(ExitCode::from(super::EXIT_USAGE))
    };
    if !args.dir.is_dir() {
        return usage(&format!("`{base}` is not a folder"));
    }
    let build = compiler::compile(&args.dir, &crate::tools::builtin::CATALOG);
    eprint!(
        "{}",
        render::human_report(build.diagnostics.iter(), &base, false, false)
    );
    let Some(manifest) = build.manifest else {
        eprintln!(
            "error: could not build `{}` and its evals: fix the errors above, then run again",
            compiler::agent_name(&args.dir)
        );
        return Ok(ExitCode::from(super::EXIT_USAGE));
    };
    // Cases run the agent's tools and servers: not those of a change nobody has seen.
    if let Some(change) = crate::review::waiting(&args.dir, &manifest.inputs_hash)? {
        return usage(&crate::review::describe(&change, &base));
    }
    compiler::write_manifest(&args.dir, &manifest)?;
    let cases = match evals::select(build.evals, &args.filters, &args.tag) {
        Ok(cases) => cases,
        Err(message) => return usage(&message),
    };
    if cases.is_empty() {
        return usage(&format!(
            "`{}` has no eval cases: add one as `{}`",
            manifest.agent.name,
            render::join_path(&base, "evals/<name>.toml")
        ));
    }
    // A model flag that cannot be used is a usage error, found before any case runs.
    let cwd = std::env::current_dir()?;
    for (flag, model) in [
        ("--model", &args.model),
        ("--judge-model", &args.judge_model),
    ] {
        if let Some(model) = model
            && let Err(e) = crate::providers::resolve(
                model,
                &manifest.agent.providers,
                &cwd,
                &crate::secrets::var,
            )
        {
            return usage(&format!("{flag} {model}: {e}"));
        }
    }
    let mut out = std::io::stdout().lock();
    if args.list {
        list(&mut out, &cases, args.format)?;
        return Ok(ExitCode::SUCCESS);
    }
    let options = evals::Options {
        jobs: args.jobs.map_or(0, |j| j as usize),
        model: args.model.clone(),
        judge_model: args.judge_model.clone(),
        repeat: args.repeat,
        strict: args.strict,
        keep: args.keep,
        record: args.record,
    };
    let human = args.format == EvalFormat::Human;
    let width = cases
        .iter()
        .map(|c| c.id.chars().count())
        .max()
        .unwrap_or(0);
    if human {
        let runs: u32 = cases
            .iter()
            .map(|c| {
                if args.record {
                    1
                } else {
                    args.repeat.unwrap_or(c.repeat)
                }
            })
            .sum();
        writeln!(
            out,
            "running {} of `{}`{}",
            plural(cases.len(), "eval case"),
            manifest.agent.name,
            if runs as usize > cases.len() {
                format!(" ({runs} runs)")
            } else {
                String::new()
            }
        )?;
    }
    let files: Vec<(String, String)> = cases
        .iter()
        .map(|c| (c.id.clone(), c.file.clone()))
        .collect();
    let outcome = evals::run(&args.dir, &manifest, cases, &options, |case| {
        if human {
            let _ = writeln!(out, "{}", report::progress_line(case, width));
            for line in report::kept_lines(case) {
                let _ = writeln!(out, "{line}");
            }
            let _ = out.flush();
        }
    });
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(message) => {
            eprintln!("error: {message}");
            return Ok(ExitCode::FAILURE);
        }
    };
    let artifacts = evals::artifacts_path(&base, &outcome.summary);
    match args.format {
        EvalFormat::Human => {
            let failures = report::failures(&outcome.results);
            if !failures.is_empty() {
                write!(out, "\nproblems:\n{}", for_terminal(&failures))?;
            }
            writeln!(out, "\n{}", report::summary_line(&outcome.summary))?;
            writeln!(out, "artifacts: {}", artifacts.display())?;
        }
        EvalFormat::Json => {
            let json = serde_json::json!({
                "summary": outcome.summary,
                "cases": outcome.results,
            });
            writeln!(out, "{}", serde_json::to_string_pretty(&json)?)?;
        }
    }
    if let Some(path) = &args.junit {
        let xml = junit::document(&outcome.summary, &outcome.results);
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
        let written = parent
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, xml));
        if let Err(e) = written {
            eprintln!("error: cannot write `{}`: {e}", path.display());
            return Ok(ExitCode::FAILURE);
        }
        if human {
            writeln!(out, "junit: {}", path.display())?;
        }
    }
    if args.record {
        for (id, events) in &outcome.events {
            let Some((_, file)) = files.iter().find(|(i, _)| i == id) else {
                continue;
            };
            let shown = render::join_path(&base, file);
            match record::write(&args.dir.join(file), events, args.record_stubs) {
                Ok(what) => eprintln!("recorded {shown}: {what}"),
                Err(message) => eprintln!("error: {message}"),
            }
        }
        let rebuilt = compiler::compile(&args.dir, &crate::tools::builtin::CATALOG);
        eprint!(
            "{}",
            render::human_report(rebuilt.diagnostics.iter(), &base, false, false)
        );
    }
    Ok(if outcome.summary.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

fn list(
    out: &mut impl Write,
    cases: &[crate::manifest::eval::Case],
    format: EvalFormat,
) -> anyhow::Result<()> {
    match format {
        EvalFormat::Json => {
            let list: Vec<_> = cases
                .iter()
                .map(|c| {
                    serde_json::json!({
                        "id": c.id,
                        "file": c.file,
                        "description": c.description,
                        "tags": c.tags,
                        "scripted": c.replies.is_some(),
                        "turns": c.turns.len(),
                        "repeat": c.repeat,
                    })
                })
                .collect();
            writeln!(out, "{}", serde_json::to_string_pretty(&list)?)?;
        }
        EvalFormat::Human => {
            let width = cases
                .iter()
                .map(|c| c.id.chars().count())
                .max()
                .unwrap_or(0);
            for case in cases {
                let mut line = format!(
                    "{:<width$}  {}",
                    case.id,
                    if case.replies.is_some() {
                        "scripted"
                    } else {
                        "live    "
                    }
                );
                if !case.tags.is_empty() {
                    line.push_str(&format!("  [{}]", case.tags.join(", ")));
                }
                if let Some(description) = &case.description {
                    line.push_str(&format!("  {description}"));
                }
                writeln!(out, "{}", for_terminal(&line))?;
            }
        }
    }
    Ok(())
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
