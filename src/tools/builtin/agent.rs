//! `agent` and one tool per subagent: a child harness with a fresh history in the same
//! workspace; its final text is the result.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use crate::catalog::{Availability, BuiltinTool, Setting, SettingKind};
use crate::manifest::Manifest;
use crate::protocol::EndReason;
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};

/// What the model is told about `agent`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "agent",
    description: "Runs a copy of this agent on a task and returns its final answer. The copy \
        starts with a fresh, empty history and sees nothing of this conversation, so task \
        must be complete and self-contained: the goal, the relevant paths and facts you \
        already know, any constraints, and what its final answer should contain. It has the \
        same tools and works in the same workspace, so the files it changes are changed for \
        you too. Use it to delegate a separable piece of work, such as a broad search or an \
        investigation whose details you do not need to keep in your own context. Do not use \
        it for what one glob, grep or read_file call would answer. Its answer is shown to \
        you, not to the person, so pass on what matters. Agents can nest only a few levels \
        deep, and one call may take up to an hour.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "minLength": 1,
                "description": "A complete, self-contained description of the task; the child agent sees nothing of this conversation."
            }
        },
        "required": ["task"],
        "additionalProperties": false
    }"#,
    read_only: false,
    timeout_secs: 3600,
    settings: &[Setting {
        name: "max_depth",
        kind: SettingKind::IntRange {
            min: 1,
            max: MAX_DEPTH as u64,
            default: DEFAULT_MAX_DEPTH as u64,
        },
        description: "how deep agents may nest (default 3, at most 10)",
    }],
    availability: Availability::Always,
};

/// How deep agents nest unless the `agent` tool's `max_depth` setting says otherwise.
pub const DEFAULT_MAX_DEPTH: u32 = 3;

/// The deepest `max_depth` an agent may set (deeper nesting would overflow the stack).
pub const MAX_DEPTH: u32 = 10;

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
            EndReason::Refused => ToolOutput::error(format!(
                "`{}` refused the task: {}",
                self.name, outcome.result
            )),
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

/// `agent` for an agent, configured by its manifest entry.
pub fn build(
    tool: &crate::manifest::Tool,
    manifest: &std::sync::Arc<crate::manifest::Manifest>,
) -> Result<std::sync::Arc<dyn ToolExec>, String> {
    Ok(std::sync::Arc::new(AgentTool {
        name: tool.name.clone(),
        target: Target::Copy(manifest.clone()),
        max_depth: max_depth(manifest),
    }))
}

/// How deep agents may nest: the `agent` tool's `max_depth` setting, else the default.
pub fn max_depth(manifest: &Manifest) -> u32 {
    manifest
        .tools
        .iter()
        .find(|t| t.name == SPEC.name && t.source != crate::manifest::ToolSource::Custom)
        .and_then(|t| t.settings.get("max_depth"))
        .and_then(Value::as_u64)
        // The build refuses more than MAX_DEPTH; a hand-edited manifest gets no further.
        .map_or(DEFAULT_MAX_DEPTH, |d| {
            u32::try_from(d.min(u64::from(MAX_DEPTH))).unwrap_or(MAX_DEPTH)
        })
}
