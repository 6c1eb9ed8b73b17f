//! Command-line definitions (clap).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Build and run AI agents declared as a directory of files.
#[derive(Debug, Parser)]
#[command(name = "eve", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a new agent directory that builds and runs as it is
    Init(InitArgs),
    /// Compile an agent directory into .eve/manifest.json, reporting every mistake
    Build(BuildArgs),
    /// Run an agent: one turn answering PROMPT through the model ↔ tool loop
    Run(RunArgs),
    /// List, show and delete the sessions of an agent
    Sessions(SessionsArgs),
    /// Talk to an agent interactively while eve rebuilds it as you edit its files
    Dev(DevArgs),
    /// Show what this machine can enforce for an agent: the sandbox, and what is missing
    Doctor(DoctorArgs),
    /// Print a completion script for a shell (bash, zsh, fish, powershell, elvish)
    Completions(CompletionsArgs),
    /// Print eve's man page (roff) on stdout
    Man,
    /// Print the JSON Schema of a kind of file, for editors (taplo, Even Better TOML)
    Schema(SchemaArgs),
    /// Run an agent's eval cases (evals/**/*.toml) and check what each expects
    Eval(EvalArgs),
    /// Start each MCP server of an agent and list its tools as the model sees them
    Connections(ConnectionsArgs),
    /// Serve an agent over HTTP: the session API under /eve/v1 and a chat page at /
    Serve(ServeArgs),
    /// Turn another tool's agent files into an eve agent directory, reporting what changed
    Import(ImportArgs),
}

/// Arguments of `eve import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    #[command(subcommand)]
    pub from: ImportFrom,
}

/// What `eve import` reads.
#[derive(Debug, Subcommand)]
pub enum ImportFrom {
    /// Claude Code: a plugin folder, a plugin of a marketplace, a project with .claude/, a folder of agent files, or one agent file
    Claude(ImportClaudeArgs),
}

/// Arguments of `eve import claude`.
#[derive(Debug, clap::Args)]
pub struct ImportClaudeArgs {
    /// The plugin folder, marketplace folder, project folder, agents folder or agent file (`.md`)
    pub path: PathBuf,
    /// The plugin of a marketplace (`.claude-plugin/marketplace.json`) to import, by its
    /// name there; each plugin is an agent of its own
    #[arg(long, value_name = "NAME")]
    pub plugin: Option<String>,
    /// The agent directory to write (default: ./<name of the plugin or agent>)
    #[arg(long, value_name = "DIR")]
    pub into: Option<PathBuf>,
    /// Write into a folder that is not empty, replacing files the import writes (an
    /// existing agent keeps its agent.toml and instructions)
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `eve connections`.
#[derive(Debug, clap::Args)]
pub struct ConnectionsArgs {
    /// The agent directory
    #[arg(default_value = ".")]
    pub dir: PathBuf,
}

/// Arguments of `eve completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Arguments of `eve serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// The agent directory; builds it first when it changed
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Where to listen; an address other than loopback needs EVE_SERVE_TOKEN
    #[arg(long, default_value = "127.0.0.1:8787")]
    pub addr: std::net::SocketAddr,
    /// The model, as provider/model-id or scripted:<file> (overrides agent.toml)
    #[arg(long, short, env = "EVE_MODEL")]
    pub model: Option<String>,
    /// Where tools act (overrides [workspace] root)
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Let pages of this origin call the API (`https://app.example.com`); off by default
    #[arg(long, value_name = "ORIGIN")]
    pub cors: Option<String>,
    /// Turns that run at once; more wait for a place
    #[arg(long, value_name = "N", default_value_t = 256, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub max_turns: u64,
    /// Sessions the server holds, on disk and new; creating more is refused (429)
    #[arg(long, value_name = "N", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_sessions: u64,
    /// Stream readers open at once; more are refused (429)
    #[arg(long, value_name = "N", default_value_t = 4096, value_parser = clap::value_parser!(u64).range(1..=1_000_000))]
    pub max_readers: u64,
    /// Seconds running steps may go on after SIGTERM before they are cancelled
    #[arg(long, value_name = "SECS", default_value_t = 30)]
    pub grace: u64,
    /// Confine bash, command tools and stdio connections: workspace-write, read-only or
    /// off (overrides `[sandbox] mode`)
    #[arg(long, value_name = "MODE", value_parser = ["workspace-write", "read-only", "off"])]
    pub sandbox: Option<String>,
    /// Turn the network off for sandboxed processes (overrides `[sandbox] network`)
    #[arg(long)]
    pub no_network: bool,
    /// Run sessions on Restate: this process becomes a worker of a Restate deployment
    /// (see docs/restate.md)
    #[arg(long)]
    pub restate: bool,
    /// Where the deployment endpoint Restate invokes listens (HTTP/2); the workers of
    /// one machine share it. Another than loopback needs EVE_RESTATE_IDENTITY_KEY
    #[arg(
        long,
        value_name = "IP:PORT",
        default_value = "127.0.0.1:9080",
        requires = "restate"
    )]
    pub restate_endpoint: std::net::SocketAddr,
    /// Restate's ingress, which the API calls the sessions through
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:8080",
        requires = "restate"
    )]
    pub restate_ingress: String,
    /// Restate's admin API, for listing sessions and --restate-register
    #[arg(
        long,
        value_name = "URL",
        default_value = "http://127.0.0.1:9070",
        requires = "restate"
    )]
    pub restate_admin: String,
    /// Register the deployment endpoint with Restate's admin API at start
    #[arg(long, requires = "restate")]
    pub restate_register: bool,
    /// Invocations one connection from Restate may carry at once; fewer make Restate
    /// open more connections, which spreads sessions across the workers behind one
    /// address
    #[arg(long, value_name = "N", default_value_t = 16, value_parser = clap::value_parser!(u32).range(1..=1024), requires = "restate")]
    pub restate_streams: u32,
}

