//! `eve serve`: the agent as an HTTP service with the session API of Vercel's eve
//! (`/eve/v1/…`) and a chat page, many sessions in one process.
//!
//! Sessions are the same JSONL logs under `.eve/sessions/` that `eve run` writes. A
//! session runs one turn at a time, as a task that reopens it from its log, drives the
//! harness and closes it again ([`jobs`]); between turns a session is one entry of the
//! [`index::Index`]. At most `--max-turns` turns run at once; the rest wait. Readers of
//! a session's stream get its log, then the live lines of a running turn ([`live`]).

mod api;
mod changes;
mod error;
mod guard;
mod index;
mod jobs;
mod keys;
mod live;
mod page;
pub mod restate;
mod routes;
mod state;
mod stream;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::manifest::Manifest;
use crate::runner::{self, RunOptions};
use crate::session::{show, store};

pub use keys::Token;
pub use state::{Access, Config, State, TOKEN_VAR, check_addr};

/// The keys of a server listening at `local`, and how the person gets in.
fn access(token: &Token, local: SocketAddr) -> Result<(keys::Keys, String), String> {
    let (keys, code) = keys::Keys::new(token, local.port())?;
    let host = match local.ip() {
        ip if ip.is_unspecified() => {
            SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), local.port())
        }
        _ => local,
    };
    Ok((keys, format!("http://{host}/?login={code}")))
}

/// Serves `manifest`, built from `agent_dir`, until SIGTERM or Ctrl-C. `ready` gets the
/// address it listens on once it does, and how the person gets in. `running` is the
/// server's marker: it ends with the last check of the agent's definition, unless a
/// check failed.
pub async fn serve(
    manifest: Manifest,
    agent_dir: &Path,
    config: Config,
    running: crate::review::Running,
    ready: impl FnOnce(SocketAddr, &[String], &Access<'_>),
) -> Result<(), String> {
    check_addr(&config.addr, config.token.chosen)?;
    let agent_dir = agent_dir
        .canonicalize()
        .map_err(|e| format!("`{}`: {e}", agent_dir.display()))?;
    let (info, warnings, sandbox) = describe(&manifest, &agent_dir, &config.options)?;
    // One sandbox for every turn: its launcher and temp folder are made at the first
    // process and kept (not made and removed each turn).
    let mut config = config;
    config.options.sandbox = sandbox;
    let listener = tokio::net::TcpListener::bind(config.addr)
        .await
        .map_err(|e| format!("cannot listen on {}: {e}", config.addr))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {}: {e}", config.addr))?;
    let (keys, link) = access(&config.token, local)?;
    let state = Arc::new(State {
        keys,
        turns: Arc::new(Semaphore::new(config.max_turns.max(1))),
        readers: Arc::new(Semaphore::new(config.max_readers)),
        agent_dir,
        manifest: Arc::new(manifest),
        info,
        index: index::Index::default(),
        shutdown: CancellationToken::new(),
        abort: CancellationToken::new(),
        tasks: TaskTracker::new(),
        changes: Arc::new(changes::Changes::new(running)),
        restate: None,
        config,
    });
    let recovered = state.clone();
    let notes = tokio::task::spawn_blocking(move || recover(&recovered))
        .await
        .map_err(|e| format!("reading the sessions stopped unexpectedly: {e}"))??;
    for note in notes {
        eprintln!("note: {note}");
    }
    watch_signals(state.shutdown.clone())?;
    let made = (!state.config.token.chosen).then(|| state.config.token.reveal());
    ready(local, &warnings, &Access { link, made });
    let checker = state.changes.spawn(
        state.agent_dir.clone(),
        state.manifest.clone(),
        state.shutdown.clone(),
    );
    let app = routes::router(state.clone());
    let shutdown = state.shutdown.clone();
    // Stream lines go out as they are made, not held back to fill a packet.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let server = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await
    });
    state.shutdown.cancelled().await;
    eprintln!("eve serve: shutting down: no new requests; running steps may finish");
    state.tasks.close();
    if tokio::time::timeout(state.config.grace, state.tasks.wait())
        .await
        .is_err()
    {
        eprintln!(
            "eve serve: the grace period ({} s) is over: cancelling the steps still running",
            state.config.grace.as_secs()
        );
        state.abort.cancel();
        state.tasks.wait().await;
    }
    // The last turns may have ended after the checker stopped.
    let _ = checker.await;
    state.changes.check(&state.agent_dir, &state.manifest).await;
    state.changes.end();
    match server.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("the server stopped: {e}")),
        Err(e) => Err(format!("the server stopped unexpectedly: {e}")),
    }
}

/// Cancels `shutdown` at the first SIGTERM or Ctrl-C; a second one exits at once.
pub(crate) fn watch_signals(shutdown: CancellationToken) -> Result<(), String> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate()).map_err(|e| e.to_string())?;
        let mut int = signal(SignalKind::interrupt()).map_err(|e| e.to_string())?;
        tokio::spawn(async move {
            for round in 0..2 {
                tokio::select! {
                    _ = term.recv() => {}
                    _ = int.recv() => {}
                }
                if round == 0 {
                    shutdown.cancel();
                } else {
                    std::process::exit(i32::from(runner::exit::ABORTED));
                }
            }
        });
    }
    #[cfg(not(unix))]
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            shutdown.cancel();
        }
    });
    Ok(())
}

