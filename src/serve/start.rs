//! What both servers (plain `eve serve` and the Restate worker) do to start and stop:
//! describe the agent, make the keys, listen, serve the API, watch for signals.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::keys::{Keys, Token};
use crate::manifest::Manifest;
use crate::runner::{self, RunOptions};

/// The keys of a server listening at `local`, and how the person gets in.
pub(super) fn access(token: &Token, local: SocketAddr) -> Result<(Keys, String), String> {
    let (keys, code) = Keys::new(token, local.port())?;
    let host = match local.ip() {
        ip if ip.is_unspecified() => {
            SocketAddr::new(std::net::Ipv4Addr::LOCALHOST.into(), local.port())
        }
        _ => local,
    };
    Ok((keys, format!("http://{host}/?login={code}")))
}

/// Listens on `addr`; the listener and the address it got.
pub(super) async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), String> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let local = listener
        .local_addr()
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    Ok((listener, local))
}

/// Serves `app` on `listener` until `shutdown`, then lets the open requests finish.
pub(super) fn spawn_api(
    listener: TcpListener,
    app: axum::Router,
    shutdown: CancellationToken,
) -> JoinHandle<std::io::Result<()>> {
    // Stream lines go out as they are made, not held back to fill a packet.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move { shutdown.cancelled().await })
            .await
    })
}

/// How the API's server ended.
pub(super) async fn stopped(server: JoinHandle<std::io::Result<()>>) -> Result<(), String> {
    match server.await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("the server stopped: {e}")),
        Err(e) => Err(format!("the server stopped unexpectedly: {e}")),
    }
}

/// Cancels `shutdown` at the first SIGTERM or Ctrl-C; a second one exits at once.
pub(super) fn watch_signals(shutdown: CancellationToken) -> Result<(), String> {
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

/// What `eve serve` learns of the agent at start: the body of `GET /eve/v1/info`, what
/// the sandbox cannot enforce here, and the sandbox the turns share.
pub(super) type Described = (Value, Vec<String>, Option<Arc<crate::sandbox::Sandbox>>);

/// The body of `GET /eve/v1/info`, what the sandbox cannot enforce here, and the sandbox
/// the turns share. Resolving the model here makes a missing key an error at start, not
/// at the first turn.
pub(super) fn describe(
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
