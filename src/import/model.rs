//! Claude Code's `model` values (`sonnet`, `opus`, `haiku`, `inherit`, a model id) as
//! eve model references.

/// The model ids eve's documentation uses, for Claude Code's aliases.
pub use crate::manifest::model::ALIASES;

/// What a `model` value becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Model {
    /// The parent's model (a subagent without `model`).
    Inherit,
    /// An eve model reference, and a note when it is not the value as written.
    Ref(String, Option<String>),
    /// Not a model eve can name; why.
    Unknown(String),
}

/// Maps a Claude Code `model` value.
pub fn map(value: &str) -> Model {
    let value = value.trim();
    if value == "inherit" {
        return Model::Inherit;
    }
    // `sonnet[1m]` asks for the 1M-token window; `opusplan` is Opus while planning.
    let (alias, extra) = match value {
        "opusplan" => (
            "opus",
            Some("`opusplan` (Opus to plan, Sonnet to act) is Opus here"),
        ),
        v if v.ends_with("[1m]") => (
            &v[..v.len() - 4],
            Some(
                "the 1M-token window is not asked for: set `context_window` and the provider's beta header yourself",
            ),
        ),
        v => (v, None),
    };
    if let Some((_, id)) = ALIASES.iter().find(|(a, _)| *a == alias) {
        let note = extra.map_or_else(
            || format!("`{value}` → `{id}`"),
            |extra| format!("`{value}` → `{id}`: {extra}"),
        );
        return Model::Ref((*id).to_string(), Some(note));
    }
    if alias.starts_with("claude-")
        && alias
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '@'))
    {
        let id = format!("anthropic/{alias}");
        return Model::Ref(id.clone(), Some(format!("`{value}` → `{id}`")));
    }
    Model::Unknown(format!(
        "`{value}` is not a Claude model alias or id: the subagent uses its parent's model"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn aliases_ids_and_the_rest() {
        assert_eq!(map("inherit"), Model::Inherit);
        assert_eq!(
            map("sonnet"),
            Model::Ref(
                "anthropic/claude-sonnet-4-5".into(),
                Some("`sonnet` → `anthropic/claude-sonnet-4-5`".into())
            )
        );
        assert!(matches!(map("haiku"), Model::Ref(id, _) if id == "anthropic/claude-haiku-4-5"));
        assert!(matches!(map("opus"), Model::Ref(id, _) if id == "anthropic/claude-opus-4-5"));
        assert!(matches!(map("opusplan"), Model::Ref(id, _) if id == "anthropic/claude-opus-4-5"));
        assert!(
            matches!(map("sonnet[1m]"), Model::Ref(id, Some(n)) if id == "anthropic/claude-sonnet-4-5" && n.contains("1M"))
        );
        assert!(matches!(
            map("claude-opus-4-1-20250805"),
            Model::Ref(id, _) if id == "anthropic/claude-opus-4-1-20250805"
        ));
        assert!(matches!(map("gpt-4o"), Model::Unknown(_)));
        assert!(matches!(map("claude-x\"]\nevil = 1"), Model::Unknown(_)));
        for (_, id) in ALIASES {
            assert!(crate::manifest::model::ModelRef::parse(id).is_ok());
        }
    }
}
