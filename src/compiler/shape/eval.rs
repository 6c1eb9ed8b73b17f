//! The keys of an eval case, `evals/**/*.toml` (docs/evals.md#the-case-file).

use super::DefaultValue as D;
use super::{Key, Kind, NON_BLANK, STRING, Table};
use crate::manifest::eval::{DEFAULT_TIMEOUT_SECS, SequenceMode};
use crate::manifest::script::FINISH_REASONS;
use crate::protocol::event::EVENT_TYPES;

/// The end reasons a case can expect.
pub const END_REASONS: &[&str] = &[
    "completed",
    "waiting",
    "max_steps",
    "max_tokens",
    "max_input_tokens",
    "error",
    "refused",
];

/// A case file.
pub static CASE: Table = Table {
    one_of: &[&["prompt", "turn"]],
    ..Table::of(&[
        Key::new("description", Kind::Str(STRING), "Shown in the report and in `eve eval --list`."),
        Key::new("tags", Kind::Strings(STRING), "Tags, for `eve eval --tag`.").default(D::EmptyArray),
        Key::new(
            "prompt",
            Kind::Str(STRING),
            "The message of a one-turn case; or use `[[turn]]`, not both.",
        ),
        Key::new(
            "turn",
            Kind::Tables(&TURN),
            "The turns of a case with several; each does exactly one thing. Not with `prompt`.",
        ),
        Key::new(
            "workspace",
            Kind::Table(&WORKSPACE),
            "The files the case starts from, in a new temporary workspace for each run.",
        ),
        Key::new(
            "reply",
            Kind::Tables(&REPLY),
            "The scripted model: each model call of the case takes the next reply, in order, across turns. Without replies the case runs on a real model.",
        ),
        Key::new(
            "stub",
            Kind::Tables(&STUB),
            "Tool effects replaced for the calls each stub matches; the first stub that matches answers.",
        ),
        Key::new(
            "hooks",
            Kind::Map {
                names: None,
                values: &Kind::Table(&HOOK_STUB),
            },
            "Hooks of the agent whose answers are given instead of run, by hook name: the hook's command does not start.",
        ),
        Key::new(
            "expect",
            Kind::Table(&EXPECT),
            "What must hold after the last turn, over the whole case.",
        ),
        Key::new("repeat", Kind::PositiveInt, "How many times the case runs.").default(D::Int(1)),
        Key::new(
            "pass",
            Kind::PositiveInt,
            "How many of the `repeat` runs must pass; at most `repeat`. Default: `repeat`.",
        ),
        Key::new(
            "timeout_secs",
            Kind::PositiveInt,
            "The longest one run may take, in seconds; then its turn is cancelled and the run fails.",
        )
        .default(D::Int(DEFAULT_TIMEOUT_SECS)),
        Key::new(
            "model",
            Kind::Str(NON_BLANK),
            "The model of a live case, as in `agent.toml` (`provider/model-id` or `scripted:<file>`); not with `[[reply]]`. Default: the agent's.",
        ),
    ])
};

/// `[[turn]]`.
pub static TURN: Table = Table {
    one_of: &[&["send", "answer", "approve", "deny"]],
    ..Table::of(&[
        Key::new(
            "send",
            Kind::Str(STRING),
            "A new message. The first turn must send.",
        ),
        Key::new(
            "answer",
            Kind::Str(STRING),
            "The answer to the question the agent waits for (`ask_question`).",
        ),
        Key::new(
            "approve",
            Kind::True,
            "`true`: approve the call that waits for approval.",
        ),
        Key::new(
            "deny",
            Kind::OneOf(&[Kind::True, Kind::Str(STRING)]),
            "`true` or the reason: deny the call that waits for approval; the model is told, with the reason when given.",
        ),
        Key::new(
            "expect",
            Kind::Table(&EXPECT),
            "What must hold after this turn: the keys of `[expect]`, checked against this turn only.",
        ),
    ])
};

/// `[workspace]` of a case.
pub static WORKSPACE: Table = Table::of(&[
    Key::new(
        "from",
        Kind::Str(NON_BLANK),
        "A folder copied into the workspace, relative to the case file's folder; it must be inside the agent directory.",
    ),
    Key::new(
        "files",
        Kind::Map {
            names: None,
            values: &Kind::Str(STRING),
        },
        "Files written into the workspace (after the copy, over it): relative path = contents.",
    )
    .default(D::EmptyTable),
]);

/// `[[reply]]`: one scripted model reply.
pub static REPLY: Table = Table::of(&[
    Key::new("text", Kind::Str(STRING), "The reply's text.").default(D::Str("")),
    Key::new(
        "reasoning",
        Kind::Str(STRING),
        "Reasoning text, before the text.",
    )
    .default(D::Str("")),
    Key::new(
        "tool_calls",
        Kind::Tables(&CALL),
        "The tool calls of the reply, in order.",
    )
    .default(D::EmptyArray),
    Key::new(
        "usage",
        Kind::Table(&USAGE),
        "Token counts the reply reports (estimated at 4 characters a token when left out).",
    ),
    Key::new(
        "finish",
        Kind::Enum(FINISH_REASONS),
        "Why the model stopped. Default: \"tool_use\" when there are tool calls, else \"stop\".",
    ),
    Key::new(
        "error",
        Kind::Table(&ERROR),
        "Make this model call fail like an HTTP error; not with `text` or `tool_calls`.",
    ),
]);

