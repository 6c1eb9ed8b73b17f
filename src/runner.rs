//! What `eve run` does between building the manifest and printing: choose the model and
//! workspace, set up the harness, run one turn, handle Ctrl-C.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::harness::Emitter;
use crate::harness::{self, Asker, Harness, TurnOutcome};
use crate::manifest::Manifest;
use crate::protocol::{EndReason, Event, Resolution};
use crate::providers::{self, retry::RetryPolicy};
use crate::session::replay::{self, Replayed};
use crate::session::{SessionLog, store};

/// Which session a run works in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum SessionChoice {
    /// A new session.
    #[default]
    New,
    /// The latest session of the agent (`--continue`).
    Latest,
    /// A given session, by id or unique prefix (`--session`).
    Id(String),
}

/// What a run does in its session.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// A new turn answering this message.
    Turn(String),
    /// Resume the parked turn with this answer or decision.
    Resume(Resolution),
    /// Compact the session's history now.
    Compact,
}

/// A harness ready to run, with the receiving end of its events.
pub struct Prepared {
    pub harness: Harness,
    pub events: UnboundedReceiver<Event>,
    /// What opening the log repaired, to tell the person.
    pub repaired: Vec<String>,
}

/// The choices `eve run` passes on.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--model` (or `EVE_MODEL`): overrides agent.toml; a `scripted:` path is relative to the current folder.
    pub model: Option<String>,
    /// `--max-steps`: overrides `[limits] max_steps`.
    pub max_steps: Option<u64>,
    /// `--workspace`: overrides `[workspace] root`.
    pub workspace: Option<PathBuf>,
    pub session: SessionChoice,
    /// Log the session under `.eve/sessions` (every `eve run` does; benchmarks may not).
    pub persist: bool,
    /// `--yes`.
    pub approve_all: bool,
    /// A person at a terminal who can answer questions and approve calls.
    pub asker: Option<Arc<dyn Asker>>,
}

/// Exit codes of `eve run`.
pub mod exit {
    pub const COMPLETED: u8 = 0;
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const LIMIT: u8 = 4;
    /// The turn is parked on a question or an approval nobody could give here.
    pub const WAITING: u8 = 3;
    /// 128 + SIGINT, as shells report a Ctrl-C.
    pub const ABORTED: u8 = 130;
}

/// The exit code for how a turn ended.
pub fn exit_code(end: EndReason) -> u8 {
    match end {
        EndReason::Completed => exit::COMPLETED,
        EndReason::MaxSteps | EndReason::MaxTokens | EndReason::MaxInputTokens => exit::LIMIT,
        EndReason::Waiting => exit::WAITING,
        EndReason::Aborted => exit::ABORTED,
        EndReason::Error | EndReason::Interrupted => exit::FAILED,
    }
}

/// Resolves the workspace: `--workspace`, else `[workspace] root`, relative to the current folder.
pub fn workspace(manifest: &Manifest, option: Option<&Path>) -> Result<PathBuf, String> {
    let root = option.map_or_else(
        || PathBuf::from(&manifest.agent.workspace.root),
        Path::to_path_buf,
    );
    let canonical = root
        .canonicalize()
        .map_err(|e| format!("workspace `{}`: {e}", root.display()))?;
    if !canonical.is_dir() {
        return Err(format!("workspace `{}` is not a folder", root.display()));
    }
    Ok(canonical)
}

/// Sets up a harness for `manifest` built from `agent_dir`, in a new or an existing
/// session; events arrive on the receiver.
pub fn prepare(
    manifest: Manifest,
    agent_dir: &Path,
    options: &RunOptions,
) -> Result<Prepared, String> {
    let agent_dir = agent_dir
        .canonicalize()
        .map_err(|e| format!("`{}`: {e}", agent_dir.display()))?;
    let workspace = workspace(&manifest, options.workspace.as_deref())?;
    let (reference, scripted_base) = match &options.model {
        Some(model) => (
            model.clone(),
            std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?,
        ),
        None => (manifest.agent.model.clone(), agent_dir.clone()),
    };
    let resolved = providers::resolve(
        &reference,
        &manifest.agent.providers,
        &scripted_base,
        &|name| std::env::var(name).ok(),
    )?;
    let max_steps = options.max_steps.unwrap_or(manifest.agent.limits.max_steps);
    let hidden_env = providers::key_variables(&manifest);
    let config = harness::Config {
        manifest: Arc::new(manifest),
        agent_dir: agent_dir.clone(),
        workspace,
        provider: resolved.provider,
        model_id: resolved.model_id,
        model: resolved.reference,
        max_steps,
        retry: RetryPolicy::from_env(),
        hidden_env,
        depth: 0,
        sessions_dir: options.persist.then(|| store::dir(&agent_dir)),
        asker: options.asker.clone(),
        approve_all: options.approve_all,
    };
    let (emitter, rx) = Emitter::channel();
    let id = match &options.session {
        SessionChoice::New => {
            let harness = Harness::new(config, emitter)?;
            return Ok(Prepared {
                harness,
                events: rx,
                repaired: Vec::new(),
            });
        }
        SessionChoice::Latest => store::latest(&agent_dir).ok_or_else(|| {
            format!(
                "`{}` has no session to continue yet: run it without --continue first",
                manifest_name(&config)
            )
        })?,
        SessionChoice::Id(id) => store::find(&agent_dir, id)?,
    };
    let (replayed, repaired) = open_session(&store::path(&agent_dir, &id))?;
    let harness = Harness::resume(config, emitter, replayed)?;
    Ok(Prepared {
        harness,
        events: rx,
        repaired,
    })
}

