//! How a turn ended, and the state a session is reopened from.

use std::collections::HashMap;

use super::event::{EndReason, InputRequest, Resolution};
use super::message::{Message, Usage};
use super::record::{StampRecord, Todo};

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub turn_id: String,
    pub end_reason: EndReason,
    /// The assistant's final text.
    pub result: String,
    /// Set when `end_reason` is `error`.
    pub error: Option<String>,
    /// Model calls made (attempts that were retried count once).
    pub steps: u64,
    pub usage: Usage,
    /// Whether every model call of the turn reported its token counts.
    pub usage_reported: bool,
    /// What a parked turn waits for.
    pub pending: Option<InputRequest>,
}

impl TurnOutcome {
    /// A turn that failed before it could start (or a session action that failed).
    pub fn failed(error: impl Into<String>) -> TurnOutcome {
        TurnOutcome {
            turn_id: String::new(),
            end_reason: EndReason::Error,
            result: String::new(),
            error: Some(error.into()),
            steps: 0,
            usage: Usage::default(),
            usage_reported: true,
            pending: None,
        }
    }
}

/// A parked turn: what it waits for and how far it got.
#[derive(Debug, Clone, PartialEq)]
pub struct Parked {
    pub turn_id: String,
    pub request: InputRequest,
    /// Model calls the turn had made.
    pub steps: u64,
    /// The tokens the turn had used.
    pub usage: Usage,
}

/// What a harness is rebuilt from when a session is reopened (the session log replayed).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub session_id: String,
    pub history: Vec<Message>,
    pub usage: Usage,
    pub todos: Vec<Todo>,
    /// The read stamps as last logged.
    pub stamps: Vec<StampRecord>,
    /// A turn parked on a question or an approval.
    pub parked: Option<Parked>,
    /// Answers already given in the parked turn, by call id.
    pub resolutions: HashMap<String, Resolution>,
    /// The input each approved call was shown to the person with: what it runs with.
    pub approved_inputs: HashMap<String, serde_json::Value>,
    /// The input tokens the provider reported for the last model call.
    pub last_input_tokens: u64,
    /// Characters appended to the history since that call's input was counted.
    pub appended_chars: usize,
}
