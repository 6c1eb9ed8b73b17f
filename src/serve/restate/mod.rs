//! `eve serve --restate`: eve as a Restate service deployment. Each session is a
//! virtual object keyed by its id ([`object`]); each model call and tool call of a turn
//! runs in a journaled `ctx.run`, so a worker that dies mid-turn is replaced by another
//! that replays the journal and runs no finished call again. The same `/eve/v1` API as
//! plain `eve serve` is offered in front of Restate ([`front`]).
//!
//! A worker listens on two addresses: the deployment endpoint Restate invokes
//! (HTTP/2), shared by every worker of a machine (`SO_REUSEPORT`), and the API.

mod buffer;
mod front;
mod object;
mod sessions;
pub mod store;
mod worker;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use restate_sdk::prelude::*;
use tokio_util::sync::CancellationToken;

pub use front::{Backend, pending_of};
pub use object::{Job, Summary, Wake};
pub use worker::{HOLD_AFTER_VAR, HOLD_FILE_VAR};

use super::changes::Changes;
use super::state::{Config, State};
use super::{routes, start};
use crate::manifest::Manifest;
use crate::serve::log::log_line;

/// The variable that holds the public key Restate signs its requests with.
pub const IDENTITY_VAR: &str = "EVE_RESTATE_IDENTITY_KEY";

/// What `--restate` adds to `eve serve`.
#[derive(Debug, Clone)]
pub struct Restate {
    /// Where the deployment endpoint listens (`--restate-endpoint`).
    pub endpoint: SocketAddr,
    /// Restate's ingress (`--restate-ingress`).
    pub ingress: String,
    /// Restate's admin API (`--restate-admin`).
    pub admin: Option<String>,
    /// Register the endpoint with the admin API at start (`--restate-register`).
    pub register: bool,
    /// Invocations one connection from Restate may carry at once (`--restate-streams`).
    pub streams: u32,
    /// `EVE_RESTATE_IDENTITY_KEY`: only requests Restate signed with it are taken.
    pub identity_key: Option<String>,
}

/// Why a deployment address is refused: whoever reaches the endpoint can make the
/// worker run the agent's tools, as Restate does.
pub fn check_endpoint(addr: &SocketAddr, has_key: bool) -> Result<(), String> {
    if has_key || addr.ip().is_loopback() {
        return Ok(());
    }
    Err(format!(
        "refusing to listen for Restate on {addr} without {IDENTITY_VAR}: anyone who can reach that address could run this agent's tools. Set {IDENTITY_VAR} to the public key of Restate's request identity (`publickeyv1_…`), or listen on a loopback address such as 127.0.0.1:9080"
    ))
}

/// What the worker prints when it is ready.
#[derive(Debug)]
pub struct Ready {
    pub api: SocketAddr,
    pub endpoint: SocketAddr,
    pub registered: Option<String>,
}

