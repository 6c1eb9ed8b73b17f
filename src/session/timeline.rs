//! `eve sessions show ID --timeline`: each turn of a session log as a waterfall — its
//! model calls, tool calls, hooks, compactions and waits for a person, each at its
//! offset in the turn with its duration and tokens — read from the events' own
//! timestamps (no telemetry needed).

use std::fmt::Write as _;

use crate::protocol::{Event, EventKind, Record, Usage};

/// The width of a row's bar, in characters.
const BAR: usize = 30;

/// One thing a turn spent time on.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    /// Milliseconds since the turn started.
    start: i64,
    /// How long it took, in milliseconds.
    duration: i64,
    label: String,
    detail: String,
}

/// A turn being read.
#[derive(Debug, Default)]
struct Turn {
    started: i64,
    input: String,
    rows: Vec<Row>,
    /// A model call under way: its step and when it started.
    model: Option<(u64, i64)>,
    /// A wait for a person under way: what for and since when.
    waiting: Option<(String, i64)>,
    compacting: Option<i64>,
    /// It parked: it goes on when the person answers (in this process or a later one).
    parked: bool,
}

impl Turn {
    /// A row for what ended at `offset` after `duration_ms` (a call, a hook).
    fn ended(&mut self, offset: i64, duration_ms: u64, label: String, detail: String) {
        let duration = i64::try_from(duration_ms)
            .unwrap_or(i64::MAX)
            .min(offset.max(0));
        self.rows.push(Row {
            start: offset - duration,
            duration,
            label,
            detail,
        });
    }
}

/// The timeline of `records` (a session log's), one block a turn (a parked turn goes
/// on where it was resumed, the wait for the person a row of it); a turn that never
/// ended (a crash, a turn still parked) ends at its last event.
pub fn timeline(records: &[Record]) -> String {
    let mut out = String::new();
    let mut turn: Option<Turn> = None;
    let mut number = 0;
    let mut last = 0;
    for event in records.iter().filter_map(|r| match r {
        Record::Event { event } => Some(event),
        _ => None,
    }) {
        let Some(at) = millis(event) else { continue };
        last = at;
        if let EventKind::TurnStarted { .. } = &event.kind {
            if let Some(open) = turn.take() {
                number += 1;
                block(&mut out, number, open, at, "interrupted", None);
            }
            turn = Some(Turn {
                started: at,
                ..Turn::default()
            });
            continue;
        }
        let Some(open) = turn.as_mut() else { continue };
        if let Some(end) = read(open, &event.kind, at) {
            number += 1;
            let (reason, usage) = end;
            if let Some(open) = turn.take() {
                block(&mut out, number, open, at, &reason, usage.as_ref());
            }
        }
    }
    if let Some(open) = turn {
        number += 1;
        let reason = if open.parked { "waiting" } else { "not ended" };
        block(&mut out, number, open, last, reason, None);
    }
    if out.is_empty() {
        out.push_str("no turns yet\n");
    }
    out
}

/// Reads one event into the turn; returns how the turn ended when it did.
fn read(turn: &mut Turn, kind: &EventKind, at: i64) -> Option<(String, Option<Usage>)> {
    let offset = at - turn.started;
    match kind {
        EventKind::MessageReceived { text, .. } => turn.input = text.clone(),
        EventKind::StepStarted { step, .. } => turn.model = Some((*step, offset)),
        EventKind::ActionsRequested { .. } | EventKind::MessageAppended { .. } => {
            end_model(turn, offset, None);
        }
        EventKind::StepCompleted { usage, .. } => end_model(turn, offset, Some(usage)),
        EventKind::StepFailed { .. } => end_model(turn, offset, None),
        EventKind::ActionResult {
            name,
            is_error,
            duration_ms,
            ..
        } => {
            let detail = if *is_error { "failed" } else { "" };
            turn.ended(offset, *duration_ms, name.clone(), detail.to_string());
        }
        EventKind::HookCompleted {
            hook,
            event,
            decision,
            duration_ms,
            ..
        } => turn.ended(
            offset,
            *duration_ms,
            format!("hook {hook} ({event})"),
            decision.clone(),
        ),
        EventKind::InputRequested { request, .. } => {
            let what = match request.kind {
                crate::protocol::InputKind::Question { .. } => "a question".to_string(),
                crate::protocol::InputKind::Approval => format!("approval of {}", request.tool),
            };
            turn.waiting = Some((what, offset));
        }
        EventKind::InputResolved { .. } => {
            if let Some((what, since)) = turn.waiting.take() {
                turn.rows.push(Row {
                    start: since,
                    duration: offset - since,
                    label: format!("waiting for {what}"),
                    detail: String::new(),
                });
            }
        }
        EventKind::CompactionRequested { .. } => turn.compacting = Some(offset),
        EventKind::CompactionCompleted { tokens_after, .. } => {
            if let Some(since) = turn.compacting.take() {
                turn.rows.push(Row {
                    start: since,
                    duration: offset - since,
                    label: "compaction".into(),
                    detail: format!("{} tokens after", thousands(*tokens_after)),
                });
            }
        }
        EventKind::TurnCompleted {
            end_reason, usage, ..
        }
        | EventKind::TurnFailed {
            end_reason, usage, ..
        } => return Some((end_reason.as_str().to_string(), Some(usage.clone()))),
        EventKind::TurnWaiting { .. } => turn.parked = true,
        _ => {}
    }
    None
}

