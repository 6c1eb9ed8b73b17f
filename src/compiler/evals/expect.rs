//! `[expect]` (of a case or a turn): the reply, skills, subagents, events, files,
//! limits and judge it checks.

use toml_edit::Item;

use super::checks::{check_regex, check_relative, check_schema, known, strings};
use super::scope::{Scope, never_holds};
use super::tool_checks::read_tools;
use crate::compiler::diagnostic::{Diagnostic, code};
use crate::compiler::shape::eval::END_REASONS;
use crate::compiler::toml_reader::{self, TableReader};
use crate::manifest::eval::{EventChecks, Expect, FileCheck, HookChecks, Judge, ReplyCheck};
use crate::protocol::event::EVENT_TYPES;
use crate::suggest;

pub(super) fn read_expect(mut table: TableReader<'_>, scope: &Scope<'_, '_>) -> Expect {
    let toml = table.file();
    let mut expect = Expect {
        end: read_end(&mut table),
        reply: read_reply_checks(&mut table),
        ..Expect::default()
    };
    if let Some(tools) = table.table("tools") {
        expect.tools = read_tools(tools, scope);
    }
    expect.skills = read_expected_skills(&mut table, scope);
    expect.subagents = read_expected_subagents(&mut table, scope);
    if let Some(events) = table.table("events") {
        expect.events = read_events(events);
    }
    if let Some(hooks) = table.table("hooks") {
        expect.hooks = read_hook_checks(hooks, scope);
    }
    if let Some(files) = table.table("files") {
        expect.files = read_file_checks(files);
    }
    expect.max_steps = table.positive_int("max_steps").map(|n| n.value);
    expect.max_input_tokens = table.positive_int("max_input_tokens").map(|n| n.value);
    expect.max_output_tokens = table.positive_int("max_output_tokens").map(|n| n.value);
    if let Some(seconds) = table.number("max_seconds") {
        if seconds.value > 0.0 && seconds.value.is_finite() {
            expect.max_seconds = Some(seconds.value);
        } else {
            toml.error(
                code::OUT_OF_RANGE,
                format!("`{}` must be more than 0", table.key_path("max_seconds")),
                seconds.span,
            );
        }
    }
    expect.judge = read_judge(&mut table);
    table.finish();
    expect
}

/// `end`: one of [`END_REASONS`].
fn read_end(table: &mut TableReader<'_>) -> Option<String> {
    let toml = table.file();
    let end = table.string("end")?;
    if END_REASONS.contains(&end.value.as_str()) {
        return Some(end.value);
    }
    toml.report(
        Diagnostic::error(
            code::INVALID_VALUE,
            format!("unknown end reason `{}`", end.value),
        )
        .at(&toml.src, end.span.clone())
        .note(format!(
            "`end` is one of {}",
            toml_reader::list(END_REASONS)
        ))
        .suggest(suggest::closest(&end.value, END_REASONS.iter().copied())),
    );
    None
}

/// `reply_contains`, `reply_not_contains`, `reply_equals`, `reply_regex` and
/// `reply_schema`, in that order.
fn read_reply_checks(table: &mut TableReader<'_>) -> Vec<ReplyCheck> {
    let toml = table.file();
    let mut reply = Vec::new();
    for text in strings(table, "reply_contains") {
        reply.push(ReplyCheck::Contains(text.value));
    }
    for text in strings(table, "reply_not_contains") {
        reply.push(ReplyCheck::NotContains(text.value));
    }
    if let Some(text) = table.string("reply_equals") {
        reply.push(ReplyCheck::Equals(text.value));
    }
    if let Some(regex) = table.string("reply_regex")
        && check_regex(toml, &table.key_path("reply_regex"), &regex)
    {
        reply.push(ReplyCheck::Regex(regex.value));
    }
    if let Some(item) = table.item("reply_schema")
        && let Some(schema) = check_schema(toml, &table.key_path("reply_schema"), item)
    {
        reply.push(ReplyCheck::Schema(schema));
    }
    reply
}

/// `skills`: the agent's skills the case expects loaded (a warning for one no scripted
/// reply loads).
fn read_expected_skills(table: &mut TableReader<'_>, scope: &Scope<'_, '_>) -> Vec<String> {
    let toml = table.file();
    let mut skills = Vec::new();
    for skill in table.string_array("skills").unwrap_or_default() {
        if known(
            toml,
            "skill",
            &skill.value,
            skill.span.clone(),
            &scope.agent.skills,
            code::UNKNOWN_EVAL_SKILL,
        ) {
            if let Some(scripted) = &scope.scripted
                && !scripted.skills.contains(&skill.value)
            {
                never_holds(
                    toml,
                    format!(
                        "`{}` expects skill `{}` loaded, but no scripted reply loads it",
                        table.key_path("skills"),
                        skill.value
                    ),
                    skill.span,
                );
            }
            skills.push(skill.value);
        }
    }
    skills
}

