//! The keys of `connections/<name>.toml` (docs/connections.md#every-key).

use super::DefaultValue as D;
use super::{APPROVALS, ENV_NAME, Key, Kind, NON_BLANK, STRING, Table};

/// `startup_timeout_secs` when the file does not set it.
pub const STARTUP_TIMEOUT_SECS: u64 = 30;
/// `timeout_secs` when the file does not set it.
pub const CALL_TIMEOUT_SECS: u64 = 120;

/// A connection file.
pub static CONNECTION: Table = Table {
    one_of: &[&["command", "url"]],
    ..Table::of(&[
        Key::new(
            "description",
            Kind::Str(NON_BLANK),
            "What the server is for; listed in the prompt's tool-catalog section when the connection is deferred.",
        ),
        Key::new(
            "command",
            Kind::Strings(STRING),
            "The server program and its arguments (stdio). `{{ agent_dir }}` and `{{ workspace }}` are replaced by the agent directory and the workspace; no `${NAME}` here: pass secrets in `env`.",
        ),
        Key::new(
            "url",
            Kind::Str(NON_BLANK),
            "An `http://` or `https://` endpoint (streamable HTTP, or HTTP+SSE).",
        ),
        Key::new(
            "env",
            Kind::Map {
                names: ENV_NAME.pattern,
                values: &Kind::Str(STRING),
            },
            "Stdio only: variables the server gets, beside PATH, HOME, LANG and TMPDIR. Values may read eve's environment with `${NAME}` when the server starts.",
        )
        .default(D::EmptyTable)
        .needs(&["command"]),
        Key::new(
            "cwd",
            Kind::Str(STRING),
            "Stdio only: where the server runs, relative to the workspace; templates as in `command`. Default: the workspace.",
        )
        .needs(&["command"]),
        Key::new(
            "sandbox",
            Kind::Bool,
            "Stdio only: the server runs in the agent's sandbox, like `bash`; `false` runs it unconfined.",
        )
        .default(D::Bool(true))
        .needs(&["command"]),
        Key::new(
            "headers",
            Kind::Map {
                names: None,
                values: &Kind::Str(STRING),
            },
            "HTTP only: request headers, e.g. `Authorization`. Values may use `${NAME}`.",
        )
        .default(D::EmptyTable)
        .needs(&["url"]),
        Key::new(
            "required",
            Kind::Bool,
            "A required server that cannot be listed fails the build (when nothing is cached) and a session that cannot start it fails; `false` makes both a warning and leaves its tools out.",
        )
        .default(D::Bool(true)),
        Key::new(
            "startup_timeout_secs",
            Kind::PositiveInt,
            "How long the server may take to start and list its tools, in seconds.",
        )
        .default(D::Int(STARTUP_TIMEOUT_SECS)),
        Key::new(
            "timeout_secs",
            Kind::PositiveInt,
            "How long one tool call may take, in seconds; then eve cancels it and the model gets an error.",
        )
        .default(D::Int(CALL_TIMEOUT_SECS)),
        Key::new(
            "defer",
            Kind::Bool,
            "Keep the server's tools out of the tool list; the model finds them with `search_tools` and runs them with `call_tool`.",
        )
        .default(D::Bool(false)),
        Key::new(
            "tools",
            Kind::Table(&TOOLS),
            "Which of the server's tools are offered, and which need approval.",
        ),
    ])
};

/// `[tools]` of a connection file.
pub static TOOLS: Table = Table::of(&[
    Key::new(
        "allow",
        Kind::Strings(STRING),
        "Only the tools these globs match (by the server's own tool names) are offered. Default: all.",
    ),
    Key::new(
        "block",
        Kind::Strings(STRING),
        "Tools these globs match are never offered; `block` wins over `allow`.",
    )
    .default(D::EmptyArray),
    Key::new(
        "approval",
        Kind::Map {
            names: None,
            values: &Kind::Enum(APPROVALS),
        },
        "Per tool name or glob (\"*\" for all): \"always\" asks a person before each call, \"never\" does not. An entry naming the tool wins; among glob entries, \"always\" wins.",
    )
    .default(D::EmptyTable),
]);
