//! `[[stub]]`: what a stubbed tool returns instead of running.

use super::checks::{check_globs, check_schema, known};
use super::scope::Agent;
use crate::compiler::diagnostic::{Diagnostic, code};
use crate::compiler::shape::eval::HOOK_DECISIONS;
use crate::compiler::toml_reader::{self, TableReader};
use crate::manifest::eval::{HookStub, Stub, StubOutcome};

pub(super) fn read_stub(mut table: TableReader<'_>, agent: &Agent<'_>) -> Option<Stub> {
    let toml = table.file();
    let before = toml.error_count();
    let tool = table.string("tool");
    let input = table.item("match").map(|item| {
        check_globs(toml, &format!("{}.match", table.path()), item);
        toml_reader::to_json(item)
    });
    let schema = table
        .item("match_schema")
        .and_then(|item| check_schema(toml, &table.key_path("match_schema"), item));
    let mut outcomes = Vec::new();
    let present: Vec<&str> = ["response", "error", "outcomes"]
        .into_iter()
        .filter(|k| table.contains(k))
        .collect();
    if let Some(response) = table.string("response") {
        outcomes.push(StubOutcome::Response(response.value));
    }
    if let Some(error) = table.string("error") {
        outcomes.push(StubOutcome::Error(error.value));
    }
    for mut outcome in table.tables("outcomes").unwrap_or_default() {
        let response = outcome.string("response");
        let error = outcome.string("error");
        match (response, error) {
            (Some(r), None) => outcomes.push(StubOutcome::Response(r.value)),
            (None, Some(e)) => outcomes.push(StubOutcome::Error(e.value)),
            _ => toml.report(
                Diagnostic::error(
                    code::EVAL_STUB,
                    format!("`{}` needs `response` or `error`, not both", outcome.path()),
                )
                .at(&toml.src, outcome.span()),
            ),
        }
        outcome.finish();
    }
    match &tool {
        None => toml.report(
            Diagnostic::error(
                code::MISSING_KEY,
                format!("`{}` is missing `tool`", table.path()),
            )
            .at(&toml.src, table.span())
            .help("name the tool whose calls this stub answers: `tool = \"web_fetch\"`"),
        ),
        Some(tool) => {
            known(
                toml,
                "tool",
                &tool.value,
                tool.span.clone(),
                &agent.tools,
                code::UNKNOWN_EVAL_TOOL,
            );
        }
    }
    if present.len() != 1 {
        let message = if present.is_empty() {
            format!("`{}` says nothing to return", table.path())
        } else {
            format!(
                "`{}` has {}: a stub returns one of them",
                table.path(),
                present
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        };
        toml.report(
            Diagnostic::error(code::EVAL_STUB, message)
                .at(&toml.src, table.span())
                .note("a stub has `response = \"…\"` (the tool's output), `error = \"…\"` (a failed call) or `outcomes = [{ response = \"…\" }, { error = \"…\" }]` (one per call)"),
        );
    } else if present == ["outcomes"] && outcomes.is_empty() {
        toml.report(
            Diagnostic::error(
                code::EVAL_STUB,
                format!("`{}.outcomes` is empty", table.path()),
            )
            .at(&toml.src, table.key_span("outcomes")),
        );
    }
    table.finish();
    let tool = tool?;
    (toml.error_count() == before).then_some(Stub {
        tool: tool.value,
        input,
        schema,
        outcomes,
    })
}

/// `[hooks.NAME]` of a case: each a hook of the agent (or of a subagent), its answer a
/// decision eve knows and an `updated_input` that is an object.
pub(super) fn read_hook_stubs(root: &mut TableReader<'_>, agent: &Agent<'_>) -> Vec<HookStub> {
    let Some(mut hooks) = root.table("hooks") else {
        return Vec::new();
    };
    let toml = hooks.file();
    let mut out = Vec::new();
    for (name, item) in hooks.entries() {
        let span = hooks.key_span(name);
        let is_hook = known(
            toml,
            "hook",
            name,
            span,
            &agent.hooks,
            code::UNKNOWN_EVAL_HOOK,
        );
        // Read whether or not the hook is known, so that every mistake is reported.
        let Some(mut table) = hooks.nested(name, item) else {
            continue;
        };
        let decision = table.string("decision").and_then(|d| {
            if HOOK_DECISIONS.contains(&d.value.as_str()) {
                return Some(d.value);
            }
            toml.report(
                Diagnostic::error(
                    code::INVALID_VALUE,
                    format!("unknown hook decision `{}`", d.value),
                )
                .at(&toml.src, d.span.clone())
                .note(format!(
                    "`decision` is one of {}",
                    toml_reader::list(HOOK_DECISIONS)
                ))
                .suggest(crate::suggest::closest(
                    &d.value,
                    HOOK_DECISIONS.iter().copied(),
                )),
            );
            None
        });
        let reason = table.string("reason").map(|r| r.value);
        let additional_context = table.string("additional_context").map(|c| c.value);
        let updated_input = table.item("updated_input").and_then(|item| {
            let value = toml_reader::to_json(item);
            if value.is_object() {
                return Some(value);
            }
            toml.error(
                code::EVAL_STUB,
                format!(
                    "`{}` must be a table (the tool's input)",
                    table.key_path("updated_input")
                ),
                item.span(),
            );
            None
        });
        table.finish();
        if is_hook {
            out.push(HookStub {
                hook: name.to_string(),
                decision,
                reason,
                additional_context,
                updated_input,
            });
        }
    }
    out
}
