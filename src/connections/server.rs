//! One connection's server over a session: started at the session's start (or at the
//! first call, for `defer`), listed, called; a server that dies fails its calls with
//! the end of its log and is restarted once, at the next call.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::client::{CallError, Client, Place};
use super::result;
use crate::compiler::connection_tools;
use crate::manifest::connection::{Connection, ServerTool};
use crate::manifest::{self, Executor};
use crate::sync::lock;
use crate::tools::ToolOutput;

/// Where a server stands.
enum State {
    /// Not started yet (a deferred connection before its first call).
    Idle,
    Running(Arc<Client>),
    /// It was running and died; the reason names the exit and the end of its log.
    Dead(String),
    /// It could not start; its tools are not offered.
    Failed(String),
    /// The session is over.
    Stopped,
}

/// A connection's server in one session.
pub struct Server {
    pub spec: Connection,
    agent_dir: PathBuf,
    workspace: PathBuf,
    /// What its sandbox is made from (the session's), unless its file opts out.
    sandbox: Option<crate::sandbox::Recipe>,
    state: tokio::sync::Mutex<State>,
    /// What the registry reads between steps without waiting: the live tools, once
    /// listed, or why there are none.
    view: std::sync::Mutex<View>,
    restarted: AtomicBool,
    /// The manifest's tools of this connection (the build's listing).
    pub built: Vec<manifest::Tool>,
}

/// The server as the registry sees it.
#[derive(Debug, Default)]
struct View {
    tools: Option<Vec<ServerTool>>,
    failed: Option<String>,
    /// Bumped whenever `tools` or `failed` change.
    generation: u64,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("name", &self.spec.name)
            .finish()
    }
}

impl Server {
    pub fn new(
        spec: Connection,
        manifest: &manifest::Manifest,
        agent_dir: PathBuf,
        workspace: PathBuf,
        sandbox: Option<crate::sandbox::Recipe>,
    ) -> Server {
        let built = manifest
            .tools
            .iter()
            .filter(|t| matches!(&t.executor, Executor::Mcp { connection, .. } if *connection == spec.name))
            .cloned()
            .collect();
        Server {
            spec,
            agent_dir,
            workspace,
            sandbox,
            state: tokio::sync::Mutex::new(State::Idle),
            view: std::sync::Mutex::new(View::default()),
            restarted: AtomicBool::new(false),
            built,
        }
    }

    /// Why it could not start, if it could not.
    pub fn failed(&self) -> Option<String> {
        lock(&self.view).failed.clone()
    }

    /// A number that changes whenever what it offers may have changed.
    pub fn generation(&self) -> u64 {
        lock(&self.view).generation
    }

    /// The tools it offers now: the live list when it was listed, else the build's.
    pub fn offered(&self) -> Vec<manifest::Tool> {
        match &lock(&self.view).tools {
            Some(tools) => connection_tools::offered(&self.spec, tools),
            None => self.built.clone(),
        }
    }

    /// Starts the server and lists its tools, unless it runs already; says whether it
    /// started now.
    pub async fn start(&self) -> Result<bool, String> {
        let mut state = self.state.lock().await;
        if matches!(*state, State::Running(_)) {
            return Ok(false);
        }
        self.launch(&mut state).await.map(|_| true)
    }

    async fn launch(&self, state: &mut State) -> Result<Arc<Client>, String> {
        let read = |name: &str| crate::secrets::var(name);
        let place = Place {
            agent_dir: &self.agent_dir,
            workspace: &self.workspace,
            read: &read,
            sandbox: self.sandbox.as_ref(),
        };
        let timeout = Duration::from_secs(self.spec.startup_timeout_secs.max(1));
        let started = async {
            let client = Client::start(&self.spec, place).await?;
            let listing = tokio::time::timeout(timeout, client.list())
                .await
                .map_err(|_| {
                    format!(
                        "the server did not list its tools within {} s",
                        timeout.as_secs()
                    )
                })??;
            Ok::<_, String>((client, listing))
        };
        match started.await {
            Ok((client, listing)) => {
                let client = Arc::new(client);
                *state = State::Running(client.clone());
                let mut view = lock(&self.view);
                view.tools = Some(listing.tools);
                view.failed = None;
                view.generation += 1;
                drop(view);
                Ok(client)
            }
            Err(reason) => {
                *state = State::Failed(reason.clone());
                let mut view = lock(&self.view);
                view.failed = Some(reason.clone());
                view.generation += 1;
                drop(view);
                Err(reason)
            }
        }
    }