/// Indexes every session on disk, repairing each as `eve run` would (a turn a crash
/// left open is closed as `interrupted`). Returns what it repaired or could not read;
/// a sessions folder eve cannot keep its state in (a link) is an error.
fn recover(state: &State) -> Result<Vec<String>, String> {
    let mut notes = Vec::new();
    for id in store::list(&state.agent_dir).map_err(|e| e.to_string())? {
        let path = store::path(&state.agent_dir, &id);
        let read = match runner::open_session(&state.agent_dir, &id) {
            Ok((log, replayed, repaired)) => {
                for fix in repaired {
                    notes.push(format!("session {id}: {fix}"));
                }
                drop(log);
                Ok(replayed)
            }
            // Held by another eve process: read it as it stands.
            Err(e) if crate::session::in_use(&path) => show::read(&path).map_err(|_| e),
            Err(e) => Err(e),
        };
        match read {
            Ok(replayed) => {
                let events = show::events(&replayed).len() as u64;
                let title = replayed
                    .turns
                    .first()
                    .map(|t| {
                        let line = t.input.split_whitespace().collect::<Vec<_>>().join(" ");
                        crate::text::shorten(&line, 80)
                    })
                    .unwrap_or_default();
                let pending = replayed
                    .waiting
                    .as_ref()
                    .map(|w| api::Pending::of(&w.request));
                let entry = index::Entry::idle(events, title, pending);
                state.index.insert(id, entry, usize::MAX);
            }
            Err(e) => notes.push(format!("session {id} is not served: {e}")),
        }
    }
    Ok(notes)
}

/// What `eve serve` learns of the agent at start: the body of `GET /eve/v1/info`, what
/// the sandbox cannot enforce here, and the sandbox the turns share.
type Described = (Value, Vec<String>, Option<Arc<crate::sandbox::Sandbox>>);

/// The body of `GET /eve/v1/info`, what the sandbox cannot enforce here, and the sandbox
/// the turns share. Resolving the model here makes a missing key an error at start, not
/// at the first turn.
pub(crate) fn describe(
    manifest: &Manifest,
    agent_dir: &Path,
    options: &RunOptions,
) -> Result<Described, String> {
    let workspace = runner::workspace(manifest, options.workspace.as_deref())?;
    let (reference, base) = match &options.model {
        Some(model) => (
            model.clone(),
            std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?,
        ),
        None => (manifest.agent.model.clone(), agent_dir.to_path_buf()),
    };
    let resolved = crate::providers::resolve(
        &reference,
        &manifest.agent.providers,
        &base,
        &crate::secrets::var,
    )?;
    let (sandbox, warnings) = crate::sandbox::for_session(
        manifest,
        agent_dir,
        &workspace,
        options.sandbox_mode,
        options.no_network,
        &crate::sandbox::Support::detect(),
    )?;
    let hosted = resolved.provider.capabilities().hosted_web_search;
    let withheld = sandbox.as_ref().and_then(|s| s.withheld.clone());
    let withheld = withheld.as_deref();
    // The connections' tools as the build listed them: their servers start with each
    // turn, so none runs now (nothing is started here).
    // Once, at start: the registry shares the manifest its tools read.
    let shared = Arc::new(manifest.clone());
    let registry = match crate::connections::Connections::new(manifest, agent_dir, &workspace, None)
    {
        Some(connections) => {
            let (external, missing) = connections.external();
            crate::tools::Registry::with_external(
                &shared, hosted, true, withheld, external, missing,
            )
        }
        None => crate::tools::Registry::for_provider(&shared, hosted, true, withheld),
    };
    let named = |name: &str, description: &str| json!({"name": name, "description": description});
    let info = json!({
        "ok": true,
        "agent": {
            "name": manifest.agent.name,
            "description": manifest.agent.description,
            "model": resolved.reference,
            "mode": manifest.agent.mode,
        },
        "tools": registry.specs().iter().map(|t| json!({
            "name": t.name,
            "description": t.description,
            "parameters": t.input_schema,
        })).collect::<Vec<_>>(),
        "unavailableTools": registry.unavailable(),
        "skills": manifest.skills.iter().map(|s| named(&s.name, &s.description)).collect::<Vec<_>>(),
        "subagents": manifest.subagents.iter().map(|s| named(&s.name, &s.description)).collect::<Vec<_>>(),
        "connections": manifest.connections.iter().map(|c| {
            // Only what a client needs to know of a server: never its command, URL or
            // headers (which may name the variables its secrets are in).
            let prefix = format!("{}__", c.name);
            json!({
                "name": c.name,
                "description": c.description,
                "transport": match c.transport {
                    crate::manifest::connection::Transport::Stdio { .. } => "stdio",
                    crate::manifest::connection::Transport::Http { .. } => "http",
                },
                "required": c.required,
                "deferred": c.defer,
                "tools": registry.specs().iter()
                    .filter(|t| t.name.starts_with(&prefix))
                    .map(|t| t.name.clone())
                    .collect::<Vec<_>>(),
            })
        }).collect::<Vec<_>>(),
    });
    Ok((info, warnings, sandbox))
}
