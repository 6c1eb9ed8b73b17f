//! Model references: `provider/model-id` and `scripted:<file>`.

/// A parsed model reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelRef {
    /// `provider/model-id`; the id may itself contain `/` (OpenRouter ids do).
    Provider { provider: String, model: String },
    /// `scripted:<file.yaml>`: replies read from a file, for tests and evals.
    Scripted { path: String },
}

/// The providers every agent knows without a `[providers.NAME]` table.
pub const BUILTIN_PROVIDERS: &[&str] = &["anthropic", "openai"];

/// The variables the built-in providers read their keys from.
pub const BUILTIN_KEY_VARIABLES: &[&str] = &["ANTHROPIC_API_KEY", "OPENAI_API_KEY"];

/// The model ids eve's documentation uses for the short names people type (Claude
/// Code's aliases among them).
pub const ALIASES: &[(&str, &str)] = &[
    ("sonnet", "anthropic/claude-sonnet-4-5"),
    ("opus", "anthropic/claude-opus-4-5"),
    ("haiku", "anthropic/claude-haiku-4-5"),
];

/// The reference a model named without its provider most likely means: an alias
/// (`sonnet`, `claude-sonnet`), or the provider its id belongs to (`claude-…` is
/// Anthropic's, `gpt-…` and `o1`/`o3`/`o4…` OpenAI's).
pub fn suggestion(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let short = lower.strip_prefix("claude-").unwrap_or(&lower);
    if let Some((_, id)) = ALIASES.iter().find(|(alias, _)| *alias == short) {
        return Some((*id).to_string());
    }
    let plain = !lower.is_empty()
        && lower
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '@'));
    if !plain {
        return None;
    }
    if lower.starts_with("claude") {
        return Some(format!("anthropic/{text}"));
    }
    let openai = lower.starts_with("gpt-")
        || ["o1", "o3", "o4"]
            .iter()
            .any(|p| lower == *p || lower.starts_with(&format!("{p}-")));
    openai.then(|| format!("openai/{text}"))
}

impl ModelRef {
    /// Parses a model reference; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<ModelRef, String> {
        let text = text.trim();
        if let Some(path) = text
            .strip_prefix("scripted:")
            .or_else(|| text.strip_prefix("scripted/"))
        {
            if path.is_empty() {
                return Err("`scripted:` needs the path of a replies file".into());
            }
            return Ok(ModelRef::Scripted { path: path.into() });
        }
        match text.split_once('/') {
            Some((provider, model)) if !provider.is_empty() && !model.is_empty() => {
                Ok(ModelRef::Provider {
                    provider: provider.into(),
                    model: model.into(),
                })
            }
            _ => Err(format!(
                "model `{text}` is not of the form `provider/model-id`"
            )),
        }
    }

    /// [`ModelRef::parse`], with the reference it most likely means in the error (for a
    /// model given on the command line, where no help line follows).
    pub fn parse_hinted(text: &str) -> Result<ModelRef, String> {
        ModelRef::parse(text).map_err(|message| match suggestion(text.trim()) {
            Some(id) => format!("{message}: did you mean `{id}`?"),
            None => message,
        })
    }

    /// The canonical text of the reference.
    pub fn to_text(&self) -> String {
        match self {
            ModelRef::Provider { provider, model } => format!("{provider}/{model}"),
            ModelRef::Scripted { path } => format!("scripted:{path}"),
        }
    }

    /// The provider's name (`scripted` for the scripted provider).
    pub fn provider(&self) -> &str {
        match self {
            ModelRef::Provider { provider, .. } => provider,
            ModelRef::Scripted { .. } => "scripted",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_without_its_provider_gets_the_reference_it_most_likely_means() {
        let hint = |text: &str| ModelRef::parse_hinted(text).unwrap_err();
        assert_eq!(
            hint("claude-sonnet"),
            "model `claude-sonnet` is not of the form `provider/model-id`: did you mean `anthropic/claude-sonnet-4-5`?"
        );
        assert!(hint("opus").ends_with("did you mean `anthropic/claude-opus-4-5`?"));
        assert!(hint("claude-haiku-4-5").ends_with("did you mean `anthropic/claude-haiku-4-5`?"));
        assert!(hint("gpt-5").ends_with("did you mean `openai/gpt-5`?"));
        assert!(hint("o3-mini").ends_with("did you mean `openai/o3-mini`?"));
        assert_eq!(
            hint("llama"),
            "model `llama` is not of the form `provider/model-id`"
        );
        assert_eq!(
            hint("claude sonnet"),
            "model `claude sonnet` is not of the form `provider/model-id`"
        );
    }

    #[test]
    fn parses_provider_and_scripted_references() {
        assert_eq!(
            ModelRef::parse("openrouter/anthropic/claude-3.5").unwrap(),
            ModelRef::Provider {
                provider: "openrouter".into(),
                model: "anthropic/claude-3.5".into()
            }
        );
        assert_eq!(
            ModelRef::parse("scripted:demo.yaml").unwrap(),
            ModelRef::Scripted {
                path: "demo.yaml".into()
            }
        );
        assert_eq!(
            ModelRef::parse("scripted/demo.yaml").unwrap().to_text(),
            "scripted:demo.yaml"
        );
    }

    #[test]
    fn rejects_references_without_provider_or_id() {
        for bad in ["claude", "/x", "anthropic/", "scripted:", ""] {
            assert!(ModelRef::parse(bad).is_err(), "{bad}");
        }
    }
}
