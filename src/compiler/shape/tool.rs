//! The keys of `tools/<slug>.toml` (docs/agent-directory.md#tools): a built-in's override,
//! a new tool (or a built-in's replacement), and a connection tool's override.

use super::DefaultValue as D;
use super::{APPROVAL_DOC, APPROVALS, Key, Kind, NON_BLANK, STRING, Table};

/// Timeout of a custom tool that does not set `timeout_secs`.
pub const CUSTOM_TOOL_TIMEOUT_SECS: u64 = 60;

/// The methods an HTTP tool may use.
pub const HTTP_METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"];

/// A file with any of these keys is a new tool (on a built-in's name, its replacement);
/// without them, a file on a built-in's name overrides it.
pub const NEW_TOOL_KEYS: &[&str] = &["command", "http", "input_schema"];

const DISABLED: Key = Key::new(
    "disabled",
    Kind::Bool,
    "`true` removes the built-in tool; it must then be the only key. `false` is the same as leaving it out.",
)
.default(D::Bool(false));

const DESCRIPTION: Key = Key::new(
    "description",
    Kind::Str(NON_BLANK),
    "What the model reads about the tool: what it does and when to use it. On a built-in it replaces the built-in's description; a new tool must have one.",
);

const APPROVAL: Key =
    Key::new("approval", Kind::Enum(APPROVALS), APPROVAL_DOC).default(D::Str("never"));

const DEFER: Key = Key::new(
    "defer",
    Kind::Bool,
    "`true`: the tool is left out of the tool list and reached through the tool catalog (`search_tools`, `call_tool`).",
)
.default(D::Bool(false));

const TIMEOUT_DOC: &str = "The longest one call may run, in seconds.";

/// A file that overrides (or disables) the built-in tool it is named after.
pub static OVERRIDE: Table = Table::of(&[
    DISABLED,
    DESCRIPTION,
    APPROVAL,
    Key::new("timeout_secs", Kind::PositiveInt, TIMEOUT_DOC),
    DEFER,
    Key::new(
        "settings",
        Kind::Settings,
        "The built-in's own settings (only `bash`, `web_fetch` and `agent` take any).",
    ),
]);

/// A file that adds a tool, or replaces the built-in it is named after.
pub static NEW: Table = Table {
    required: &["description", "input_schema"],
    one_of: &[&["command", "http"]],
    ..Table::of(&[
        DISABLED,
        DESCRIPTION,
        APPROVAL,
        Key::new("timeout_secs", Kind::PositiveInt, TIMEOUT_DOC)
            .default(D::Int(CUSTOM_TOOL_TIMEOUT_SECS)),
        Key::new(
            "read_only",
            Kind::Bool,
            "`true` promises the tool changes nothing, so its calls may run beside other read-only calls of the same step; otherwise each call runs alone.",
        )
        .default(D::Bool(false)),
        DEFER,
        Key::new(
            "input_schema",
            Kind::JsonSchema { object: true },
            "The arguments the model must send: a JSON Schema written in TOML, describing an object (`type = \"object\"`).",
        ),
        Key::new(
            "allow_option_arguments",
            Kind::Bool,
            "Command tools only: let an argument of `command` built from the input start with `-` (otherwise refused: option injection).",
        )
        .default(D::Bool(false))
        .needs(&["command"]),
        Key::new(
            "command",
            Kind::Strings(STRING),
            "The program to run and its arguments; each a template with `input` (the model's arguments) and `agent_dir`. The input also arrives as JSON on stdin; stdout is the result.",
        ),
        Key::new("http", Kind::Table(&HTTP), "The HTTP request to send; the response body is the result."),
    ])
};

/// `[http]` of a new tool.
pub static HTTP: Table = Table {
    required: &["url"],
    ..Table::of(&[
        Key::new(
            "url",
            Kind::Str(NON_BLANK),
            "The URL, a template with `input`, `agent_dir` and `env`. A host written before any `{{ }}` is the only host the tool may reach.",
        ),
        Key::new(
            "method",
            Kind::EnumAnyCase(HTTP_METHODS),
            "The HTTP method, in any case.",
        )
        .default(D::Str("GET")),
        Key::new(
            "headers",
            Kind::Map {
                names: None,
                values: &Kind::Str(STRING),
            },
            "Request headers; each value a template with `input`, `agent_dir` and `env`.",
        )
        .default(D::EmptyTable),
        Key::new(
            "body",
            Kind::Str(STRING),
            "The request body, a template with `input`, `agent_dir` and `env`.",
        ),
        Key::new(
            "allow_private",
            Kind::Bool,
            "Allow loopback, private and link-local addresses (a service on your machine or network).",
        )
        .default(D::Bool(false)),
    ])
};

/// `tools/<connection>__<tool>.toml`: one tool of a connection.
pub static CONNECTION_TOOL: Table = Table::of(&[
    Key::new(
        "disabled",
        Kind::Bool,
        "`true` leaves the tool out; it must then be the only key.",
    )
    .default(D::Bool(false)),
    Key::new(
        "description",
        Kind::Str(NON_BLANK),
        "What the model reads instead of the server's description.",
    ),
    Key::new(
        "approval",
        Kind::Enum(APPROVALS),
        "\"always\": a person approves each call; \"never\": it runs without asking. Wins over the connection's `[tools] approval`.",
    ),
    Key::new(
        "defer",
        Kind::Bool,
        "`true` or `false`: this tool alone in or out of the tool catalog, whatever the connection's `defer`.",
    ),
]);