    /// The running client for a call: started now for a deferred connection, restarted
    /// once after it died. A server found dead fails this call (the model learns that
    /// whatever it held is gone); the next call starts it again.
    async fn client(&self) -> Result<Arc<Client>, String> {
        let name = &self.spec.name;
        let mut state = self.state.lock().await;
        if let State::Running(client) = &*state
            && let Some(why) = client.ended().await
        {
            *state = State::Dead(why.clone());
            return Err(format!(
                "connection `{name}` stopped: {why}\n{}",
                self.next_call()
            ));
        }
        enum Next {
            Use(Arc<Client>),
            Launch(Option<String>),
            Refuse(String),
        }
        let next = match &*state {
            State::Running(client) => Next::Use(client.clone()),
            State::Idle => Next::Launch(None),
            State::Dead(why) if self.restarted.swap(true, Ordering::Relaxed) => {
                Next::Refuse(format!(
                    "connection `{name}` stopped ({why}), and eve restarts a server only once per session"
                ))
            }
            State::Dead(why) => Next::Launch(Some(why.clone())),
            State::Failed(why) => Next::Refuse(format!("connection `{name}` did not start: {why}")),
            State::Stopped => {
                Next::Refuse(format!("connection `{name}` is closed: the session ended"))
            }
        };
        match next {
            Next::Use(client) => Ok(client),
            Next::Refuse(why) => Err(why),
            Next::Launch(None) => self
                .launch(&mut state)
                .await
                .map_err(|why| format!("connection `{name}` did not start: {why}")),
            Next::Launch(Some(why)) => self.launch(&mut state).await.map_err(|again| {
                format!("connection `{name}` stopped ({why}) and did not start again: {again}")
            }),
        }
    }

    /// Calls the server's tool `tool` (offered as `shown`).
    pub async fn call(
        &self,
        tool: &str,
        shown: &str,
        input: &Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> ToolOutput {
        let client = match self.client().await {
            Ok(client) => client,
            Err(why) => return ToolOutput::error(why),
        };
        let name = &self.spec.name;
        match client.call(tool, input, timeout, cancel).await {
            Ok(value) => result::output(&value, &client.secrets),
            Err(CallError::Timeout) => ToolOutput::error(format!(
                "`{shown}` did not answer within its timeout ({} s); eve cancelled the call on connection `{name}`.",
                timeout.as_secs()
            )),
            Err(CallError::Interrupted) => ToolOutput::error(format!("`{shown}` was interrupted")),
            Err(CallError::Server(message)) => ToolOutput::error(format!(
                "connection `{name}` answered `{shown}` with an error: {message}"
            )),
            Err(CallError::Closed) => {
                let why = client
                    .ended()
                    .await
                    .unwrap_or_else(|| "the connection closed".to_string());
                let mut state = self.state.lock().await;
                if matches!(&*state, State::Running(c) if Arc::ptr_eq(c, &client)) {
                    *state = State::Dead(why.clone());
                }
                ToolOutput::error(format!(
                    "connection `{name}` stopped during `{shown}`: {why}\n{}",
                    self.next_call()
                ))
            }
        }
    }

    /// What the next call does about a dead server.
    fn next_call(&self) -> &'static str {
        if self.restarted.load(Ordering::Relaxed) {
            "It is not restarted again in this session."
        } else {
            "The next call starts it again."
        }
    }

    /// After `notifications/tools/list_changed`: lists the tools again. Returns whether
    /// it did.
    pub async fn refresh(&self) -> bool {
        let state = self.state.lock().await;
        let State::Running(client) = &*state else {
            return false;
        };
        if !client.take_changed() {
            return false;
        }
        let timeout = Duration::from_secs(self.spec.startup_timeout_secs.max(1));
        match tokio::time::timeout(timeout, client.list()).await {
            Ok(Ok(listing)) => {
                let mut view = lock(&self.view);
                view.tools = Some(listing.tools);
                view.generation += 1;
                drop(view);
                true
            }
            // The list stays as it was; a later notification tries again.
            _ => false,
        }
    }

    /// Ends the session with the server and stops its process.
    pub async fn stop(&self) {
        let previous = std::mem::replace(&mut *self.state.lock().await, State::Stopped);
        if let State::Running(client) = previous
            && let Ok(client) = Arc::try_unwrap(client)
        {
            client.stop().await;
        }
    }
}
