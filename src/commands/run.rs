//! `eve run`: build if needed, run a turn (or resume or compact a session), print it,
//! exit with the turn's code.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::{Output, RunArgs};
use crate::compiler::{self, render};
use crate::console::{self, OutputMode, Renderer, TerminalAsker};
use crate::protocol::Resolution;
use crate::runner::{self, Action, RunError, RunOptions, SessionChoice};

/// `built`: the build made before the run to learn the agent's secret variables, if any;
/// when it came wholly from the cache it is the run's build too (nothing changed since).
pub fn run(args: &RunArgs, built: Option<compiler::Build>) -> anyhow::Result<ExitCode> {
    let mode = match args.output {
        Output::Text => OutputMode::Text,
        Output::Json => OutputMode::Json,
        Output::StreamJson => OutputMode::StreamJson,
    };
    let (stdin_tty, stdout_tty, stderr_tty) = (
        std::io::stdin().is_terminal(),
        std::io::stdout().is_terminal(),
        std::io::stderr().is_terminal(),
    );
    let (dir, prompt) = split_positionals(args);
    let base = dir.to_string_lossy().into_owned();
    let options = console::Options {
        quiet: args.quiet,
        spinner: stderr_tty,
        command: format!("eve run {}", crate::text::shell_word(&base)),
        notes: true,
        out_tty: stdout_tty,
        err_tty: stderr_tty,
        color: console::stderr_color(stderr_tty),
    };
    let mut console =
        console::renderer(mode, &options, std::io::stdout().lock(), std::io::stderr());
    let fail = |console: &mut Box<dyn Renderer + '_>, error: RunError| {
        console.fail_early(&error.to_string());
        Ok(ExitCode::from(error.exit_code()))
    };
    if !dir.is_dir() {
        return fail(
            &mut console,
            RunError::Usage(format!("`{base}` is not a folder")),
        );
    }
    let session = match (&args.session, args.r#continue) {
        (Some(id), _) => SessionChoice::Id(id.clone()),
        (None, true) => SessionChoice::Latest,
        (None, false) => SessionChoice::New,
    };
    let resolution = if let Some(text) = &args.answer {
        Some(Resolution::Answer { text: text.clone() })
    } else if args.approve {
        Some(Resolution::Approved { by: None })
    } else if args.deny {
        Some(Resolution::Denied {
            reason: args.reason.clone(),
        })
    } else {
        None
    };
    if let Err(error) = runner::check_flags(
        &session,
        resolution.as_ref(),
        args.compact,
        prompt.is_some(),
    ) {
        return fail(&mut console, error);
    }

    // A build that finds a change waiting starts none of its servers.
    let mut build = match built {
        Some(build) if build.cached => build,
        _ => crate::connections::build_in(&dir, args.workspace.as_deref()),
    };
    eprint!(
        "{}",
        render::human_report(build.diagnostics.iter(), &base, args.quiet, args.verbose)
    );
    let Some(manifest) = build.manifest.as_ref() else {
        return fail(
            &mut console,
            RunError::Failed(format!(
                "could not build `{}`: fix the errors above, then run again",
                compiler::agent_name(&dir)
            )),
        );
    };
    if let Some(change) = crate::review::waiting(&dir, &manifest.inputs_hash)? {
        if !args.accept_agent_changes {
            return fail(
                &mut console,
                RunError::Usage(format!(
                    "the agent's definition changed while it ran ({}): review it with `eve build {}`, or run again with --accept-agent-changes",
                    change.summary,
                    crate::text::shell_word(&base)
                )),
            );
        }
        eprintln!(
            "note: using the definition the agent changed: {}",
            change.summary
        );
        crate::review::accept(&dir)?;
        // Accepted: now its servers may be listed.
        let shown = build.diagnostics;
        build = crate::connections::build_in(&dir, args.workspace.as_deref());
        let new: Vec<_> = build
            .diagnostics
            .iter()
            .filter(|d| !shown.iter().any(|s| s == *d))
            .collect();
        eprint!(
            "{}",
            render::human_report(new, &base, args.quiet, args.verbose)
        );
    }
    let cached = build.cached;
    let Some(manifest) = build.manifest else {
        return fail(
            &mut console,
            RunError::Failed(format!(
                "could not build `{}`: fix the errors above, then run again",
                compiler::agent_name(&dir)
            )),
        );
    };
    if !cached {
        compiler::write_manifest(&dir, &manifest)?;
    }
    // Shared with the session, which reads it through the turn: no copy of a manifest
    // that may list thousands of skills.
    let manifest = Arc::new(manifest);
    let ran = manifest.clone();

    let action = match (resolution, args.compact) {
        (Some(resolution), _) => Action::Resume(resolution),
        (None, true) => Action::Compact,
        (None, false) => match read_prompt(prompt) {
            Ok(prompt) => Action::Turn(prompt),
            Err(error) => return fail(&mut console, error),
        },
    };
    let interactive = mode == OutputMode::Text && stdin_tty && stderr_tty;
    let run_options = RunOptions {
        model: args.model.clone(),
        max_steps: args.max_steps,
        workspace: args.workspace.clone(),
        session,
        persist: true,
        approve_all: args.yes,
        asker: interactive.then(|| Arc::new(TerminalAsker) as Arc<dyn crate::harness::Asker>),
        sandbox_mode: args
            .sandbox
            .as_deref()
            .and_then(crate::manifest::SandboxMode::from_name),
        no_network: args.no_network,
        connections: None,
        hidden_env: Vec::new(),
        sandbox: None,
    };
    let prepared = match runner::prepare(manifest, &dir, &run_options)
        .and_then(|prepared| runner::check_action(&prepared, &action).map(|()| prepared))
    {
        Ok(prepared) => prepared,
        Err(error) => return fail(&mut console, error),
    };
    if !args.quiet {
        for note in &prepared.repaired {
            eprintln!("note: {note}");
        }
    }
    for warning in &prepared.warnings {
        eprintln!("warning: {warning}");
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    // Until the check after the run: a killed eve leaves this for the next start.
    let running = crate::review::Running::start(&dir, &ran)?;
    // Whether the model had anything run: a call requested, or a parked one settled.
    let mut acted = false;
    let outcome = runtime.block_on(runner::run(
        prepared.harness,
        prepared.events,
        action,
        |event| {
            acted |= crate::review::acted(event);
            console.event(event)
        },
    ));
    console.finish(&outcome);
    let could_change = acted || crate::review::runs_servers(&ran);
    let change = if could_change {
        running.check(&dir, &ran)?
    } else {
        None
    };
    running.end();
    if let Some(change) = change {
        eprintln!(
            "note: the agent's definition changed during this run ({}); it takes effect once you have seen it: `eve build {}`",
            change.summary,
            crate::text::shell_word(&base)
        );
    }
    Ok(ExitCode::from(runner::exit_code(outcome.end_reason)))
}

/// `eve run "question"` inside an agent directory means the current folder and that prompt.
pub fn split_positionals(args: &RunArgs) -> (PathBuf, Option<String>) {
    if args.prompt.is_none() && !args.dir.is_dir() && std::path::Path::new("agent.toml").is_file() {
        return (
            PathBuf::from("."),
            Some(args.dir.to_string_lossy().into_owned()),
        );
    }
    (args.dir.clone(), args.prompt.clone())
}

/// The prompt from the argument, or from stdin for `-` or when stdin is not a terminal.
fn read_prompt(argument: Option<String>) -> Result<String, RunError> {
    let from_stdin = match &argument {
        Some(text) => text == "-",
        None => !std::io::stdin().is_terminal(),
    };
    let text = if from_stdin {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| RunError::Usage(format!("cannot read the prompt from stdin: {e}")))?;
        text
    } else {
        argument.unwrap_or_default()
    };
    if text.trim().is_empty() {
        return Err(RunError::Usage(
            "no prompt: pass one after the agent directory (`eve run DIR \"…\"`) or pipe it on stdin"
                .into(),
        ));
    }
    Ok(text)
}
