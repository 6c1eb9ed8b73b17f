//! `agent.toml`: the agent's settings, validated, with defaults applied.

use std::collections::BTreeMap;

use super::diagnostic::{Diagnostic, Diagnostics, code};
use super::inputs::AgentToml;
use super::shape::agent::{DEFAULT_CONTEXT_WINDOW, DEFAULT_MAX_OUTPUT_TOKENS, DEFAULT_THRESHOLD};
use super::source::SourceFile;
use super::toml_reader::{Spanned, TableReader, TomlFile};
use crate::manifest::model::{BUILTIN_PROVIDERS, ModelRef, suggestion};
use crate::manifest::{
    Agent, Api, Compaction, Limits, Mode, Provider, Sandbox, SandboxMode, Workspace,
};
use crate::suggest;
use crate::text::userinfo;

/// The model used when neither `agent.toml` nor a parent agent names one.
pub const DEFAULT_MODEL: &str = "anthropic/claude-sonnet-4-5";

/// What a subagent takes from its parent when its own `agent.toml` is silent.
#[derive(Debug, Clone)]
pub struct Inherited {
    pub model: String,
    pub providers: BTreeMap<String, Provider>,
    /// The parent's `context_window` and `max_output_tokens`: properties of the model,
    /// so a subagent that inherits the model inherits them too.
    pub context_window: u64,
    pub max_output_tokens: u64,
    /// The parent's `[sandbox]`: a subagent runs under it.
    pub sandbox: crate::manifest::Sandbox,
}

/// `max_output_tokens` when only the window is known: a quarter of it, at most 8192, so
/// that a small local model (4096 tokens) keeps three quarters for its input.
pub fn derived_max_output_tokens(context_window: u64) -> u64 {
    (context_window / 4).clamp(1, DEFAULT_MAX_OUTPUT_TOKENS)
}

/// The compaction threshold when none is written: 0.9, or less when the window minus
/// the reply is smaller, so that compaction starts before a request can overflow.
pub fn derived_threshold(context_window: u64, max_output_tokens: u64) -> f64 {
    let room =
        context_window.saturating_sub(max_output_tokens) as f64 / context_window.max(1) as f64;
    DEFAULT_THRESHOLD.min(room).max(f64::MIN_POSITIVE)
}

/// `agent.toml` compiled: the manifest's agent section plus what other stages need.
#[derive(Debug, Clone)]
pub struct Config {
    pub agent: Agent,
    /// Environment variables the instructions may read.
    pub instructions_env: Vec<String>,
    /// Each `[instructions] env` entry with the error to report if it names a provider
    /// key, which is known only once every subagent's providers are (see [`KeyVariables`]).
    pub env_key_errors: Vec<(String, Diagnostic)>,
    /// The wire protocol of the agent's model (`None` for the scripted provider).
    pub api: Option<Api>,
    /// Whether `[limits] max_output_tokens` is written in this file (else it is derived
    /// or inherited): only a written one that does not fit is the author's error.
    pub max_output_written: bool,
    /// `[skills] defer = true`: every skill of this agent is deferred.
    pub defer_skills: bool,
}

