//! The events a run emits: NDJSON `{type, data, meta: {id, at}}`, documented in `docs/events.md`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Usage;

/// One event: what happened (`type` + `data`) and when (`meta`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    #[serde(flatten)]
    pub kind: EventKind,
    pub meta: Meta,
}

/// An event's id (`evt_` + a time-ordered ULID) and time (RFC 3339, UTC).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Meta {
    pub id: String,
    pub at: String,
    /// Set on the events of a child agent (the `agent` tool, a subagent): its session id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Why a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EndReason {
    /// The model answered without calling a tool.
    Completed,
    /// The turn used `max_steps` model calls.
    MaxSteps,
    /// A step hit the output token limit (sticky: later steps do not change it).
    MaxTokens,
    /// The person interrupted the turn (Ctrl-C).
    Aborted,
    /// The turn is parked: it waits for an answer or an approval (not an end: resumable).
    Waiting,
    /// The session used `max_input_tokens_per_session`.
    MaxInputTokens,
    /// A model call failed for good.
    Error,
    /// Found on restart: a crash left the turn open.
    Interrupted,
    /// A `user_prompt` hook refused the message: the model never saw it.
    Refused,
}

impl EndReason {
    /// The name used in events and `--output json`.
    pub fn as_str(self) -> &'static str {
        match self {
            EndReason::Completed => "completed",
            EndReason::MaxSteps => "max_steps",
            EndReason::MaxTokens => "max_tokens",
            EndReason::Aborted => "aborted",
            EndReason::Waiting => "waiting",
            EndReason::MaxInputTokens => "max_input_tokens",
            EndReason::Error => "error",
            EndReason::Interrupted => "interrupted",
            EndReason::Refused => "refused",
        }
    }

    /// Whether a limit stopped the turn.
    pub fn is_limit(self) -> bool {
        matches!(
            self,
            EndReason::MaxSteps | EndReason::MaxTokens | EndReason::MaxInputTokens
        )
    }
}

/// What a parked turn waits for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InputRequest {
    pub request_id: String,
    /// The tool call that needs the input.
    pub call_id: String,
    pub tool: String,
    pub input: Value,
    #[serde(flatten)]
    pub kind: InputKind,
}

/// A question for the person, or a tool call to approve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InputKind {
    Question {
        question: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        options: Vec<String>,
    },
    Approval,
}

/// The person's answer to an [`InputRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum Resolution {
    /// The answer to a question.
    Answer { text: String },
    /// The call may run.
    Approved {
        /// Why it needed no person: `--yes`, for example.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    /// The call must not run.
    Denied {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
}

/// A tool call as `actions.requested` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Action {
    pub call_id: String,
    pub name: String,
    pub input: Value,
}