fn manifest_name(config: &harness::Config) -> String {
    config.manifest.agent.name.clone()
}

/// Reads a session log and repairs it: a torn last line is dropped, a turn a crash
/// left open is closed. Returns the session and what was repaired.
pub fn open_session(path: &Path) -> Result<(Replayed, Vec<String>), String> {
    // Lock first: a torn last line is cut, and that must never be a line another
    // eve process is writing right now.
    let log = SessionLog::open(path).map_err(|e| format!("`{}`: {e}", path.display()))?;
    let mut replayed = replay::load(path)?;
    if replayed.session_id.is_empty() {
        return Err(format!(
            "`{}` holds no session (it is empty or was cut before its first event)",
            path.display()
        ));
    }
    let mut repaired = Vec::new();
    if replayed.dropped_torn_line {
        repaired.push("dropped a torn last line of the session log".to_string());
    }
    let fixes = replay::repair(&replayed);
    if !fixes.is_empty() {
        for record in &fixes {
            log.append(record);
        }
        log.sync();
        if let Some(error) = log.error() {
            return Err(error);
        }
        replay::apply_all(&mut replayed, &fixes);
        repaired.push("closed the turn that was interrupted when eve stopped".to_string());
    }
    Ok((replayed, repaired))
}

/// Runs one turn of a new session (the common case of [`run`]).
pub async fn run_turn(
    harness: Harness,
    events: UnboundedReceiver<Event>,
    prompt: String,
    on_event: impl FnMut(&Event),
) -> TurnOutcome {
    run(harness, events, Action::Turn(prompt), on_event).await
}

/// Does `action` in the harness's session, showing each event with `on_event` as it
/// happens. The first Ctrl-C aborts the turn cleanly; a second one exits at once.
pub async fn run(
    mut harness: Harness,
    mut events: UnboundedReceiver<Event>,
    action: Action,
    mut on_event: impl FnMut(&Event),
) -> TurnOutcome {
    let cancel = CancellationToken::new();
    let watcher = watch_interrupts(cancel.clone());
    let turn = tokio::spawn(async move {
        harness.start();
        let outcome = match action {
            Action::Turn(prompt) => harness.run_turn(prompt, cancel).await,
            Action::Resume(resolution) => match harness.resume_turn(resolution, cancel).await {
                Ok(outcome) => outcome,
                Err(error) => failed(error),
            },
            Action::Compact => match harness.compact_now().await {
                Ok(()) => TurnOutcome {
                    turn_id: String::new(),
                    end_reason: EndReason::Completed,
                    result: String::new(),
                    error: None,
                    steps: 0,
                    usage: Default::default(),
                    pending: None,
                },
                Err(error) => failed(error),
            },
        };
        harness.finish(&outcome);
        outcome
    });
    while let Some(event) = events.recv().await {
        on_event(&event);
    }
    if let Some(watcher) = watcher {
        watcher.abort();
    }
    match turn.await {
        Ok(outcome) => outcome,
        Err(e) => failed(format!("the turn stopped unexpectedly: {e}")),
    }
}

fn failed(error: String) -> TurnOutcome {
    TurnOutcome {
        turn_id: String::new(),
        end_reason: EndReason::Error,
        result: String::new(),
        error: Some(error),
        steps: 0,
        usage: Default::default(),
        pending: None,
    }
}

/// Cancels `cancel` at the first Ctrl-C and exits at the second. The handler is installed
/// before this returns, so a Ctrl-C that comes right after is never lost.
fn watch_interrupts(cancel: CancellationToken) -> Option<tokio::task::JoinHandle<()>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupts = signal(SignalKind::interrupt()).ok()?;
        Some(tokio::spawn(async move {
            if interrupts.recv().await.is_some() {
                cancel.cancel();
                if interrupts.recv().await.is_some() {
                    std::process::exit(i32::from(exit::ABORTED));
                }
            }
        }))
    }
    #[cfg(not(unix))]
    {
        Some(tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                cancel.cancel();
                if tokio::signal::ctrl_c().await.is_ok() {
                    std::process::exit(i32::from(exit::ABORTED));
                }
            }
        }))
    }
}
