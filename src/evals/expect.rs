//! Checks a case's expectations against what a turn or the whole case did; each check
//! says what was expected and what happened. (The judge is asked in `judge.rs`.)

use serde_json::Value;

use super::observed::{Call, Observed, describe_calls, fold_types};
use super::results::Check;
use super::workspace::{self, FileState};
use crate::manifest::eval::{Expect, FileCheck, ReplyCheck, SequenceMode};
use crate::pattern;

/// Every check of `expect` but the judge. `default_end` is the end reason expected when
/// `expect.end` is not set (`None`: none).
pub fn check(expect: &Expect, observed: &Observed<'_>, default_end: Option<&str>) -> Vec<Check> {
    let mut checks = Vec::new();
    let calls = observed.calls();
    end(expect, observed, default_end, &mut checks);
    for reply in &expect.reply {
        checks.push(reply_check(reply, observed.reply));
    }
    tools(expect, &calls, &mut checks);
    for skill in &expect.skills {
        let loaded = calls.iter().any(|c| {
            c.name == "load_skill"
                && c.input.get("name").and_then(Value::as_str) == Some(skill.as_str())
                && matches!(c.result, Some((_, false)))
        });
        checks.push(
            Check::new("expect.skills", loaded)
                .expected(format!("skill `{skill}` loaded"))
                .actual(if loaded {
                    "loaded".to_string()
                } else {
                    "not loaded".to_string()
                })
                .details(if loaded {
                    Vec::new()
                } else {
                    describe_calls(&calls)
                }),
        );
    }
    for subagent in &expect.subagents {
        let called = calls.iter().any(|c| &c.name == subagent);
        checks.push(
            Check::new("expect.subagents", called)
                .expected(format!("subagent `{subagent}` called"))
                .actual(if called { "called" } else { "not called" })
                .details(if called {
                    Vec::new()
                } else {
                    describe_calls(&calls)
                }),
        );
    }
    events(expect, observed, &mut checks);
    hooks(expect, observed, &mut checks);
    for (path, file) in &expect.files {
        file_checks(path, file, observed, &mut checks);
    }
    budgets(expect, observed, &mut checks);
    checks
}

fn end(
    expect: &Expect,
    observed: &Observed<'_>,
    default_end: Option<&str>,
    checks: &mut Vec<Check>,
) {
    let (wanted, defaulted) = match (&expect.end, default_end) {
        (Some(end), _) => (end.as_str(), false),
        (None, Some(end)) => (end, true),
        (None, None) => return,
    };
    let actual = observed.end.as_str();
    let mut shown = actual.to_string();
    if let Some(error) = observed.error {
        shown.push_str(&format!(": {error}"));
    }
    checks.push(
        Check::new("expect.end", actual == wanted)
            .expected(if defaulted {
                format!("{wanted} (the default)")
            } else {
                wanted.to_string()
            })
            .actual(shown),
    );
}

/// The reply as shown in a check: quoted, long ones cut.
fn shown_reply(reply: &str) -> String {
    if reply.is_empty() {
        "an empty reply".into()
    } else {
        format!("{:?}", crate::text::shorten(reply, 600))
    }
}

fn reply_check(check: &ReplyCheck, reply: &str) -> Check {
    match check {
        ReplyCheck::Contains(text) => {
            Check::new("expect.reply_contains", reply.contains(text.as_str()))
                .expected(format!("a reply containing {text:?}"))
                .actual(shown_reply(reply))
        }
        ReplyCheck::NotContains(text) => {
            Check::new("expect.reply_not_contains", !reply.contains(text.as_str()))
                .expected(format!("a reply without {text:?}"))
                .actual(shown_reply(reply))
        }
        ReplyCheck::Equals(text) => {
            let equal = reply == text;
            Check::new("expect.reply_equals", equal)
                .expected(shown_reply(text))
                .actual(shown_reply(reply))
                .diff((!equal).then(|| diff(text, reply)))
        }
        ReplyCheck::Regex(re) => {
            let found = regex::Regex::new(re).is_ok_and(|r| r.is_match(reply));
            Check::new("expect.reply_regex", found)
                .expected(format!("a reply matching /{re}/"))
                .actual(shown_reply(reply))
        }
        ReplyCheck::Schema(schema) => {
            let problems = schema_problems(schema, reply);
            let passed = problems.is_empty();
            Check::new("expect.reply_schema", passed)
                .expected("a reply that is JSON valid against the schema")
                .actual(if passed {
                    "valid".to_string()
                } else {
                    shown_reply(reply)
                })
                .details(problems)
        }
    }
}

