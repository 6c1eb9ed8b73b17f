//! What hooks decided of a call: the words the harness's step machine reads (the
//! approval, the plan) without running any hook itself.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::manifest::hook::HookEvent;

/// What a hook (or the hooks of an event) decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Nothing: go on as without it.
    #[default]
    Continue,
    /// `before_tool`: run the call without asking the person.
    Allow,
    /// `before_tool`: ask the person first, whatever the approval policy says.
    Ask,
    /// Refuse: the call does not run, the message is not sent, the turn does not end.
    Deny,
}

impl Decision {
    pub(super) fn name(self, event: HookEvent) -> &'static str {
        match self {
            Decision::Continue => "continue",
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny if event == HookEvent::BeforeTool => "deny",
            Decision::Deny => "block",
        }
    }
}

/// What the `before_tool` hooks made of one call, before anything of its step ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Judged {
    /// What they decided of its approval (`Continue`, `Allow` or `Ask`).
    pub decision: Decision,
    /// The input the model gave (what they are asked about again).
    pub model_input: Value,
    /// The input the call runs with.
    pub input: Value,
    /// Their notes for the model, added to the call's result.
    pub notes: Vec<String>,
}
