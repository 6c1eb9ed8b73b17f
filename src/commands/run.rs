//! `eve run`: build if needed, run one turn, print it, exit with the turn's code.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;
use std::process::ExitCode;

use crate::cli::{Output, RunArgs};
use crate::compiler::{self, render};
use crate::console::{Console, OutputMode};
use crate::runner::{self, RunOptions, exit};

pub fn run(args: &RunArgs) -> anyhow::Result<ExitCode> {
    let mode = match args.output {
        Output::Text => OutputMode::Text,
        Output::Json => OutputMode::Json,
        Output::StreamJson => OutputMode::StreamJson,
    };
    let mut console = Console::new(
        mode,
        args.quiet,
        std::io::stderr().is_terminal(),
        std::io::stdout().lock(),
        std::io::stderr(),
    );
    let (dir, prompt) = split_positionals(args);
    let base = dir.to_string_lossy().into_owned();
    if !dir.is_dir() {
        console.fail_early(&format!("`{base}` is not a folder"));
        return Ok(ExitCode::from(exit::USAGE));
    }

    let build = compiler::compile(&dir);
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

    let prompt = match read_prompt(prompt) {
        Ok(prompt) => prompt,
        Err(message) => {
            console.fail_early(&message);
            return Ok(ExitCode::from(exit::USAGE));
        }
    };
    let options = RunOptions {
        model: args.model.clone(),
        max_steps: args.max_steps,
        workspace: args.workspace.clone(),
    };
    let (harness, events) = match runner::prepare(manifest, &dir, &options) {
        Ok(prepared) => prepared,
        Err(message) => {
            console.fail_early(&message);
            return Ok(ExitCode::from(exit::FAILED));
        }
    };

    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let outcome = runtime.block_on(runner::run_turn(harness, events, prompt, |event| {
        console.event(event)
    }));
    console.finish(&outcome);
    Ok(ExitCode::from(runner::exit_code(outcome.end_reason)))
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
        return Err("no prompt: pass one after the agent directory (`eve run DIR \"…\"`) or pipe it on stdin".into());
    }
    Ok(text)
}
