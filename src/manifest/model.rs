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
