//! Tools the model can call: the built-in catalog, the registry a run offers, and the executors.

pub mod builtin;
pub mod custom;
pub mod files;
pub mod output;
pub mod process;
pub mod registry;
pub mod state;
pub mod workspace;

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

pub use registry::Registry;

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
    /// Where file tools and processes act (absolute).
    pub workspace: PathBuf,
    /// The agent directory (absolute).
    pub agent_dir: PathBuf,
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
    /// Starts child agents (the `agent` tool and subagents); `None` where none may start.
    pub spawner: Option<Arc<dyn Spawner>>,
    /// The session's tools, for the tool catalog (`search_tools`, `call_tool`).
    pub catalog: Option<Arc<Registry>>,
}

impl ToolContext {
    /// A context for `workspace` with fresh state, for tests and benchmarks.
    pub fn new(workspace: PathBuf, agent_dir: PathBuf) -> ToolContext {
        ToolContext {
            workspace,
            agent_dir,
            cancel: CancellationToken::new(),
            hidden_env: Arc::new(Vec::new()),
            state: Arc::new(state::SessionState::default()),
            depth: 0,
            read_roots: Arc::new(Vec::new()),
            spawner: None,
            catalog: None,
        }
    }

    /// Resolves a path to read: inside the workspace, or an absolute path inside one of
    /// the read-only roots.
    pub fn resolve_readable(&self, path: &str) -> Result<PathBuf, ToolOutput> {
        match workspace::resolve(&self.workspace, path) {
            Ok(resolved) => Ok(resolved),
            Err(e) => {
                if std::path::Path::new(path).is_absolute() {
                    for root in self.read_roots.iter() {
                        if let Ok(resolved) = workspace::resolve(root, path) {
                            return Ok(resolved);
                        }
                    }
                }
                Err(ToolOutput::error(e))
            }
        }
    }

    /// Resolves a path the model gave, inside the workspace.
    pub fn resolve(&self, path: &str) -> Result<PathBuf, ToolOutput> {
        workspace::resolve(&self.workspace, path).map_err(ToolOutput::error)
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

/// Reads a tool's input into its typed form; the schema has already been checked, so an
/// error here means the schema and the type disagree.
pub fn parse_input<T: serde::de::DeserializeOwned>(input: &Value) -> Result<T, ToolOutput> {
    serde_json::from_value(input.clone())
        .map_err(|e| ToolOutput::error(format!("invalid arguments: {e}")))
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