/// Compiles `agent.toml` (or reports it missing). Always returns a config, with defaults
/// where the file is wrong, so later stages can still report their own problems.
pub fn compile(
    file: &AgentToml,
    toml_display: &str,
    dir_name: &str,
    inherited: Option<&Inherited>,
    agent_dir: &std::path::Path,
    diags: &mut Diagnostics,
) -> Config {
    let mut config = Config {
        agent: Agent {
            name: dir_name.to_string(),
            description: None,
            model: inherited.map_or_else(|| DEFAULT_MODEL.to_string(), |i| i.model.clone()),
            mode: Mode::Task,
            default_tools: true,
            limits: Limits {
                max_steps: 50,
                max_output_tokens: DEFAULT_MAX_OUTPUT_TOKENS,
                context_window: DEFAULT_CONTEXT_WINDOW,
                max_parallel_tools: 8,
                max_input_tokens_per_session: None,
            },
            compaction: Compaction {
                threshold_percent: DEFAULT_THRESHOLD,
                model: None,
            },
            workspace: Workspace {
                root: ".".into(),
                agent_writable: false,
            },
            sandbox: Sandbox::default(),
            providers: inherited.map(|i| i.providers.clone()).unwrap_or_default(),
            reasoning: None,
            telemetry: Default::default(),
        },
        instructions_env: Vec::new(),
        env_key_errors: Vec::new(),
        api: Some(Api::Anthropic),
        max_output_written: false,
        defer_skills: false,
    };
    let file = match file {
        AgentToml::File(file) => file,
        // Why it cannot be read is reported already; "missing" would be wrong.
        AgentToml::Unreadable => return config,
        AgentToml::Missing => {
            diags.push(
                Diagnostic::error(code::MISSING_AGENT_TOML, "missing `agent.toml`")
                    .file(toml_display)
                    .help("every agent directory needs an `agent.toml`; `eve init` writes one"),
            );
            return config;
        }
    };
    let toml = match TomlFile::parse(SourceFile::new(&file.display, &file.text)) {
        Ok(toml) => toml,
        Err(diagnostic) => {
            diags.push(*diagnostic);
            return config;
        }
    };
    let mut root = toml.root(&super::shape::agent::AGENT);
    config.max_output_written = read_agent(&mut root, &mut config, inherited, agent_dir);
    if inherited.is_some() && !root.contains("description") {
        toml.report(
            Diagnostic::error(
                code::SUBAGENT_WITHOUT_DESCRIPTION,
                format!("subagent `{dir_name}` has no `description`"),
            )
            .file(toml_display)
            .note("the parent's model reads it to decide when to hand work to this subagent")
            .help("add `description = \"…\"` to its agent.toml"),
        );
    }
    root.finish();
    diags.extend(toml.into_diagnostics());
    config
}

/// Reads the agent's keys into `config`; returns whether `max_output_tokens` is written.
fn read_agent(
    root: &mut TableReader<'_>,
    config: &mut Config,
    inherited: Option<&Inherited>,
    agent_dir: &std::path::Path,
) -> bool {
    read_identity(root, &mut config.agent);
    let declared = read_providers(root, &mut config.agent);
    let model_written = read_model(root, config, &declared, inherited, agent_dir);
    // A subagent that inherits its parent's model inherits that model's window too.
    let parent = inherited.filter(|_| !model_written);
    let max_output_written = read_limits(root, &mut config.agent.limits, parent);
    reasoning::read(root, &mut config.agent, config.api);
    telemetry::read(root, &mut config.agent);
    read_compaction(root, &mut config.agent, &declared, agent_dir, config.api);
    read_workspace(root, &mut config.agent.workspace);
    if let Some(mut sandbox) = root.table("sandbox") {
        if inherited.is_some() {
            let toml = root.file();
            toml.report(
                Diagnostic::warning(
                    code::SUBAGENT_SANDBOX,
                    "a subagent's `[sandbox]` has no effect",
                )
                .at(&toml.src, root.key_span("sandbox"))
                .note("a subagent runs in the session of its parent, under the parent's sandbox"),
            );
        }
        let agent = &mut config.agent;
        read_sandbox(&mut sandbox, &mut agent.sandbox, &agent.workspace.root);
        sandbox.finish();
    }
    read_instructions_env(root, config);
    if let Some(mut skills) = root.table("skills") {
        if let Some(defer) = skills.bool("defer") {
            config.defer_skills = defer.value;
        }
        skills.finish();
    }
    max_output_written
}

/// `name`, `description`, `mode` and `default_tools`.
fn read_identity(root: &mut TableReader<'_>, agent: &mut Agent) {
    let toml = root.file();
    if let Some(name) = root.string("name") {
        if name.value.trim().is_empty() || name.value.chars().count() > 64 {
            toml.error(
                code::INVALID_VALUE,
                "`name` must be 1 to 64 characters",
                name.span,
            );
        } else {
            agent.name = name.value;
        }
    }
    if let Some(description) = root.string("description") {
        if description.value.trim().is_empty() {
            toml.error(
                code::INVALID_VALUE,
                "`description` must not be empty",
                description.span,
            );
        } else {
            agent.description = Some(description.value);
        }
    }
    if let Some(mode) = root.string("mode") {
        match mode.value.as_str() {
            "task" => agent.mode = Mode::Task,
            "conversation" => agent.mode = Mode::Conversation,
            other => toml.report(
                Diagnostic::error(code::INVALID_VALUE, format!("unknown mode `{other}`"))
                    .at(&toml.src, mode.span)
                    .note("`mode` is `task` (the session ends when the task is done) or `conversation` (it waits for the next message)")
                    .suggest(suggest::closest(other, super::shape::agent::MODES.iter().copied())),
            ),
        }
    }
    if let Some(default_tools) = root.bool("default_tools") {
        agent.default_tools = default_tools.value;
    }
}

