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
mod local;
pub mod log;
mod page;
mod requests;
pub mod restate;
mod routes;
mod start;
mod state;
mod stream;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use crate::manifest::Manifest;
use crate::runner;
use crate::serve::log::log_line;
use crate::session::{show, store};

pub use keys::Token;
pub use state::{Access, Config, State, TOKEN_VAR, check_addr};

/// Serves `manifest`, built from `agent_dir`, until SIGTERM or Ctrl-C. `ready` gets the
/// address it listens on once it does, and how the person gets in. `running` is the
/// server's marker: it ends with the last check of the agent's definition, unless a
/// check failed.
pub async fn serve(
    manifest: Manifest,
    agent_dir: &Path,
    config: Config,
    running: crate::review::Guard,
    ready: impl FnOnce(SocketAddr, &[String], &Access<'_>),
) -> Result<(), String> {
    check_addr(&config.addr, config.token.chosen)?;
    let agent_dir = agent_dir
        .canonicalize()
        .map_err(|e| format!("`{}`: {e}", agent_dir.display()))?;
    let (info, warnings, sandbox) = start::describe(&manifest, &agent_dir, &config.options)?;
    // One sandbox for every turn: its launcher and temp folder are made at the first
    // process and kept (not made and removed each turn).
    let mut config = config;
    config.options.sandbox = sandbox;
    let (listener, local) = start::bind(config.addr).await?;
    let (keys, link) = start::access(&config.token, local)?;
    let changes = Arc::new(changes::Changes::new(running));
    let state = Arc::new(State::new(
        config,
        keys,
        agent_dir,
        manifest,
        info,
        changes,
        Arc::new(local::Local),
    ));
    let recovered = state.clone();
    let notes = tokio::task::spawn_blocking(move || recover(&recovered))
        .await
        .map_err(|e| format!("reading the sessions stopped unexpectedly: {e}"))??;
    for note in notes {
        log_line!("note: {note}");
    }
    start::watch_signals(state.shutdown.clone())?;
    let made = (!state.config.token.chosen).then(|| state.config.token.reveal());
    ready(local, &warnings, &Access { link, made });
    let checker = state.changes.spawn(
        state.agent_dir.clone(),
        state.manifest.clone(),
        state.shutdown.clone(),
    );
    let server = start::spawn_api(
        listener,
        routes::router(state.clone()),
        state.shutdown.clone(),
    );
    state.shutdown.cancelled().await;
    log_line!("eve serve: shutting down: no new requests; running steps may finish");
    state.tasks.close();
    if tokio::time::timeout(state.config.grace, state.tasks.wait())
        .await
        .is_err()
    {
        log_line!(
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
    start::stopped(server).await
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
                    .map(|t| api::title(&t.input))
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
