//! `[expect.tools]`: the calls a case expects (`called`, `never`, `sequence`,
//! `max_calls`).

use super::checks::{check_globs, known};
use super::scope::Scope;
use crate::compiler::diagnostic::{Diagnostic, code};
use crate::compiler::toml_reader::{self, Spanned, TableReader, TomlFile};
use crate::manifest::eval::{Called, Sequence, SequenceMode, ToolChecks};
use crate::suggest;

pub(super) fn read_tools(mut table: TableReader<'_>, scope: &Scope<'_, '_>) -> ToolChecks {
    let toml = table.file();
    let mut checks = ToolChecks::default();
    if let Some(item) = table.item("called") {
        match item.as_array() {
            Some(array) => {
                for (n, value) in array.iter().enumerate() {
                    checks.called.extend(read_called(&table, n, value, scope));
                }
            }
            None => table.wrong_type("called", item, "an array"),
        }
    }
    for name in table.string_array("never").unwrap_or_default() {
        if known(
            toml,
            "tool",
            &name.value,
            name.span,
            &scope.agent.tools,
            code::UNKNOWN_EVAL_TOOL,
        ) {
            checks.never.push(name.value);
        }
    }
    checks.sequence = read_sequence(&mut table, scope);
    checks.max_calls = table.positive_int("max_calls").map(|n| n.value);
    table.finish();
    checks
}

/// The `n`th (0-based) entry of `called`: a tool name, or a table `{ name, input, times }`;
/// `None` when it is not one of the agent's tools or not valid (reported).
fn read_called(
    table: &TableReader<'_>,
    n: usize,
    value: &toml_edit::Value,
    scope: &Scope<'_, '_>,
) -> Option<Called> {
    let toml = table.file();
    let agent = scope.agent;
    if let Some(name) = value.as_str() {
        if known(
            toml,
            "tool",
            name,
            value.span(),
            &agent.tools,
            code::UNKNOWN_EVAL_TOOL,
        ) {
            scope.expect_call(toml, &table.key_path("called"), name, value.span());
            return Some(Called {
                name: name.to_string(),
                input: None,
                times: None,
            });
        }
        return None;
    }
    let path = format!("{}[{}]", table.key_path("called"), n + 1);
    let Some(mut call) = table.value_table("called", path, value) else {
        toml.error(
            code::WRONG_TYPE,
            format!(
                "`{}` must hold tool names or tables `{{ name = \"…\", input = {{…}}, times = N }}`, found {}",
                table.key_path("called"),
                toml_reader::describe_value(value)
            ),
            value.span(),
        );
        return None;
    };
    let name = call.string("name");
    let input = call.item("input").map(|item| {
        check_globs(toml, &call.key_path("input"), item);
        toml_reader::to_json(item)
    });
    let times = call.positive_int("times").map(|t| t.value);
    let mut called = None;
    match name {
        Some(name) => {
            if known(
                toml,
                "tool",
                &name.value,
                name.span.clone(),
                &agent.tools,
                code::UNKNOWN_EVAL_TOOL,
            ) {
                scope.expect_call(toml, &table.key_path("called"), &name.value, name.span);
                called = Some(Called {
                    name: name.value,
                    input,
                    times,
                });
            }
        }
        None => toml.report(
            Diagnostic::error(
                code::MISSING_KEY,
                format!("`{}` is missing `name`", call.path()),
            )
            .at(&toml.src, call.span()),
        ),
    }
    call.finish();
    called
}

/// `sequence` and its `mode` (in order, by default); `None` without a `sequence`, or
/// when one of its tools is not the agent's or the mode is not known (reported).
fn read_sequence(table: &mut TableReader<'_>, scope: &Scope<'_, '_>) -> Option<Sequence> {
    let toml = table.file();
    let sequence = table.string_array("sequence");
    let mode = table.string("mode");
    let mode = match &mode {
        None => Some(SequenceMode::InOrder),
        Some(mode) => read_sequence_mode(toml, mode),
    };
    match (sequence, mode) {
        (Some(sequence), Some(mode)) => {
            let mut ok = true;
            for name in &sequence {
                let known_tool = known(
                    toml,
                    "tool",
                    &name.value,
                    name.span.clone(),
                    &scope.agent.tools,
                    code::UNKNOWN_EVAL_TOOL,
                );
                if known_tool && mode != SequenceMode::Subset {
                    scope.expect_call(
                        toml,
                        &table.key_path("sequence"),
                        &name.value,
                        name.span.clone(),
                    );
                }
                ok &= known_tool;
            }
            ok.then(|| Sequence {
                tools: sequence.into_iter().map(|s| s.value).collect(),
                mode,
            })
        }
        (None, _) if table.contains("mode") => {
            toml.report(
                Diagnostic::error(
                    code::MISSING_KEY,
                    format!("`{}` needs a `sequence`", table.key_path("mode")),
                )
                .at(&toml.src, table.key_span("mode")),
            );
            None
        }
        _ => None,
    }
}

/// A written sequence `mode`, one of [`SequenceMode::NAMES`].
fn read_sequence_mode(toml: &TomlFile, mode: &Spanned<String>) -> Option<SequenceMode> {
    let parsed = SequenceMode::parse(&mode.value);
    if parsed.is_none() {
        toml.report(
            Diagnostic::error(
                code::INVALID_VALUE,
                format!("unknown sequence mode `{}`", mode.value),
            )
            .at(&toml.src, mode.span.clone())
            .note(format!(
                "`mode` is one of {}",
                toml_reader::list(SequenceMode::NAMES)
            ))
            .suggest(suggest::closest(
                &mode.value,
                SequenceMode::NAMES.iter().copied(),
            )),
        );
    }
    parsed
}
