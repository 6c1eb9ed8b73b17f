//! Model providers: one trait that streams provider-neutral events, over real APIs or a script.
//!
//! - [`http::HttpProvider`] speaks Anthropic's Messages API, OpenAI's Responses API
//!   (the built-in `openai` provider's) and Chat Completions (which every
//!   `[providers.NAME]` with `api = "openai"` uses).
//! - [`scripted::ScriptedProvider`] replays replies from a YAML file.
//!
//! The harness sees only [`Provider`]: the same path for every provider.

pub mod anthropic;
pub mod error;
pub mod event;
pub mod http;
pub mod openai;
mod provider;
pub mod redact;
pub mod request;
pub mod responses;
pub mod retry;
pub mod scripted;
pub mod sse;
pub mod stream;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

pub use error::ProviderError;
pub use event::{FinishReason, StreamEvent, Usage};
pub use provider::{Capabilities, Provider};
pub use request::ModelRequest;
pub use stream::EventStream;

use crate::manifest::model::ModelRef;
use crate::manifest::{self, Api};

/// Where Anthropic's API lives unless `ANTHROPIC_BASE_URL` says otherwise.
pub const ANTHROPIC_DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
/// Where OpenAI's API lives unless `OPENAI_BASE_URL` says otherwise.
pub const OPENAI_DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A model reference turned into a provider to call.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub provider: Arc<dyn Provider>,
    /// The id sent to the provider (`claude-sonnet-4-5`); for scripted models, the file.
    pub model_id: String,
    /// The reference as written (`anthropic/claude-sonnet-4-5`).
    pub reference: String,
}

