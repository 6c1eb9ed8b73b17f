//! Listing servers for the build: [`BuildLister`] starts the servers the build needs,
//! side by side under their startup timeouts, lists their tools and stops them. A
//! Ctrl-C meanwhile kills their process groups before eve exits.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::client::{Client, Place};
use crate::compiler::listing::{Lister, Wanted};
use crate::manifest::connection::{Listing, Transport};
use crate::sandbox::Recipe;
use crate::sync::lock;

/// How listing one server went, for `eve connections`.
#[derive(Debug, Clone)]
pub struct Record {
    pub agent_dir: PathBuf,
    pub connection: String,
    /// `stdio`, `streamable HTTP` or `HTTP+SSE`, once connected.
    pub transport: Option<&'static str>,
    /// From starting the server to its listing.
    pub elapsed: Duration,
    pub server: Option<String>,
    pub error: Option<String>,
}

/// Starts servers to list their tools (see the module docs).
#[derive(Debug, Default)]
pub struct BuildLister {
    records: std::sync::Mutex<Vec<Record>>,
}

impl BuildLister {
    /// What listing went like, one record per server started.
    pub fn records(&self) -> Vec<Record> {
        lock(&self.records).clone()
    }
}

impl Lister for BuildLister {
    fn list(&self, wanted: &[Wanted<'_>]) -> Vec<Result<Listing, String>> {
        // A runtime of its own, on a thread of its own: the build may run inside
        // another runtime (eve dev), and the servers it starts die with this thread.
        let outcome = std::thread::scope(|scope| {
            scope
                .spawn(|| {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| format!("cannot start the servers: {e}"))?;
                    Ok::<_, String>(runtime.block_on(list_all(wanted)))
                })
                .join()
        });
        let results = match outcome {
            Ok(Ok(results)) => results,
            Ok(Err(e)) => return wanted.iter().map(|_| Err(e.clone())).collect(),
            Err(_) => {
                return wanted
                    .iter()
                    .map(|_| Err("listing the servers stopped unexpectedly".to_string()))
                    .collect();
            }
        };
        let mut records = lock(&self.records);
        results
            .into_iter()
            .map(|(record, listing)| {
                records.push(record);
                listing
            })
            .collect()
    }
}

async fn list_all(wanted: &[Wanted<'_>]) -> Vec<(Record, Result<Listing, String>)> {
    let all = futures_util::future::join_all(wanted.iter().map(|w| list_one(w)));
    let interrupted = async {
        if tokio::signal::ctrl_c().await.is_ok() {
            // The servers die with eve: their supervisors see its end of their sockets close.
            std::process::exit(130);
        }
        std::future::pending::<()>().await;
    };
    tokio::select! {
        results = all => results,
        () = interrupted => Vec::new(),
    }
}

async fn list_one(wanted: &Wanted<'_>) -> (Record, Result<Listing, String>) {
    let started = Instant::now();
    let read = |name: &str| crate::secrets::var(name);
    let connection = wanted.connection;
    let mut record = Record {
        agent_dir: wanted.agent_dir.to_path_buf(),
        connection: connection.name.clone(),
        transport: None,
        elapsed: Duration::ZERO,
        server: None,
        error: None,
    };
    // A server listed for the build runs in the sandbox its sessions will use.
    let sandbox = match sandbox_for(wanted) {
        Ok(sandbox) => sandbox,
        Err(e) => {
            record.error = Some(e.clone());
            return (record, Err(e));
        }
    };
    let place = Place {
        agent_dir: wanted.agent_dir,
        workspace: wanted.workspace,
        read: &read,
        sandbox: sandbox.as_ref(),
    };
    let timeout = Duration::from_secs(connection.startup_timeout_secs.max(1));
    let listing = match Client::start(connection, place).await {
        Ok(client) => {
            record.transport = Some(client.transport);
            record.server = client.server.clone();
            let listing = tokio::time::timeout(timeout, client.list())
                .await
                .unwrap_or_else(|_| {
                    Err(format!(
                        "the server did not list its tools within {} s",
                        timeout.as_secs()
                    ))
                });
            record.elapsed = started.elapsed();
            client.stop().await;
            listing
        }
        Err(e) => {
            record.elapsed = started.elapsed();
            Err(e)
        }
    };
    record.error = listing.as_ref().err().cloned();
    (record, listing)
}

/// What the sandbox of a stdio server that does not opt out is made from: the agent's
/// settings (`None` for HTTP servers and `sandbox = false`).
fn sandbox_for(wanted: &Wanted<'_>) -> Result<Option<Recipe>, String> {
    let Transport::Stdio { sandbox: true, .. } = &wanted.connection.transport else {
        return Ok(None);
    };
    let workspace = wanted.workspace.canonicalize().map_err(|e| {
        format!(
            "cannot open the workspace `{}`: {e}",
            wanted.workspace.display()
        )
    })?;
    let agent_dir = wanted
        .agent_dir
        .canonicalize()
        .unwrap_or_else(|_| wanted.agent_dir.to_path_buf());
    let mut recipe = Recipe::new(
        wanted.confinement.settings,
        wanted.confinement.agent_writable,
        &agent_dir,
        &workspace,
        None,
        false,
    );
    recipe.definition = wanted.confinement.definition.to_vec();
    Ok(Some(recipe))
}
