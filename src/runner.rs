//! What `eve run` and `eve dev` do between building the manifest and printing: check the
//! request, choose the model and workspace, open the session, run one turn, handle Ctrl-C.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::harness::{Asker, Emitter, Harness, Setup};
use crate::manifest::{Manifest, SandboxMode};
use crate::protocol::{EndReason, Event, InputKind, Journal, Resolution, TurnOutcome};
use crate::providers;
use crate::sandbox::Support;
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
    /// A new session with this id (a server names a session before it opens it).
    Create(String),
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

/// Why a run could not go ahead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The arguments do not make sense together, or do not fit the session.
    #[error("{0}")]
    Usage(String),
    /// Something needed for the run failed (the model, the workspace, the session log).
    #[error("{0}")]
    Failed(String),
}

impl RunError {
    /// The exit code for it.
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Usage(_) => exit::USAGE,
            RunError::Failed(_) => exit::FAILED,
        }
    }
}

/// A harness ready to run, with the receiving end of its events.
pub struct Prepared {
    pub harness: Harness,
    pub events: UnboundedReceiver<Event>,
    /// What opening the log repaired, to tell the person.
    pub repaired: Vec<String>,
    /// What the sandbox cannot enforce on this machine, to tell the person once.
    pub warnings: Vec<String>,
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
    /// `--sandbox`: overrides `[sandbox] mode`.
    pub sandbox_mode: Option<SandboxMode>,
    /// `--no-network`: turns `[sandbox] network` off.
    pub no_network: bool,
    /// Servers already running for this manifest (`eve dev` keeps them across turns);
    /// `None`: the run starts its own and stops them at its end.
    pub connections: Option<Arc<crate::connections::Connections>>,
    /// Variables hidden from the processes tools start, besides the provider keys.
    pub hidden_env: Vec<String>,
    /// A sandbox made once for every session of this manifest (`eve serve`: its launcher
    /// and temp folder are kept across turns); `None`: each session makes its own.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
    /// The caller's W3C trace context (`TRACEPARENT`, a served request's `traceparent`):
    /// the turn's spans are its children when telemetry is on.
    pub traceparent: Option<String>,
}

/// Exit codes of `eve run`: the one table.
pub mod exit {
    pub const COMPLETED: u8 = 0;
    pub const FAILED: u8 = 1;
    pub const USAGE: u8 = 2;
    /// The turn is parked on a question or an approval nobody could give here.
    pub const WAITING: u8 = 3;
    pub const LIMIT: u8 = 4;
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
        EndReason::Error | EndReason::Interrupted | EndReason::Refused => exit::FAILED,
    }
}

/// Checks the flags of a run before anything is built: a message cannot go with an
/// answer or `--compact`, and those need an existing session.
pub fn check_flags(
    session: &SessionChoice,
    resolution: Option<&Resolution>,
    compact: bool,
    has_message: bool,
) -> Result<(), RunError> {
    if (resolution.is_some() || compact) && has_message {
        return Err(RunError::Usage(
            "a message cannot go with --answer, --approve, --deny or --compact: send it in the next run".into(),
        ));
    }
    if (resolution.is_some() || compact) && *session == SessionChoice::New {
        return Err(RunError::Usage(
            "--answer, --approve, --deny and --compact work on a session: add --session ID or --continue".into(),
        ));
    }
    if let SessionChoice::Id(id) = session
        && id.trim().is_empty()
    {
        return Err(RunError::Usage("--session needs a session id".into()));
    }
    Ok(())
}

