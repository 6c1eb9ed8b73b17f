//! `search_tools`: finds deferred tools (the tool catalog) and deferred skills by name and
//! description, and returns what the model needs to call them with `call_tool` or load
//! them with `load_skill`.

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
        the skills that are not listed in your instructions, and returns the best matches \
        with their names, descriptions and (for tools) input schemas. Use it when a task \
        needs a capability none of your listed tools has, or may match a skill, before you \
        give up or improvise. Search with a tool or skill name, a connection name, or a few \
        words about the task. Run a tool you found with call_tool, passing its exact name \
        and an input that matches its schema; load a skill you found with load_skill.",
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

/// The `search_tools` tool; it searches the session's registry, and the agent's
/// deferred skills.
#[derive(Debug, Clone)]
pub struct SearchTools {
    pub manifest: Arc<Manifest>,
}

/// The result the model reads: the matching tools (and skills) as JSON. `deferred` is how
/// many tools and skills could have matched.
pub fn render(
    query: &str,
    found: &[&manifest::Tool],
    skills: &[&manifest::Skill],
    deferred: usize,
) -> ToolOutput {
    if found.is_empty() && skills.is_empty() {
        return ToolOutput::ok(format!(
            "No tool or skill matches `{query}` among the {deferred} you can reach with call_tool and load_skill. Try other words, or a connection's name."
        ));
    }
    let mut result = serde_json::Map::new();
    if !found.is_empty() {
        let tools: Vec<Value> = found
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}))
            .collect();
        result.insert("tools".into(), Value::Array(tools));
    }
    if !skills.is_empty() {
        let skills: Vec<Value> = skills
            .iter()
            .map(|s| json!({"name": s.name, "description": s.description}))
            .collect();
        result.insert("skills".into(), Value::Array(skills));
    }
    let text = serde_json::to_string_pretty(&result).unwrap_or_else(|_| "{}".into());
    let mut how = Vec::new();
    if !found.is_empty() {
        how.push("Run one with call_tool: {\"name\": \"<name>\", \"input\": {…}}.");
    }
    if !skills.is_empty() {
        how.push("Load a skill with load_skill: {\"name\": \"<name>\"}, then follow it.");
    }
    ToolOutput::ok(format!("{text}\n{}", how.join(" ")))
}

impl ToolExec for SearchTools {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let input: Input = match parse_input(input) {
                Ok(input) => input,
                Err(e) => return e,
            };
            let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
            let Some(registry) = &ctx.catalog else {
                return ToolOutput::error("search_tools has no tool catalog to search here");
            };
            let found = registry.search(&input.query, limit);
            let skills =
                crate::tools::registry::search_skills(&self.manifest.skills, &input.query, limit);
            let deferred = registry.deferred().len()
                + self.manifest.skills.iter().filter(|s| s.deferred).count();
            render(&input.query, &found, &skills, deferred)
        }
        .boxed()
    }
}

/// `search_tools` for an agent.
pub fn build(
    _tool: &manifest::Tool,
    manifest: &Arc<Manifest>,
) -> Result<Arc<dyn ToolExec>, String> {
    Ok(Arc::new(SearchTools {
        manifest: manifest.clone(),
    }))
}