/// Resolves a model reference. `scripted:` paths are relative to `scripted_base`;
/// `env` reads environment variables (empty counts as unset).
pub fn resolve(
    reference: &str,
    providers: &BTreeMap<String, manifest::Provider>,
    scripted_base: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Resolved, String> {
    let env = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let model = ModelRef::parse_hinted(reference)?;
    let provider: Arc<dyn Provider> = match &model {
        ModelRef::Scripted { path } => {
            let path = scripted_base.join(path);
            Arc::new(scripted::ScriptedProvider::load(&path)?)
        }
        ModelRef::Provider { provider, .. } => {
            let limits = stream::StreamLimits::from_env(&env)?;
            if let Some(custom) = providers.get(provider) {
                let api_key = match &custom.api_key_env {
                    Some(var) => Some(env(var).ok_or_else(|| {
                        ProviderError::MissingKey { var: var.clone() }.to_string()
                    })?),
                    None => None,
                };
                let flavour = openai::Flavour::of_base_url(&custom.base_url);
                Arc::new(
                    http::HttpProvider::new(
                        provider,
                        custom.api,
                        flavour,
                        &custom.base_url,
                        api_key,
                    )?
                    .with_limits(limits),
                )
            } else {
                let (api, key_var, base_var, default_base, flavour) = match provider.as_str() {
                    "anthropic" => (
                        Api::Anthropic,
                        "ANTHROPIC_API_KEY",
                        "ANTHROPIC_BASE_URL",
                        ANTHROPIC_DEFAULT_BASE_URL,
                        openai::Flavour::OpenAi,
                    ),
                    "openai" => (
                        Api::OpenaiResponses,
                        "OPENAI_API_KEY",
                        "OPENAI_BASE_URL",
                        OPENAI_DEFAULT_BASE_URL,
                        openai::Flavour::OpenAi,
                    ),
                    other => {
                        let mut known: Vec<&str> =
                            crate::manifest::model::BUILTIN_PROVIDERS.to_vec();
                        known.extend(providers.keys().map(String::as_str));
                        return Err(format!(
                            "unknown provider `{other}` in model `{reference}`: use one of {}, `scripted:<file>`, or declare [providers.{other}] in agent.toml",
                            known
                                .iter()
                                .map(|k| format!("`{k}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ));
                    }
                };
                let key = env(key_var).ok_or_else(|| {
                    ProviderError::MissingKey {
                        var: key_var.into(),
                    }
                    .to_string()
                })?;
                let base = env(base_var).unwrap_or_else(|| default_base.to_string());
                if !(base.starts_with("http://") || base.starts_with("https://")) {
                    return Err(format!(
                        "{base_var} must start with http:// or https://, not `{}`",
                        redact::url_for_display(&base)
                    ));
                }
                Arc::new(
                    http::HttpProvider::new(provider, api, flavour, &base, Some(key))?
                        .with_limits(limits),
                )
            }
        }
    };
    let model_id = match &model {
        ModelRef::Provider { model, .. } => model.clone(),
        ModelRef::Scripted { path } => path.clone(),
    };
    Ok(Resolved {
        provider,
        model_id,
        reference: model.to_text(),
    })
}

pub use crate::manifest::model::BUILTIN_KEY_VARIABLES;

/// The variables of the built-in providers' keys, as owned names.
pub fn key_variables_builtin() -> Vec<String> {
    BUILTIN_KEY_VARIABLES
        .iter()
        .map(|v| v.to_string())
        .collect()
}

/// The environment variables that hold provider API keys for this agent and its subagents:
/// they are removed from the environment of the processes tools start.
pub fn key_variables(manifest: &manifest::Manifest) -> Vec<String> {
    let mut vars = key_variables_builtin();
    let mut stack = vec![manifest];
    while let Some(m) = stack.pop() {
        vars.extend(
            m.agent
                .providers
                .values()
                .filter_map(|p| p.api_key_env.clone()),
        );
        stack.extend(m.subagents.iter().map(|s| s.manifest.as_ref()));
    }
    vars.sort();
    vars.dedup();
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn a_missing_key_names_the_variable() {
        let err = resolve(
            "anthropic/claude-sonnet-4-5",
            &BTreeMap::new(),
            Path::new("."),
            &no_env,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "ANTHROPIC_API_KEY is not set: export it, or choose another model with --model or EVE_MODEL"
        );
        let providers = BTreeMap::from([(
            "router".to_string(),
            manifest::Provider {
                api: Api::Openai,
                base_url: "https://openrouter.ai/api/v1".into(),
                api_key_env: Some("OPENROUTER_API_KEY".into()),
            },
        )]);
        let err = resolve("router/x/y", &providers, Path::new("."), &|v| {
            (v == "OPENROUTER_API_KEY").then(String::new)
        })
        .unwrap_err();
        assert!(err.starts_with("OPENROUTER_API_KEY is not set"), "{err}");
    }

    #[test]
    fn base_urls_follow_the_sdk_conventions() {
        let env = |v: &str| match v {
            "OPENAI_API_KEY" => Some("sk".to_string()),
            "OPENAI_BASE_URL" => Some("http://127.0.0.1:9/v1/".to_string()),
            _ => None,
        };
        let resolved = resolve("openai/gpt-4.1", &BTreeMap::new(), Path::new("."), &env).unwrap();
        assert_eq!(resolved.model_id, "gpt-4.1");
        assert_eq!(resolved.provider.name(), "openai");
        let providers = BTreeMap::from([(
            "ollama".to_string(),
            manifest::Provider {
                api: Api::Openai,
                base_url: "http://localhost:11434/v1".into(),
                api_key_env: None,
            },
        )]);
        let local = resolve("ollama/qwen3:8b", &providers, Path::new("."), &no_env).unwrap();
        assert_eq!(local.model_id, "qwen3:8b");
        let http = http::HttpProvider::new(
            "ollama",
            Api::Openai,
            openai::Flavour::Compatible,
            "http://localhost:11434/v1/",
            None,
        )
        .unwrap();
        assert_eq!(http.url(), "http://localhost:11434/v1/chat/completions");
        let anthropic = http::HttpProvider::new(
            "anthropic",
            Api::Anthropic,
            openai::Flavour::OpenAi,
            "https://api.anthropic.com",
            None,
        )
        .unwrap();
        assert_eq!(anthropic.url(), "https://api.anthropic.com/v1/messages");
    }

    #[test]
    fn a_declared_provider_on_openais_host_gets_openais_output_limit() {
        use openai::Flavour;
        assert_eq!(
            Flavour::of_base_url("https://api.openai.com/v1"),
            Flavour::OpenAi
        );
        for other in [
            "https://api.openai.com.evil.example/v1",
            "http://api.openai.com/v1",
            "https://openrouter.ai/api/v1",
            "http://localhost:11434/v1",
        ] {
            assert_eq!(Flavour::of_base_url(other), Flavour::Compatible, "{other}");
        }
        // The built-in `openai` speaks the Responses API.
        let env = |v: &str| (v == "OPENAI_API_KEY").then(|| "sk".to_string());
        let resolved = resolve("openai/gpt-5", &BTreeMap::new(), Path::new("."), &env).unwrap();
        assert!(format!("{:?}", resolved.provider).contains("OpenaiResponses"));
    }

    #[test]
    fn unknown_providers_list_the_known_ones() {
        let err = resolve("gemini/pro", &BTreeMap::new(), Path::new("."), &no_env).unwrap_err();
        assert!(err.contains("unknown provider `gemini`"), "{err}");
        assert!(err.contains("`anthropic`, `openai`"), "{err}");
    }
}
