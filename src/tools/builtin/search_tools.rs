//! `search_tools`: finds deferred tools (the tool catalog) by name and description, and
//! returns what the model needs to call them with `call_tool`.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::catalog::{Availability, BuiltinTool};
use crate::manifest::{self, Manifest};
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};

/// How many tools a search returns unless it asks for another number.
pub const DEFAULT_LIMIT: usize = 5;

/// What the model is told about `search_tools`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "search_tools",
    description: "Searches the tools that are available but not in your tool list, and \
        returns the best matches with their names, descriptions and input schemas. Use it \
        when a task needs a capability none of your listed tools has, before you give up or \
        improvise. Search with a tool name, a connection name, or a few words about what \
        the tool should do. Run a tool you found with call_tool, passing its exact name and \
        an input that matches its schema.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "minLength": 1,
                "description": "A tool name, a connection name, or words describing what the tool should do."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 20,
                "description": "How many tools to return at most (default 5)."
            }
        },
        "required": ["query"],
        "additionalProperties": false
    }"#,
    read_only: true,
    timeout_secs: 10,
    settings: &[],
    availability: Availability::WithDeferred,
};

#[derive(Debug, Deserialize)]
struct Input {
    query: String,
    limit: Option<usize>,
}

/// The `search_tools` tool; it searches the session's registry.
#[derive(Debug, Clone, Copy)]
pub struct SearchTools;

/// The result the model reads: the matching tools as JSON.
pub fn render(query: &str, found: &[&manifest::Tool], deferred: usize) -> ToolOutput {
    if found.is_empty() {
        return ToolOutput::ok(format!(
            "No tool matches `{query}` among the {deferred} tools you can reach with call_tool. Try other words, or a connection's name."
        ));
    }
    let tools: Vec<Value> = found
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
        .collect();
    let text =
        serde_json::to_string_pretty(&json!({ "tools": tools })).unwrap_or_else(|_| "{}".into());
    ToolOutput::ok(format!(
        "{text}\nRun one with call_tool: {{\"name\": \"<name>\", \"input\": {{…}}}}."
    ))
}

impl ToolExec for SearchTools {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let input: Input = match parse_input(input) {
                Ok(input) => input,
                Err(e) => return e,
            };
            let Some(registry) = &ctx.catalog else {
                return ToolOutput::error("search_tools has no tool catalog to search here");
            };
            let found = registry.search(&input.query, input.limit.unwrap_or(DEFAULT_LIMIT));
            render(&input.query, &found, registry.deferred().len())
        }
        .boxed()
    }
}

/// `search_tools` for an agent.
pub fn build(
    _tool: &manifest::Tool,
    _manifest: &Arc<Manifest>,
) -> Result<Arc<dyn ToolExec>, String> {
    Ok(Arc::new(SearchTools))
}
