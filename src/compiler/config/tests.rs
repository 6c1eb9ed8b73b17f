//! Unit tests of `compiler/config.rs`.

use super::*;
use crate::compiler::inputs::Loaded;

fn compile_text(text: &str) -> (Config, Vec<String>) {
    compile_as(text, None)
}

fn compile_as(text: &str, inherited: Option<&Inherited>) -> (Config, Vec<String>) {
    let file = Loaded {
        path: "agent.toml".into(),
        display: "agent.toml".into(),
        text: text.into(),
    };
    let mut diags = Diagnostics::default();
    let config = compile(
        &AgentToml::File(file),
        "agent.toml",
        "dir",
        inherited,
        Path::new("."),
        &mut diags,
    );
    (config, diags.into_iter().map(|d| d.message).collect())
}

fn window(config: &Config) -> (u64, u64, f64) {
    let agent = &config.agent;
    (
        agent.limits.context_window,
        agent.limits.max_output_tokens,
        agent.compaction.threshold_percent,
    )
}

#[test]
fn a_small_window_alone_derives_the_reply_size_and_the_threshold() {
    let (config, diags) = compile_text("model = \"openai/x\"\n[limits]\ncontext_window = 4096\n");
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(window(&config), (4096, 1024, 0.75));
    // Large windows keep the usual defaults.
    let (config, _) = compile_text("model = \"openai/x\"\n[limits]\ncontext_window = 131072\n");
    assert_eq!(window(&config), (131_072, 8192, 0.9));
    let (config, _) = compile_text("model = \"openai/x\"\n");
    assert_eq!(window(&config), (200_000, 8192, 0.9));
    // What is written is kept.
    let (config, diags) = compile_text(
        "model = \"openai/x\"\n[limits]\ncontext_window = 4096\nmax_output_tokens = 512\n[compaction]\nthreshold_percent = 0.5\n",
    );
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(window(&config), (4096, 512, 0.5));
}

#[test]
fn a_reply_size_that_was_written_must_fit_the_window() {
    let (_, diags) = compile_text(
        "model = \"openai/x\"\n[limits]\ncontext_window = 4096\nmax_output_tokens = 4096\n",
    );
    assert_eq!(
        diags,
        ["`limits.max_output_tokens` (4096) must be smaller than `limits.context_window` (4096)"]
    );
    let (_, diags) = compile_text("model = \"openai/x\"\n[limits]\nmax_output_tokens = 300000\n");
    assert_eq!(
        diags,
        [
            "`limits.max_output_tokens` (300000) must be smaller than `limits.context_window` (200000, the default)"
        ]
    );
    let (_, diags) = compile_text("model = \"openai/x\"\n[limits]\ncontext_window = 1\n");
    assert_eq!(
        diags,
        ["`limits.context_window` (1) leaves no room for a reply; it must be at least 2"]
    );
}

#[test]
fn a_subagent_on_its_parents_model_inherits_its_window() {
    let parent = Inherited {
        model: "local/qwen".into(),
        providers: BTreeMap::new(),
        context_window: 4096,
        max_output_tokens: 1024,
        sandbox: Default::default(),
    };
    let sub = "description = \"d\"\n";
    let (config, diags) = compile_as(sub, Some(&parent));
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(window(&config), (4096, 1024, 0.75));
    // Its own window: the reply size is derived from it.
    let (config, _) = compile_as(
        "description = \"d\"\n[limits]\ncontext_window = 8192\n",
        Some(&parent),
    );
    assert_eq!(window(&config), (8192, 2048, 0.75));
    // A reply size that does not fit the inherited window is an error.
    let (_, diags) = compile_as(
        "description = \"d\"\n[limits]\nmax_output_tokens = 8192\n",
        Some(&parent),
    );
    assert_eq!(
        diags,
        [
            "`limits.max_output_tokens` (8192) must be smaller than `limits.context_window` (4096, the parent agent's, whose model this subagent uses)"
        ]
    );
    // Its own model: its own defaults.
    let (config, _) = compile_as("description = \"d\"\nmodel = \"openai/x\"\n", Some(&parent));
    assert_eq!(window(&config), (200_000, 8192, 0.9));
}

#[test]
fn a_subagent_without_a_description_is_told_once_and_only_when_parsed() {
    let parent = Inherited {
        model: "openai/x".into(),
        providers: BTreeMap::new(),
        context_window: 200_000,
        max_output_tokens: 8192,
        sandbox: Default::default(),
    };
    let (_, diags) = compile_as("mode = \"task\"\n", Some(&parent));
    assert_eq!(diags, ["subagent `dir` has no `description`"]);
    let (_, diags) = compile_as("mode = \n", Some(&parent));
    assert_eq!(diags.len(), 1, "{diags:?}");
    assert!(diags[0].starts_with("invalid TOML"), "{diags:?}");
    let (_, diags) = compile_as("description = 3\n", Some(&parent));
    assert_eq!(diags, ["`description` must be a string, found an integer"]);
}

use std::path::Path;

#[test]
fn fills_in_defaults() {
    let (config, diags) = compile_text("model = \"openai/gpt-4o\"\n");
    assert!(diags.is_empty(), "{diags:?}");
    assert_eq!(config.agent.name, "dir");
    assert_eq!(config.agent.limits.max_steps, 50);
    assert_eq!(config.agent.compaction.threshold_percent, 0.9);
    // The built-in `openai` provider speaks the Responses API.
    assert_eq!(config.api, Some(Api::OpenaiResponses));
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
fn never_echoes_credentials_in_a_base_url() {
    let file = Loaded {
        path: "agent.toml".into(),
        display: "agent.toml".into(),
        text: "model = \"p/x\"\n[providers.p]\nbase_url = \"http://u:hunter2-secret@h/v1\"\n"
            .into(),
    };
    let mut diags = Diagnostics::default();
    let config = compile(
        &AgentToml::File(file),
        "agent.toml",
        "dir",
        None,
        Path::new("."),
        &mut diags,
    );
    let diags: Vec<Diagnostic> = diags.into_iter().collect();
    assert_eq!(diags.len(), 1, "{diags:?}");
    let d = &diags[0];
    assert_eq!(
        (d.code, d.line, d.column),
        (code::CREDENTIALS_IN_URL, Some(3), Some(12))
    );
    let shown = format!(
        "{} {:?} {:?} {:?}",
        d.message, d.notes, d.help, d.source_line
    );
    assert!(!shown.contains("hunter2"), "{shown}");
    assert!(config.agent.providers.is_empty());
    for url in ["https://tok3n@h/v1", "u:p@h"] {
        let (_, diags) = compile_text(&format!(
            "model = \"p/x\"\n[providers.p]\nbase_url = \"{url}\"\n"
        ));
        assert_eq!(diags.len(), 1, "{url}: {diags:?}");
        assert!(
            diags[0].contains("holds a user name or password"),
            "{diags:?}"
        );
    }
}

#[test]
fn env_names() {
    assert!(is_env_name("OLLAMA_API_KEY"));
    assert!(is_env_name("_x1"));
    assert!(!is_env_name("1X"));
    assert!(!is_env_name("A-B"));
}