/// A tool call of a scripted reply.
pub static CALL: Table = Table {
    required: &["name"],
    ..Table::of(&[
        Key::new(
            "id",
            Kind::Str(STRING),
            "The call's id. Default: one is made up.",
        ),
        Key::new("name", Kind::Str(STRING), "The tool called."),
        Key::new(
            "input",
            Kind::AnyTable,
            "The call's arguments, checked against the tool's input schema.",
        )
        .default(D::EmptyTable),
    ])
};

/// `usage` of a scripted reply.
pub static USAGE: Table = Table::of(&[
    Key::new("input_tokens", Kind::Count, "Input tokens of the call."),
    Key::new("output_tokens", Kind::Count, "Output tokens of the call."),
    Key::new(
        "cache_read_tokens",
        Kind::Count,
        "Input tokens read from the provider's cache.",
    )
    .default(D::Int(0)),
    Key::new(
        "cache_write_tokens",
        Kind::Count,
        "Input tokens written to the provider's cache.",
    )
    .default(D::Int(0)),
    Key::new(
        "reasoning_tokens",
        Kind::Count,
        "The part of `output_tokens` spent reasoning.",
    )
    .default(D::Int(0)),
]);

/// `error` of a scripted reply.
pub static ERROR: Table = Table {
    required: &["status"],
    ..Table::of(&[
        Key::new(
            "status",
            Kind::IntRange { min: 400, max: 599 },
            "The HTTP status the call fails with (400–599); 429 and 5xx are retried.",
        ),
        Key::new("body", Kind::Str(STRING), "The response body.").default(D::Str("")),
        Key::new(
            "retry_after",
            Kind::Number {
                above: None,
                max: None,
            },
            "Seconds, as a `retry-after` header.",
        ),
    ])
};

/// `[[stub]]`.
pub static STUB: Table = Table {
    required: &["tool"],
    one_of: &[&["response", "error", "outcomes"]],
    ..Table::of(&[
        Key::new(
            "tool",
            Kind::Str(STRING),
            "The tool whose calls the stub answers.",
        ),
        Key::new(
            "match",
            Kind::Any,
            "The input a call must match: a string is a glob, a table matches an object with at least its keys, an array item by item. Default: any input.",
        ),
        Key::new(
            "match_schema",
            Kind::JsonSchema { object: false },
            "A JSON Schema the call's input must be valid against.",
        ),
        Key::new("response", Kind::Str(STRING), "The tool's output."),
        Key::new(
            "error",
            Kind::Str(STRING),
            "A failed call: the model gets this as an error result.",
        ),
        Key::new(
            "outcomes",
            Kind::Tables(&OUTCOME),
            "One outcome per matching call, in order; the last one repeats.",
        ),
    ])
};

/// `[hooks.NAME]`: a hook's answer, as its JSON would say it.
pub static HOOK_STUB: Table = Table::of(&[
    Key::new(
        "decision",
        Kind::Enum(HOOK_DECISIONS),
        "What the hook decides. Default: go on.",
    ),
    Key::new(
        "reason",
        Kind::Str(STRING),
        "Why: what the model reads when the hook refuses.",
    ),
    Key::new(
        "additional_context",
        Kind::Str(STRING),
        "A note for the model.",
    ),
    Key::new(
        "updated_input",
        Kind::Any,
        "`before_tool`: the input (an object) the call runs with instead of the model's.",
    ),
]);

/// The decisions a hook's answer can hold.
pub const HOOK_DECISIONS: &[&str] = &["continue", "allow", "ask", "deny", "block"];

/// An entry of a stub's `outcomes`.
pub static OUTCOME: Table = Table {
    one_of: &[&["response", "error"]],
    ..Table::of(&[
        Key::new(
            "response",
            Kind::Str(STRING),
            "The tool's output for this call.",
        ),
        Key::new(
            "error",
            Kind::Str(STRING),
            "This call fails: the model gets this as an error result.",
        ),
    ])
};

