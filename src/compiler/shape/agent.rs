//! The keys of `agent.toml` (docs/agent-directory.md#agenttoml).

use super::DefaultValue as D;
use super::{ENV_NAME, Key, Kind, NON_BLANK, STRING, Str, Table};
use crate::manifest::SandboxMode;

/// The context window assumed when `agent.toml` does not give one.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// The most output tokens a model call asks for by default, on a large enough window.
pub const DEFAULT_MAX_OUTPUT_TOKENS: u64 = 8192;

/// The compaction threshold by default, when the window leaves room for it.
pub const DEFAULT_THRESHOLD: f64 = 0.9;

/// `mode`: how a session stands after a turn.
pub const MODES: &[&str] = &["task", "conversation"];

/// `[providers.NAME] api`: the wire protocols.
pub const APIS: &[&str] = &["openai", "anthropic", "openai-responses"];

/// The root table of `agent.toml`.
pub static AGENT: Table = Table::of(&[
    Key::new(
        "name",
        Kind::Str(Str {
            max_chars: Some(64),
            ..NON_BLANK
        }),
        "The agent's name, 1 to 64 characters (`{{ agent.name }}` in the instructions). Default: the directory's name.",
    ),
    Key::new(
        "description",
        Kind::Str(NON_BLANK),
        "What the agent does. Required for a subagent: its parent's model reads it to decide when to hand work over.",
    ),
    Key::new(
        "model",
        Kind::Str(NON_BLANK),
        "The model, as `provider/model-id` (`anthropic/claude-sonnet-4-5`, `openai/gpt-4.1`, `NAME/…` for a `[providers.NAME]`) or `scripted:<file>`. Required at the top level; a subagent inherits its parent's.",
    ),
    Key::new(
        "mode",
        Kind::Enum(MODES),
        "How a session stands after a turn: \"task\" ends it when the task is done (session.completed); \"conversation\" waits for the next message (session.waiting).",
    )
    .default(D::Str("task")),
    Key::new(
        "default_tools",
        Kind::Bool,
        "`false` starts from no built-in tools: a tool file for a built-in (even an empty one) opts that tool in.",
    )
    .default(D::Bool(true)),
    Key::new("limits", Kind::Table(&LIMITS), "Limits of a turn and of the context."),
    Key::new(
        "compaction",
        Kind::Table(&COMPACTION),
        "When and with which model older history is summarised.",
    ),
    Key::new(
        "workspace",
        Kind::Table(&WORKSPACE),
        "Where the file tools and `bash` act. Only the top agent's counts.",
    ),
    Key::new(
        "sandbox",
        Kind::Table(&SANDBOX),
        "How `bash`, command tools and stdio connections are confined (Linux). Only the top agent's counts.",
    ),
    Key::new(
        "providers",
        Kind::Map {
            names: Some(r"^[^/:\s]+$"),
            values: &Kind::Table(&PROVIDER),
        },
        "Extra providers, named by model references as `NAME/<model-id>` (Ollama, vLLM, LM Studio, OpenRouter, a proxy…). A table named after a built-in provider (`openai`, `anthropic`) replaces it.",
    ),
    Key::new(
        "instructions",
        Kind::Table(&INSTRUCTIONS),
        "What the instructions templates may read.",
    ),
    Key::new(
        "skills",
        Kind::Table(&SKILLS),
        "How the agent's skills reach the model.",
    ),
    Key::new(
        "reasoning",
        Kind::Table(&REASONING),
        "How hard a reasoning model thinks before it answers: Anthropic's extended thinking, OpenAI's `reasoning_effort`. Not inherited by subagents.",
    ),
    Key::new(
        "telemetry",
        Kind::Table(&TELEMETRY),
        "What the agent's OpenTelemetry spans carry (docs/telemetry.md). Nothing is exported unless `OTEL_EXPORTER_OTLP_ENDPOINT` is set. Only the top agent's counts.",
    ),
]);

/// `[telemetry]`.
pub static TELEMETRY: Table = Table::of(&[
    Key::new(
        "capture_content",
        Kind::Bool,
        "`true` exports the messages, replies and tool inputs and outputs as span events (provider keys masked, each cut at 16 KiB); `false` exports only names, ids, counts and durations.",
    )
    .default(D::Bool(false)),
    Key::new(
        "attributes",
        Kind::Map {
            names: None,
            values: &Kind::Str(STRING),
        },
        "Attributes added to every span of the agent's sessions, e.g. `team = \"search\"`.",
    )
    .default(D::EmptyTable),
]);

/// `[reasoning]`.
pub static REASONING: Table = Table::of(&[
    Key::new(
        "effort",
        Kind::Enum(crate::manifest::Effort::NAMES),
        "How much the model thinks: \"minimal\", \"low\", \"medium\" or \"high\". For Anthropic, a thinking budget of 1,024, 4,096, 10,000 or 32,000 tokens.",
    )
    .default(D::Str("medium")),
    Key::new(
        "budget_tokens",
        Kind::PositiveInt,
        "Anthropic only: the extended thinking budget in tokens (at least 1,024), instead of the effort's. eve raises `max_tokens` by it, so the reply keeps `max_output_tokens`.",
    ),
]);