/// `[providers.NAME]`: the providers that read without errors go into `agent`; returns
/// every name declared, valid or not (a model naming one is not "unknown").
fn read_providers(root: &mut TableReader<'_>, agent: &mut Agent) -> Vec<String> {
    let mut declared: Vec<String> = Vec::new();
    if let Some(mut providers) = root.table("providers") {
        for (name, item) in providers.entries() {
            declared.push(name.to_string());
            if let Some(mut table) = providers.nested(name, item) {
                if let Some(provider) = read_provider(name, &mut table, &providers) {
                    agent.providers.insert(name.to_string(), provider);
                }
                table.finish();
            }
        }
        providers.finish();
    }
    declared
}

/// `model`, and the wire protocol it speaks; required at the top level, a subagent's
/// otherwise is its parent's. Returns whether it is written.
fn read_model(
    root: &mut TableReader<'_>,
    config: &mut Config,
    declared: &[String],
    inherited: Option<&Inherited>,
    agent_dir: &std::path::Path,
) -> bool {
    let toml = root.file();
    let agent = &mut config.agent;
    let model = root.string("model");
    let written = model.is_some();
    match model {
        Some(model) => {
            if let Some((text, api)) =
                check_model(toml, &model, &agent.providers, declared, agent_dir)
            {
                agent.model = text;
                config.api = api;
            }
        }
        None if inherited.is_none() => toml.report(
            Diagnostic::error(code::MISSING_KEY, "missing `model`")
                .at(&toml.src, None)
                .help(format!("add a line like `model = \"{DEFAULT_MODEL}\"`")),
        ),
        None => config.api = api_of(&agent.model, &agent.providers),
    }
    written
}

/// `[limits]`, with the window and `max_output_tokens` settled against each other and
/// against `parent`'s (the parent whose model this agent inherits). Returns whether
/// `max_output_tokens` is written.
fn read_limits(root: &mut TableReader<'_>, l: &mut Limits, parent: Option<&Inherited>) -> bool {
    let toml = root.file();
    let mut window = None;
    let mut max_output = None;
    if let Some(mut limits) = root.table("limits") {
        if let Some(v) = limits.positive_int("max_steps") {
            l.max_steps = v.value;
        }
        max_output = limits.positive_int("max_output_tokens");
        window = limits.positive_int("context_window");
        if let Some(v) = limits.positive_int("max_parallel_tools") {
            l.max_parallel_tools = v.value;
        }
        if let Some(v) = limits.positive_int("max_input_tokens_per_session") {
            l.max_input_tokens_per_session = Some(v.value);
        }
        limits.finish();
    }
    let max_output_written = max_output.is_some();
    set_window(toml, l, window, max_output, parent);
    max_output_written
}