/// Checks that `action` fits the session: an answer for a question, a decision for an
/// approval, no new message or compaction while a person is awaited.
pub fn check_action(prepared: &Prepared, action: &Action) -> Result<(), RunError> {
    let session_id = prepared.harness.session_id();
    match (action, prepared.harness.pending()) {
        (Action::Resume(resolution), Some(pending)) => {
            let fits = matches!(
                (&pending.kind, resolution),
                (InputKind::Question { .. }, Resolution::Answer { .. })
                    | (
                        InputKind::Approval,
                        Resolution::Approved { .. } | Resolution::Denied { .. }
                    )
            );
            if fits {
                return Ok(());
            }
            let wanted = match pending.kind {
                InputKind::Question { .. } => "an answer: use --answer \"…\"",
                InputKind::Approval => "an approval: use --approve or --deny",
            };
            Err(RunError::Usage(format!(
                "session {session_id} waits for {wanted}"
            )))
        }
        (Action::Compact, Some(_)) => Err(RunError::Usage(format!(
            "session {session_id} is waiting for a person: answer it before compacting"
        ))),
        (Action::Resume(_), None) => Err(RunError::Usage(format!(
            "session {session_id} is not waiting for an answer or an approval"
        ))),
        (Action::Turn(_), Some(pending)) => {
            let wanted = match pending.kind {
                InputKind::Question { .. } => "--answer \"…\"",
                InputKind::Approval => "--approve or --deny",
            };
            Err(RunError::Usage(format!(
                "session {session_id} is waiting for a person (`{}` needs it): resume it with {wanted} first",
                pending.tool
            )))
        }
        _ => Ok(()),
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
    manifest: impl Into<Arc<Manifest>>,
    agent_dir: &Path,
    options: &RunOptions,
) -> Result<Prepared, RunError> {
    prepare_with(manifest, agent_dir, options, &|log, _| Arc::new(log))
}

/// Makes the journal of a session from its open log and, for an existing session,
/// what the log held.
pub type JournalFor<'a> = &'a dyn Fn(SessionLog, Option<&Replayed>) -> Arc<dyn Journal>;

/// Like [`prepare`], with the session's journal made by `journal` (a server wraps the
/// log to feed its live readers).
pub fn prepare_with(
    manifest: impl Into<Arc<Manifest>>,
    agent_dir: &Path,
    options: &RunOptions,
    journal: JournalFor<'_>,
) -> Result<Prepared, RunError> {
    let (mut setup, warnings) = session_setup(manifest, agent_dir, options)?;
    let agent_dir = setup.agent_dir.clone();
    let agent = setup.manifest.agent.name.clone();
    let (emitter, rx) = Emitter::channel();
    let failed = |e: String| RunError::Failed(e);
    let id = match &options.session {
        SessionChoice::New | SessionChoice::Create(_) => {
            let id = match &options.session {
                SessionChoice::Create(id) => id.clone(),
                _ => crate::ids::new_id("ses"),
            };
            if options.persist {
                let path = store::path(&agent_dir, &id);
                let log = SessionLog::open(&agent_dir, &id).map_err(|e| {
                    failed(format!(
                        "cannot open the session log `{}`: {e}",
                        path.display()
                    ))
                })?;
                setup.journal = Some(journal(log, None));
                setup.provider.bind_session(&agent_dir, &id);
            }
            let harness = Harness::new(setup, emitter, id).map_err(|e| failed(e.into()))?;
            return Ok(Prepared {
                harness,
                events: rx,
                repaired: Vec::new(),
                warnings,
            });
        }
        SessionChoice::Latest => store::latest(&agent_dir)
            .map_err(|e| RunError::Failed(e.to_string()))?
            .ok_or_else(|| {
                RunError::Failed(format!(
                    "`{agent}` has no session to continue yet: run it without --continue first"
                ))
            })?,
        SessionChoice::Id(id) => store::find(&agent_dir, id).map_err(RunError::Failed)?,
    };
    let (log, replayed, repaired) = open_session(&agent_dir, &id).map_err(failed)?;
    setup.journal = Some(journal(log, Some(&replayed)));
    setup.provider.bind_session(&agent_dir, &id);
    let harness =
        Harness::resume(setup, emitter, replayed.snapshot()).map_err(|e| failed(e.into()))?;
    Ok(Prepared {
        harness,
        events: rx,
        repaired,
        warnings,
    })
}

/// What every session's harness is built from: the workspace, the model, the sandbox,
/// the hidden variables and the connections, as `options` ask.
fn session_setup(
    manifest: impl Into<Arc<Manifest>>,
    agent_dir: &Path,
    options: &RunOptions,
) -> Result<(Setup, Vec<String>), RunError> {
    let manifest: Arc<Manifest> = manifest.into();
    let agent_dir = agent_dir
        .canonicalize()
        .map_err(|e| RunError::Failed(format!("`{}`: {e}", agent_dir.display())))?;
    let workspace = workspace(&manifest, options.workspace.as_deref()).map_err(RunError::Failed)?;
    let (reference, scripted_base) = match &options.model {
        Some(model) => (
            model.clone(),
            std::env::current_dir()
                .map_err(|e| RunError::Failed(format!("cannot read the current folder: {e}")))?,
        ),
        None => (manifest.agent.model.clone(), agent_dir.clone()),
    };
    let resolved = providers::resolve(
        &reference,
        &manifest.agent.providers,
        &scripted_base,
        &crate::secrets::var,
    )
    .map_err(RunError::Failed)?;
    session_setup_with(manifest, agent_dir, workspace, resolved, options).map_err(RunError::Failed)
}

/// The one assembly of a top-level session's [`Setup`] (`eve run`, `dev`, `serve` and
/// each eval case): `manifest` from `agent_dir` (absolute) on `model`, acting in
/// `workspace` (absolute), confined as the manifest and `options` say, with the
/// agent's servers (`options.connections`, or new ones in this workspace). Returns the
/// sandbox's warnings too.
pub fn session_setup_with(
    manifest: Arc<Manifest>,
    agent_dir: PathBuf,
    workspace: PathBuf,
    model: providers::Resolved,
    options: &RunOptions,
) -> Result<(Setup, Vec<String>), String> {
    let (sandbox, warnings) = match &options.sandbox {
        Some(shared) => (Some(shared.clone()), shared.warnings()),
        None => crate::sandbox::for_session(
            &manifest,
            &agent_dir,
            &workspace,
            options.sandbox_mode,
            options.no_network,
            &Support::detect(),
        )?,
    };
    let connections = options.connections.clone().or_else(|| {
        crate::connections::Connections::new(
            &manifest,
            &agent_dir,
            &workspace,
            sandbox.as_ref().and_then(|s| s.recipe.clone()),
        )
    });
    let max_steps = options.max_steps.unwrap_or(manifest.agent.limits.max_steps);
    let mut warnings = warnings;
    let hidden: Vec<String> = crate::providers::key_variables(&manifest);
    let (observer, lines) = crate::telemetry::observer(crate::telemetry::Session {
        manifest: &manifest,
        model: &model.reference,
        traceparent: options.traceparent.as_deref(),
        secret_variables: &hidden,
    });
    warnings.extend(lines);
    let setup = Setup::new(manifest, agent_dir, workspace, model)
        .with_observer(observer)
        .with_env(crate::harness::Env::process())
        .with_retry(providers::retry::RetryPolicy::from_env())
        .with_max_steps(max_steps)
        .hiding(options.hidden_env.iter().cloned())
        .with_person(options.asker.clone(), options.approve_all)
        .with_sandbox(sandbox)
        .with_connections(connections);
    Ok((setup, warnings))
}

/// A harness for session `id` whose records go to `journal` rather than a log: a
/// durable engine keeps the session's state itself and rebuilds the session from
/// `snapshot` (`None`: a new session).
pub fn prepare_journaled(
    manifest: impl Into<Arc<Manifest>>,
    agent_dir: &Path,
    options: &RunOptions,
    id: &str,
    journal: Arc<dyn Journal>,
    snapshot: Option<crate::protocol::Snapshot>,
) -> Result<(Harness, Vec<String>), RunError> {
    let (mut setup, warnings) = session_setup(manifest, agent_dir, options)?;
    setup.journal = Some(journal);
    // A scripted model keeps its place in the agent directory, which the workers of
    // one machine share (best effort, as for a logged session).
    setup.provider.bind_session(&setup.agent_dir, id);
    let (emitter, _events) = Emitter::channel();
    let harness = match snapshot {
        Some(snapshot) => Harness::resume(setup, emitter, snapshot),
        None => Harness::new(setup, emitter, id.to_string()),
    }
    .map_err(|e| RunError::Failed(e.into()))?;
    Ok((harness, warnings))
}

/// Opens a session log (taking its lock) and repairs it: a torn last line is dropped, a
/// turn a crash left open is closed. Returns the open log, the session and what was repaired.
pub fn open_session(
    agent_dir: &Path,
    id: &str,
) -> Result<(SessionLog, Replayed, Vec<String>), String> {
    let path = &store::path(agent_dir, id);
    // Lock first: a torn last line is cut, and that must never be a line another
    // eve process is writing right now.
    let log = SessionLog::open(agent_dir, id).map_err(|e| format!("`{}`: {e}", path.display()))?;
    let mut replayed = log.replay()?;
    if replayed.session_id.is_empty() {
        return Err(format!(
            "`{}` holds no session (it is empty or was cut before its first event)",
            path.display()
        ));
    }
    log.adopt_length()
        .map_err(|e| format!("`{}`: {e}", path.display()))?;
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
    Ok((log, replayed, repaired))
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
        let outcome = match harness.start().await {
            Err(error) => TurnOutcome::failed(error),
            Ok(()) => match action {
                Action::Turn(prompt) => harness.run_turn(prompt, cancel).await,
                Action::Resume(resolution) => harness
                    .resume_turn(resolution, cancel)
                    .await
                    .unwrap_or_else(TurnOutcome::failed),
                Action::Compact => match harness.compact_now().await {
                    Ok(()) => TurnOutcome {
                        end_reason: EndReason::Completed,
                        error: None,
                        ..TurnOutcome::failed(String::new())
                    },
                    Err(error) => TurnOutcome::failed(error),
                },
            },
        };
        harness.finish(&outcome);
        harness.stop().await;
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
        Err(e) => TurnOutcome::failed(format!("the turn stopped unexpectedly: {e}")),
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Every top-level session — `eve run`, `dev`, `serve` and each eval case — is
    /// assembled by `session_setup_with`: the agent's provider keys and the variables
    /// its command names are hidden from the processes tools start, whoever calls it.
    #[test]
    fn a_session_hides_the_provider_keys_and_the_variables_its_command_names() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        std::fs::write(
            dir.join("agent.toml"),
            "model = \"openai/gpt-4.1\"\n[sandbox]\nmode = \"off\"\n",
        )
        .unwrap();
        std::fs::write(dir.join("instructions.md"), "Hi.").unwrap();
        std::fs::write(dir.join("replies.yaml"), "- text: Hi.\n").unwrap();
        let manifest = Arc::new(
            crate::compiler::compile(&dir, &crate::tools::builtin::CATALOG)
                .manifest
                .unwrap(),
        );
        let model = providers::resolve(
            "scripted:replies.yaml",
            &manifest.agent.providers,
            &dir,
            &|_| None,
        )
        .unwrap();
        let options = RunOptions {
            hidden_env: vec!["EVE_SERVE_TOKEN".into()],
            max_steps: Some(3),
            ..RunOptions::default()
        };
        let bare = Setup::new(manifest.clone(), dir.clone(), dir.clone(), model.clone());
        assert_eq!(
            bare.env.var("PATH"),
            None,
            "the harness reads no environment of its own"
        );
        let (setup, _) =
            session_setup_with(manifest, dir.clone(), dir.clone(), model, &options).unwrap();
        assert!(
            setup.env.var("PATH").is_some(),
            "a run's instructions read the process's environment"
        );
        assert!(setup.hidden_env.iter().any(|v| v == "OPENAI_API_KEY"));
        assert!(setup.hidden_env.iter().any(|v| v == "EVE_SERVE_TOKEN"));
        assert_eq!(setup.max_steps, 3);
        assert_eq!(setup.depth, 0);
        assert!(setup.sandbox.is_none(), "mode = \"off\"");
    }
}
