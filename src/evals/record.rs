//! `eve eval --record`: what a real model said in a run, written back into the case as
//! `[[reply]]` entries (and, with `--record-stubs`, every tool call's output as a
//! `[[stub]]`), so the live run replays as a deterministic regression test.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;
use toml_edit::{ArrayOfTables, DocumentMut, InlineTable, Item, Table};

use crate::pattern::escape_glob;
use crate::protocol::{Event, EventKind, Usage};

/// One model call as it was made.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Recorded {
    pub text: String,
    pub reasoning: String,
    pub tool_calls: Vec<(String, Value)>,
    pub usage: Option<Usage>,
    pub max_tokens: bool,
}

/// The model calls of a run, in the order they were made (a child agent's included: on
/// the scripted model they take their replies from the same script).
pub fn replies(events: &[Event]) -> Vec<Recorded> {
    let mut out: Vec<Recorded> = Vec::new();
    let mut index: HashMap<(Option<String>, String, u64), usize> = HashMap::new();
    for event in events {
        let session = event.meta.session_id.clone();
        let key = |turn: &str, step: u64| (session.clone(), turn.to_string(), step);
        match &event.kind {
            EventKind::StepStarted { turn_id, step } => {
                index.insert(key(turn_id, *step), out.len());
                out.push(Recorded::default());
            }
            EventKind::MessageAppended {
                turn_id,
                step,
                text,
            } => {
                if let Some(reply) = index
                    .get(&key(turn_id, *step))
                    .and_then(|i| out.get_mut(*i))
                {
                    reply.text.push_str(text);
                }
            }
            EventKind::ReasoningAppended {
                turn_id,
                step,
                text,
            } => {
                if let Some(reply) = index
                    .get(&key(turn_id, *step))
                    .and_then(|i| out.get_mut(*i))
                {
                    reply.reasoning.push_str(text);
                }
            }
            // A failed attempt is retried in the same step: what it streamed is not the reply.
            EventKind::StepFailed { turn_id, step, .. } => {
                if let Some(reply) = index
                    .get(&key(turn_id, *step))
                    .and_then(|i| out.get_mut(*i))
                {
                    *reply = Recorded::default();
                }
            }
            EventKind::ActionsRequested {
                turn_id,
                step,
                actions,
            } => {
                if let Some(reply) = index
                    .get(&key(turn_id, *step))
                    .and_then(|i| out.get_mut(*i))
                {
                    reply
                        .tool_calls
                        .extend(actions.iter().map(|a| (a.name.clone(), a.input.clone())));
                }
            }
            EventKind::StepCompleted {
                turn_id,
                step,
                finish_reason,
                usage,
                usage_reported,
            } => {
                if let Some(reply) = index
                    .get(&key(turn_id, *step))
                    .and_then(|i| out.get_mut(*i))
                {
                    reply.usage = usage_reported.then(|| usage.clone());
                    reply.max_tokens = finish_reason == "max_tokens";
                }
            }
            _ => {}
        }
    }
    out
}

/// Every tool call's input and output, in call order, each (tool, input) once.
pub fn outputs(events: &[Event]) -> Vec<(String, Value, String, bool)> {
    let mut inputs: HashMap<String, (String, Value)> = HashMap::new();
    let mut out: Vec<(String, Value, String, bool)> = Vec::new();
    for event in events {
        match &event.kind {
            EventKind::ActionsRequested { actions, .. } => {
                for a in actions {
                    inputs.insert(a.call_id.clone(), (a.name.clone(), a.input.clone()));
                }
            }
            EventKind::ActionResult {
                call_id,
                output,
                is_error,
                ..
            } => {
                if let Some((name, input)) = inputs.get(call_id)
                    && !out.iter().any(|(n, i, _, _)| n == name && i == input)
                {
                    out.push((name.clone(), input.clone(), output.clone(), *is_error));
                }
            }
            _ => {}
        }
    }
    out
}

/// JSON as a TOML value; `None` for `null`, which TOML cannot hold (a `null` inside an
/// object or array is left out).
fn toml_value(value: &Value, glob: bool) -> Option<toml_edit::Value> {
    Some(match value {
        Value::Null => return None,
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64().unwrap_or_default().into(),
        },
        Value::String(s) if glob => escape_glob(s).into(),
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => {
            let mut array = toml_edit::Array::new();
            for item in items.iter().filter_map(|v| toml_value(v, glob)) {
                array.push(item);
            }
            toml_edit::Value::Array(array)
        }
        Value::Object(map) => {
            let mut table = InlineTable::new();
            for (key, value) in map {
                if let Some(value) = toml_value(value, glob) {
                    table.insert(key, value);
                }
            }
            toml_edit::Value::InlineTable(table)
        }
    })
}

fn reply_table(reply: &Recorded) -> Table {
    let mut table = Table::new();
    if !reply.reasoning.is_empty() {
        table["reasoning"] = toml_edit::value(reply.reasoning.as_str());
    }
    if !reply.text.is_empty() {
        table["text"] = toml_edit::value(reply.text.as_str());
    }
    if !reply.tool_calls.is_empty() {
        let mut calls = toml_edit::Array::new();
        for (name, input) in &reply.tool_calls {
            let mut call = InlineTable::new();
            call.insert("name", name.as_str().into());
            if let Some(input) = toml_value(input, false) {
                call.insert("input", input);
            }
            calls.push(toml_edit::Value::InlineTable(call));
        }
        table["tool_calls"] = toml_edit::value(calls);
    }
    if let Some(usage) = &reply.usage {
        let mut counts = InlineTable::new();
        counts.insert("input_tokens", (usage.input_tokens as i64).into());
        counts.insert("output_tokens", (usage.output_tokens as i64).into());
        if usage.cache_read_tokens > 0 {
            counts.insert("cache_read_tokens", (usage.cache_read_tokens as i64).into());
        }
        if usage.cache_write_tokens > 0 {
            counts.insert(
                "cache_write_tokens",
                (usage.cache_write_tokens as i64).into(),
            );
        }
        if usage.reasoning_tokens > 0 {
            counts.insert("reasoning_tokens", (usage.reasoning_tokens as i64).into());
        }
        table["usage"] = toml_edit::value(counts);
    }
    if reply.max_tokens {
        table["finish"] = toml_edit::value("max_tokens");
    }
    table
}

