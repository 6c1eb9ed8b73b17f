//! The manifest: a compiled agent directory, everything a run needs (serde types).

mod approval;
pub mod connection;
pub mod diff;
pub mod eval;
pub mod hook;
pub mod model;
pub mod script;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use approval::Approval;

/// Bumped whenever the manifest's shape changes.
pub const SCHEMA_VERSION: u32 = 2;

/// A compiled agent: settings with defaults filled in, instructions, tools, skills, subagents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema_version: u32,
    pub agent: Agent,
    pub instructions: Instructions,
    pub tools: Vec<Tool>,
    pub skills: Vec<Skill>,
    pub subagents: Vec<Subagent>,
    /// MCP servers whose tools the agent uses (their offered tools are in `tools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connections: Vec<connection::Connection>,
    /// `hooks/<name>.toml`, in file-name order: the order they run in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hooks: Vec<hook::Hook>,
    /// The entries of the agent directory its commands run (`servers` of
    /// `{{ agent_dir }}/servers/stats.mjs`), each with the hash of its files: part of
    /// the definition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub executed: Vec<Executed>,
    /// SHA-256 of every input file, of the files its commands run, and of eve's version;
    /// a run rebuilds when it differs.
    pub inputs_hash: String,
}

/// An entry of the agent directory that a command tool or a stdio connection runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Executed {
    /// Relative to the agent directory that was built, with `/` (`servers`,
    /// `subagents/x/scripts`).
    pub path: String,
    /// SHA-256 over the names and contents of its files.
    pub hash: String,
}

impl Manifest {
    /// The entries of the agent directory its commands and its subagents' commands run
    /// (`servers`, `subagents/x/scripts`), relative to it: part of its definition.
    pub fn executed_paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(manifest) = stack.pop() {
            out.extend(manifest.executed.iter().map(|e| e.path.clone()));
            stack.extend(manifest.subagents.iter().map(|s| s.manifest.as_ref()));
        }
        out.sort();
        out.dedup();
        out
    }

    /// Where the skills linked from outside the agent directory lead (see
    /// [`Skill::linked`]), this agent's and its subagents', sorted: part of the
    /// definition, kept read-only like the rest of it.
    pub fn linked_skills(&self) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let mut stack = vec![self];
        while let Some(manifest) = stack.pop() {
            out.extend(
                manifest
                    .skills
                    .iter()
                    .filter_map(|s| s.linked.as_deref().map(PathBuf::from)),
            );
            stack.extend(manifest.subagents.iter().map(|s| s.manifest.as_ref()));
        }
        out.sort();
        out.dedup();
        out
    }

    /// The top-level names of [`Manifest::executed_paths`] that [`DEFINITION_ENTRIES`]
    /// do not cover already (`servers`, `run.sh`): sessions keep them read-only like the
    /// rest of the definition.
    pub fn definition_entries(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .executed_paths()
            .iter()
            .filter_map(|path| path.split('/').next())
            .filter(|top| !top.is_empty() && !DEFINITION_ENTRIES.contains(top))
            .map(str::to_string)
            .collect();
        out.sort();
        out.dedup();
        out
    }
}

/// The agent's settings from `agent.toml`, defaults applied.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub name: String,
    pub description: Option<String>,
    /// `provider/model-id`, or `scripted:<file>`.
    pub model: String,
    pub mode: Mode,
    pub default_tools: bool,
    pub limits: Limits,
    pub compaction: Compaction,
    pub workspace: Workspace,
    /// How the processes the model starts are confined.
    pub sandbox: Sandbox,
    /// Extra providers from `[providers.NAME]`.
    pub providers: BTreeMap<String, Provider>,
    /// `[reasoning]`: how hard a reasoning model thinks; absent, the provider's default
    /// (no extended thinking for Anthropic).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<Reasoning>,
    /// `[telemetry]`: what the exported spans carry.
    #[serde(default, skip_serializing_if = "Telemetry::is_default")]
    pub telemetry: Telemetry,
}

/// `[telemetry]` of `agent.toml` (docs/telemetry.md).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Telemetry {
    /// Export messages, replies and tool inputs and outputs as span events.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub capture_content: bool,
    /// Attributes added to every span.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub attributes: BTreeMap<String, String>,
}

impl Telemetry {
    fn is_default(&self) -> bool {
        *self == Telemetry::default()
    }
}

/// `[reasoning]` of `agent.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reasoning {
    /// How much to think; `medium` when only `budget_tokens` is written.
    pub effort: Effort,
    /// Anthropic's extended thinking budget, in tokens; absent, the effort's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_tokens: Option<u64>,
}

/// How much a reasoning model thinks before it answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effort {
    Minimal,
    Low,
    Medium,
    High,
}

