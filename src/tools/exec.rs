//! What a tool call gets and returns, and the seam every executor implements: the
//! types the registry and the executors share.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::{arguments, state, workspace};

/// What a tool call returns to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolOutput {
    pub content: String,
    pub is_error: bool,
    /// Images for providers that take them in tool results (an MCP server's).
    pub images: Vec<crate::protocol::Image>,
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: false,
            images: Vec::new(),
        }
    }

    /// A failed call; the model reads `content` to decide what to do next.
    pub fn error(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: true,
            images: Vec::new(),
        }
    }
}

/// What every tool call may use.
#[derive(Debug, Clone)]
pub struct ToolContext {
    /// Where file tools and processes act (its real path: absolute, no symlink along it).
    pub workspace: PathBuf,
    /// The agent directory (its real path).
    pub agent_dir: PathBuf,
    /// Whether file tools may change the agent's own definition when the agent
    /// directory is inside the workspace (`[workspace] agent_writable`); its `.eve/` is
    /// never readable or writable.
    pub agent_writable: bool,
    /// The entries of the top agent directory its commands run, relative to it
    /// ([`crate::manifest::Manifest::executed_paths`]): part of its definition.
    pub executed: Arc<Vec<String>>,
    /// Cancelled when the turn is aborted: running processes are killed.
    pub cancel: CancellationToken,
    /// Environment variables removed from every process a tool starts (provider API keys).
    pub hidden_env: Arc<Vec<String>>,
    /// The session's read stamps and todo list.
    pub state: Arc<state::SessionState>,
    /// How deep this agent is nested: 0 for the top agent, 1 for its children…
    pub depth: u32,
    /// Folders outside the workspace that read_file may read by absolute path (the
    /// agent's skills, whose resource files load_skill lists).
    pub read_roots: Arc<Vec<PathBuf>>,
    /// Confines the processes tools start (bash, command tools); `None`: not confined.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
    /// Starts child agents (the `agent` tool and subagents); `None` where none may start.
    pub spawner: Option<Arc<dyn Spawner>>,
    /// The session's tools, for the tool catalog (`search_tools`, `call_tool`): the
    /// registry ([`Catalog`]).
    pub catalog: Option<Arc<dyn Catalog>>,
    /// The W3C `traceparent` of this call's span when telemetry exports one: HTTP tools
    /// send it on.
    pub traceparent: Option<String>,
}

impl ToolContext {
    /// A context for `workspace` with fresh state, for tests and benchmarks. Both paths
    /// are made real (symlinks resolved) when they exist.
    pub fn new(workspace: PathBuf, agent_dir: PathBuf) -> ToolContext {
        let real = |path: PathBuf| path.canonicalize().unwrap_or(path);
        ToolContext {
            workspace: real(workspace),
            agent_dir: real(agent_dir),
            agent_writable: false,
            executed: Arc::new(Vec::new()),
            cancel: CancellationToken::new(),
            hidden_env: Arc::new(Vec::new()),
            state: Arc::new(state::SessionState::default()),
            depth: 0,
            read_roots: Arc::new(Vec::new()),
            sandbox: None,
            spawner: None,
            catalog: None,
            traceparent: None,
        }
    }

    /// Resolves a path the model gave and opens it beneath the workspace (to read, also
    /// an absolute path inside one of the read-only roots), refusing what the workspace
    /// guard refuses.
    pub fn resolve(
        &self,
        path: &str,
        access: workspace::Access,
    ) -> Result<workspace::Resolved, ToolOutput> {
        workspace::resolve(
            &self.workspace,
            &self.read_roots,
            &self.policy(),
            path,
            access,
        )
        .map_err(ToolOutput::error)
    }

    /// What file tools may do with the agent's own files and the repository's.
    pub fn policy(&self) -> workspace::Policy {
        let mut policy = workspace::Policy::new(&self.agent_dir, self.agent_writable);
        policy.executed = self.executed.to_vec();
        policy.git = crate::sandbox::git::protected(&self.workspace, false);
        policy
    }

    /// A path for messages to the model: relative to the workspace.
    pub fn display(&self, path: &std::path::Path) -> String {
        workspace::display(&self.workspace, path)
    }
}

/// Starts child agents for the `agent` tool and subagents. The harness implements it;
/// the tools only know this seam.
pub trait Spawner: Send + Sync + std::fmt::Debug {
    /// Runs one turn of a new child session of `manifest` (from `agent_dir`) at `depth`,
    /// answering `task`, in the calling agent's workspace.
    fn run_child(
        &self,
        manifest: Arc<crate::manifest::Manifest>,
        agent_dir: PathBuf,
        depth: u32,
        task: String,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<crate::protocol::TurnOutcome, String>>;
}

/// Reads a tool's input into its typed form. The schema has already been checked, but
/// JSON Schema counts `1.0` as an integer, so whole floats are made integers first; any
/// other mismatch is told in plain words, naming the argument.
pub fn parse_input<T: serde::de::DeserializeOwned>(input: &Value) -> Result<T, ToolOutput> {
    serde_path_to_error::deserialize(integral(input))
        .map_err(|e| ToolOutput::error(format!("invalid arguments: {}", arguments::explain(&e))))
}

/// `input` with every float that has no fractional part (and fits) made an integer.
fn integral(input: &Value) -> Value {
    match input {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f >= 0.0 && f < u64::MAX as f64 => Value::from(f as u64),
            Some(f) if f.fract() == 0.0 && f < 0.0 && f >= i64::MIN as f64 => Value::from(f as i64),
            _ => input.clone(),
        },
        Value::Array(items) => Value::Array(items.iter().map(integral).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(k, v)| (k.clone(), integral(v))).collect())
        }
        _ => input.clone(),
    }
}

/// Something that can execute calls of one tool. Errors are results, never panics.
pub trait ToolExec: Send + Sync + std::fmt::Debug {
    /// Runs one call with already validated `input`.
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput>;

    /// A refusal decided from the input alone, before any approval is asked (bash's `deny`).
    fn precheck(&self, _input: &Value) -> Option<ToolOutput> {
        None
    }

    /// Whether the tool's own policy lets this call run without a person's approval even
    /// when `approval = "always"` (bash's `allow`).
    fn approved_by_policy(&self, _input: &Value) -> bool {
        false
    }
}

/// The session's tools as the catalog tools see them (`search_tools`, `call_tool`); the
/// registry implements it. A trait, so that what a call gets does not name the registry,
/// whose entries hold the executors that take it.
pub trait Catalog: Send + Sync + std::fmt::Debug {
    /// The tools that best match `query`, at most `limit`.
    fn search(&self, query: &str, limit: usize) -> Vec<&crate::manifest::Tool>;
    /// The names of the deferred tools.
    fn deferred(&self) -> Vec<String>;
    /// Runs `call` as the registry would (its approval rules and stubs included).
    fn call<'a>(
        &'a self,
        call: &'a crate::protocol::ToolCall,
        ctx: &'a ToolContext,
    ) -> BoxFuture<'a, ToolOutput>;
}
