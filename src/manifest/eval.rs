//! Compiled eval cases (`evals/**/*.toml`): what a case sends, the world it runs in, and
//! what must hold afterwards; checked by the compiler, run by `eve eval`.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;

use super::script::Reply;

/// How long a case may run unless it sets `timeout_secs`.
pub const DEFAULT_TIMEOUT_SECS: u64 = 300;

/// One eval case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The path below `evals/` without `.toml`: `fix-typo`, `edits/rename`.
    pub id: String,
    /// The file, relative to the agent directory: `evals/fix-typo.toml`.
    pub file: String,
    pub description: Option<String>,
    pub tags: Vec<String>,
    /// What is sent, in order; the first is always a message.
    pub turns: Vec<Turn>,
    /// What must hold after the last turn, over the whole case.
    pub expect: Expect,
    pub workspace: Workspace,
    /// The scripted model; `None` runs the case on a real model.
    pub replies: Option<Vec<Reply>>,
    pub stubs: Vec<Stub>,
    /// Hooks whose answers are given instead of run (`[hooks.NAME]`).
    pub hook_stubs: Vec<HookStub>,
    /// How many times the case runs, and how many runs must pass.
    pub repeat: u32,
    pub pass: u32,
    pub timeout_secs: u64,
    /// The model for a live run, instead of the agent's.
    pub model: Option<String>,
}

/// What a case starts from: a folder copied, then files written over it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Workspace {
    /// A folder inside the agent directory (absolute), copied into each run's workspace.
    pub from: Option<PathBuf>,
    /// Files by path relative to the workspace, and their contents.
    pub files: BTreeMap<String, String>,
}

/// One turn of a case.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub input: TurnInput,
    pub expect: Expect,
}

/// What a turn sends.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnInput {
    /// A new message: a turn of its own.
    Send(String),
    /// The answer to the question the agent waits for.
    Answer(String),
    /// Approve the call the agent waits for.
    Approve,
    /// Deny it, with a reason when given.
    Deny(Option<String>),
}

/// What must hold after a turn (or after the whole case).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expect {
    /// How the turn must end (an end reason's name); `None`: the default for its place.
    pub end: Option<String>,
    pub reply: Vec<ReplyCheck>,
    pub tools: ToolChecks,
    /// Skills that must have been loaded.
    pub skills: Vec<String>,
    /// Subagents that must have been called.
    pub subagents: Vec<String>,
    pub events: EventChecks,
    pub hooks: HookChecks,
    /// Files of the workspace, by path, in file order.
    pub files: Vec<(String, FileCheck)>,
    pub max_steps: Option<u64>,
    pub max_input_tokens: Option<u64>,
    pub max_output_tokens: Option<u64>,
    pub max_seconds: Option<f64>,
    pub judge: Option<Judge>,
}

/// A check of the reply's text.
#[derive(Debug, Clone, PartialEq)]
pub enum ReplyCheck {
    Contains(String),
    NotContains(String),
    Equals(String),
    Regex(String),
    /// The reply, read as JSON, is valid against this schema.
    Schema(Value),
}

/// Checks of the top agent's tool calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolChecks {
    pub called: Vec<Called>,
    pub never: Vec<String>,
    pub sequence: Option<Sequence>,
    pub max_calls: Option<u64>,
}

/// A tool that must have been called: with an input matching `input`, `times` times
/// (at least once when `times` is unset).
#[derive(Debug, Clone, PartialEq)]
pub struct Called {
    pub name: String,
    pub input: Option<Value>,
    pub times: Option<u64>,
}

/// The order of the calls.
#[derive(Debug, Clone, PartialEq)]
pub struct Sequence {
    pub tools: Vec<String>,
    pub mode: SequenceMode,
}

/// How a sequence is compared with the calls made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceMode {
    /// The calls, in order, are exactly the sequence.
    Strict,
    /// The sequence's tools are called in this order; other calls may come between.
    InOrder,
    /// Every call is of a tool in the sequence.
    Subset,
    /// Every tool in the sequence is called, in any order.
    Superset,
}

impl SequenceMode {
    /// The names written in a case.
    pub const NAMES: &[&str] = &["strict", "in_order", "subset", "superset"];

    pub fn parse(name: &str) -> Option<SequenceMode> {
        match name {
            "strict" => Some(SequenceMode::Strict),
            "in_order" => Some(SequenceMode::InOrder),
            "subset" => Some(SequenceMode::Subset),
            "superset" => Some(SequenceMode::Superset),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            SequenceMode::Strict => "strict",
            SequenceMode::InOrder => "in_order",
            SequenceMode::Subset => "subset",
            SequenceMode::Superset => "superset",
        }
    }
}

/// Event types that must (or must not) appear.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventChecks {
    pub present: Vec<String>,
    pub in_order: Vec<String>,
    pub absent: Vec<String>,
}

/// Checks of the hooks' runs (`[expect.hooks]`), each a hook's name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HookChecks {
    /// Ran at least once.
    pub ran: Vec<String>,
    /// Never ran.
    pub not_ran: Vec<String>,
    /// Refused something: a call, a message, the end of a turn.
    pub denied: Vec<String>,
    /// Gave a call another input.
    pub rewrote: Vec<String>,
}

impl HookChecks {
    pub fn is_empty(&self) -> bool {
        self.ran.is_empty()
            && self.not_ran.is_empty()
            && self.denied.is_empty()
            && self.rewrote.is_empty()
    }
}

/// A hook's answer given instead of running it (`[hooks.NAME]` of a case): its
/// `hook.completed` event is as if it had answered so.
#[derive(Debug, Clone, PartialEq)]
pub struct HookStub {
    pub hook: String,
    /// `continue`, `allow`, `ask`, `deny` or `block`; `None`: go on.
    pub decision: Option<String>,
    pub reason: Option<String>,
    pub additional_context: Option<String>,
    pub updated_input: Option<Value>,
}

/// A check of one workspace file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FileCheck {
    pub exists: Option<bool>,
    pub equals: Option<String>,
    pub contains: Vec<String>,
    pub regex: Option<String>,
}

/// An LLM judge: a model reads the conversation and says whether it meets the criteria.
#[derive(Debug, Clone, PartialEq)]
pub struct Judge {
    pub criteria: String,
    /// A failed judgement fails the case (otherwise it is a soft failure).
    pub gate: bool,
}

/// A tool's effect replaced: the first stub whose `input` matches a call answers it.
#[derive(Debug, Clone, PartialEq)]
pub struct Stub {
    pub tool: String,
    /// Values the call's input must match: exact, or a glob for strings.
    pub input: Option<Value>,
    /// A JSON Schema the call's input must be valid against.
    pub schema: Option<Value>,
    /// The outcomes, one per matching call; the last one repeats.
    pub outcomes: Vec<StubOutcome>,
}

/// What a stubbed call returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StubOutcome {
    Response(String),
    Error(String),
}