/// `[expect]` and `[turn.expect]`.
pub static EXPECT: Table = Table::of(&[
    Key::new(
        "end",
        Kind::Enum(END_REASONS),
        "How the turn must end. Without it, a turn followed by an answer, approval or denial must end \"waiting\", any other \"completed\".",
    ),
    Key::new(
        "reply_contains",
        Kind::StringOrStrings,
        "The reply (the text of the last model call) contains each string.",
    ),
    Key::new(
        "reply_not_contains",
        Kind::StringOrStrings,
        "The reply contains none of these strings.",
    ),
    Key::new(
        "reply_equals",
        Kind::Str(STRING),
        "The reply is exactly this.",
    ),
    Key::new(
        "reply_regex",
        Kind::Str(STRING),
        "The reply matches this regular expression (Rust `regex` syntax).",
    ),
    Key::new(
        "reply_schema",
        Kind::JsonSchema { object: false },
        "The reply is JSON valid against this JSON Schema (a ```json fence is read inside).",
    ),
    Key::new(
        "tools",
        Kind::Table(&TOOLS),
        "Checks of the top agent's tool calls, in the order the model made them.",
    ),
    Key::new(
        "skills",
        Kind::Strings(STRING),
        "`load_skill` loaded each of these skills.",
    ),
    Key::new(
        "subagents",
        Kind::Strings(STRING),
        "The top agent called each of these subagents.",
    ),
    Key::new(
        "events",
        Kind::Table(&EVENTS),
        "Checks of the types of the events.",
    ),
    Key::new(
        "hooks",
        Kind::Table(&HOOK_CHECKS),
        "Checks of the hooks' runs (the top agent's and its subagents'), by hook name.",
    ),
    Key::new(
        "files",
        Kind::Map {
            names: None,
            values: &Kind::OneOf(&[Kind::Str(STRING), Kind::Table(&FILE_CHECK)]),
        },
        "Files of the workspace afterwards, by path relative to it: a string is the whole content, a table holds checks.",
    ),
    Key::new(
        "max_steps",
        Kind::PositiveInt,
        "The model calls of the top agent were at most this many.",
    ),
    Key::new(
        "max_input_tokens",
        Kind::PositiveInt,
        "The input tokens, summed over those calls, were at most this many.",
    ),
    Key::new(
        "max_output_tokens",
        Kind::PositiveInt,
        "The output tokens were at most this many.",
    ),
    Key::new(
        "max_seconds",
        Kind::Number {
            above: Some(0.0),
            max: None,
        },
        "The turns took at most this long, wall time, in seconds.",
    ),
    Key::new(
        "judge",
        Kind::Str(STRING),
        "Criteria a judge model checks the reply against.",
    ),
    Key::new(
        "gate",
        Kind::Bool,
        "`true`: a failed judgement fails the case.",
    )
    .default(D::Bool(false))
    .needs(&["judge"]),
]);

/// `[expect.tools]`.
pub static TOOLS: Table = Table::of(&[
    Key::new(
        "called",
        Kind::Array(&Kind::OneOf(&[Kind::Str(STRING), Kind::Table(&CALLED)])),
        "Each tool was called: a name (at least once) or `{ name, input, times }` (exactly `times` times, with an input matching `input`).",
    ),
    Key::new("never", Kind::Strings(STRING), "None of these tools was called."),
    Key::new(
        "sequence",
        Kind::Strings(STRING),
        "The calls fit this sequence of tools, by `mode`.",
    ),
    Key::new(
        "mode",
        Kind::Enum(SequenceMode::NAMES),
        "How `sequence` is compared: \"strict\" (exactly, in order), \"in_order\" (in this order, others between), \"subset\" (every call is of a listed tool), \"superset\" (every listed tool was called).",
    )
    .default(D::Str("in_order"))
    .needs(&["sequence"]),
    Key::new(
        "max_calls",
        Kind::PositiveInt,
        "There were at most this many calls.",
    ),
]);

/// An entry of `called` written as a table.
pub static CALLED: Table = Table {
    required: &["name"],
    ..Table::of(&[
        Key::new("name", Kind::Str(STRING), "The tool."),
        Key::new(
            "input",
            Kind::Any,
            "The input the call must match, as a stub's `match`.",
        ),
        Key::new(
            "times",
            Kind::PositiveInt,
            "Exactly this many calls. Default: at least one.",
        ),
    ])
};

/// `[expect.events]`.
pub static EVENTS: Table = Table::of(&[
    Key::new(
        "present",
        Kind::EnumList(EVENT_TYPES),
        "Each of these event types appears.",
    ),
    Key::new(
        "in_order",
        Kind::EnumList(EVENT_TYPES),
        "These event types appear in this order, others between.",
    ),
    Key::new(
        "absent",
        Kind::EnumList(EVENT_TYPES),
        "None of these event types appears.",
    ),
]);

/// `[expect.hooks]`.
pub static HOOK_CHECKS: Table = Table::of(&[
    Key::new("ran", Kind::Strings(STRING), "Each of these hooks ran."),
    Key::new("not_ran", Kind::Strings(STRING), "None of these hooks ran."),
    Key::new(
        "denied",
        Kind::Strings(STRING),
        "Each of these hooks refused something: a call, a message, the end of a turn.",
    ),
    Key::new(
        "rewrote",
        Kind::Strings(STRING),
        "Each of these hooks gave a call another input.",
    ),
]);

/// A file check of `[expect.files]` written as a table.
pub static FILE_CHECK: Table = Table::of(&[
    Key::new(
        "exists",
        Kind::Bool,
        "The file exists (`false`: it does not).",
    ),
    Key::new("equals", Kind::Str(STRING), "The file holds exactly this."),
    Key::new(
        "contains",
        Kind::StringOrStrings,
        "The file contains each string.",
    ),
    Key::new(
        "regex",
        Kind::Str(STRING),
        "The file matches this regular expression.",
    ),
    Key::new("absent", Kind::Bool, "`true`: the file does not exist."),
]);
