//! What `eve run` does between building the manifest and printing: choose the model and
//! workspace, set up the harness, run one turn, handle Ctrl-C.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::harness::events::{Emitter, EndReason, Event};
use crate::harness::{self, Harness, TurnOutcome};
use crate::manifest::Manifest;
use crate::providers::{self, retry::RetryPolicy};

/// The choices `eve run` passes on.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// `--model` (or `EVE_MODEL`): overrides agent.toml; a `scripted:` path is relative to the current folder.
    pub model: Option<String>,
    /// `--max-steps`: overrides `[limits] max_steps`.
    pub max_steps: Option<u64>,
    /// `--workspace`: overrides `[workspace] root`.
    pub workspace: Option<PathBuf>,
}

/// Exit codes of `eve run`.
pub mod exit {
    pub const COMPLETED: u8 = 0;
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    pub const LIMIT: u8 = 4;
    /// 128 + SIGINT, as shells report a Ctrl-C.
    pub const ABORTED: u8 = 130;
}

/// The exit code for how a turn ended.
pub fn exit_code(end: EndReason) -> u8 {
    match end {
        EndReason::Completed => exit::COMPLETED,
        EndReason::MaxSteps | EndReason::MaxTokens => exit::LIMIT,
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

/// Sets up a harness for `manifest` built from `agent_dir`; events arrive on the receiver.
pub fn prepare(
    manifest: Manifest,
    agent_dir: &Path,
    options: &RunOptions,
) -> Result<(Harness, UnboundedReceiver<Event>), String> {
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
        agent_dir,
        workspace,
        provider: resolved.provider,
        model_id: resolved.model_id,
        model: resolved.reference,
        max_steps,
        retry: RetryPolicy::from_env(),
        hidden_env,
        depth: 0,
    };
    let (emitter, rx) = Emitter::channel();
    let harness = Harness::new(config, emitter)?;
    Ok((harness, rx))
}

/// Runs one turn of a new session, showing each event with `on_event` as it happens.
/// The first Ctrl-C aborts the turn cleanly; a second one exits at once.
pub async fn run_turn(
    mut harness: Harness,
    mut events: UnboundedReceiver<Event>,
    prompt: String,
    mut on_event: impl FnMut(&Event),
) -> TurnOutcome {
    let cancel = CancellationToken::new();
    let watcher = watch_interrupts(cancel.clone());
    let turn = tokio::spawn(async move {
        harness.start();
        let outcome = harness.run_turn(prompt, cancel).await;
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
        Err(e) => TurnOutcome {
            turn_id: String::new(),
            end_reason: EndReason::Error,
            result: String::new(),
            error: Some(format!("the turn stopped unexpectedly: {e}")),
            steps: 0,
            usage: Default::default(),
        },
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
