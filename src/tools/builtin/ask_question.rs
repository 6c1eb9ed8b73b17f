//! `ask_question`: the harness parks the turn, or asks the person at the terminal; a call
//! that reaches the executor had nobody to ask.

use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::catalog::{Availability, BuiltinTool};
use crate::manifest::{self, Manifest};
use crate::tools::{ToolContext, ToolExec, ToolOutput};

/// What the model is told about `ask_question`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "ask_question",
    description: "Asks the person a question and pauses the run until they answer; their \
        answer is this tool's result. Use it only when you cannot proceed without the \
        person's decision: a choice between approaches with real consequences, information \
        you cannot find in the workspace or reasonably infer, or confirmation before \
        something irreversible. Do not use it for permission to do ordinary steps of the \
        task, or for anything you can find out with your other tools. Ask one clear, \
        self-contained question. When the answer is a choice, pass two or more short options; \
        the person may still answer in their own words.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "question": {
                "type": "string",
                "minLength": 1,
                "description": "The question to ask, complete enough to answer without seeing this conversation."
            },
            "options": {
                "type": "array",
                "minItems": 2,
                "items": { "type": "string" },
                "description": "Suggested answers to choose from (at least two). Omit it for an open question."
            }
        },
        "required": ["question"],
        "additionalProperties": false
    }"#,
    read_only: false,
    timeout_secs: 86400,
    settings: &[],
    availability: Availability::Always,
};

/// The executor of a call nobody could answer.
#[derive(Debug)]
pub struct AskQuestion;

/// `ask_question` for an agent.
pub fn build(
    _tool: &manifest::Tool,
    _manifest: &Arc<Manifest>,
) -> Result<Arc<dyn ToolExec>, String> {
    Ok(Arc::new(AskQuestion))
}

impl ToolExec for AskQuestion {
    fn call<'a>(&'a self, _input: &'a Value, _ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async {
            ToolOutput::error(
                "Nobody can answer questions here; decide yourself and say what you assumed.",
            )
        }
        .boxed()
    }
}