/// What keeps `reply` from being JSON valid against `schema`. A reply fenced as a
/// Markdown code block is read inside the fence.
fn schema_problems(schema: &Value, reply: &str) -> Vec<String> {
    let text = reply.trim();
    let text = text
        .strip_prefix("```json")
        .or_else(|| text.strip_prefix("```"))
        .and_then(|t| t.strip_suffix("```"))
        .unwrap_or(text);
    let value: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(e) => return vec![format!("the reply is not JSON: {e}")],
    };
    let Ok(validator) = jsonschema::validator_for(schema) else {
        return vec!["the schema cannot be used".into()];
    };
    validator
        .iter_errors(&value)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at `{at}`: {e}")
            }
        })
        .collect()
}

/// A unified diff from `expected` to `actual`.
pub fn diff(expected: &str, actual: &str) -> String {
    similar::TextDiff::from_lines(expected, actual)
        .unified_diff()
        .context_radius(3)
        .header("expected", "actual")
        .to_string()
}

fn times(n: usize) -> String {
    if n == 1 {
        "1 time".into()
    } else {
        format!("{n} times")
    }
}

fn tools(expect: &Expect, calls: &[Call], checks: &mut Vec<Check>) {
    let tools = &expect.tools;
    let names: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
    for called in &tools.called {
        let count = calls
            .iter()
            .filter(|c| c.name == called.name)
            .filter(|c| {
                called
                    .input
                    .as_ref()
                    .is_none_or(|p| pattern::matches(p, &c.input))
            })
            .count();
        let passed = called.times.map_or(count >= 1, |t| count as u64 == t);
        let mut expected = format!("`{}` called", called.name);
        if let Some(input) = &called.input {
            expected.push_str(&format!(" with input matching {input}"));
        }
        expected.push_str(&match called.times {
            Some(t) => format!(" exactly {}", times(t as usize)),
            None => " at least once".into(),
        });
        checks.push(
            Check::new("expect.tools.called", passed)
                .expected(expected)
                .actual(format!("called so {}", times(count)))
                .details(if passed {
                    Vec::new()
                } else {
                    describe_calls(calls)
                }),
        );
    }
    for never in &tools.never {
        let count = names.iter().filter(|n| **n == never.as_str()).count();
        checks.push(
            Check::new("expect.tools.never", count == 0)
                .expected(format!("`{never}` never called"))
                .actual(format!("called {}", times(count)))
                .details(if count == 0 {
                    Vec::new()
                } else {
                    describe_calls(calls)
                }),
        );
    }
    if let Some(sequence) = &tools.sequence {
        let want: Vec<&str> = sequence.tools.iter().map(String::as_str).collect();
        let passed = match sequence.mode {
            SequenceMode::Strict => names == want,
            SequenceMode::InOrder => is_subsequence(&want, &names),
            SequenceMode::Subset => names.iter().all(|n| want.contains(n)),
            SequenceMode::Superset => want.iter().all(|w| names.contains(w)),
        };
        let arrow = |list: &[&str]| {
            if list.is_empty() {
                "no tool calls".to_string()
            } else {
                list.join(" → ")
            }
        };
        checks.push(
            Check::new(
                format!("expect.tools.sequence ({})", sequence.mode.as_str()),
                passed,
            )
            .expected(arrow(&want))
            .actual(arrow(&names))
            .details(if passed {
                Vec::new()
            } else {
                describe_calls(calls)
            }),
        );
    }
    if let Some(max) = tools.max_calls {
        let passed = calls.len() as u64 <= max;
        checks.push(
            Check::new("expect.tools.max_calls", passed)
                .expected(format!("at most {max} calls"))
                .actual(format!("{} calls", calls.len()))
                .details(if passed {
                    Vec::new()
                } else {
                    describe_calls(calls)
                }),
        );
    }
}