/// Serves `manifest` as a Restate deployment and its API until SIGTERM or Ctrl-C.
pub async fn serve(
    manifest: Manifest,
    agent_dir: &Path,
    config: Config,
    restate: Restate,
    running: crate::review::Guard,
    ready: impl FnOnce(&Ready, &[String], &super::Access<'_>),
) -> Result<(), String> {
    super::check_addr(&config.addr, config.token.chosen)?;
    check_endpoint(&restate.endpoint, restate.identity_key.is_some())?;
    let agent_dir = agent_dir
        .canonicalize()
        .map_err(|e| format!("`{}`: {e}", agent_dir.display()))?;
    let (info, warnings, _) = start::describe(&manifest, &agent_dir, &config.options)?;
    let worker = Arc::new(worker::Worker::new(
        manifest.clone(),
        agent_dir.clone(),
        config.options.clone(),
        Arc::new(Changes::new(running)),
    ));
    let endpoint = endpoint(worker.clone(), restate.identity_key.as_deref())?;
    let deployment = reusable_listener(restate.endpoint)
        .map_err(|e| format!("cannot listen for Restate on {}: {e}", restate.endpoint))?;
    let endpoint_addr = deployment
        .local_addr()
        .map_err(|e| format!("cannot listen for Restate on {}: {e}", restate.endpoint))?;
    let backend = Backend::new(&restate.ingress, restate.admin.as_deref())?;
    let (listener, api) = start::bind(config.addr).await?;
    let (keys, link) = start::access(&config.token, api)?;
    let changes = worker.changes.clone();
    let state = Arc::new(State::new(
        config,
        keys,
        agent_dir,
        manifest,
        info,
        changes,
        Arc::new(backend),
    ));
    let shutdown = state.shutdown.clone();
    start::watch_signals(shutdown.clone())?;
    let served = tokio::spawn(serve_endpoint(
        endpoint,
        deployment,
        restate.streams,
        shutdown.clone(),
    ));
    let registered = match (&restate.admin, restate.register) {
        (Some(admin), true) => Some(register(admin, endpoint_addr).await?),
        _ => None,
    };
    let made = (!state.config.token.chosen).then(|| state.config.token.reveal());
    ready(
        &Ready {
            api,
            endpoint: endpoint_addr,
            registered,
        },
        &warnings,
        &super::Access { link, made },
    );
    let checker = worker.changes.spawn(
        state.agent_dir.clone(),
        state.manifest.clone(),
        shutdown.clone(),
    );
    let front = start::spawn_api(listener, routes::router(state.clone()), shutdown.clone());
    shutdown.cancelled().await;
    log_line!(
        "eve serve: shutting down: no new invocations; Restate gives the unfinished ones to another worker"
    );
    let _ = tokio::time::timeout(state.config.grace, served).await;
    // The turns that ended after the checker stopped.
    let _ = checker.await;
    worker
        .changes
        .check(&state.agent_dir, &state.manifest)
        .await;
    worker.changes.end();
    start::stopped(front).await
}

/// The deployment endpoint: the session object on `worker`, taking only requests
/// Restate signed with `identity_key` when there is one.
fn endpoint(worker: Arc<worker::Worker>, identity_key: Option<&str>) -> Result<Endpoint, String> {
    let options = ServiceOptions::new()
        // A tool call may run for long without a word to Restate: it must not be taken
        // for a dead worker and run a second time meanwhile.
        .inactivity_timeout(Duration::from_secs(10 * 60))
        .abort_timeout(Duration::from_secs(60 * 60))
        // A turn reads only `meta` and `fold`, not every chunk of the stream.
        .enable_lazy_state(true)
        // Only `accept` starts a turn, after its checks: a client of the ingress cannot.
        .handler("turn", HandlerOptions::new().ingress_private(true));
    let definition = object::EveSession { worker }
        .into_service_definition()
        .options(options);
    let mut builder = Endpoint::builder().bind(definition);
    if let Some(key) = identity_key {
        builder = builder
            .identity_key(key)
            .map_err(|e| format!("{IDENTITY_VAR} is not a Restate identity key: {e}"))?;
    }
    Ok(builder.build())
}

/// Serves Restate's invocations, each connection carrying at most `streams` at once,
/// until `shutdown`; then lets the open ones finish.
async fn serve_endpoint(
    endpoint: Endpoint,
    listener: tokio::net::TcpListener,
    streams: u32,
    shutdown: CancellationToken,
) {
    let service = restate_sdk::hyper::HyperEndpoint::new(endpoint);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = shutdown.cancelled() => break,
        };
        let Ok((stream, _)) = accepted else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        let connection =
            hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                .max_concurrent_streams(streams)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service.clone());
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            let _ = connection.await;
        });
    }
    // Other workers sharing the address take the new connections from now on.
    drop(listener);
    graceful.shutdown().await;
}

/// A listener on `addr` that other workers of this machine may share: the kernel
/// spreads new connections among them, and a worker that dies leaves the rest.
fn reusable_listener(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let socket = match addr {
        SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
        SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
    };
    socket.set_reuseaddr(true)?;
    #[cfg(unix)]
    socket.set_reuseport(true)?;
    socket.set_nodelay(true)?;
    socket.bind(addr)?;
    socket.listen(1024)
}

/// Registers the deployment at `endpoint` with Restate's admin API; the answer says
/// which services it found. Registering the same endpoint again is no error.
async fn register(admin: &str, endpoint: SocketAddr) -> Result<String, String> {
    let client = front::client()?;
    let admin = admin.trim_end_matches('/');
    let uri = format!("http://{endpoint}/");
    let response = client
        .post(format!("{admin}/deployments"))
        .header("content-type", "application/json")
        .body(serde_json::json!({ "uri": uri }).to_string())
        .send()
        .await
        .map_err(|e| {
            format!(
                "cannot register with Restate's admin API at {admin}: {}",
                crate::net::error_chain(&e)
            )
        })?;
    let status = response.status();
    let body = response.text().await.unwrap_or_default();
    if status.is_success() || status.as_u16() == 409 {
        return Ok(uri);
    }
    Err(format!(
        "Restate's admin API at {admin} refused to register {uri}: {status} {}",
        crate::text::shorten(body.trim(), 300)
    ))
}
