//! `agent.toml`: the agent's settings, validated, with defaults applied.

use std::collections::BTreeMap;

use super::diagnostic::{Diagnostic, Diagnostics, code};
use super::inputs::Loaded;
use super::source::SourceFile;
use super::toml_reader::{Spanned, TableReader, TomlFile};
use crate::manifest::model::{BUILTIN_PROVIDERS, ModelRef};
use crate::manifest::{Agent, Api, Compaction, Limits, Mode, Provider, Workspace};
use crate::suggest;

/// The model used when neither `agent.toml` nor a parent agent names one.
pub const DEFAULT_MODEL: &str = "anthropic/claude-sonnet-4-5";

/// What a subagent takes from its parent when its own `agent.toml` is silent.
#[derive(Debug, Clone)]
pub struct Inherited {
    pub model: String,
    pub providers: BTreeMap<String, Provider>,
}

/// `agent.toml` compiled: the manifest's agent section plus what other stages need.
#[derive(Debug, Clone)]
pub struct Config {
    pub agent: Agent,
    /// Environment variables the instructions may read.
    pub instructions_env: Vec<String>,
    /// The wire protocol of the agent's model (`None` for the scripted provider).
    pub api: Option<Api>,
}

/// Compiles `agent.toml` (or reports it missing). Always returns a config, with defaults
/// where the file is wrong, so later stages can still report their own problems.
pub fn compile(
    file: Option<&Loaded>,
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
                max_output_tokens: 8192,
                context_window: 200_000,
                max_parallel_tools: 8,
                max_input_tokens_per_session: None,
            },
            compaction: Compaction {
                threshold_percent: 0.9,
                model: None,
            },
            workspace: Workspace { root: ".".into() },
            providers: inherited.map(|i| i.providers.clone()).unwrap_or_default(),
        },
        instructions_env: Vec::new(),
        api: Some(Api::Anthropic),
    };
    let Some(file) = file else {
        diags.push(
            Diagnostic::error(code::MISSING_AGENT_TOML, "missing `agent.toml`")
                .file(toml_display)
                .help("every agent directory needs an `agent.toml`; `eve init` writes one"),
        );
        return config;
    };
    let toml = match TomlFile::parse(SourceFile::new(&file.display, &file.text)) {
        Ok(toml) => toml,
        Err(diagnostic) => {
            diags.push(*diagnostic);
            return config;
        }
    };
    let mut root = toml.root();
    read_agent(&mut root, &mut config, inherited, agent_dir);
    root.finish();
    diags.extend(toml.into_diagnostics());
    config
}

