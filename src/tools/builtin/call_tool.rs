//! `call_tool`: runs a deferred tool by name. The registry resolves the call to the tool
//! it names before anything runs, so that tool's schema, approval, scheduling and
//! timeout apply; this executor hands the call on.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use crate::catalog::{Availability, BuiltinTool};
use crate::manifest::{self, Manifest};
use crate::protocol::ToolCall;
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};

/// What the model is told about `call_tool`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "call_tool",
    description: "Runs a tool that search_tools found, one that is not in your tool list. \
        Pass its exact name and, as input, an object that matches the input schema \
        search_tools showed. The tool runs as if you had called it directly: its result, or \
        its error, is this call's result. Search first; do not guess names.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "minLength": 1,
                "description": "The tool's exact name, as search_tools returned it."
            },
            "input": {
                "type": "object",
                "description": "The tool's arguments, matching its input schema."
            }
        },
        "required": ["name", "input"],
        "additionalProperties": false
    }"#,
    read_only: false,
    timeout_secs: 3600,
    settings: &[],
    availability: Availability::WithDeferredTools,
};

#[derive(Debug, Deserialize)]
struct Input {
    name: String,
    input: Value,
}

/// The `call_tool` tool.
#[derive(Debug, Clone, Copy)]
pub struct CallTool;

impl ToolExec for CallTool {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let input: Input = match parse_input(input) {
                Ok(input) => input,
                Err(e) => return e,
            };
            let Some(registry) = &ctx.catalog else {
                return ToolOutput::error("call_tool has no tool catalog to run tools from here");
            };
            // Reached only when something runs this executor outside the registry, which
            // resolves `call_tool` to its target itself: run the target the same way.
            let call = ToolCall {
                id: String::new(),
                name: "call_tool".into(),
                input: serde_json::json!({"name": input.name, "input": input.input}),
            };
            registry.call(&call, ctx).await
        }
        .boxed()
    }
}

/// `call_tool` for an agent.
pub fn build(
    _tool: &manifest::Tool,
    _manifest: &Arc<Manifest>,
) -> Result<Arc<dyn ToolExec>, String> {
    Ok(Arc::new(CallTool))
}
