//! `[[reply]]`: a scripted model's replies, each call's input checked against its
//! tool's schema.

use std::ops::Range;

use serde_json::Value;

use super::checks::known;
use super::scope::Agent;
use crate::compiler::diagnostic::{Diagnostic, code};
use crate::compiler::toml_reader::{self, TableReader, TomlFile};
use crate::manifest::script::{CALL_FIELDS, REPLY_FIELDS, Reply};

pub(super) fn read_reply(n: usize, mut table: TableReader<'_>, agent: &Agent<'_>) -> Option<Reply> {
    let toml = table.file();
    let span = table.span();
    let before = toml.error_count();
    for key in REPLY_FIELDS {
        if *key != "tool_calls" {
            table.item(key);
        }
    }
    for mut call in table.tables("tool_calls").unwrap_or_default() {
        for key in CALL_FIELDS {
            if *key != "name" && *key != "input" {
                call.item(key);
            }
        }
        let name = call.string("name");
        let input = call.item("input");
        if let Some(name) = &name
            && known(
                toml,
                "tool",
                &name.value,
                name.span.clone(),
                &agent.tools,
                code::UNKNOWN_EVAL_TOOL,
            )
            && let Some(input) = input
        {
            let json = toml_reader::to_json(input);
            check_input(
                toml,
                n,
                &name.value,
                &json,
                input.span().or_else(|| call.span()),
                agent,
            );
        }
        call.finish();
    }
    let json = table.to_json();
    table.finish();
    if toml.error_count() > before {
        return None;
    }
    let reply = match serde_json::from_value::<Reply>(json) {
        Ok(reply) => reply,
        Err(e) => {
            toml.error(code::WRONG_TYPE, format!("reply {}: {e}", n + 1), span);
            return None;
        }
    };
    if let Err(e) = reply.check() {
        toml.error(code::INVALID_VALUE, format!("reply {}: {e}", n + 1), span);
        return None;
    }
    Some(reply)
}

/// Checks a scripted call's input against the tool's schema, as the registry will.
fn check_input(
    toml: &TomlFile,
    reply: usize,
    tool: &str,
    input: &Value,
    span: Option<Range<usize>>,
    agent: &Agent<'_>,
) {
    let Some(spec) = agent.manifest.tools.iter().find(|t| t.name == tool) else {
        return;
    };
    let Ok(validator) = jsonschema::validator_for(&spec.input_schema) else {
        return;
    };
    let problems: Vec<String> = validator
        .iter_errors(input)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at `{at}`: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        return;
    }
    let mut diagnostic = Diagnostic::error(
        code::EVAL_REPLY_SCHEMA,
        format!(
            "reply {}: the input of `{tool}` does not match its input schema",
            reply + 1
        ),
    )
    .at(&toml.src, span);
    for problem in problems {
        diagnostic = diagnostic.note(problem);
    }
    toml.report(diagnostic.note(
        "the model would get an error result instead of the tool running; fix the input, or expect that error",
    ));
}
