//! `eve eval`: build the agent and its cases, select, run, print, exit 0 (all passed),
//! 1 (a case failed) or 2 (invalid cases, a usage error).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::out;
use crate::agent;
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
    let (agent, cases) = match open(args, &base)? {
        Ok(opened) => opened,
        Err(message) => return out::usage(message),
    };
    let manifest = &agent.manifest;
    let mut out = std::io::stdout().lock();
    if args.list {
        list(&mut out, &cases, args.format)?;
        return Ok(ExitCode::SUCCESS);
    }
    let human = args.format == EvalFormat::Human;
    if human {
        writeln!(out, "{}", heading(args, &cases, &manifest.agent.name))?;
    }
    let files: Vec<(String, String)> = cases
        .iter()
        .map(|c| (c.id.clone(), c.file.clone()))
        .collect();
    let width = cases
        .iter()
        .map(|c| c.id.chars().count())
        .max()
        .unwrap_or(0);
    let outcome = run_cases(args, &agent, cases, &base, |case| {
        if human {
            let _ = writeln!(out, "{}", report::progress_line(case, width));
            for line in report::kept_lines(case) {
                let _ = writeln!(out, "{line}");
            }
            let _ = out.flush();
        }
    })?;
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(message) => return out::failure(message),
    };
    print_outcome(&mut out, args, &base, &outcome)?;
    if let Some(path) = &args.junit {
        if let Err(e) = write_junit(path, &outcome) {
            return out::failure(format!("cannot write `{}`: {e}", path.display()));
        }
        if human {
            writeln!(out, "junit: {}", path.display())?;
        }
    }
    if args.record {
        record_cases(args, &base, &files, &outcome);
    }
    Ok(if outcome.summary.failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The agent and the cases selected, or the usage error that stops the run: its build
/// failed, a change waits for the person, no case matches, a model flag is wrong.
fn open(
    args: &EvalArgs,
    base: &str,
) -> anyhow::Result<Result<(agent::Agent, Vec<crate::manifest::eval::Case>), String>> {
    let opening = agent::open(
        &args.dir,
        agent::Options {
            evals: true,
            ..agent::Options::default()
        },
    )?;
    out::opening(&opening, base, false, false, |_| String::new());
    let mut agent = match opening.agent {
        Ok(agent) => agent,
        // Cases run the agent's tools and servers: not those of a change nobody has seen.
        Err(refusal) => {
            return Ok(Err(out::refusal(
                &refusal,
                &args.dir,
                base,
                (" and its evals", "run again"),
                |change| crate::review::describe(change, base),
            )));
        }
    };
    let cases = match evals::select(std::mem::take(&mut agent.evals), &args.filters, &args.tag) {
        Ok(cases) if cases.is_empty() => {
            return Ok(Err(format!(
                "`{}` has no eval cases: add one as `{}`",
                agent.manifest.agent.name,
                render::join_path(base, "evals/<name>.toml")
            )));
        }
        Ok(cases) => cases,
        Err(message) => return Ok(Err(message)),
    };
    Ok(check_models(args, &agent.manifest).map(|()| (agent, cases)))
}

/// The cases, run under the agent's review guard: a change they made to its definition
/// waits for the person, as after `eve run`.
fn run_cases(
    args: &EvalArgs,
    agent: &agent::Agent,
    cases: Vec<crate::manifest::eval::Case>,
    base: &str,
    on_case: impl FnMut(&evals::results::CaseResult),
) -> anyhow::Result<Result<evals::EvalOutcome, String>> {
    let guard = agent.guard()?;
    let outcome = evals::run(
        &agent.dir,
        &agent.manifest,
        cases,
        &options(args),
        on_case,
        &|event| guard.observe(event),
    );
    // As after `eve run`: checked when a case had something run, or servers ran.
    match guard.after_turn(&agent.manifest) {
        Ok(Some(change)) => eprintln!(
            "note: the agent's definition changed during these evals ({}); it takes effect once you have seen it: `eve build {}`",
            change.summary,
            crate::text::shell_word(base)
        ),
        Ok(None) => {}
        Err(e) => eprintln!("error: cannot record the agent's changes: {e}"),
    }
    guard.end();
    Ok(outcome)
}

/// A model flag that cannot be used is a usage error, found before any case runs.
fn check_models(args: &EvalArgs, manifest: &crate::manifest::Manifest) -> Result<(), String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?;
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
            return Err(format!("{flag} {model}: {e}"));
        }
    }
    Ok(())
}

fn options(args: &EvalArgs) -> evals::Options {
    evals::Options {
        jobs: args.jobs.map_or(0, |j| j as usize),
        model: args.model.clone(),
        judge_model: args.judge_model.clone(),
        repeat: args.repeat,
        strict: args.strict,
        keep: args.keep,
        record: args.record,
    }
}

/// `running 3 eval cases of `agent` (6 runs)`.
fn heading(args: &EvalArgs, cases: &[crate::manifest::eval::Case], agent: &str) -> String {
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
    format!(
        "running {} of `{agent}`{}",
        plural(cases.len(), "eval case"),
        if runs as usize > cases.len() {
            format!(" ({runs} runs)")
        } else {
            String::new()
        }
    )
}

/// The problems and the summary (human), or the whole outcome (JSON).
fn print_outcome(
    out: &mut impl Write,
    args: &EvalArgs,
    base: &str,
    outcome: &evals::EvalOutcome,
) -> anyhow::Result<()> {
    match args.format {
        EvalFormat::Human => {
            let failures = report::failures(&outcome.results);
            if !failures.is_empty() {
                write!(out, "\nproblems:\n{}", for_terminal(&failures))?;
            }
            writeln!(out, "\n{}", report::summary_line(&outcome.summary))?;
            let artifacts = evals::artifacts_path(base, &outcome.summary);
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
    Ok(())
}

fn write_junit(path: &Path, outcome: &evals::EvalOutcome) -> std::io::Result<()> {
    let xml = junit::document(&outcome.summary, &outcome.results);
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
    parent
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, xml))
}

/// `--record`: each case's file gets the replies its run recorded; the cases are
/// checked again.
fn record_cases(
    args: &EvalArgs,
    base: &str,
    files: &[(String, String)],
    outcome: &evals::EvalOutcome,
) {
    for (id, events) in &outcome.events {
        let Some((_, file)) = files.iter().find(|(i, _)| i == id) else {
            continue;
        };
        let shown = render::join_path(base, file);
        match record::write(&args.dir.join(file), events, args.record_stubs) {
            Ok(what) => eprintln!("recorded {shown}: {what}"),
            Err(message) => eprintln!("error: {message}"),
        }
    }
    let rebuilt = compiler::compile(&args.dir, &crate::tools::builtin::CATALOG);
    eprint!(
        "{}",
        render::human_report(rebuilt.diagnostics.iter(), base, false, false)
    );
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
