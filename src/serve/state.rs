//! What `eve serve` was asked for, and what its handlers share.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::response::Response;
use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::api::SendBody;
use super::changes::Changes;
use super::error::ApiError;
use super::index::Index;
use super::keys::{Keys, Token};
use crate::manifest::Manifest;
use crate::runner::RunOptions;

/// The variable that holds the token clients must send.
pub const TOKEN_VAR: &str = "EVE_SERVE_TOKEN";

/// What `eve serve` was asked for.
#[derive(Debug, Clone)]
pub struct Config {
    pub addr: SocketAddr,
    /// `EVE_SERVE_TOKEN`, or one made at start: every API request but `health` must
    /// carry it (or the page's cookie).
    pub token: Token,
    /// `--cors`: the one origin whose pages may call the API.
    pub cors: Option<String>,
    /// Turns running at once; more wait for a place.
    pub max_turns: usize,
    /// Sessions the server holds (on disk and new).
    pub max_sessions: usize,
    /// Stream readers open at once.
    pub max_readers: usize,
    /// How long running steps may go on after SIGTERM before they are cancelled.
    pub grace: Duration,
    /// The model, workspace and sandbox choices every turn runs with.
    pub options: RunOptions,
}

/// Why a listening address is refused: a non-loopback address needs a token the person
/// chose, since its clients are elsewhere and the one eve makes is printed only here.
pub fn check_addr(addr: &SocketAddr, has_token: bool) -> Result<(), String> {
    if has_token || addr.ip().is_loopback() {
        return Ok(());
    }
    Err(format!(
        "refusing to listen on {addr} without {TOKEN_VAR}: its clients are elsewhere, and the token eve would make is printed only on this terminal. Set {TOKEN_VAR} (clients then send `Authorization: Bearer <token>`), or listen on a loopback address such as 127.0.0.1:8787"
    ))
}

/// What the handlers share.
#[derive(Debug)]
pub struct State {
    pub(super) config: Config,
    pub(super) agent_dir: PathBuf,
    pub(super) manifest: Arc<Manifest>,
    /// The body of `GET /eve/v1/info`.
    pub(super) info: Value,
    /// Who may call (`guard.rs` checks each request against them).
    pub(super) keys: Keys,
    pub(super) index: Index,
    pub(super) turns: Arc<Semaphore>,
    pub(super) readers: Arc<Semaphore>,
    /// Cancelled at SIGTERM: no new work, readers end, turns end after their step.
    pub(super) shutdown: CancellationToken,
    /// Cancelled when the grace period is over: running steps are cancelled too.
    pub(super) abort: CancellationToken,
    pub(super) tasks: TaskTracker,
    /// Records changes the served agent makes to its own definition.
    pub(super) changes: Arc<Changes>,
    /// The sessions the API drives: this server's own, or Restate's objects.
    pub(super) sessions: Arc<dyn Sessions>,
}

/// How the person gets in, told once the server listens.
#[derive(Debug)]
pub struct Access<'a> {
    /// The page's one-time login link.
    pub link: String,
    /// The token eve made, when the person chose none (API clients need it).
    pub made: Option<&'a str>,
}

impl State {
    /// The state of a server that starts now: no session running, nothing cancelled.
    pub(super) fn new(
        config: Config,
        keys: Keys,
        agent_dir: PathBuf,
        manifest: Manifest,
        info: Value,
        changes: Arc<Changes>,
        sessions: Arc<dyn Sessions>,
    ) -> State {
        State {
            keys,
            turns: Arc::new(Semaphore::new(config.max_turns.max(1))),
            readers: Arc::new(Semaphore::new(config.max_readers)),
            agent_dir,
            manifest: Arc::new(manifest),
            info,
            index: Index::default(),
            shutdown: CancellationToken::new(),
            abort: CancellationToken::new(),
            tasks: TaskTracker::new(),
            changes,
            sessions,
            config,
        }
    }
}

/// The sessions the API drives, one implementation a backend: this server's own
/// (`local.rs`: the index, jobs on this process) or Restate's virtual objects
/// (`restate/sessions.rs`). The routes hold one and never ask which; each method gets
/// the request already read and checked as far as both backends check it alike.
pub(super) trait Sessions: Send + Sync + std::fmt::Debug {
    /// `POST /eve/v1/session`: a new session, with its first turn when `message` is given
    /// (checked by then).
    fn create<'a>(
        &'a self,
        state: &'a Arc<State>,
        message: Option<String>,
        traceparent: Option<String>,
    ) -> BoxFuture<'a, Result<Response, ApiError>>;

    /// `POST /eve/v1/session/:id`: a message, or the answers for a waiting turn.
    fn send<'a>(
        &'a self,
        state: &'a Arc<State>,
        id: &'a str,
        request: SendBody,
    ) -> BoxFuture<'a, Result<Response, ApiError>>;

    /// `POST /eve/v1/session/:id/compact`.
    fn compact<'a>(
        &'a self,
        state: &'a Arc<State>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Response, ApiError>>;

    /// `POST /eve/v1/session/:id/cancel`.
    fn cancel<'a>(
        &'a self,
        state: &'a Arc<State>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Response, ApiError>>;

    /// `GET /eve/v1/sessions`: at most `limit`, newest first, before the session `before`.
    fn list<'a>(
        &'a self,
        state: &'a Arc<State>,
        limit: usize,
        before: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Value, ApiError>>;

    /// `GET /eve/v1/session/:id/stream` from event `start`, following the session when
    /// `follow`; `path` is the session's log.
    fn stream<'a>(
        &'a self,
        state: &'a Arc<State>,
        id: &'a str,
        path: PathBuf,
        start: i64,
        follow: bool,
    ) -> BoxFuture<'a, Result<Response, ApiError>>;
}
