//! `eve sessions show`: a session log as a readable transcript, with the same tool
//! lines as a live run.

use super::lines::{action_line, hook_line, reasoning_block, result_line};
use crate::protocol::{EventKind, InputKind, Message, Record, Resolution};

/// A readable transcript of `records`: every message, tool call and result, question
/// and answer, and how each turn ended; `header` and `status` frame it.
pub fn transcript(header: &str, records: &[Record], status: &str) -> String {
    let mut out = format!("{header}\n");
    for record in records {
        match record {
            Record::Message { message } => match message {
                Message::User { text } => {
                    out.push_str(&format!("\n> {}\n", text.trim_end().replace('\n', "\n> ")))
                }
                Message::Assistant {
                    text, reasoning, ..
                } => {
                    // All of it: a transcript is read at leisure (the log keeps 64 KiB).
                    if let Some(block) = reasoning_block(reasoning, usize::MAX) {
                        out.push_str(&format!("\n{block}\n"));
                    }
                    if !text.trim().is_empty() {
                        out.push_str(&format!("\n{}\n", text.trim_end()));
                    }
                }
                Message::Tool { .. } => {}
            },
            Record::Compacted { .. } => out.push_str("\n· the history was compacted here\n"),
            Record::Todos { .. } | Record::Stamps { .. } => {}
            Record::Event { event } if event.meta.session_id.is_none() => {
                event_lines(&mut out, &event.kind)
            }
            Record::Event { .. } => {}
        }
    }
    out.push_str(&format!("\nstatus: {status}\n"));
    out
}

fn event_lines(out: &mut String, kind: &EventKind) {
    match kind {
        EventKind::ActionsRequested { actions, .. } => {
            for action in actions {
                out.push_str(&action_line(&action.name, &action.input));
                out.push('\n');
            }
        }
        EventKind::ActionResult {
            name,
            output,
            is_error,
            duration_ms,
            ..
        } => {
            out.push_str(&result_line(name, output, *is_error, *duration_ms));
            out.push('\n');
        }
        EventKind::InputRequested { request, .. } => match &request.kind {
            InputKind::Question { question, options } => {
                out.push_str(&format!("? {question}\n"));
                for (i, option) in options.iter().enumerate() {
                    out.push_str(&format!("    {}. {option}\n", i + 1));
                }
            }
            InputKind::Approval => {
                out.push_str(&format!("? approve `{}` {}\n", request.tool, request.input))
            }
        },
        EventKind::InputResolved { resolution, .. } => match resolution {
            Resolution::Answer { text } => out.push_str(&format!("  answer: {text}\n")),
            Resolution::Approved { by } => out.push_str(&format!(
                "  approved{}\n",
                by.as_ref().map(|b| format!(" ({b})")).unwrap_or_default()
            )),
            Resolution::Denied { reason } => out.push_str(&format!(
                "  denied{}\n",
                reason
                    .as_ref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            )),
        },
        EventKind::HookCompleted {
            hook,
            decision,
            reason,
            failed,
            updated_input,
            ..
        } => {
            let rewrote = updated_input.is_some();
            if let Some(line) = hook_line(hook, decision, reason.as_deref(), *failed, rewrote) {
                out.push_str(&line);
                out.push('\n');
            }
        }
        EventKind::TurnCompleted {
            end_reason, steps, ..
        } => {
            let steps = if *steps == 1 {
                "1 step".to_string()
            } else {
                format!("{steps} steps")
            };
            out.push_str(&format!("· turn {} after {steps}\n", end_reason.as_str()));
        }
        EventKind::TurnFailed {
            end_reason, error, ..
        } => {
            out.push_str(&format!("· turn {}: {error}\n", end_reason.as_str()));
        }
        _ => {}
    }
}