/// `[compaction]`; without a written `threshold_percent`, the one the limits leave room
/// for ([`derived_threshold`]): the reply's, and Anthropic's thinking budget, which the
/// request's `max_tokens` holds too.
fn read_compaction(
    root: &mut TableReader<'_>,
    agent: &mut Agent,
    declared: &[String],
    agent_dir: &std::path::Path,
    api: Option<Api>,
) {
    let toml = root.file();
    let mut threshold_written = false;
    if let Some(mut compaction) = root.table("compaction") {
        if let Some(t) = compaction.number("threshold_percent") {
            threshold_written = true;
            if t.value > 0.0 && t.value <= 1.0 {
                agent.compaction.threshold_percent = t.value;
            } else {
                toml.report(
                    Diagnostic::error(
                        code::OUT_OF_RANGE,
                        format!(
                            "`compaction.threshold_percent` must be greater than 0 and at most 1, found {}",
                            t.value
                        ),
                    )
                    .at(&toml.src, t.span)
                    .help("it is a fraction of the context window: 0.9 means 90%"),
                );
            }
        }
        if let Some(model) = compaction.string("model")
            && let Some((text, _)) =
                check_model(toml, &model, &agent.providers, declared, agent_dir)
        {
            agent.compaction.model = Some(text);
        }
        compaction.finish();
    }
    if !threshold_written {
        let thinking = match (api, agent.reasoning) {
            (Some(Api::Anthropic | Api::OpenaiResponses), Some(reasoning)) => reasoning.budget(),
            _ => 0,
        };
        agent.compaction.threshold_percent = derived_threshold(
            agent.limits.context_window,
            agent.limits.max_output_tokens.saturating_add(thinking),
        );
    }
}

/// `[workspace]`: `root` and `agent_writable`.
fn read_workspace(root: &mut TableReader<'_>, workspace: &mut Workspace) {
    let toml = root.file();
    if let Some(mut table) = root.table("workspace") {
        if let Some(dir) = table.string("root") {
            if dir.value.trim().is_empty() {
                toml.error(
                    code::INVALID_VALUE,
                    "`workspace.root` must not be empty",
                    dir.span,
                );
            } else {
                workspace.root = dir.value;
            }
        }
        if let Some(writable) = table.bool("agent_writable") {
            workspace.agent_writable = writable.value;
        }
        table.finish();
    }
}

/// `[instructions] env`: the variables the instructions may read, sorted, each also
/// kept with the error to report if it names a provider key ([`Config::env_key_errors`]).
fn read_instructions_env(root: &mut TableReader<'_>, config: &mut Config) {
    let toml = root.file();
    if let Some(mut instructions) = root.table("instructions") {
        if let Some(env) = instructions.string_array("env") {
            for var in env {
                if is_env_name(&var.value) {
                    config.env_key_errors.push((
                        var.value.clone(),
                        key_in_instructions(&var.value).at(&toml.src, var.span.clone()),
                    ));
                    if !config.instructions_env.contains(&var.value) {
                        config.instructions_env.push(var.value);
                    }
                } else {
                    toml.error(
                        code::INVALID_VALUE,
                        format!("`{}` is not an environment variable name", var.value),
                        var.span,
                    );
                }
            }
            config.instructions_env.sort();
        }
        instructions.finish();
    }
}

/// `[sandbox]`: the mode, the network switch, extra writable folders (which must exist,
/// relative to the workspace as it is from here), `require`.
fn read_sandbox(table: &mut TableReader<'_>, sandbox: &mut Sandbox, workspace: &str) {
    let toml = table.file();
    if let Some(mode) = table.string("mode") {
        match SandboxMode::from_name(&mode.value) {
            Some(m) => sandbox.mode = m,
            None => toml.report(
                Diagnostic::error(
                    code::INVALID_VALUE,
                    format!("unknown sandbox mode `{}`", mode.value),
                )
                .at(&toml.src, mode.span)
                .note("`sandbox.mode` is `workspace-write` (the default), `read-only` or `off`")
                .suggest(suggest::closest(
                    &mode.value,
                    SandboxMode::NAMES.iter().copied(),
                )),
            ),
        }
    }
    if let Some(network) = table.bool("network") {
        sandbox.network = network.value;
    }
    if let Some(require) = table.bool("require") {
        sandbox.require = require.value;
    }
    if let Some(folders) = table.string_array("writable") {
        for folder in folders {
            let path = std::path::Path::new(&folder.value);
            if folder.value.trim().is_empty() || path.is_absolute() {
                toml.error(
                    code::INVALID_VALUE,
                    format!(
                        "`sandbox.writable` entries are folders relative to the workspace, not `{}`",
                        folder.value
                    ),
                    folder.span,
                );
                continue;
            }
            if !super::cache::is_dir(&std::path::Path::new(workspace).join(path)) {
                toml.report(
                    Diagnostic::error(
                        code::WRITABLE_NOT_FOUND,
                        format!("writable folder `{}` does not exist", folder.value),
                    )
                    .at(&toml.src, folder.span)
                    .note(format!(
                        "it is relative to the workspace (`{workspace}`, from the folder eve runs in)"
                    ))
                    .help("create the folder, or remove it from `sandbox.writable`"),
                );
                continue;
            }
            if !sandbox.writable.contains(&folder.value) {
                sandbox.writable.push(folder.value);
            }
        }
    }
}

