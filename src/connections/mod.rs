//! Connections at run time: the MCP servers of one agent's session, their clients and
//! processes. They start together when the session starts (deferred ones at their
//! first call), offer their live tools to the registry through the same [`ToolExec`]
//! path as every other tool, are listed again between steps when a server says its
//! tools changed, and stop with the session.

pub mod client;
mod exec;
pub mod legacy_sse;
pub mod lister;
pub mod listing;
pub mod report;
pub mod result;
mod server;
pub mod spawn;
pub mod values;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::manifest::Manifest;
use crate::protocol::Unavailable;
use crate::tools::registry::External;

use server::Server;

/// Builds the agent in `dir` (answered from the build cache when nothing changed),
/// starting the servers of connections without a valid cached listing (all of them with
/// `refresh`) to list their tools — unless a change the person has not seen stands in
/// the way ([`reviewed`]).
pub fn build(dir: &Path, refresh: bool) -> crate::compiler::Build {
    reviewed(dir, refresh, false, &[], None).0
}

/// [`build`] for sessions in `workspace` (`--workspace`), whose servers the build
/// starts there, as the sessions will.
pub fn build_in(dir: &Path, workspace: Option<&Path>) -> crate::compiler::Build {
    reviewed(dir, false, false, &[], workspace).0
}

/// [`build`] after the files `touched` changed (see [`crate::compiler::build_after`]).
pub fn build_after(dir: &Path, refresh: bool, touched: &[String]) -> crate::compiler::Build {
    reviewed(dir, refresh, false, touched, None).0
}

/// The one way a build starts servers. What stands in the way of running anything of
/// the definition ([`crate::review::unseen`]) is decided first; then no server starts,
/// and the connections without a valid cached listing stay unlisted (the build is not
/// kept in the cache), until the person has seen the change. An error deciding it
/// starts nothing either. With `strict` (`eve build --strict`), a skill that cannot be
/// used fails the build instead of being left out.
pub fn reviewed(
    dir: &Path,
    refresh: bool,
    strict: bool,
    touched: &[String],
    workspace: Option<&Path>,
) -> (crate::compiler::Build, Option<crate::review::Pending>) {
    let unseen = crate::review::held(dir, || {
        crate::compiler::build(
            dir,
            &crate::tools::builtin::CATALOG,
            crate::compiler::listing::Options::default(),
        )
        .manifest
        .map(|m| m.inputs_hash)
    });
    let lister = lister::BuildLister::default();
    let build = crate::compiler::build_after(
        dir,
        &crate::tools::builtin::CATALOG,
        crate::compiler::listing::Options {
            lister: unseen
                .is_none()
                .then_some(&lister as &dyn crate::compiler::listing::Lister),
            refresh,
            workspace,
            strict,
        },
        touched,
    );
    (build, unseen)
}

/// The servers of one agent's session.
#[derive(Debug)]
pub struct Connections {
    servers: Vec<Arc<Server>>,
    /// Each server's generation and tool names as the registry last got them, to tell
    /// what changed since (a notification, a deferred server's first start, a restart).
    handed: std::sync::Mutex<Vec<(Option<u64>, Vec<String>)>>,
}

/// How starting the servers went.
#[derive(Debug, Default)]
pub struct Started {
    /// One line per thing the person should know (a server that did not start, tools
    /// that differ from the build's).
    pub warnings: Vec<String>,
    /// Why the session cannot go on: a `required` server that did not start.
    pub error: Option<String>,
}

/// What changed in the connections' tools since the registry last got them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Refreshed {
    /// Some server's tools may differ (names, schemas, descriptions): rebuild the registry.
    pub stale: bool,
    /// The connections whose tool names changed.
    pub changed: Vec<Changed>,
}

/// A connection's tools that changed between steps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub connection: String,
    pub added: Vec<String>,
    pub removed: Vec<String>,
}

impl Connections {
    /// The connections of `manifest` for a session in `workspace`; `None` when it has
    /// none. Nothing starts yet. Each stdio server will get a sandbox made from
    /// `sandbox`, the session's recipe (`None`: unconfined).
    pub fn new(
        manifest: &Manifest,
        agent_dir: &Path,
        workspace: &Path,
        sandbox: Option<crate::sandbox::Recipe>,
    ) -> Option<Arc<Connections>> {
        if manifest.connections.is_empty() {
            return None;
        }
        let servers = manifest
            .connections
            .iter()
            .map(|c| {
                Arc::new(Server::new(
                    c.clone(),
                    manifest,
                    agent_dir.to_path_buf(),
                    workspace.to_path_buf(),
                    sandbox.clone(),
                ))
            })
            .collect();
        Some(Arc::new(Connections {
            handed: std::sync::Mutex::new(vec![(None, Vec::new()); manifest.connections.len()]),
            servers,
        }))
    }

