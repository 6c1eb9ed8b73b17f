//! A connection's tool as the registry runs it: one [`ToolExec`] per offered tool, which
//! hands the validated input to its server.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::server::Server;
use crate::tools::{ToolContext, ToolExec, ToolOutput};

/// The tool `tool` of a server, offered to the model as `shown`.
#[derive(Debug)]
pub struct McpTool {
    pub server: Arc<Server>,
    pub tool: String,
    pub shown: String,
    pub timeout: Duration,
}

impl ToolExec for McpTool {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        self.server
            .call(&self.tool, &self.shown, input, self.timeout, &ctx.cancel)
            .boxed()
    }
}