fn key_in_instructions(var: &str) -> Diagnostic {
    Diagnostic::error(
        code::KEY_IN_INSTRUCTIONS,
        format!("`{var}` holds a provider API key and cannot be rendered into the instructions"),
    )
    .note("the instructions go to the model with every call, and a model can repeat what it reads in its replies, tool calls and files")
    .help(format!(
        "remove `{var}` from `[instructions] env`; the key reaches the provider without it"
    ))
}

/// Refuses provider keys in `[instructions] env` across a whole agent tree: a variable
/// that any agent or subagent reads its key from (or `ANTHROPIC_API_KEY` or
/// `OPENAI_API_KEY`) must not reach any of their prompts.
#[derive(Debug, Default)]
pub struct KeyVariables {
    keys: std::collections::BTreeSet<String>,
    uses: Vec<(String, Diagnostic)>,
}

impl KeyVariables {
    /// Takes in one agent's providers and its `[instructions] env` entries.
    pub fn add(&mut self, config: &mut Config) {
        self.keys.extend(
            config
                .agent
                .providers
                .values()
                .filter_map(|p| p.api_key_env.clone()),
        );
        self.uses.append(&mut config.env_key_errors);
    }

    /// Reports every `[instructions] env` entry that names a key variable.
    pub fn check(self, diags: &mut Diagnostics) {
        let is_key = |var: &str| {
            crate::manifest::model::BUILTIN_KEY_VARIABLES.contains(&var) || self.keys.contains(var)
        };
        for (var, diagnostic) in self.uses {
            if is_key(&var) {
                diags.push(diagnostic);
            }
        }
    }
}

/// Sets `context_window` and `max_output_tokens` from what was written, the parent's
/// model, or the defaults. A default never makes a file invalid: an unwritten
/// `max_output_tokens` is derived from the window. One that was written and does not
/// fit the window is an error, whichever way the window was set.
fn set_window(
    toml: &TomlFile,
    limits: &mut Limits,
    window: Option<Spanned<u64>>,
    max_output: Option<Spanned<u64>>,
    parent: Option<&Inherited>,
) {
    limits.context_window = match (&window, parent) {
        (Some(w), _) => w.value,
        (None, Some(p)) => p.context_window,
        (None, None) => DEFAULT_CONTEXT_WINDOW,
    };
    limits.max_output_tokens = match (&max_output, &window, parent) {
        (Some(o), _, _) => o.value,
        (None, None, Some(p)) => p.max_output_tokens,
        (None, _, _) => derived_max_output_tokens(limits.context_window),
    };
    if limits.max_output_tokens < limits.context_window {
        return;
    }
    let (output, window_value) = (limits.max_output_tokens, limits.context_window);
    match (max_output, window) {
        (Some(o), Some(_)) => toml.error(
            code::OUT_OF_RANGE,
            format!(
                "`limits.max_output_tokens` ({output}) must be smaller than `limits.context_window` ({window_value})"
            ),
            o.span,
        ),
        (Some(o), None) => {
            let from = if parent.is_some() {
                "the parent agent's, whose model this subagent uses"
            } else {
                "the default"
            };
            toml.report(
                Diagnostic::error(
                    code::OUT_OF_RANGE,
                    format!(
                        "`limits.max_output_tokens` ({output}) must be smaller than `limits.context_window` ({window_value}, {from})"
                    ),
                )
                .at(&toml.src, o.span)
                .help("set `limits.context_window` to the context window of your model"),
            );
        }
        // Derived from a window of a single token: nothing fits.
        (None, w) => toml.error(
            code::OUT_OF_RANGE,
            format!("`limits.context_window` ({window_value}) leaves no room for a reply; it must be at least 2"),
            w.and_then(|w| w.span),
        ),
    }
}

