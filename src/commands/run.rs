//! `eve run`: build if needed, run a turn (or resume or compact a session), print it,
//! exit with the turn's code.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use crate::cli::{Output, RunArgs};
use crate::compiler::{self, render};
use crate::console::{Console, OutputMode, TerminalAsker};
use crate::protocol::Resolution;
use crate::runner::{self, Action, RunOptions, SessionChoice, exit};

pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let mode = match args.output {
        Output::Text => OutputMode::Text,
        Output::Json => OutputMode::Json,
        Output::StreamJson => OutputMode::StreamJson,
    };
    let interactive = mode == OutputMode::Text
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal();
    let mut console = Console::new(
        mode,
        args.quiet,
        std::io::stderr().is_terminal(),
        std::io::stdout().lock(),
        std::io::stderr(),
    );
    let (dir, prompt) = split_positionals(args);
    let base = dir.to_string_lossy().into_owned();
    console.set_command(&format!("eve run {}", shell_word(&base)));
    if !dir.is_dir() {
        console.fail_early(&format!("`{base}` is not a folder"));
        return Ok(ExitCode::from(exit::USAGE));
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
    if (resolution.is_some() || args.compact) && prompt.is_some() {
        console.fail_early("a message cannot go with --answer, --approve, --deny or --compact: send it in the next run");
        return Ok(ExitCode::from(exit::USAGE));
    }
    if (resolution.is_some() || args.compact) && session == SessionChoice::New {
        console.fail_early("--answer, --approve, --deny and --compact work on a session: add --session ID or --continue");
        return Ok(ExitCode::from(exit::USAGE));
    }

    let build = compiler::compile(&dir, &crate::tools::builtin::CATALOG);
    let style = render::Style::for_stderr();
    for d in build.diagnostics.iter() {
        if d.severity == compiler::Severity::Error || !args.quiet {
            eprintln!("{}", render::human(d, &base, style));
        }
    }
    let Some(manifest) = build.manifest else {
        console.fail_early(&format!(
            "could not build `{}`: fix the errors above, then run again",
            compiler::agent_name(&dir)
        ));
        return Ok(ExitCode::from(exit::FAILED));
    };
    compiler::write_manifest(&dir, &manifest)?;

    let action = match (&resolution, args.compact) {
        (Some(resolution), _) => Action::Resume(resolution.clone()),
        (None, true) => Action::Compact,
        (None, false) => match read_prompt(prompt) {
            Ok(prompt) => Action::Turn(prompt),
            Err(message) => {
                console.fail_early(&message);
                return Ok(ExitCode::from(exit::USAGE));
            }
        },
    };
    let options = RunOptions {
        model: args.model.clone(),
        max_steps: args.max_steps,
        workspace: args.workspace.clone(),
        session,
        persist: true,
        approve_all: args.yes,
        asker: interactive.then(|| Arc::new(TerminalAsker) as Arc<dyn crate::harness::Asker>),
    };
    let prepared = match runner::prepare(manifest, &dir, &options) {
        Ok(prepared) => prepared,
        Err(message) => {
            console.fail_early(&message);
            return Ok(ExitCode::from(exit::FAILED));
        }
    };
    if !args.quiet {
        for note in &prepared.repaired {
            eprintln!("note: {note}");
        }
    }
    let session_id = prepared.harness.session_id().to_string();
    match (&action, prepared.harness.pending()) {
        (Action::Resume(resolution), Some(pending)) => {
            let fits = matches!(
                (&pending.kind, resolution),
                (
                    crate::protocol::InputKind::Question { .. },
                    Resolution::Answer { .. }
                ) | (
                    crate::protocol::InputKind::Approval,
                    Resolution::Approved { .. } | Resolution::Denied { .. }
                )
            );
            if !fits {
                let wanted = match pending.kind {
                    crate::protocol::InputKind::Question { .. } => "an answer: use --answer \"…\"",
                    crate::protocol::InputKind::Approval => "an approval: use --approve or --deny",
                };
                console.fail_early(&format!("session {session_id} waits for {wanted}"));
                return Ok(ExitCode::from(exit::USAGE));
            }
        }
        (Action::Compact, Some(_)) => {
            console.fail_early(&format!(
                "session {session_id} is waiting for a person: answer it before compacting"
            ));
            return Ok(ExitCode::from(exit::USAGE));
        }
        (Action::Resume(_), None) => {
            console.fail_early(&format!(
                "session {session_id} is not waiting for an answer or an approval"
            ));
            return Ok(ExitCode::from(exit::USAGE));
        }
        (Action::Turn(_), Some(pending)) => {
            let wanted = match pending.kind {
                crate::protocol::InputKind::Question { .. } => "--answer \"…\"",
                crate::protocol::InputKind::Approval => "--approve or --deny",
            };
            console.fail_early(&format!(
                "session {session_id} is waiting for a person (`{}` needs it): resume it with {wanted} first",
                pending.tool
            ));
            return Ok(ExitCode::from(exit::USAGE));
        }
        _ => {}
    }

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(runner::run(
        prepared.harness,
        prepared.events,
        action,
        |event| console.event(event),
    ));
    console.finish(&outcome);
    Ok(ExitCode::from(runner::exit_code(outcome.end_reason)))
}

/// Quotes a word for a shell command line when it needs it.
fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// `eve run "question"` inside an agent directory means the current folder and that prompt.
fn split_positionals(args: &RunArgs) -> (PathBuf, Option<String>) {
    if args.prompt.is_none() && !args.dir.is_dir() && std::path::Path::new("agent.toml").is_file() {
        return (
            PathBuf::from("."),
            Some(args.dir.to_string_lossy().into_owned()),
        );
    }
    (args.dir.clone(), args.prompt.clone())
}

/// The prompt from the argument, or from stdin for `-` or when stdin is not a terminal.
fn read_prompt(argument: Option<String>) -> Result<String, String> {
    let from_stdin = match &argument {
        Some(text) => text == "-",
        None => !std::io::stdin().is_terminal(),
    };
    let text = if from_stdin {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read the prompt from stdin: {e}"))?;
        text
    } else {
        argument.unwrap_or_default()
    };
    if text.trim().is_empty() {
        return Err(
            "no prompt: pass one after the agent directory (`eve run DIR \"…\"`) or pipe it on stdin"
                .into(),
        );
    }
    Ok(text)
}