    /// Starts every server that is not deferred, side by side.
    pub async fn start(&self) -> Started {
        let starting = self
            .servers
            .iter()
            .filter(|s| !s.spec.defer)
            .map(|server| async move { (server, server.start().await) });
        let mut started = Started::default();
        for (server, outcome) in futures_util::future::join_all(starting).await {
            let name = &server.spec.name;
            match outcome {
                Err(why) if server.spec.required => {
                    started
                        .error
                        .get_or_insert(format!("connection `{name}` did not start: {why}"));
                }
                Err(why) => started.warnings.push(format!(
                    "connection `{name}` did not start, so its tools are not offered: {why}"
                )),
                Ok(true) => started.warnings.extend(difference(server)),
                Ok(false) => {}
            }
        }
        started
    }

    /// The tools to offer now, with their executors, and the tools of servers that do
    /// not run, with the reason.
    pub fn external(&self) -> (Vec<External>, Vec<Unavailable>) {
        let mut external = Vec::new();
        let mut missing = Vec::new();
        let mut handed = crate::sync::lock(&self.handed);
        for (i, server) in self.servers.iter().enumerate() {
            let generation = Some(server.generation());
            if let Some(why) = server.failed() {
                handed[i] = (generation, Vec::new());
                missing.extend(server.built.iter().map(|t| Unavailable {
                    name: t.name.clone(),
                    reason: format!("its connection `{}` did not start: {why}", server.spec.name),
                }));
                continue;
            }
            let offered = server.offered();
            handed[i] = (generation, names(&offered));
            for tool in offered {
                let crate::manifest::Executor::Mcp {
                    tool: server_name, ..
                } = &tool.executor
                else {
                    continue;
                };
                let exec = exec::McpTool {
                    server: server.clone(),
                    tool: server_name.clone(),
                    shown: tool.name.clone(),
                    timeout: Duration::from_secs(tool.timeout_secs.max(1)),
                };
                external.push(External {
                    tool,
                    exec: Arc::new(exec),
                });
            }
        }
        (external, missing)
    }

    /// At a step boundary: lists again the servers that said their tools changed, and
    /// returns what changed in what they offer since the registry last got their tools.
    pub async fn refresh(&self) -> Refreshed {
        let mut refreshed = Refreshed::default();
        for (i, server) in self.servers.iter().enumerate() {
            server.refresh().await;
            let (seen, before) = crate::sync::lock(&self.handed)[i].clone();
            if seen == Some(server.generation()) {
                continue;
            }
            refreshed.stale = true;
            let after = if server.failed().is_some() {
                Vec::new()
            } else {
                names(&server.offered())
            };
            let added: Vec<String> = after
                .iter()
                .filter(|n| !before.contains(n))
                .cloned()
                .collect();
            let removed: Vec<String> = before
                .iter()
                .filter(|n| !after.contains(n))
                .cloned()
                .collect();
            if !added.is_empty() || !removed.is_empty() {
                refreshed.changed.push(Changed {
                    connection: server.spec.name.clone(),
                    added,
                    removed,
                });
            }
        }
        refreshed
    }

    /// Ends every session and stops every server process.
    pub async fn stop(&self) {
        futures_util::future::join_all(self.servers.iter().map(|s| s.stop())).await;
    }
}

fn names(tools: &[crate::manifest::Tool]) -> Vec<String> {
    tools.iter().map(|t| t.name.clone()).collect()
}

/// One warning line when the live tools differ from the build's.
fn difference(server: &Server) -> Option<String> {
    let live = names(&server.offered());
    let built = names(&server.built);
    let added: Vec<&String> = live.iter().filter(|n| !built.contains(n)).collect();
    let gone: Vec<&String> = built.iter().filter(|n| !live.contains(n)).collect();
    if added.is_empty() && gone.is_empty() {
        return None;
    }
    let list = |names: &[&String]| {
        let shown: Vec<String> = names.iter().take(5).map(|n| format!("`{n}`")).collect();
        let more = names.len().saturating_sub(5);
        if more > 0 {
            format!("{} and {more} more", shown.join(", "))
        } else {
            shown.join(", ")
        }
    };
    let mut parts = Vec::new();
    if !added.is_empty() {
        parts.push(format!("new: {}", list(&added)));
    }
    if !gone.is_empty() {
        parts.push(format!("gone: {}", list(&gone)));
    }
    Some(format!(
        "connection `{}` offers other tools than when the agent was built ({}); `eve build --refresh` checks them",
        server.spec.name,
        parts.join("; ")
    ))
}

/// The variables the connections of `manifest` (and its subagents') read with
/// `${VAR}`: secrets, to be taken out of eve's environment like the provider keys.
pub fn variables(manifest: &Manifest) -> Vec<String> {
    let mut vars = Vec::new();
    let mut stack = vec![manifest];
    while let Some(m) = stack.pop() {
        vars.extend(m.connections.iter().flat_map(|c| c.variables()));
        stack.extend(m.subagents.iter().map(|s| s.manifest.as_ref()));
    }
    vars.sort();
    vars.dedup();
    vars
}
