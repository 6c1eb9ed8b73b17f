//! `todo`: replaces the session's todo list and returns it.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use crate::catalog::{Availability, BuiltinTool};
use crate::tools::state::{Todo, TodoStatus};
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};

/// What the model is told about `todo`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "todo",
    description: "Replaces this session's todo list with the list you send, so send the whole \
        list every time, including items already completed. Use it for work with three or \
        more steps, or when you are given several tasks at once, to plan and to show \
        progress; skip it for a single simple step. Keep exactly one item in_progress while \
        you work, and mark each item completed as soon as it is done instead of batching \
        several. Mark an item completed only when it is fully done, not when it failed or is \
        blocked; add new items as you discover them. The list survives context compaction, \
        so it remains a reliable record of what is left.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "todos": {
                "type": "array",
                "description": "The complete new todo list, in order.",
                "items": {
                    "type": "object",
                    "properties": {
                        "content": {
                            "type": "string",
                            "minLength": 1,
                            "description": "What to do, as a short imperative sentence."
                        },
                        "status": {
                            "type": "string",
                            "enum": ["pending", "in_progress", "completed"],
                            "description": "pending, in_progress (exactly one item while working) or completed."
                        }
                    },
                    "required": ["content", "status"],
                    "additionalProperties": false
                }
            }
        },
        "required": ["todos"],
        "additionalProperties": false
    }"#,
    read_only: false,
    timeout_secs: 5,
    settings: &[],
    availability: Availability::Always,
};

#[derive(Debug, Deserialize)]
struct Input {
    todos: Vec<Todo>,
}

/// The `todo` tool.
#[derive(Debug, Clone, Copy)]
pub struct TodoTool;

/// The list as the model and the person see it.
pub fn render(todos: &[Todo]) -> String {
    if todos.is_empty() {
        return "The todo list is empty.".into();
    }
    let done = todos
        .iter()
        .filter(|t| t.status == TodoStatus::Completed)
        .count();
    let mut out = format!("Todo list ({done} of {} completed):", todos.len());
    for todo in todos {
        let mark = match todo.status {
            TodoStatus::Pending => "[ ]",
            TodoStatus::InProgress => "[>]",
            TodoStatus::Completed => "[x]",
        };
        out.push_str(&format!("\n{mark} {}", todo.content));
    }
    out
}

impl ToolExec for TodoTool {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let input: Input = match parse_input(input) {
                Ok(input) => input,
                Err(e) => return e,
            };
            ctx.state.set_todos(input.todos);
            ToolOutput::ok(render(&ctx.state.todos()))
        }
        .boxed()
    }
}

/// `todo` for an agent, configured by its manifest entry.
pub fn build(
    _tool: &crate::manifest::Tool,
    _manifest: &std::sync::Arc<crate::manifest::Manifest>,
) -> Result<std::sync::Arc<dyn ToolExec>, String> {
    Ok(std::sync::Arc::new(TodoTool))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn the_list_is_replaced_and_returned() {
        let ctx = ToolContext::new("/w".into(), "/a".into());
        let first = json!({"todos": [{"content": "Read the code", "status": "completed"}, {"content": "Fix the bug", "status": "in_progress"}, {"content": "Run the tests", "status": "pending"}]});
        let out = TodoTool.call(&first, &ctx).await;
        assert!(!out.is_error);
        assert_eq!(
            out.content,
            "Todo list (1 of 3 completed):\n[x] Read the code\n[>] Fix the bug\n[ ] Run the tests"
        );
        let second = json!({"todos": [{"content": "Only this", "status": "pending"}]});
        TodoTool.call(&second, &ctx).await;
        assert_eq!(
            ctx.state.todos().len(),
            1,
            "the list is replaced, not appended to"
        );
        assert_eq!(render(&[]), "The todo list is empty.");
    }
}