fn read_agent(
    root: &mut TableReader<'_>,
    config: &mut Config,
    inherited: Option<&Inherited>,
    agent_dir: &std::path::Path,
) {
    let toml = root.file();
    let agent = &mut config.agent;
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
                    .suggest(suggest::closest(other, ["task", "conversation"])),
            ),
        }
    }
    if let Some(default_tools) = root.bool("default_tools") {
        agent.default_tools = default_tools.value;
    }

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

    let model = root.string("model");
    match model {
        Some(model) => {
            if let Some((text, api)) =
                check_model(toml, &model, &agent.providers, &declared, agent_dir)
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

    if let Some(mut limits) = root.table("limits") {
        let l = &mut agent.limits;
        if let Some(v) = limits.positive_int("max_steps") {
            l.max_steps = v.value;
        }
        let max_output = limits.positive_int("max_output_tokens");
        if let Some(v) = &max_output {
            l.max_output_tokens = v.value;
        }
        if let Some(v) = limits.positive_int("context_window") {
            l.context_window = v.value;
        }
        if let Some(v) = limits.positive_int("max_parallel_tools") {
            l.max_parallel_tools = v.value;
        }
        if let Some(v) = limits.positive_int("max_input_tokens_per_session") {
            l.max_input_tokens_per_session = Some(v.value);
        }
        if l.max_output_tokens >= l.context_window {
            let span = max_output.and_then(|v| v.span);
            toml.error(
                code::OUT_OF_RANGE,
                format!(
                    "`limits.max_output_tokens` ({}) must be smaller than `limits.context_window` ({})",
                    l.max_output_tokens, l.context_window
                ),
                span,
            );
        }
        limits.finish();
    }

    if let Some(mut compaction) = root.table("compaction") {
        if let Some(t) = compaction.number("threshold_percent") {
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
                check_model(toml, &model, &agent.providers, &declared, agent_dir)
        {
            agent.compaction.model = Some(text);
        }
        compaction.finish();
    }

    if let Some(mut workspace) = root.table("workspace") {
        if let Some(dir) = workspace.string("root") {
            if dir.value.trim().is_empty() {
                toml.error(
                    code::INVALID_VALUE,
                    "`workspace.root` must not be empty",
                    dir.span,
                );
            } else {
                agent.workspace.root = dir.value;
            }
        }
        workspace.finish();
    }

    if let Some(mut instructions) = root.table("instructions") {
        if let Some(env) = instructions.string_array("env") {
            for var in env {
                if is_env_name(&var.value) {
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

fn read_provider(
    name: &str,
    table: &mut TableReader<'_>,
    parent: &TableReader<'_>,
) -> Option<Provider> {
    let toml = table.file();
    let mut ok = true;
    if name.is_empty() || name.contains(['/', ':']) || name.chars().any(char::is_whitespace) {
        toml.error(
            code::INVALID_VALUE,
            format!("provider name `{name}` must not contain `/`, `:` or spaces"),
            parent.key_span(name),
        );
        ok = false;
    }
    if table.contains("api_key") {
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
        table.item("api_key");
        ok = false;
    }
    let api = match table.string("api") {
        None => Api::Openai,
        Some(Spanned { value, .. }) if value == "openai" => Api::Openai,
        Some(Spanned { value, .. }) if value == "anthropic" => Api::Anthropic,
        Some(api) => {
            toml.report(
                Diagnostic::error(
                    code::INVALID_VALUE,
                    format!("unknown provider api `{}`", api.value),
                )
                .at(&toml.src, api.span)
                .note("`api` is `openai` (Chat Completions) or `anthropic` (Messages)")
                .suggest(suggest::closest(&api.value, ["openai", "anthropic"])),
            );
            ok = false;
            Api::Openai
        }
    };
    let base_url = match table.string("base_url") {
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
    };
    let api_key_env = match table.string("api_key_env") {
        Some(var) if is_env_name(&var.value) => Some(var.value),
        Some(var) => {
            toml.error(
                code::INVALID_VALUE,
                format!("`{}` is not an environment variable name", var.value),
                var.span,
            );
            ok = false;
            None
        }
        None => None,
    };
    let base_url = base_url?;
    ok.then_some(Provider {
        api,
        base_url,
        api_key_env,
    })
}

/// Validates a model reference; returns its canonical text and wire protocol.
fn check_model(
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
                    .help(format!(
                        "write it as `provider/model-id`, e.g. `{DEFAULT_MODEL}`"
                    )),
            );
            return None;
        }
    };
    if let ModelRef::Scripted { path } = &parsed {
        if !agent_dir.join(path).is_file() {
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
            "openai" => Some(Api::Openai),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn compile_text(text: &str) -> (Config, Vec<String>) {
        let file = Loaded {
            path: "agent.toml".into(),
            display: "agent.toml".into(),
            text: text.into(),
        };
        let mut diags = Diagnostics::default();
        let config = compile(
            Some(&file),
            "agent.toml",
            "dir",
            None,
            Path::new("."),
            &mut diags,
        );
        (config, diags.into_iter().map(|d| d.message).collect())
    }

    use std::path::Path;

    #[test]
    fn fills_in_defaults() {
        let (config, diags) = compile_text("model = \"openai/gpt-4o\"\n");
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(config.agent.name, "dir");
        assert_eq!(config.agent.limits.max_steps, 50);
        assert_eq!(config.agent.compaction.threshold_percent, 0.9);
        assert_eq!(config.api, Some(Api::Openai));
    }

    #[test]
    fn resolves_declared_providers() {
        let (config, diags) = compile_text(
            "model = \"vllm/qwen\"\n[providers.vllm]\napi = \"anthropic\"\nbase_url = \"http://h:8000/v1/\"\n",
        );
        assert!(diags.is_empty(), "{diags:?}");
        assert_eq!(config.api, Some(Api::Anthropic));
        assert_eq!(config.agent.providers["vllm"].base_url, "http://h:8000/v1");
        assert_eq!(
            api_of("vllm/x", &config.agent.providers),
            Some(Api::Anthropic)
        );
        assert_eq!(api_of("nope/x", &config.agent.providers), None);
    }

    #[test]
    fn never_echoes_an_api_key() {
        let (_, diags) = compile_text(
            "model = \"openai/x\"\n[providers.p]\nbase_url = \"http://h\"\napi_key = \"sk-secret\"\n",
        );
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert!(!diags[0].contains("sk-secret"));
    }

    #[test]
    fn env_names() {
        assert!(is_env_name("OLLAMA_API_KEY"));
        assert!(is_env_name("_x1"));
        assert!(!is_env_name("1X"));
        assert!(!is_env_name("A-B"));
    }
}
