//! `eve run`: build if needed, run a turn (or resume or compact a session), print it,
//! exit with the turn's code.

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use super::out;
use crate::agent::{self, Agent, Changes, Refusal};
use crate::cli::{Output, RunArgs};
use crate::compiler;
use crate::console::{self, OutputMode, TerminalAsker};
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
    let (dir, prompt) = split_positionals(args);
    let base = dir.to_string_lossy().into_owned();
    let mut console = console::renderer(
        mode,
        &console_options(args, &base),
        std::io::stdout().lock(),
        std::io::stderr(),
    );
    let started = start(args, built, mode, &dir, &base, prompt);
    let (agent, action, prepared) = match started {
        Ok(started) => started,
        Err(Stop::Refused(error)) => {
            console.fail_early(&error.to_string());
            return Ok(ExitCode::from(error.exit_code()));
        }
        // Opening the agent failed (its `.eve` cannot be read or written): main says so.
        Err(Stop::Failed(error)) => return Err(error),
    };
    if !args.quiet {
        out::built(&agent, &base);
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
    // Until the check after the run: a killed eve leaves its marker for the next start.
    let guard = agent.guard()?;
    let outcome = runtime.block_on(runner::run(
        prepared.harness,
        prepared.events,
        action,
        |event| {
            guard.observe(event);
            console.event(event)
        },
    ));
    console.finish(&outcome);
    if let Some(change) = guard.finish(&agent.manifest)? {
        eprintln!(
            "note: the agent's definition changed during this run ({}); it takes effect once you have seen it: `eve build {}`",
            change.summary,
            crate::text::shell_word(&base)
        );
    }
    Ok(ExitCode::from(runner::exit_code(outcome.end_reason)))
}

/// Why a run stops before its turn.
enum Stop {
    /// Refused, as the run's output says (a usage error, a build that failed …).
    Refused(RunError),
    /// eve could not open the agent: the error goes to `main`, as any other.
    Failed(anyhow::Error),
}

impl From<RunError> for Stop {
    fn from(error: RunError) -> Stop {
        Stop::Refused(error)
    }
}

/// Everything before the turn runs, in the order its errors are reported: the folder,
/// the flags, the build, the prompt, the session.
fn start(
    args: &RunArgs,
    built: Option<compiler::Build>,
    mode: OutputMode,
    dir: &Path,
    base: &str,
    prompt: Option<String>,
) -> Result<(Agent, Action, runner::Prepared), Stop> {
    if !dir.is_dir() {
        return Err(RunError::Usage(format!("`{base}` is not a folder")).into());
    }
    let (session, resolution) = request(args, prompt.is_some())?;
    let agent = open(args, built, dir, base)?;
    let action = match (resolution, args.compact) {
        (Some(resolution), _) => Action::Resume(resolution),
        (None, true) => Action::Compact,
        (None, false) => Action::Turn(read_prompt(prompt)?),
    };
    let prepared = runner::prepare(agent.manifest.clone(), dir, &options(args, mode, session))?;
    runner::check_action(&prepared, &action)?;
    Ok((agent, action, prepared))
}

fn console_options(args: &RunArgs, base: &str) -> console::Options {
    let stderr_tty = std::io::stderr().is_terminal();
    console::Options {
        quiet: args.quiet,
        hide_reasoning: args.hide_reasoning,
        spinner: stderr_tty,
        command: format!("eve run {}", crate::text::shell_word(base)),
        notes: true,
        out_tty: std::io::stdout().is_terminal(),
        err_tty: stderr_tty,
        color: console::stderr_color(stderr_tty),
    }
}

/// The session and the answer the flags ask for, checked before anything is built.
fn request(
    args: &RunArgs,
    has_prompt: bool,
) -> Result<(SessionChoice, Option<Resolution>), RunError> {
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
    runner::check_flags(&session, resolution.as_ref(), args.compact, has_prompt)?;
    Ok((session, resolution))
}

/// Opens the agent: a build that finds a change waiting starts none of its servers;
/// `--accept-agent-changes` accepts it, and the build after lists them.
fn open(
    args: &RunArgs,
    built: Option<compiler::Build>,
    dir: &Path,
    base: &str,
) -> Result<Agent, Stop> {
    let opening = agent::open(
        dir,
        agent::Options {
            workspace: args.workspace.as_deref(),
            changes: if args.accept_agent_changes {
                Changes::AcceptAndList
            } else {
                Changes::Refuse
            },
            reuse: built,
            ..agent::Options::default()
        },
    )
    .map_err(Stop::Failed)?;
    out::opening(&opening, base, args.quiet, args.verbose, |accepted| {
        format!(
            "note: using the definition the agent changed: {}",
            accepted.change.summary
        )
    });
    opening.agent.map_err(|refusal| {
        let message = out::refusal(&refusal, dir, base, ("", "run again"), |change| {
            format!(
                "the agent's definition changed while it ran ({}): review it with `eve build {}`, or run again with --accept-agent-changes",
                change.summary,
                crate::text::shell_word(base)
            )
        });
        Stop::Refused(match refusal {
            Refusal::DoesNotBuild => RunError::Failed(message),
            Refusal::NotAFolder | Refusal::Changed(_) => RunError::Usage(message),
        })
    })
}

fn options(args: &RunArgs, mode: OutputMode, session: SessionChoice) -> RunOptions {
    let interactive = mode == OutputMode::Text
        && std::io::stdin().is_terminal()
        && std::io::stderr().is_terminal();
    RunOptions {
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
        traceparent: crate::telemetry::traceparent_from_env(),
    }
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