/// The model call under way ends at `offset` (with the step's tokens when known).
fn end_model(turn: &mut Turn, offset: i64, usage: Option<&Usage>) {
    if let Some((step, since)) = turn.model.take() {
        turn.rows.push(Row {
            start: since,
            duration: offset - since,
            label: format!("model, step {step}"),
            detail: usage.map(tokens).unwrap_or_default(),
        });
    } else if let (Some(usage), Some(row)) = (
        usage,
        turn.rows
            .iter_mut()
            .rev()
            .find(|r| r.label.starts_with("model")),
    ) {
        // The step's tokens come at its end, after its tools ran.
        if row.detail.is_empty() {
            row.detail = tokens(usage);
        }
    }
}

/// Writes one turn's block: its heading, then a row per thing it spent time on.
fn block(
    out: &mut String,
    number: usize,
    turn: Turn,
    end: i64,
    reason: &str,
    usage: Option<&Usage>,
) {
    let total = (end - turn.started).max(1);
    let input = crate::text::shorten(turn.input.lines().next().unwrap_or(""), 60);
    let _ = write!(
        out,
        "turn {number} · {input:?} · {reason} · {}",
        seconds(total)
    );
    if let Some(usage) = usage {
        let _ = write!(out, " · {}", tokens(usage));
    }
    out.push('\n');
    let mut rows = turn.rows;
    rows.sort_by_key(|r| r.start);
    for row in rows {
        let start = row.start.clamp(0, total);
        let from = (start as usize * BAR) / total as usize;
        let width = ((row.duration.max(0) as usize * BAR).div_ceil(total as usize))
            .clamp(1, BAR - from.min(BAR - 1));
        let bar: String = (0..BAR)
            .map(|i| {
                if i >= from && i < from + width {
                    '█'
                } else {
                    '·'
                }
            })
            .collect();
        let label = crate::text::shorten(&row.label, 34);
        let _ = writeln!(
            out,
            "  {:>8}  {bar}  {label:<34} {:>8}  {}",
            seconds(start),
            duration(row.duration),
            row.detail
        )
        .map(|_| ());
    }
    out.push('\n');
}

/// An event's time, in milliseconds since the epoch.
fn millis(event: &Event) -> Option<i64> {
    let at = humantime::parse_rfc3339(&event.meta.at).ok()?;
    let since = at.duration_since(std::time::UNIX_EPOCH).ok()?;
    i64::try_from(since.as_millis()).ok()
}

fn seconds(ms: i64) -> String {
    format!("{:.3} s", ms as f64 / 1000.0)
}

fn duration(ms: i64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

fn tokens(usage: &Usage) -> String {
    format!(
        "{} in, {} out",
        thousands(usage.input_tokens),
        thousands(usage.output_tokens)
    )
}

fn thousands(n: u64) -> String {
    crate::console::lines::thousands(n)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn records(lines: &[(&str, serde_json::Value)]) -> Vec<Record> {
        lines
            .iter()
            .map(|(at, kind)| {
                let mut event = kind.clone();
                event["meta"] =
                    serde_json::json!({"id": "evt_1", "at": format!("2026-12-03T10:00:{at}Z")});
                serde_json::from_value(serde_json::json!({"record": "event", "event": event}))
                    .unwrap()
            })
            .collect()
    }

    #[test]
    fn a_turn_is_a_waterfall_of_its_model_calls_tools_hooks_and_waits() {
        use serde_json::json;
        let usage = json!({"input_tokens": 1200, "output_tokens": 40, "cache_read_tokens": 0, "cache_write_tokens": 0});
        let log = records(&[
            (
                "00.000",
                json!({"type": "turn.started", "data": {"session_id": "s", "turn_id": "t"}}),
            ),
            (
                "00.000",
                json!({"type": "message.received", "data": {"turn_id": "t", "text": "fix the bug"}}),
            ),
            (
                "00.000",
                json!({"type": "step.started", "data": {"turn_id": "t", "step": 1}}),
            ),
            (
                "00.400",
                json!({"type": "actions.requested", "data": {"turn_id": "t", "step": 1, "actions": []}}),
            ),
            (
                "00.410",
                json!({"type": "hook.completed", "data": {"turn_id": "t", "step": 1, "hook": "guard", "event": "before_tool", "decision": "continue", "duration_ms": 10}}),
            ),
            (
                "00.600",
                json!({"type": "action.result", "data": {"turn_id": "t", "step": 1, "call_id": "c", "name": "bash", "output": "", "is_error": false, "duration_ms": 190}}),
            ),
            (
                "00.600",
                json!({"type": "step.completed", "data": {"turn_id": "t", "step": 1, "finish_reason": "tool_use", "usage": usage}}),
            ),
            (
                "01.000",
                json!({"type": "turn.completed", "data": {"turn_id": "t", "end_reason": "completed", "result": "ok", "steps": 1, "usage": usage}}),
            ),
        ]);
        let shown = timeline(&log);
        assert_eq!(
            shown,
            "turn 1 · \"fix the bug\" · completed · 1.000 s · 1,200 in, 40 out\n\
             \x20  0.000 s  ████████████··················  model, step 1                        400 ms  1,200 in, 40 out\n\
             \x20  0.400 s  ············█·················  hook guard (before_tool)              10 ms  continue\n\
             \x20  0.410 s  ············██████············  bash                                 190 ms  \n\
             \n"
        );
        assert_eq!(timeline(&[]), "no turns yet\n");
    }
}