/// What happened. Serialised as `"type": "<name>", "data": {…}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data")]
pub enum EventKind {
    #[serde(rename = "session.started")]
    SessionStarted {
        session_id: String,
        agent: String,
        model: String,
        workspace: String,
        /// The tools offered to the model.
        tools: Vec<String>,
        /// Tools of the manifest eve cannot run, with the reason; never offered.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unavailable_tools: Vec<Unavailable>,
        /// Tools reached through the tool catalog (`search_tools`, `call_tool`) instead.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        deferred_tools: Vec<String>,
        /// What the person should know about the session's connections, one line each.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    #[serde(rename = "turn.started")]
    TurnStarted { session_id: String, turn_id: String },
    #[serde(rename = "message.received")]
    MessageReceived { turn_id: String, text: String },
    #[serde(rename = "step.started")]
    StepStarted { turn_id: String, step: u64 },
    /// A piece of the assistant's text, as it streams.
    #[serde(rename = "message.appended")]
    MessageAppended {
        turn_id: String,
        step: u64,
        text: String,
    },
    /// A piece of the model's reasoning, as it streams.
    #[serde(rename = "reasoning.appended")]
    ReasoningAppended {
        turn_id: String,
        step: u64,
        text: String,
    },
    /// A hook ran (docs/hooks.md): what it decided, and how long it took.
    #[serde(rename = "hook.completed")]
    HookCompleted {
        turn_id: String,
        step: u64,
        /// The hook's name (its file name without `.toml`).
        hook: String,
        /// The event it ran at (`before_tool`, `stop`, …).
        event: String,
        /// The tool call it was about, for `before_tool` and `after_tool`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        call_id: Option<String>,
        /// `continue`, `allow`, `deny`, `ask` or `block`.
        decision: String,
        /// Why, as the hook said (or why it failed).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// The input it gave the call instead of the model's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        updated_input: Option<serde_json::Value>,
        /// The hook failed (timed out, crashed, answered what eve cannot read) and its
        /// `on_error` decided.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        failed: bool,
        duration_ms: u64,
    },
    #[serde(rename = "actions.requested")]
    ActionsRequested {
        turn_id: String,
        step: u64,
        actions: Vec<Action>,
    },
    /// One tool call's result; these come in the order the model made the calls.
    #[serde(rename = "action.result")]
    ActionResult {
        turn_id: String,
        step: u64,
        call_id: String,
        name: String,
        output: String,
        is_error: bool,
        duration_ms: u64,
        /// The connection whose MCP server ran the tool.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        connection: Option<String>,
    },
    /// Between steps, a connection's server changed its tools
    /// (`notifications/tools/list_changed`): the tools offered from the next step on.
    #[serde(rename = "tools.changed")]
    ToolsChanged {
        turn_id: String,
        connection: String,
        /// Tools offered from now on that were not before.
        added: Vec<String>,
        /// Tools no longer offered.
        removed: Vec<String>,
    },
    /// The turn needs a person: a question or an approval.
    #[serde(rename = "input.requested")]
    InputRequested {
        turn_id: String,
        request: InputRequest,
    },
    /// The person answered; the turn goes on.
    #[serde(rename = "input.resolved")]
    InputResolved {
        turn_id: String,
        request_id: String,
        call_id: String,
        resolution: Resolution,
        /// The input an approval nobody was shown is of (`--yes`); one a person was
        /// shown is its request's.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        input: Option<Value>,
    },
    /// History is about to be compacted before a model call.
    #[serde(rename = "compaction.requested")]
    CompactionRequested {
        turn_id: String,
        tokens_before: u64,
        threshold: u64,
    },
    /// Compaction is done: old tool results shortened, or older history summarised.
    #[serde(rename = "compaction.completed")]
    CompactionCompleted {
        turn_id: String,
        tokens_before: u64,
        tokens_after: u64,
        summarised: bool,
    },
    #[serde(rename = "step.completed")]
    StepCompleted {
        turn_id: String,
        step: u64,
        finish_reason: String,
        usage: Usage,
        /// `false` when the provider sent no token counts (`usage` is then zero).
        #[serde(default = "yes", skip_serializing_if = "is_yes")]
        usage_reported: bool,
    },
    /// A model call failed; `retry_in_ms` says when it is tried again, `null` if never.
    #[serde(rename = "step.failed")]
    StepFailed {
        turn_id: String,
        step: u64,
        attempt: u32,
        error: String,
        retry_in_ms: Option<u64>,
    },
    #[serde(rename = "turn.completed")]
    TurnCompleted {
        turn_id: String,
        end_reason: EndReason,
        result: String,
        steps: u64,
        usage: Usage,
    },
    #[serde(rename = "turn.failed")]
    TurnFailed {
        turn_id: String,
        end_reason: EndReason,
        error: String,
        steps: u64,
        usage: Usage,
    },
    /// The person interrupted the turn (Ctrl-C); `turn.completed` with `aborted` follows.
    #[serde(rename = "turn.cancelled")]
    TurnCancelled { turn_id: String },
    /// The turn is parked until the request is answered (`eve run --session ID --answer …`).
    #[serde(rename = "turn.waiting")]
    TurnWaiting { turn_id: String, request_id: String },
    #[serde(rename = "session.waiting")]
    SessionWaiting { session_id: String, usage: Usage },
    #[serde(rename = "session.completed")]
    SessionCompleted { session_id: String, usage: Usage },
    #[serde(rename = "session.failed")]
    SessionFailed {
        session_id: String,
        error: String,
        usage: Usage,
    },
}

fn yes() -> bool {
    true
}

fn is_yes(value: &bool) -> bool {
    *value
}

/// A tool of the manifest that is not offered, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unavailable {
    pub name: String,
    pub reason: String,
}