/// The smallest thinking budget Anthropic accepts.
pub const MIN_THINKING_BUDGET: u64 = 1024;

impl Reasoning {
    /// The thinking budget of an Anthropic request: the one written, or the effort's
    /// (1,024 / 4,096 / 10,000 / 32,000 tokens, Claude Code's "think" steps).
    pub fn budget(&self) -> u64 {
        self.budget_tokens.unwrap_or(match self.effort {
            Effort::Minimal => MIN_THINKING_BUDGET,
            Effort::Low => 4_096,
            Effort::Medium => 10_000,
            Effort::High => 32_000,
        })
    }
}

impl Effort {
    /// The words `agent.toml` writes.
    pub const NAMES: &[&str] = &["minimal", "low", "medium", "high"];

    /// The effort named `name`.
    pub fn parse(name: &str) -> Option<Effort> {
        Some(match name {
            "minimal" => Effort::Minimal,
            "low" => Effort::Low,
            "medium" => Effort::Medium,
            "high" => Effort::High,
            _ => return None,
        })
    }

    /// Its word, as OpenAI's `reasoning_effort` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Effort::Minimal => "minimal",
            Effort::Low => "low",
            Effort::Medium => "medium",
            Effort::High => "high",
        }
    }
}

/// Whether a session ends after a turn or waits for the next message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Task,
    Conversation,
}

/// Limits of one turn and of the context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Limits {
    pub max_steps: u64,
    pub max_output_tokens: u64,
    pub context_window: u64,
    pub max_parallel_tools: u64,
    pub max_input_tokens_per_session: Option<u64>,
}

/// When and with which model history is summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Compaction {
    pub threshold_percent: f64,
    /// The summariser; `None` means the turn's model.
    pub model: Option<String>,
}

/// Where file tools and bash act.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workspace {
    /// As written; relative paths are relative to the invoking directory.
    pub root: String,
    /// Whether file tools may change the agent's own definition when the agent
    /// directory is inside the workspace.
    #[serde(default)]
    pub agent_writable: bool,
}

/// Placeholders other clients expand to the skill's own folder (trailofbits' `{baseDir}`,
/// Claude Code's `${CLAUDE_SKILL_DIR}`).
pub const SKILL_DIR_PLACEHOLDERS: &[&str] = &["{baseDir}", "${CLAUDE_SKILL_DIR}"];

/// The entries of an agent directory that make up its definition: what the agent may
/// not change unless `[workspace] agent_writable` says so.
pub const DEFINITION_ENTRIES: &[&str] = &[
    "agent.toml",
    "instructions.md",
    "instructions",
    "tools",
    "skills",
    "subagents",
    "connections",
    "hooks",
    "evals",
];

/// The agent directory's folder of generated state (manifest, sessions, logs).
pub const STATE_DIR: &str = ".eve";

/// `[sandbox]`: how `bash`, command tools and stdio connections are confined.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sandbox {
    pub mode: SandboxMode,
    /// Whether sandboxed processes may open IP sockets.
    pub network: bool,
    /// Extra writable folders, relative to the workspace.
    pub writable: Vec<String>,
    /// Leave the confined tools out when the kernel cannot confine them.
    pub require: bool,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            mode: SandboxMode::WorkspaceWrite,
            network: true,
            writable: Vec::new(),
            require: false,
        }
    }
}

/// What a sandboxed process may write.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    /// Nothing but `/dev/null`.
    ReadOnly,
    /// The workspace, the session's temp folder, `/dev/null` and the `writable` folders.
    WorkspaceWrite,
    /// No sandbox: the processes have all of the user's rights.
    Off,
}

impl SandboxMode {
    /// The name used in `agent.toml`, on the command line and in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            SandboxMode::ReadOnly => "read-only",
            SandboxMode::WorkspaceWrite => "workspace-write",
            SandboxMode::Off => "off",
        }
    }

    /// Every mode, by name.
    pub const NAMES: &[&str] = &["workspace-write", "read-only", "off"];

    /// The mode with this name.
    pub fn from_name(name: &str) -> Option<SandboxMode> {
        match name {
            "read-only" => Some(SandboxMode::ReadOnly),
            "workspace-write" => Some(SandboxMode::WorkspaceWrite),
            "off" => Some(SandboxMode::Off),
            _ => None,
        }
    }
}

/// A provider declared in `[providers.NAME]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provider {
    pub api: Api,
    pub base_url: String,
    /// The environment variable holding the key (never the key itself).
    pub api_key_env: Option<String>,
}