/// Whether `want` appears in `have` in order, other items allowed between.
fn is_subsequence(want: &[&str], have: &[&str]) -> bool {
    let mut have = have.iter();
    want.iter().all(|w| have.any(|h| h == w))
}

/// `[expect.hooks]`, against the `hook.completed` events of the agent and its
/// subagents.
fn hooks(expect: &Expect, observed: &Observed<'_>, checks: &mut Vec<Check>) {
    if expect.hooks.is_empty() {
        return;
    }
    // (hook, decision, rewrote) of every run.
    let runs: Vec<(&str, &str, bool)> = observed
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            crate::protocol::EventKind::HookCompleted {
                hook,
                decision,
                updated_input,
                ..
            } => Some((hook.as_str(), decision.as_str(), updated_input.is_some())),
            _ => None,
        })
        .collect();
    let seen = || {
        let list: Vec<String> = runs
            .iter()
            .map(|(hook, decision, rewrote)| {
                format!(
                    "{hook}: {decision}{}",
                    if *rewrote { ", rewrote" } else { "" }
                )
            })
            .collect();
        vec![if list.is_empty() {
            "no hook ran".to_string()
        } else {
            format!("hook runs: {}", list.join("; "))
        }]
    };
    let mut check = |key: &str, name: &str, wanted: &str, passed: bool| {
        checks.push(
            Check::new(key, passed)
                .expected(format!("hook `{name}` {wanted}"))
                .actual(if passed { "so" } else { "not so" })
                .details(if passed { Vec::new() } else { seen() }),
        );
    };
    let hooks = &expect.hooks;
    for name in &hooks.ran {
        let passed = runs.iter().any(|(h, _, _)| h == name);
        check("expect.hooks.ran", name, "ran", passed);
    }
    for name in &hooks.not_ran {
        let passed = !runs.iter().any(|(h, _, _)| h == name);
        check("expect.hooks.not_ran", name, "never ran", passed);
    }
    for name in &hooks.denied {
        let passed = runs
            .iter()
            .any(|(h, d, _)| h == name && matches!(*d, "deny" | "block"));
        check("expect.hooks.denied", name, "refused something", passed);
    }
    for name in &hooks.rewrote {
        let passed = runs.iter().any(|(h, _, r)| h == name && *r);
        check(
            "expect.hooks.rewrote",
            name,
            "rewrote a call's input",
            passed,
        );
    }
}

fn events(expect: &Expect, observed: &Observed<'_>, checks: &mut Vec<Check>) {
    let types = observed.event_types();
    let seen = || vec![format!("events: {}", fold_types(&types))];
    for name in &expect.events.present {
        let passed = types.contains(&name.as_str());
        checks.push(
            Check::new("expect.events.present", passed)
                .expected(format!("`{name}` among the events"))
                .actual(if passed { "present" } else { "none" })
                .details(if passed { Vec::new() } else { seen() }),
        );
    }
    if !expect.events.in_order.is_empty() {
        let want: Vec<&str> = expect.events.in_order.iter().map(String::as_str).collect();
        let passed = is_subsequence(&want, &types);
        checks.push(
            Check::new("expect.events.in_order", passed)
                .expected(want.join(" → "))
                .actual(if passed {
                    "in that order"
                } else {
                    "not in that order"
                })
                .details(if passed { Vec::new() } else { seen() }),
        );
    }
    for name in &expect.events.absent {
        let count = types.iter().filter(|t| **t == name.as_str()).count();
        checks.push(
            Check::new("expect.events.absent", count == 0)
                .expected(format!("no `{name}` event"))
                .actual(format!("{count} of them"))
                .details(if count == 0 { Vec::new() } else { seen() }),
        );
    }
}