/// `[providers.NAME]`: a provider, unless something in it is wrong (reported).
fn read_provider(
    name: &str,
    table: &mut TableReader<'_>,
    parent: &TableReader<'_>,
) -> Option<Provider> {
    let mut ok = check_provider_name(name, table.file(), parent);
    ok &= refuse_api_key(name, table);
    let api = read_api(table);
    let base_url = read_base_url(name, table, parent);
    let api_key_env = read_api_key_env(table);
    let (Some(api), Some(base_url), Ok(api_key_env)) = (api, base_url, api_key_env) else {
        return None;
    };
    ok.then_some(Provider {
        api,
        base_url,
        api_key_env,
    })
}

/// Whether a provider's name is usable in `NAME/model`: not empty, no `/`, `:` or spaces.
fn check_provider_name(name: &str, toml: &TomlFile, parent: &TableReader<'_>) -> bool {
    if name.is_empty() || name.contains(['/', ':']) || name.chars().any(char::is_whitespace) {
        toml.error(
            code::INVALID_VALUE,
            format!("provider name `{name}` must not contain `/`, `:` or spaces"),
            parent.key_span(name),
        );
        return false;
    }
    true
}

/// An `api_key` in the file is an error (keys never go in files); returns whether there
/// is none.
fn refuse_api_key(name: &str, table: &mut TableReader<'_>) -> bool {
    if !table.contains("api_key") {
        return true;
    }
    let toml = table.file();
    // Never echo the line: it holds a secret.
    toml.report(
        Diagnostic::error(
            code::UNKNOWN_KEY,
            format!("`providers.{name}.api_key` is not allowed: keys never go in files"),
        )
        .file(toml.src.path.clone())
        .help(format!(
            "put the key in an environment variable and name it: `api_key_env = \"{}_API_KEY\"`",
            name.to_uppercase().replace('-', "_")
        )),
    );
    table.handled("api_key");
    false
}

/// `api`: `openai` when not written; `None` when it is not a known one (reported).
fn read_api(table: &mut TableReader<'_>) -> Option<Api> {
    let toml = table.file();
    match table.string("api") {
        None => Some(Api::Openai),
        Some(Spanned { value, .. }) if Api::from_name(&value).is_some() => Api::from_name(&value),
        Some(api) => {
            toml.report(
                Diagnostic::error(
                    code::INVALID_VALUE,
                    format!("unknown provider api `{}`", api.value),
                )
                .at(&toml.src, api.span)
                .note("`api` is `openai` (Chat Completions), `openai-responses` (OpenAI's Responses API) or `anthropic` (Messages)")
                .suggest(suggest::closest(
                    &api.value,
                    super::shape::agent::APIS.iter().copied(),
                )),
            );
            None
        }
    }
}

/// `base_url`, required, an `http://` or `https://` URL without credentials, written
/// without its trailing `/`.
fn read_base_url(
    name: &str,
    table: &mut TableReader<'_>,
    parent: &TableReader<'_>,
) -> Option<String> {
    let toml = table.file();
    match table.string("base_url") {
        Some(url) if userinfo(&url.value).is_some() => {
            // Never echo the line or the URL: they hold a secret.
            toml.report(
                Diagnostic::error(
                    code::CREDENTIALS_IN_URL,
                    format!("`providers.{name}.base_url` holds a user name or password"),
                )
                .at_unquoted(&toml.src, url.span)
                .note("a base URL is written to the manifest and shown in messages, so it must not hold a secret")
                .help(format!(
                    "remove `user:password@` from the URL, put the key in an environment variable and name it: `api_key_env = \"{}_API_KEY\"`",
                    name.to_uppercase().replace('-', "_")
                )),
            );
            None
        }
        Some(url) if url.value.starts_with("http://") || url.value.starts_with("https://") => {
            Some(url.value.trim_end_matches('/').to_string())
        }
        Some(url) => {
            toml.error(
                code::INVALID_VALUE,
                format!(
                    "`providers.{name}.base_url` must start with `http://` or `https://`, found `{}`",
                    url.value
                ),
                url.span,
            );
            None
        }
        None => {
            toml.report(
                Diagnostic::error(
                    code::MISSING_KEY,
                    format!("provider `{name}` is missing `base_url`"),
                )
                .at(&toml.src, parent.key_span(name))
                .help("for an OpenAI-compatible server it ends in `/v1`, e.g. `http://localhost:11434/v1`"),
            );
            None
        }
    }
}