/// The wire protocol a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// OpenAI's Chat Completions (`/chat/completions`), which compatible servers speak.
    Openai,
    /// Anthropic's Messages API (`/v1/messages`).
    Anthropic,
    /// OpenAI's Responses API (`/responses`): the built-in `openai` provider's.
    #[serde(rename = "openai-responses")]
    OpenaiResponses,
}

impl Api {
    /// The name `api` takes in `[providers.NAME]`.
    pub fn name(self) -> &'static str {
        match self {
            Api::Openai => "openai",
            Api::Anthropic => "anthropic",
            Api::OpenaiResponses => "openai-responses",
        }
    }

    /// The API with this name.
    pub fn from_name(name: &str) -> Option<Api> {
        [Api::Openai, Api::Anthropic, Api::OpenaiResponses]
            .into_iter()
            .find(|api| api.name() == name)
    }

    /// Whether the provider runs a web search itself within its replies (eve's
    /// `web_search` built-in maps to it).
    pub fn hosts_web_search(self) -> bool {
        matches!(self, Api::Anthropic | Api::OpenaiResponses)
    }

    /// Whether it is one of OpenAI's APIs, which take an `effort` but no thinking budget.
    pub fn is_openai(self) -> bool {
        matches!(self, Api::Openai | Api::OpenaiResponses)
    }
}

/// The system prompt's templates, rendered at the start of each session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Instructions {
    /// One part per file, in file-name order; rendered parts are joined by a blank line.
    pub parts: Vec<InstructionPart>,
    /// Environment variables the templates may read as `env.NAME`.
    pub env: Vec<String>,
}

/// One instructions file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstructionPart {
    pub path: String,
    pub template: String,
}

/// A tool the model will see.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub input_schema: serde_json::Value,
    pub source: ToolSource,
    pub approval: Approval,
    pub timeout_secs: u64,
    /// Read-only tools may run in parallel; the others run alone.
    pub read_only: bool,
    pub executor: Executor,
    pub settings: BTreeMap<String, serde_json::Value>,
    /// Left out of the tool list; the model reaches it through `search_tools` and `call_tool`.
    #[serde(default, skip_serializing_if = "is_false")]
    pub defer: bool,
}

fn is_false(value: &bool) -> bool {
    !*value
}

/// Where a tool comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolSource {
    /// A built-in tool as eve ships it.
    Builtin,
    /// A built-in tool with a changed description, approval, timeout or settings.
    Override,
    /// A tool defined by the agent (new, or replacing a built-in).
    Custom,
    /// A tool of an MCP server (`connections/<name>.toml`).
    Connection,
}

/// What runs when the model calls a tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Executor {
    /// eve's own implementation of the built-in tool of that name.
    Builtin,
    /// A program: argv (minijinja templates), tool input as JSON on stdin.
    Command {
        argv: Vec<String>,
        /// Whether an argument rendered from the input may start with `-` (an option).
        #[serde(default, skip_serializing_if = "is_false")]
        allow_option_arguments: bool,
    },
    /// An HTTP request whose parts are minijinja templates over the input.
    Http {
        method: String,
        url: String,
        headers: BTreeMap<String, String>,
        body: Option<String>,
        /// Whether loopback, private and link-local addresses may be reached.
        #[serde(default, skip_serializing_if = "is_false")]
        allow_private: bool,
    },
    /// The subagent of that name, run with the input's `task`.
    Subagent { name: String },
    /// The tool `tool` of the MCP server of connection `connection`.
    Mcp {
        connection: String,
        tool: String,
        #[serde(default, skip_serializing_if = "connection::Annotations::is_empty")]
        annotations: connection::Annotations,
    },
}

/// A skill the model can load.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skill {
    pub name: String,
    pub description: String,
    /// The skill's Markdown file, relative to the agent directory.
    pub path: String,
    /// Deferred skills are not listed in the system prompt.
    pub deferred: bool,
    pub license: Option<String>,
    /// The frontmatter's `metadata`, any value, as JSON; `{}` when absent.
    pub metadata: serde_json::Value,
    /// SHA-256 of the body (the file without its frontmatter).
    pub body_hash: String,
    /// Byte offset where the body starts in the file.
    pub body_offset: usize,
    /// Files a packaged skill brings, relative to the agent directory, sorted: every
    /// other file of its folder, and the files outside it that `SKILL.md` links to.
    pub resources: Vec<String>,
    /// Where the skill's entry of `skills/` leads (absolute, links resolved) when it is
    /// a symbolic link to a place outside the agent directory, as people install shared
    /// skills: read through the link, never written, and readable by the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub linked: Option<String>,
}

/// A nested agent, offered to the model as a tool named after it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Subagent {
    pub name: String,
    pub description: String,
    /// The subagent's directory, relative to the parent agent directory.
    pub path: String,
    pub manifest: Box<Manifest>,
}