/// Every event `type`, in the order `docs/events.md` lists them.
pub const EVENT_TYPES: &[&str] = &[
    "session.started",
    "turn.started",
    "message.received",
    "step.started",
    "message.appended",
    "reasoning.appended",
    "actions.requested",
    "action.result",
    "hook.completed",
    "tools.changed",
    "input.requested",
    "input.resolved",
    "compaction.requested",
    "compaction.completed",
    "turn.waiting",
    "turn.cancelled",
    "step.completed",
    "step.failed",
    "turn.completed",
    "turn.failed",
    "session.waiting",
    "session.completed",
    "session.failed",
];

impl EventKind {
    /// The event's `type`.
    pub fn name(&self) -> &'static str {
        match self {
            EventKind::SessionStarted { .. } => "session.started",
            EventKind::TurnStarted { .. } => "turn.started",
            EventKind::MessageReceived { .. } => "message.received",
            EventKind::StepStarted { .. } => "step.started",
            EventKind::MessageAppended { .. } => "message.appended",
            EventKind::ReasoningAppended { .. } => "reasoning.appended",
            EventKind::HookCompleted { .. } => "hook.completed",
            EventKind::ActionsRequested { .. } => "actions.requested",
            EventKind::ActionResult { .. } => "action.result",
            EventKind::ToolsChanged { .. } => "tools.changed",
            EventKind::InputRequested { .. } => "input.requested",
            EventKind::InputResolved { .. } => "input.resolved",
            EventKind::CompactionRequested { .. } => "compaction.requested",
            EventKind::CompactionCompleted { .. } => "compaction.completed",
            EventKind::TurnWaiting { .. } => "turn.waiting",
            EventKind::TurnCancelled { .. } => "turn.cancelled",
            EventKind::StepCompleted { .. } => "step.completed",
            EventKind::StepFailed { .. } => "step.failed",
            EventKind::TurnCompleted { .. } => "turn.completed",
            EventKind::TurnFailed { .. } => "turn.failed",
            EventKind::SessionWaiting { .. } => "session.waiting",
            EventKind::SessionCompleted { .. } => "session.completed",
            EventKind::SessionFailed { .. } => "session.failed",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_serialise_as_type_data_meta_and_back() {
        let event = Event {
            kind: EventKind::StepStarted {
                turn_id: "turn_1".into(),
                step: 2,
            },
            meta: Meta {
                id: "evt_1".into(),
                at: "2026-01-01T00:00:00.000Z".into(),
                session_id: None,
            },
        };
        let json = serde_json::to_value(&event).unwrap();
        assert_eq!(json["type"], "step.started");
        assert_eq!(
            json["data"],
            serde_json::json!({"turn_id": "turn_1", "step": 2})
        );
        assert_eq!(json.as_object().unwrap().len(), 3);
        let back: Event = serde_json::from_value(json).unwrap();
        assert_eq!(back, event);
        assert_eq!(back.kind.name(), "step.started");
    }

    #[test]
    fn every_event_type_is_listed() {
        let source = include_str!("event.rs");
        let start = source.find("fn name(&self)").unwrap();
        let names: Vec<&str> = source[start..]
            .split("=> \"")
            .skip(1)
            .map(|rest| &rest[..rest.find('"').unwrap()])
            .take_while(|name| name.contains('.'))
            .collect();
        assert_eq!(names.len(), EVENT_TYPES.len(), "{names:?}");
        for name in names {
            assert!(EVENT_TYPES.contains(&name), "{name}");
        }
    }

    #[test]
    fn end_reasons_use_the_documented_names() {
        for (reason, name) in [
            (EndReason::Completed, "completed"),
            (EndReason::MaxSteps, "max_steps"),
            (EndReason::MaxTokens, "max_tokens"),
            (EndReason::Aborted, "aborted"),
            (EndReason::Error, "error"),
        ] {
            assert_eq!(serde_json::to_value(reason).unwrap(), name);
            assert_eq!(reason.as_str(), name);
        }
    }
}