/// `api_key_env`: the variable that holds the key, if written; `Err` when it is not an
/// environment variable name (reported).
fn read_api_key_env(table: &mut TableReader<'_>) -> Result<Option<String>, ()> {
    let toml = table.file();
    match table.string("api_key_env") {
        Some(var) if is_env_name(&var.value) => Ok(Some(var.value)),
        Some(var) => {
            toml.error(
                code::INVALID_VALUE,
                format!("`{}` is not an environment variable name", var.value),
                var.span,
            );
            Err(())
        }
        None => Ok(None),
    }
}

/// Validates a model reference; returns its canonical text and wire protocol.
pub(super) fn check_model(
    toml: &TomlFile,
    model: &Spanned<String>,
    providers: &BTreeMap<String, Provider>,
    declared: &[String],
    agent_dir: &std::path::Path,
) -> Option<(String, Option<Api>)> {
    let parsed = match ModelRef::parse(&model.value) {
        Ok(parsed) => parsed,
        Err(message) => {
            toml.report(
                Diagnostic::error(code::INVALID_MODEL, message)
                    .at(&toml.src, model.span.clone())
                    .help(match suggestion(model.value.trim()) {
                        Some(id) => format!("did you mean `{id}`?"),
                        None => format!("write it as `provider/model-id`, e.g. `{DEFAULT_MODEL}`"),
                    }),
            );
            return None;
        }
    };
    if let ModelRef::Scripted { path } = &parsed {
        if !super::cache::is_file(&agent_dir.join(path)) {
            toml.report(
                Diagnostic::error(
                    code::INVALID_MODEL,
                    format!("scripted replies file `{path}` does not exist"),
                )
                .at(&toml.src, model.span.clone())
                .note("the path is relative to the agent directory"),
            );
            return None;
        }
        return Some((parsed.to_text(), None));
    }
    let provider = parsed.provider();
    match known_api(provider, providers) {
        Some(api) => Some((parsed.to_text(), Some(api))),
        // Declared, but its table has errors of its own: those are reported already.
        None if declared.iter().any(|d| d == provider) => None,
        None => {
            let mut known: Vec<&str> = BUILTIN_PROVIDERS.to_vec();
            known.push("scripted");
            known.extend(providers.keys().map(String::as_str));
            let diagnostic = Diagnostic::error(
                code::UNKNOWN_PROVIDER,
                format!("unknown provider `{provider}` in model `{}`", model.value),
            )
            .at(&toml.src, model.span.clone());
            let diagnostic = match suggest::closest(provider, known.iter().copied()) {
                Some(s) => diagnostic.help(format!("did you mean `{s}`?")),
                None => diagnostic
                    .note(format!(
                        "known providers: {}",
                        super::toml_reader::list(&known)
                    ))
                    .help(format!(
                        "declare it in a `[providers.{provider}]` table with `api` and `base_url`"
                    )),
            };
            toml.report(diagnostic);
            None
        }
    }
}

fn known_api(provider: &str, providers: &BTreeMap<String, Provider>) -> Option<Api> {
    match providers.get(provider) {
        Some(p) => Some(p.api),
        None => match provider {
            "anthropic" => Some(Api::Anthropic),
            "openai" => Some(Api::OpenaiResponses),
            _ => None,
        },
    }
}

/// The wire protocol behind a model reference (`None`: scripted or unknown).
pub fn api_of(model: &str, providers: &BTreeMap<String, Provider>) -> Option<Api> {
    match ModelRef::parse(model).ok()? {
        ModelRef::Provider { provider, .. } => known_api(&provider, providers),
        ModelRef::Scripted { .. } => None,
    }
}

/// Whether `name` is an environment variable name: a letter or `_`, then letters, digits, `_`.
pub fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

mod reasoning;
mod telemetry;

#[cfg(test)]
mod tests;