/// `subagents`: the agent's subagents the case expects called.
fn read_expected_subagents(table: &mut TableReader<'_>, scope: &Scope<'_, '_>) -> Vec<String> {
    let toml = table.file();
    let mut subagents = Vec::new();
    for subagent in table.string_array("subagents").unwrap_or_default() {
        if known(
            toml,
            "subagent",
            &subagent.value,
            subagent.span.clone(),
            &scope.agent.subagents,
            code::UNKNOWN_EVAL_SUBAGENT,
        ) {
            scope.expect_call(
                toml,
                &table.key_path("subagents"),
                &subagent.value,
                subagent.span,
            );
            subagents.push(subagent.value);
        }
    }
    subagents
}

/// `[expect.events]`: event types `present`, `in_order` and `absent`.
fn read_events(mut events: TableReader<'_>) -> EventChecks {
    let toml = events.file();
    let mut read = |key: &'static str| -> Vec<String> {
        events
            .string_array(key)
            .unwrap_or_default()
            .into_iter()
            .filter(|name| {
                let ok = EVENT_TYPES.contains(&name.value.as_str());
                if !ok {
                    toml.report(
                        Diagnostic::error(
                            code::INVALID_VALUE,
                            format!("unknown event type `{}`", name.value),
                        )
                        .at(&toml.src, name.span.clone())
                        .note("event types are listed in docs/events.md")
                        .suggest(suggest::closest(&name.value, EVENT_TYPES.iter().copied())),
                    );
                }
                ok
            })
            .map(|name| name.value)
            .collect()
    };
    let checks = EventChecks {
        present: read("present"),
        in_order: read("in_order"),
        absent: read("absent"),
    };
    events.finish();
    checks
}

/// `[expect.hooks]`: hooks of the agent (or of a subagent) by name.
fn read_hook_checks(mut hooks: TableReader<'_>, scope: &Scope<'_, '_>) -> HookChecks {
    let toml = hooks.file();
    let mut read = |key: &'static str| -> Vec<String> {
        hooks
            .string_array(key)
            .unwrap_or_default()
            .into_iter()
            .filter(|name| {
                known(
                    toml,
                    "hook",
                    &name.value,
                    name.span.clone(),
                    &scope.agent.hooks,
                    code::UNKNOWN_EVAL_HOOK,
                )
            })
            .map(|name| name.value)
            .collect()
    };
    let checks = HookChecks {
        ran: read("ran"),
        not_ran: read("not_ran"),
        denied: read("denied"),
        rewrote: read("rewrote"),
    };
    hooks.finish();
    checks
}

/// `[expect.files]`: a check per path inside the workspace.
fn read_file_checks(mut files: TableReader<'_>) -> Vec<(String, FileCheck)> {
    let toml = files.file();
    let mut checks = Vec::new();
    for (path, item) in files.entries() {
        let span = files.key_span(path);
        if let Err(why) = check_relative(path) {
            toml.report(
                Diagnostic::warning(
                    code::EVAL_NEVER_HOLDS,
                    format!("`{path}` in `{}` can never hold: the path {why}", files.path()),
                )
                .at(&toml.src, span)
                .note("eve reads files only inside the case's workspace, never through a path that leaves it; the case fails"),
            );
        }
        // Kept whatever the path: `eve eval` fails it rather than passing a case
        // whose expectation was dropped.
        if let Some(check) = read_file_check(&files, path, item) {
            checks.push((path.to_string(), check));
        }
    }
    files.finish();
    checks
}

/// `judge` (the criteria a judge model checks the reply against) and `gate`.
fn read_judge(table: &mut TableReader<'_>) -> Option<Judge> {
    let toml = table.file();
    let judge = table.string("judge");
    let gate = table.bool("gate");
    match (judge, gate) {
        (Some(criteria), gate) => Some(Judge {
            criteria: criteria.value,
            gate: gate.is_some_and(|g| g.value),
        }),
        (None, Some(gate)) => {
            toml.report(
                Diagnostic::error(code::MISSING_KEY, "`gate` needs a `judge`")
                    .at(&toml.src, gate.span)
                    .help(
                        "add `judge = \"…\"`: the criteria a judge model checks the reply against",
                    ),
            );
            None
        }
        (None, None) => None,
    }
}

fn read_file_check(files: &TableReader<'_>, path: &str, item: &Item) -> Option<FileCheck> {
    let toml = files.file();
    if let Some(text) = item.as_str() {
        return Some(FileCheck {
            equals: Some(text.to_string()),
            ..FileCheck::default()
        });
    }
    let mut table = files.nested(path, item)?;
    let mut check = FileCheck {
        exists: table.bool("exists").map(|b| b.value),
        equals: table.string("equals").map(|s| s.value),
        contains: strings(&mut table, "contains")
            .into_iter()
            .map(|s| s.value)
            .collect(),
        regex: None,
    };
    if let Some(absent) = table.bool("absent") {
        if check.exists.is_some() {
            toml.report(
                Diagnostic::error(
                    code::INVALID_VALUE,
                    format!("`{}` has both `exists` and `absent`", table.path()),
                )
                .at(&toml.src, absent.span),
            );
        }
        check.exists = Some(!absent.value);
    }
    if let Some(regex) = table.string("regex")
        && check_regex(toml, &table.key_path("regex"), &regex)
    {
        check.regex = Some(regex.value);
    }
    table.finish();
    Some(check)
}
