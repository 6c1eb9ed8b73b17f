//! `[reasoning]`: how hard a reasoning model thinks, checked against what the chosen
//! model and its API can do.

use super::super::diagnostic::{Diagnostic, code};
use super::super::toml_reader::TableReader;
use crate::manifest::{Agent, Api, Effort, MIN_THINKING_BUDGET, Reasoning};
use crate::suggest;

/// Reads `[reasoning]` into `agent`, whose model, API (`api`, `None` for a scripted
/// model) and limits are read already.
pub fn read(root: &mut TableReader<'_>, agent: &mut Agent, api: Option<Api>) {
    let Some(mut table) = root.table("reasoning") else {
        return;
    };
    let toml = root.file();
    let table_span = root.key_span("reasoning");
    let mut reasoning = Reasoning {
        effort: Effort::Medium,
        budget_tokens: None,
    };
    let mut ok = true;
    if let Some(effort) = table.string("effort") {
        match Effort::parse(&effort.value) {
            Some(parsed) => reasoning.effort = parsed,
            None => {
                ok = false;
                toml.report(
                    Diagnostic::error(
                        code::INVALID_VALUE,
                        format!("unknown reasoning effort `{}`", effort.value),
                    )
                    .at(&toml.src, effort.span)
                    .note("`effort` is `minimal`, `low`, `medium` or `high`")
                    .suggest(suggest::closest(
                        &effort.value,
                        Effort::NAMES.iter().copied(),
                    )),
                );
            }
        }
    }
    let mut budget_span = None;
    if let Some(budget) = table.positive_int("budget_tokens") {
        budget_span = budget.span.clone();
        let problem = if api.is_some_and(Api::is_openai) {
            Some((
                "`budget_tokens` is Anthropic's extended thinking: an OpenAI-style API takes only `effort`".to_string(),
                "drop `budget_tokens`, or set `effort`".to_string(),
            ))
        } else if budget.value < MIN_THINKING_BUDGET {
            Some((
                format!(
                    "`budget_tokens` is {}; Anthropic's smallest thinking budget is {MIN_THINKING_BUDGET}",
                    budget.value
                ),
                format!("set `budget_tokens = {MIN_THINKING_BUDGET}` or more"),
            ))
        } else {
            None
        };
        match problem {
            Some((message, help)) => {
                ok = false;
                toml.report(
                    Diagnostic::error(code::INVALID_VALUE, message)
                        .at(&toml.src, budget.span)
                        .help(help),
                );
            }
            None => reasoning.budget_tokens = Some(budget.value),
        }
    }
    table.finish();
    if let Some(why) = cannot_reason(&agent.model) {
        toml.report(
            Diagnostic::error(
                code::CANNOT_REASON,
                format!("model `{}` cannot reason: {why}", agent.model),
            )
            .at(&toml.src, table_span)
            .help("choose a reasoning model (`anthropic/claude-sonnet-4-5`, `openai/o4-mini`, `openai/gpt-5`), or remove `[reasoning]`"),
        );
        return;
    }
    let limits = &agent.limits;
    let thinking = reasoning.budget();
    if ok
        && matches!(api, Some(Api::Anthropic | Api::OpenaiResponses))
        && thinking.saturating_add(limits.max_output_tokens) >= limits.context_window
    {
        ok = false;
        toml.report(
            Diagnostic::error(
                code::INVALID_VALUE,
                format!(
                    "the thinking budget ({thinking}) and `max_output_tokens` ({}) leave no room for the conversation in the {}-token `context_window`",
                    limits.max_output_tokens, limits.context_window
                ),
            )
            .at(&toml.src, budget_span.or(table_span))
            .help("eve asks for `max_tokens` = the budget + `max_output_tokens`: lower `effort` or `budget_tokens`, or raise `[limits] context_window`"),
        );
    }
    if ok {
        agent.reasoning = Some(reasoning);
    }
}

/// Why the model `reference` is known not to reason, if it is one of the families that
/// do not (an unknown model id is taken at its author's word).
fn cannot_reason(reference: &str) -> Option<&'static str> {
    let (provider, id) = reference.split_once('/')?;
    let id = id.to_ascii_lowercase();
    let starts = |prefixes: &[&str]| prefixes.iter().any(|p| id.starts_with(p));
    match provider {
        "anthropic"
            if starts(&[
                "claude-3-5",
                "claude-3-haiku",
                "claude-3-opus",
                "claude-3-sonnet",
                "claude-2",
                "claude-instant",
            ]) =>
        {
            Some("Claude models before 3.7 have no extended thinking")
        }
        "openai" if starts(&["gpt-4", "gpt-3.5", "chatgpt-4o"]) => {
            Some("GPT-4 and GPT-3.5 models take no `reasoning_effort`")
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::cannot_reason;

    #[test]
    fn only_known_families_are_refused() {
        assert!(cannot_reason("anthropic/claude-3-5-sonnet-latest").is_some());
        assert!(cannot_reason("openai/gpt-4.1").is_some());
        assert!(cannot_reason("openai/gpt-4o-mini").is_some());
        for can in [
            "anthropic/claude-sonnet-4-5",
            "anthropic/claude-3-7-sonnet-latest",
            "openai/o4-mini",
            "openai/gpt-5",
            "ollama/qwen3:32b",
            "anthropic/claude-test",
            "scripted:replies.yaml",
        ] {
            assert_eq!(cannot_reason(can), None, "{can}");
        }
    }
}