/// Arguments of `eve doctor`.
#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// The agent directory
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// The workspace the agent would run in (default: `[workspace] root`)
    #[arg(long, short = 'w')]
    pub workspace: Option<PathBuf>,
    /// The model to check instead of the agent's, as `eve run --model` takes it
    #[arg(long, short, env = "EVE_MODEL")]
    pub model: Option<String>,
}

/// Arguments of `eve eval`.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// The agent directory
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// Run only the cases whose id contains FILTER, or matches it when it has `*`, `?` or `[`
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// Cases run at once (default: the number of CPUs)
    #[arg(long, short, value_parser = clap::value_parser!(u32).range(1..))]
    pub jobs: Option<u32>,
    /// Run every case on this model (provider/model-id or scripted:<file>), replies or not
    #[arg(long, short)]
    pub model: Option<String>,
    /// Run only the cases with this tag (repeatable: any of them)
    #[arg(long, value_name = "TAG")]
    pub tag: Vec<String>,
    /// List the cases instead of running them
    #[arg(long)]
    pub list: bool,
    /// Run each case N times (a case's `pass` keeps its share of runs that must pass)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub repeat: Option<u32>,
    /// Soft failures (a judge without `gate`) fail their case
    #[arg(long)]
    pub strict: bool,
    /// What to print on stdout
    #[arg(long, value_enum, default_value_t = EvalFormat::Human)]
    pub format: EvalFormat,
    /// Also write the results as JUnit XML to FILE
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Keep each run's temporary workspace and print where it is
    #[arg(long)]
    pub keep: bool,
    /// Run each case once on a real model and write what it said into the case as [[reply]]
    #[arg(long, conflicts_with_all = ["repeat", "list"])]
    pub record: bool,
    /// With --record: also write every tool call's output as a [[stub]]
    #[arg(long, requires = "record")]
    pub record_stubs: bool,
    /// The model that judges `judge` expectations (without it they are skipped)
    #[arg(long, value_name = "MODEL")]
    pub judge_model: Option<String>,
}

/// What `eve eval` prints on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum EvalFormat {
    /// A line per case, the failures, a summary
    Human,
    /// One JSON object at the end: the summary and every case's result
    Json,
}

/// Arguments of `eve dev`.
#[derive(Debug, clap::Args)]
pub struct DevArgs {
    /// The agent directory
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// The model, as provider/model-id or scripted:<file> (overrides agent.toml)
    #[arg(long, short, env = "EVE_MODEL")]
    pub model: Option<String>,
    /// Go on with the latest session instead of starting a new one
    #[arg(long, short = 'c')]
    pub r#continue: bool,
    /// Milliseconds to wait after a change before rebuilding
    #[arg(long, value_name = "MS", default_value_t = 50)]
    pub debounce: u64,
    /// Print every diagnostic of a build, not three of each code and a count of the rest
    #[arg(long, short)]
    pub verbose: bool,
    /// Do not show the model's reasoning (it is still logged)
    #[arg(long)]
    pub hide_reasoning: bool,
}

/// Arguments of `eve sessions`.
#[derive(Debug, clap::Args)]
pub struct SessionsArgs {
    #[command(subcommand)]
    pub command: SessionsCommand,
}

/// `eve sessions` subcommands.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List the sessions, newest first: id, start, turns, status, last message
    List {
        /// The agent directory
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
    /// Show a session as a readable transcript, or replay its events
    ///
    /// `eve sessions show DIR ID`, the order of every other command, is understood too.
    Show {
        /// The session id (or a unique prefix of it)
        id: String,
        /// The agent directory
        #[arg(default_value = ".")]
        dir: PathBuf,
        /// text: the transcript; stream-json: the logged events as NDJSON
        #[arg(long, short, value_enum, default_value_t = ShowOutput::Text)]
        output: ShowOutput,
        /// Each turn as a waterfall: its model calls, tool calls, hooks and waits, with
        /// their times and tokens, from the log's timestamps
        #[arg(long, conflicts_with = "output")]
        timeline: bool,
    },
    /// Delete a session
    ///
    /// `eve sessions rm DIR ID` is understood too.
    Rm {
        /// The session id (or a unique prefix of it)
        id: String,
        /// The agent directory
        #[arg(default_value = ".")]
        dir: PathBuf,
    },
}

/// What `eve sessions show` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ShowOutput {
    /// A readable transcript
    Text,
    /// The events as NDJSON
    StreamJson,
}

