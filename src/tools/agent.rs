//! `agent` and one tool per subagent: a child harness with a fresh history in the same
//! workspace; its final text is the result.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use super::{ToolContext, ToolExec, ToolOutput, parse_input};
use crate::harness::events::EndReason;
use crate::manifest::Manifest;

/// How deep agents nest unless the `agent` tool's `max_depth` setting says otherwise.
pub const DEFAULT_MAX_DEPTH: u32 = 3;

#[derive(Debug, Deserialize)]
struct Input {
    task: String,
}

/// Which agent a call starts.
#[derive(Debug, Clone)]
pub enum Target {
    /// A copy of the calling agent (the `agent` tool).
    Copy(Arc<Manifest>),
    /// A subagent, in the folder `path` relative to the calling agent's directory.
    Subagent {
        manifest: Arc<Manifest>,
        path: String,
    },
}

/// The `agent` tool, or a subagent's tool.
#[derive(Debug, Clone)]
pub struct AgentTool {
    pub name: String,
    pub target: Target,
    /// The deepest level a child may run at (the top agent is level 0).
    pub max_depth: u32,
}

impl AgentTool {
    async fn run(&self, input: Input, ctx: &ToolContext) -> ToolOutput {
        let Some(spawner) = &ctx.spawner else {
            return ToolOutput::error(format!("`{}` cannot start an agent here", self.name));
        };
        let depth = ctx.depth + 1;
        if depth > self.max_depth {
            return ToolOutput::error(format!(
                "Refused: agents may nest at most {} levels deep, and this call would start level {depth}. Do this part of the task yourself.",
                self.max_depth
            ));
        }
        let (manifest, agent_dir): (Arc<Manifest>, PathBuf) = match &self.target {
            Target::Copy(manifest) => (manifest.clone(), ctx.agent_dir.clone()),
            Target::Subagent { manifest, path } => (manifest.clone(), ctx.agent_dir.join(path)),
        };
        let outcome = match spawner
            .run_child(manifest, agent_dir, depth, input.task, ctx.cancel.clone())
            .await
        {
            Ok(outcome) => outcome,
            Err(e) => return ToolOutput::error(format!("`{}` could not start: {e}", self.name)),
        };
        let steps = if outcome.steps == 1 {
            "1 step".to_string()
        } else {
            format!("{} steps", outcome.steps)
        };
        match outcome.end_reason {
            EndReason::Completed => ToolOutput::ok(outcome.result),
            EndReason::MaxSteps | EndReason::MaxTokens | EndReason::MaxInputTokens => {
                ToolOutput::ok(format!(
                    "{}\n\n(`{}` stopped at a limit, {}, after {steps}; its answer may be incomplete.)",
                    outcome.result,
                    self.name,
                    outcome.end_reason.as_str()
                ))
            }
            EndReason::Aborted => ToolOutput::error(format!("`{}` was interrupted", self.name)),
            EndReason::Waiting => ToolOutput::error(format!(
                "`{}` stopped to wait for a person, which a child agent cannot do",
                self.name
            )),
            EndReason::Error | EndReason::Interrupted => ToolOutput::error(format!(
                "`{}` failed after {steps}: {}",
                self.name,
                outcome.error.unwrap_or_else(|| "unknown error".into())
            )),
        }
    }
}

impl ToolExec for AgentTool {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            match parse_input::<Input>(input) {
                Ok(input) => self.run(input, ctx).await,
                Err(e) => e,
            }
        }
        .boxed()
    }
}
