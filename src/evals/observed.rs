//! What a turn (or a whole case) did, as the expectations see it: how it ended, its
//! reply, its events, the top agent's tool calls with their results, its budgets.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::protocol::{EndReason, Event, EventKind, Usage};

/// The part of a run an expectation is checked against.
#[derive(Debug)]
pub struct Observed<'a> {
    pub end: EndReason,
    /// The turn's error, when it failed.
    pub error: Option<&'a str>,
    pub reply: &'a str,
    pub events: &'a [Event],
    /// The events before these (a resumed turn's call was requested in them).
    pub earlier: &'a [Event],
    pub steps: u64,
    pub usage: Usage,
    pub duration: Duration,
    pub workspace: &'a Path,
}

/// A tool call of the top agent and its result.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    pub name: String,
    pub input: Value,
    /// The output and whether it is an error; `None` while it has none (a parked call).
    pub result: Option<(String, bool)>,
}

impl Observed<'_> {
    /// The top agent's tool calls that ran (or were refused) in these events, in the
    /// order the model made them; a call approved here was requested earlier. A child
    /// agent's own calls are its business: expect the subagent instead.
    pub fn calls(&self) -> Vec<Call> {
        let mut calls: Vec<(String, Call)> = Vec::new();
        let resolved: Vec<&str> = self
            .events
            .iter()
            .filter(|e| e.meta.session_id.is_none())
            .filter_map(|e| match &e.kind {
                EventKind::InputResolved { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect();
        for event in self.earlier.iter().filter(|e| e.meta.session_id.is_none()) {
            if let EventKind::ActionsRequested { actions, .. } = &event.kind {
                calls.extend(
                    actions
                        .iter()
                        .filter(|a| resolved.contains(&a.call_id.as_str()))
                        .map(|a| {
                            (
                                a.call_id.clone(),
                                Call {
                                    name: a.name.clone(),
                                    input: a.input.clone(),
                                    result: None,
                                },
                            )
                        }),
                );
            }
        }
        for event in self.events.iter().filter(|e| e.meta.session_id.is_none()) {
            match &event.kind {
                EventKind::ActionsRequested { actions, .. } => {
                    calls.extend(actions.iter().map(|a| {
                        (
                            a.call_id.clone(),
                            Call {
                                name: a.name.clone(),
                                input: a.input.clone(),
                                result: None,
                            },
                        )
                    }));
                }
                EventKind::ActionResult {
                    call_id,
                    output,
                    is_error,
                    ..
                } => {
                    if let Some((_, call)) = calls.iter_mut().find(|(id, _)| id == call_id) {
                        call.result = Some((output.clone(), *is_error));
                    }
                }
                _ => {}
            }
        }
        calls.into_iter().map(|(_, call)| call).collect()
    }

    /// The types of the events, in order.
    pub fn event_types(&self) -> Vec<&'static str> {
        self.events.iter().map(|e| e.kind.name()).collect()
    }
}

/// `tool calls:` and one line per call: `  1. edit_file {"path":"a"} → error: …`.
pub fn describe_calls(calls: &[Call]) -> Vec<String> {
    if calls.is_empty() {
        return vec!["tool calls: none".into()];
    }
    let lines = calls.iter().enumerate().map(|(n, call)| {
        let input = crate::text::shorten(&call.input.to_string(), 160);
        let result = match &call.result {
            None => "no result".to_string(),
            Some((output, true)) => format!("error: {}", first_line(output)),
            Some((output, false)) => format!("ok: {}", first_line(output)),
        };
        format!("  {}. {} {input} → {result}", n + 1, call.name)
    });
    std::iter::once("tool calls:".to_string())
        .chain(lines)
        .collect()
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let more = text.lines().nth(1).is_some();
    let line = crate::text::shorten(line, 200);
    if more { format!("{line} …") } else { line }
}

/// Event types with runs of the same type folded: `message.appended ×12`.
pub fn fold_types(types: &[&str]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < types.len() {
        let mut n = 1;
        while i + n < types.len() && types[i + n] == types[i] {
            n += 1;
        }
        out.push(if n > 1 {
            format!("{} ×{n}", types[i])
        } else {
            types[i].to_string()
        });
        i += n;
    }
    out.join(", ")
}