/// Arguments of `eve schema`.
#[derive(Debug, clap::Args)]
#[command(override_usage = "eve schema <KIND> [TOOL]\n       eve schema --write <DIR>")]
pub struct SchemaArgs {
    /// The kind of file whose schema to print (needed unless --write is given)
    #[arg(value_enum, required_unless_present = "write")]
    pub kind: Option<SchemaKind>,
    /// With `tool`: the built-in tool whose file (`tools/<TOOL>.toml`) the schema is for
    #[arg(value_name = "TOOL")]
    pub tool: Option<String>,
    /// Write every schema into DIR instead, as `eve init` does into `.eve/schemas/`
    #[arg(long, value_name = "DIR", conflicts_with_all = ["kind", "tool"])]
    pub write: Option<PathBuf>,
}

/// The kinds of file `eve schema` describes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SchemaKind {
    /// `agent.toml`, a subagent's too
    Agent,
    /// `tools/<slug>.toml`: a new tool, or with TOOL a built-in's file
    Tool,
    /// `tools/<connection>__<tool>.toml`: one tool of a connection
    ConnectionTool,
    /// `connections/<name>.toml`
    Connection,
    /// `evals/**/*.toml`
    Eval,
    /// A skill's YAML frontmatter
    Skill,
    /// `hooks/<name>.toml`
    Hook,
}

/// Arguments of `eve init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The folder to create (default: the current folder); its name becomes the agent's name
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// The model, as provider/model-id
    #[arg(long, short, default_value = crate::compiler::config::DEFAULT_MODEL)]
    pub model: String,
    /// Write into a folder that is not empty, replacing files eve writes
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `eve build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The agent directory
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// How to print diagnostics
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
    /// Build from every file again (the build cache unused) and list every connection's tools again
    #[arg(long)]
    pub refresh: bool,
    /// Refuse the agent when a skill cannot be used, instead of leaving the skill out (for a skill author's CI)
    #[arg(long)]
    pub strict: bool,
    /// Print every diagnostic, not three of each code and a count of the rest
    #[arg(long, short)]
    pub verbose: bool,
}

/// Arguments of `eve run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// The agent directory; builds it first when it changed
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// What to ask; `-` (or no prompt with piped input) reads it from stdin
    pub prompt: Option<String>,
    /// The model, as provider/model-id or scripted:<file> (overrides agent.toml)
    #[arg(long, short, env = "EVE_MODEL")]
    pub model: Option<String>,
    /// Model calls allowed in the turn (overrides [limits] max_steps)
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_steps: Option<u64>,
    /// Where tools act (overrides [workspace] root)
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// What to print on stdout
    #[arg(long, short, value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Print only the answer and errors: no warnings, tool lines or closing line
    #[arg(long, short)]
    pub quiet: bool,
    /// Print every diagnostic of the build, not three of each code and a count of the rest
    #[arg(long, short, conflicts_with = "quiet")]
    pub verbose: bool,
    /// Do not show the model's reasoning on stderr (it is still logged)
    #[arg(long)]
    pub hide_reasoning: bool,
    /// Add a turn to the latest session of this agent (PROMPT is the next message)
    #[arg(long, short = 'c', conflicts_with = "session")]
    pub r#continue: bool,
    /// Add a turn to this session, or resume it (an id from `eve sessions list`)
    #[arg(long, value_name = "ID")]
    pub session: Option<String>,
    /// Answer the question the session waits for
    #[arg(long, value_name = "TEXT", conflicts_with_all = ["approve", "deny", "compact"])]
    pub answer: Option<String>,
    /// Approve the tool call the session waits for
    #[arg(long, conflicts_with_all = ["deny", "compact"])]
    pub approve: bool,
    /// Deny the tool call the session waits for; the model is told
    #[arg(long, conflicts_with = "compact")]
    pub deny: bool,
    /// Why the call is denied (with --deny)
    #[arg(long, value_name = "TEXT", requires = "deny")]
    pub reason: Option<String>,
    /// Approve every tool call that needs an approval, for unattended runs
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// Compact the session's history now (with --continue or --session)
    #[arg(long)]
    pub compact: bool,
    /// Use the definition the agent changed in an earlier run (with `[workspace]
    /// agent_writable`), after showing what changed
    #[arg(long)]
    pub accept_agent_changes: bool,
    /// Confine bash, command tools and stdio connections: workspace-write, read-only or
    /// off (overrides `[sandbox] mode`)
    #[arg(long, value_name = "MODE", value_parser = ["workspace-write", "read-only", "off"])]
    pub sandbox: Option<String>,
    /// Turn the network off for sandboxed processes (overrides `[sandbox] network`)
    #[arg(long)]
    pub no_network: bool,
}

/// What `eve run` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// The answer as it streams on stdout; tool calls and a summary on stderr
    Text,
    /// One JSON object at the end: session_id, result, end_reason, usage, steps
    Json,
    /// Every event as one JSON line (NDJSON), as it happens
    StreamJson,
}

/// Output format of diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Compiler-style messages on stderr
    Human,
    /// A JSON array on stdout, for editors and scripts
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