/// Rewrites the case file at `path` with the run's replies (replacing its `[[reply]]`
/// entries) and, with `stubs`, its tool outputs (replacing its `[[stub]]` entries);
/// the rest of the file, comments included, stays as it was. Returns what was written.
pub fn write(path: &Path, events: &[Event], stubs: bool) -> Result<String, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    let mut doc: DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("cannot read `{shown}`: {}", e.message()))?;
    let recorded = replies(events);
    let mut replies = ArrayOfTables::new();
    for reply in &recorded {
        replies.push(reply_table(reply));
    }
    doc.remove("reply");
    doc.insert("reply", Item::ArrayOfTables(replies));
    let mut what = format!(
        "{} {}",
        recorded.len(),
        if recorded.len() == 1 {
            "reply"
        } else {
            "replies"
        }
    );
    if stubs {
        let outputs = outputs(events);
        let mut tables = ArrayOfTables::new();
        for (tool, input, output, is_error) in &outputs {
            let mut table = Table::new();
            table["tool"] = toml_edit::value(tool.as_str());
            if let Some(pattern) = toml_value(input, true) {
                table["match"] = toml_edit::value(pattern);
            }
            let key = if *is_error { "error" } else { "response" };
            table[key] = toml_edit::value(output.as_str());
            tables.push(table);
        }
        doc.remove("stub");
        if !tables.is_empty() {
            doc.insert("stub", Item::ArrayOfTables(tables));
        }
        what.push_str(&format!(
            " and {} {}",
            outputs.len(),
            if outputs.len() == 1 { "stub" } else { "stubs" }
        ));
    }
    let tmp = path.with_extension("toml.eve-record.tmp");
    std::fs::write(&tmp, doc.to_string())
        .map_err(|e| format!("cannot write `{}`: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write `{shown}`: {e}"))?;
    Ok(what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Action, Meta};
    use serde_json::json;

    fn event(kind: EventKind, session: Option<&str>) -> Event {
        Event {
            kind,
            meta: Meta {
                id: "evt".into(),
                at: "t".into(),
                session_id: session.map(str::to_string),
            },
        }
    }

    #[test]
    fn model_calls_are_recorded_in_call_order_with_child_calls_between() {
        let t = || "turn_1".to_string();
        let events = vec![
            event(
                EventKind::StepStarted {
                    turn_id: t(),
                    step: 1,
                },
                None,
            ),
            event(
                EventKind::MessageAppended {
                    turn_id: t(),
                    step: 1,
                    text: "Let me ".into(),
                },
                None,
            ),
            event(
                EventKind::MessageAppended {
                    turn_id: t(),
                    step: 1,
                    text: "ask.".into(),
                },
                None,
            ),
            event(
                EventKind::ActionsRequested {
                    turn_id: t(),
                    step: 1,
                    actions: vec![Action {
                        call_id: "c1".into(),
                        name: "explorer".into(),
                        input: json!({"task": "find *"}),
                    }],
                },
                None,
            ),
            event(
                EventKind::StepStarted {
                    turn_id: "turn_c".into(),
                    step: 1,
                },
                Some("ses_c"),
            ),
            event(
                EventKind::MessageAppended {
                    turn_id: "turn_c".into(),
                    step: 1,
                    text: "Found.".into(),
                },
                Some("ses_c"),
            ),
            event(
                EventKind::StepCompleted {
                    turn_id: t(),
                    step: 1,
                    finish_reason: "tool_use".into(),
                    usage: Usage {
                        input_tokens: 10,
                        output_tokens: 2,
                        ..Usage::default()
                    },
                    usage_reported: true,
                },
                None,
            ),
            event(
                EventKind::ActionResult {
                    turn_id: t(),
                    step: 1,
                    call_id: "c1".into(),
                    name: "explorer".into(),
                    output: "Found.".into(),
                    is_error: false,
                    duration_ms: 1,
                    connection: None,
                },
                None,
            ),
        ];
        let replies = replies(&events);
        assert_eq!(replies.len(), 2);
        assert_eq!(replies[0].text, "Let me ask.");
        assert_eq!(
            replies[0].tool_calls,
            vec![("explorer".to_string(), json!({"task": "find *"}))]
        );
        assert_eq!(replies[0].usage.as_ref().map(|u| u.input_tokens), Some(10));
        assert_eq!(replies[1].text, "Found.");
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("case.toml");
        std::fs::write(
            &path,
            "# keep me\nprompt = \"Go\"\n\n[[reply]]\ntext = \"old\"\n",
        )
        .unwrap();
        assert_eq!(write(&path, &events, true).unwrap(), "2 replies and 1 stub");
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(
            written.starts_with("# keep me\nprompt = \"Go\"\n"),
            "{written}"
        );
        assert!(!written.contains("old"), "{written}");
        let doc: DocumentMut = written.parse().unwrap();
        assert_eq!(doc["reply"].as_array_of_tables().unwrap().len(), 2);
        let stubs = doc["stub"].as_array_of_tables().unwrap();
        let task = stubs.get(0).unwrap()["match"]["task"].as_str();
        assert_eq!(task, Some("find \\*"), "the glob is escaped: {written}");
    }
}