fn file_checks(path: &str, file: &FileCheck, observed: &Observed<'_>, checks: &mut Vec<Check>) {
    let label = format!("expect.files.{path:?}");
    // The build warned (W0710): whatever it expects of that path, it fails, once.
    if let Some(why) = workspace::outside(path) {
        checks.push(
            Check::new(label, false)
                .expected("a file inside the case's workspace")
                .actual(format!(
                    "{why}: eve never reads a file outside it, so this can never hold"
                )),
        );
        return;
    }
    let state = workspace::read(observed.workspace, path);
    let state_text = |state: &FileState| match state {
        FileState::Missing => "the file does not exist".to_string(),
        FileState::Text(text) => shown_reply(text),
        FileState::Unreadable(why) => format!("not read: {why}"),
    };
    if let Some(exists) = file.exists {
        let passed = (state != FileState::Missing) == exists;
        checks.push(
            Check::new(label.clone(), passed)
                .expected(if exists {
                    "the file exists"
                } else {
                    "no such file"
                })
                .actual(match &state {
                    FileState::Missing => "the file does not exist".to_string(),
                    _ => "the file exists".to_string(),
                }),
        );
    }
    let text = match &state {
        FileState::Text(text) => Some(text.as_str()),
        _ => None,
    };
    if let Some(want) = &file.equals {
        let passed = text == Some(want.as_str());
        checks.push(
            Check::new(label.clone(), passed)
                .expected(shown_reply(want))
                .actual(state_text(&state))
                .diff(match text {
                    Some(text) if !passed => Some(diff(want, text)),
                    _ => None,
                }),
        );
    }
    for want in &file.contains {
        let passed = text.is_some_and(|t| t.contains(want.as_str()));
        checks.push(
            Check::new(label.clone(), passed)
                .expected(format!("a file containing {want:?}"))
                .actual(state_text(&state)),
        );
    }
    if let Some(re) = &file.regex {
        let passed = text.is_some_and(|t| regex::Regex::new(re).is_ok_and(|r| r.is_match(t)));
        checks.push(
            Check::new(label, passed)
                .expected(format!("a file matching /{re}/"))
                .actual(state_text(&state)),
        );
    }
}

fn budgets(expect: &Expect, observed: &Observed<'_>, checks: &mut Vec<Check>) {
    let mut budget = |key: &str, max: Option<u64>, actual: u64, unit: &str| {
        let n = |n: u64| {
            if n == 1 {
                format!("1 {unit}")
            } else {
                format!("{n} {unit}s")
            }
        };
        if let Some(max) = max {
            checks.push(
                Check::new(format!("expect.{key}"), actual <= max)
                    .expected(format!("at most {}", n(max)))
                    .actual(n(actual)),
            );
        }
    };
    budget("max_steps", expect.max_steps, observed.steps, "step");
    budget(
        "max_input_tokens",
        expect.max_input_tokens,
        observed.usage.input_tokens,
        "input token",
    );
    budget(
        "max_output_tokens",
        expect.max_output_tokens,
        observed.usage.output_tokens,
        "output token",
    );
    if let Some(max) = expect.max_seconds {
        let secs = observed.duration.as_secs_f64();
        checks.push(
            Check::new("expect.max_seconds", secs <= max)
                .expected(format!("at most {max} s"))
                .actual(format!("{secs:.2} s")),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_and_subsequences() {
        assert!(is_subsequence(&["a", "c"], &["a", "b", "c"]));
        assert!(!is_subsequence(&["c", "a"], &["a", "b", "c"]));
        assert!(is_subsequence(&[], &["a"]));
        assert!(!is_subsequence(&["a", "a"], &["a"]));
    }

    #[test]
    fn a_fenced_json_reply_is_read_inside_the_fence() {
        let schema = serde_json::json!({"type": "object", "required": ["ok"]});
        assert!(schema_problems(&schema, "```json\n{\"ok\": true}\n```").is_empty());
        assert_eq!(
            schema_problems(&schema, "{}"),
            vec!["\"ok\" is a required property".to_string()]
        );
        assert!(schema_problems(&schema, "sure!")[0].starts_with("the reply is not JSON"));
    }
}
