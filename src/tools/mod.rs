//! Tools the model can call: the built-in catalog, the registry a run offers, and the executors.

pub mod catalog;
pub mod command;
pub mod http;
pub mod output;
pub mod registry;

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
}

impl ToolOutput {
    /// A successful result.
    pub fn ok(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: false,
        }
    }

    /// A failed call; the model reads `content` to decide what to do next.
    pub fn error(content: impl Into<String>) -> ToolOutput {
        ToolOutput {
            content: content.into(),
            is_error: true,
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
}

/// Something that can execute calls of one tool. Errors are results, never panics.
pub trait ToolExec: Send + Sync + std::fmt::Debug {
    /// Runs one call with already validated `input`.
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput>;
}