/// `[skills]`.
pub static SKILLS: Table = Table::of(&[Key::new(
    "defer",
    Kind::Bool,
    "`true` defers every skill, as `deferred: true` in each would: none is listed in the system prompt, and the model finds them with `search_tools` and loads them with `load_skill`. For a library too large to list.",
)
.default(D::Bool(false))]);

/// `[limits]`.
pub static LIMITS: Table = Table::of(&[
    Key::new("max_steps", Kind::PositiveInt, "Model calls per turn.").default(D::Int(50)),
    Key::new(
        "max_output_tokens",
        Kind::PositiveInt,
        "Output tokens per model call; must be smaller than `context_window`. Default: 8192, or a quarter of `context_window` when that is smaller.",
    )
    .default(D::Int(DEFAULT_MAX_OUTPUT_TOKENS)),
    Key::new(
        "context_window",
        Kind::PositiveInt,
        "The model's context size in tokens; compaction works against it. eve does not know your model's window: set it.",
    )
    .default(D::Int(DEFAULT_CONTEXT_WINDOW)),
    Key::new(
        "max_parallel_tools",
        Kind::PositiveInt,
        "How many read-only tool calls of one step run at the same time.",
    )
    .default(D::Int(8)),
    Key::new(
        "max_input_tokens_per_session",
        Kind::PositiveInt,
        "A cap on the input tokens one session may spend over all its turns; then the turn stops with `max_input_tokens`. Absent: no cap.",
    ),
]);

/// `[compaction]`.
pub static COMPACTION: Table = Table::of(&[
    Key::new(
        "threshold_percent",
        Kind::Number {
            above: Some(0.0),
            max: Some(1.0),
        },
        "Compact the history when the estimated input of the next model call passes this fraction of `context_window` (0.9 means 90%). Default: 0.9, or less when `max_output_tokens` leaves less room.",
    )
    .default(D::Float(DEFAULT_THRESHOLD)),
    Key::new(
        "model",
        Kind::Str(NON_BLANK),
        "The model that writes the summary, as `provider/model-id`. Default: the turn's model.",
    ),
]);

/// `[workspace]`.
pub static WORKSPACE: Table = Table::of(&[
    Key::new(
        "root",
        Kind::Str(NON_BLANK),
        "Where file tools and `bash` act. A relative path is relative to the directory eve is run from, not to the agent directory.",
    )
    .default(D::Str(".")),
    Key::new(
        "agent_writable",
        Kind::Bool,
        "Whether the file tools may change this agent's own definition when the agent directory is inside the workspace. Its `.eve/` stays out of reach either way.",
    )
    .default(D::Bool(false)),
]);

/// `[sandbox]`.
pub static SANDBOX: Table = Table::of(&[
    Key::new(
        "mode",
        Kind::Enum(SandboxMode::NAMES),
        "What `bash`, command tools and stdio connections may write: \"workspace-write\" (the workspace, $TMPDIR, the `writable` folders), \"read-only\" (nothing) or \"off\" (no sandbox).",
    )
    .default(D::Str("workspace-write")),
    Key::new(
        "network",
        Kind::Bool,
        "`false`: sandboxed processes cannot open IP sockets (Unix sockets keep working).",
    )
    .default(D::Bool(true)),
    Key::new(
        "writable",
        Kind::Strings(NON_BLANK),
        "Extra writable folders, relative to the workspace; each must exist.",
    )
    .default(D::EmptyArray),
    Key::new(
        "require",
        Kind::Bool,
        "`true`: where the kernel cannot confine processes, `bash` and command tools are not offered.",
    )
    .default(D::Bool(false)),
]);

/// `[providers.NAME]`.
pub static PROVIDER: Table = Table {
    required: &["base_url"],
    ..Table::of(&[
        Key::new(
            "api",
            Kind::Enum(APIS),
            "The wire protocol: \"openai\" (Chat Completions), \"openai-responses\" (OpenAI's Responses API) or \"anthropic\" (Messages).",
        )
        .default(D::Str("openai")),
        Key::new(
            "base_url",
            Kind::Str(Str {
                pattern: Some("^https?://"),
                ..STRING
            }),
            "Where the API is, starting with `http://` or `https://`; for an OpenAI-compatible server it ends in `/v1`. No user name or password in it: name the key's variable in `api_key_env`.",
        ),
        Key::new(
            "api_key_env",
            Kind::Str(ENV_NAME),
            "The environment variable that holds the API key. Keys never go in files (`api_key` is refused).",
        ),
    ])
};

/// `[instructions]`.
pub static INSTRUCTIONS: Table = Table::of(&[Key::new(
    "env",
    Kind::Strings(ENV_NAME),
    "The only environment variables the instructions can read, as `env.NAME`. A variable that holds a provider key is refused.",
)
.default(D::EmptyArray)]);
