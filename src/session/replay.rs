//! Reading a session log back: the history, the turns, a parked request, and the
//! repair of what a crash left behind.

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::Record;
use crate::protocol::{
    EndReason, Event, EventKind, InputRequest, Message, Meta, Parked, Resolution, Snapshot, Todo,
    ToolResult, Usage,
};

/// A turn as the log tells it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnSummary {
    pub turn_id: String,
    pub input: String,
    pub started_at: String,
    pub steps: u64,
    /// `None` while the turn is open or parked.
    pub end: Option<EndReason>,
}

/// A parked turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Waiting {
    pub turn_id: String,
    pub request: InputRequest,
}

/// Everything a session log holds. A durable engine keeps it (without `records`) as a
/// session's state between turns, and folds each turn's records into it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Replayed {
    pub session_id: String,
    pub agent: String,
    pub started_at: String,
    pub history: Vec<Message>,
    pub todos: Vec<Todo>,
    /// The read stamps as last logged.
    pub stamps: Vec<super::StampRecord>,
    pub usage: Usage,
    /// The input tokens the provider reported for the last model call.
    pub last_input_tokens: u64,
    /// Characters appended to the history since that call's input was counted: its
    /// own reply and results, and everything after them.
    pub appended_chars: usize,
    /// Characters appended since the current step started.
    step_chars: usize,
    /// The tokens of the last turn so far (what a resumed turn adds to).
    pub turn_usage: Usage,
    pub turns: Vec<TurnSummary>,
    /// A turn parked on a question or an approval.
    pub waiting: Option<Waiting>,
    /// Answers already given in the parked turn, by call id.
    pub resolutions: HashMap<String, Resolution>,
    /// The input each approved call of the parked turn was shown with, by call id.
    pub approved_inputs: HashMap<String, serde_json::Value>,
    /// A turn that started and never ended (a crash), unless it is parked.
    pub open_turn: Option<String>,
    /// The last `session.*` event's type: `session.completed`, `session.waiting`…
    pub status: String,
    /// The events, for replay.
    #[serde(skip)]
    pub records: Vec<Record>,
    /// Whether a torn last line was dropped.
    pub dropped_torn_line: bool,
}

impl Replayed {
    /// `call_id`'s request is answered; an approval is of the input the person was
    /// shown.
    fn resolved(
        &mut self,
        call_id: &str,
        resolution: &Resolution,
        input: Option<&serde_json::Value>,
    ) {
        let shown = self
            .waiting
            .as_ref()
            .filter(|w| w.request.call_id == call_id)
            .map(|w| &w.request.input);
        if let (Resolution::Approved { .. }, Some(input)) = (resolution, shown.or(input)) {
            self.approved_inputs
                .insert(call_id.to_string(), input.clone());
        }
        self.resolutions
            .insert(call_id.to_string(), resolution.clone());
    }

    /// A step of the open turn starts. Answers belong to the calls of one step, as in
    /// the harness: none carries over to a later call that reuses an id.
    fn step_started(&mut self, step: u64) {
        if let Some(turn) = self.turns.last_mut() {
            turn.steps = step;
        }
        self.forget_answers();
        self.step_chars = 0;
        self.status = "running".into();
    }

    /// The turn's answers are done with (a step or the turn started, or it ended).
    fn forget_answers(&mut self) {
        self.resolutions.clear();
        self.approved_inputs.clear();
    }

    /// What a harness is rebuilt from.
    pub fn snapshot(&self) -> Snapshot {
        Snapshot {
            session_id: self.session_id.clone(),
            history: self.history.clone(),
            usage: self.usage.clone(),
            todos: self.todos.clone(),
            stamps: self.stamps.clone(),
            parked: self.waiting.as_ref().map(|w| Parked {
                turn_id: w.turn_id.clone(),
                request: w.request.clone(),
                steps: self.turns.last().map_or(0, |t| t.steps),
                usage: self.turn_usage.clone(),
            }),
            resolutions: self.resolutions.clone(),
            approved_inputs: self.approved_inputs.clone(),
            last_input_tokens: self.last_input_tokens,
            appended_chars: self.appended_chars,
        }
    }
}

/// Reads the log open as `file` (the one eve checked and locked, opened to read and
/// append; `path` names it in messages). A last line that does not parse (a write cut
/// by a crash) is dropped and cut from that file; a bad line anywhere else is an error
/// naming the line. The repairs go to the open file, never to whatever the path names
/// by then.
pub fn load(file: &File, path: &Path) -> Result<Replayed, String> {
    let mut bytes = Vec::new();
    let mut reader = file;
    reader
        .seek(SeekFrom::Start(0))
        .and_then(|_| reader.read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let mut records = Vec::new();
    let mut offset = 0usize;
    let mut dropped = false;
    let mut number = 0;
    while offset < bytes.len() {
        number += 1;
        let end = bytes[offset..]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(bytes.len(), |i| offset + i);
        let line = &bytes[offset..end];
        let is_last = end + 1 >= bytes.len();
        if !line.iter().all(u8::is_ascii_whitespace) {
            match serde_json::from_slice::<Record>(line) {
                Ok(record) => records.push(record),
                // A torn write is not JSON; a complete record eve does not know is kept
                // and reported, like a damaged line anywhere else.
                Err(_) if is_last && serde_json::from_slice::<serde_json::Value>(line).is_err() => {
                    // A torn write: keep everything before it.
                    file.set_len(offset as u64)
                        .map_err(|e| format!("cannot repair `{}`: {e}", path.display()))?;
                    dropped = true;
                    break;
                }
                Err(e) => {
                    return Err(format!(
                        "`{}` line {number} is not a session record ({e}); the log is damaged",
                        path.display()
                    ));
                }
            }
        }
        offset = end + 1;
    }
    // A last line that parsed but lacks its newline: add it, so appends start clean.
    if !dropped && !bytes.is_empty() && bytes.last() != Some(&b'\n') {
        // Opened to append: the newline goes at the end.
        let mut writer = file;
        writer
            .write_all(b"\n")
            .map_err(|e| format!("cannot repair `{}`: {e}", path.display()))?;
    }
    let mut replayed = replay(records);
    replayed.dropped_torn_line = dropped;
    Ok(replayed)
}

/// Folds records into the session's state.
pub fn replay(records: Vec<Record>) -> Replayed {
    let mut r = Replayed::default();
    for record in &records {
        apply(&mut r, record);
    }
    r.records = records;
    r
}

fn apply(r: &mut Replayed, record: &Record) {
    match record {
        Record::Message { message } => {
            r.appended_chars += message.chars();
            r.step_chars += message.chars();
            r.history.push(message.clone());
        }
        Record::Compacted { messages } => r.history = messages.clone(),
        Record::Todos { todos } => r.todos = todos.clone(),
        Record::Stamps { stamps } => r.stamps = stamps.clone(),
        Record::Event { event } => match &event.kind {
            EventKind::SessionStarted {
                session_id, agent, ..
            } => {
                r.session_id = session_id.clone();
                r.agent = agent.clone();
                if r.started_at.is_empty() {
                    r.started_at = event.meta.at.clone();
                }
                r.status = "session.started".into();
            }
            EventKind::TurnStarted { turn_id, .. } => {
                r.turns.push(TurnSummary {
                    turn_id: turn_id.clone(),
                    input: String::new(),
                    started_at: event.meta.at.clone(),
                    steps: 0,
                    end: None,
                });
                r.open_turn = Some(turn_id.clone());
                r.turn_usage = Usage::default();
                r.waiting = None;
                r.forget_answers();
                r.status = "running".into();
            }
            EventKind::MessageReceived { text, .. } => {
                if let Some(turn) = r.turns.last_mut() {
                    turn.input = text.clone();
                }
            }
            EventKind::StepStarted { step, .. } => r.step_started(*step),
            EventKind::StepCompleted {
                usage,
                usage_reported,
                ..
            } => {
                r.usage.add(usage);
                r.turn_usage.add(usage);
                if *usage_reported {
                    // The call counted what was sent; its reply and results came after.
                    r.last_input_tokens = usage.input_tokens;
                    r.appended_chars = r.step_chars;
                } else {
                    // Nothing was counted: estimate the whole history from its characters.
                    r.last_input_tokens = 0;
                    r.appended_chars = r.history.iter().map(Message::chars).sum();
                }
            }
            EventKind::CompactionCompleted { tokens_after, .. } => {
                r.last_input_tokens = *tokens_after;
                r.appended_chars = 0;
            }
            EventKind::InputRequested { turn_id, request } => {
                r.waiting = Some(Waiting {
                    turn_id: turn_id.clone(),
                    request: request.clone(),
                });
            }
            EventKind::InputResolved {
                call_id,
                resolution,
                input,
                ..
            } => {
                r.resolved(call_id, resolution, input.as_ref());
                r.waiting = None;
                r.status = "running".into();
            }
            EventKind::TurnWaiting { .. } => r.status = "waiting".into(),
            EventKind::TurnCompleted { end_reason, .. }
            | EventKind::TurnFailed { end_reason, .. } => {
                if let Some(turn) = r.turns.last_mut() {
                    turn.end = Some(*end_reason);
                }
                r.open_turn = None;
                r.waiting = None;
                r.forget_answers();
            }
            EventKind::SessionWaiting { .. } => r.status = "session.waiting".into(),
            EventKind::SessionCompleted { .. } => r.status = "session.completed".into(),
            EventKind::SessionFailed { .. } => r.status = "session.failed".into(),
            _ => {}
        },
    }
}

use crate::protocol::message::unanswered_calls;

/// What to append to close a turn a crash left open: synthetic error results for its
/// unanswered tool calls, then `turn.failed` with reason `interrupted`. Empty when the
/// log needs no repair (no open turn, or a parked one).
pub fn repair(r: &Replayed) -> Vec<Record> {
    let Some(turn_id) = &r.open_turn else {
        return Vec::new();
    };
    if r.waiting.is_some() {
        return Vec::new();
    }
    let mut records = Vec::new();
    let calls = unanswered_calls(&r.history);
    if !calls.is_empty() {
        records.push(Record::Message {
            message: Message::Tool {
                results: calls
                    .into_iter()
                    .map(|call| ToolResult {
                        content: "eve stopped before this call finished (the process ended); it may have run partly. Check its effects before calling it again.".into(),
                        call_id: call.id,
                        name: call.name,
                        is_error: true,
                        images: Vec::new(),
                    })
                    .collect(),
            },
        });
    }
    let steps = r.turns.last().map_or(0, |t| t.steps);
    records.push(Record::Event {
        event: Event {
            kind: EventKind::TurnFailed {
                turn_id: turn_id.clone(),
                end_reason: EndReason::Interrupted,
                error: "eve stopped before this turn ended (the process was killed or crashed)"
                    .into(),
                steps,
                usage: Usage::default(),
            },
            meta: Meta {
                id: crate::ids::new_id("evt"),
                at: crate::ids::now_rfc3339(),
                session_id: None,
            },
        },
    });
    records
}

/// Applies repair records to the replayed state too.
pub fn apply_all(r: &mut Replayed, records: &[Record]) {
    for record in records {
        apply(r, record);
        r.records.push(record.clone());
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The log as eve opens it: to read and append.
    fn open(path: &Path) -> File {
        std::fs::OpenOptions::new()
            .read(true)
            .append(true)
            .open(path)
            .unwrap()
    }
    use crate::protocol::ToolCall;
    use serde_json::json;

    fn event(kind: EventKind) -> Record {
        Record::Event {
            event: Event {
                kind,
                meta: Meta {
                    id: crate::ids::new_id("evt"),
                    at: "2026-01-01T00:00:00.000Z".into(),
                    session_id: None,
                },
            },
        }
    }

    fn crashed_log() -> Vec<Record> {
        vec![
            event(EventKind::SessionStarted {
                session_id: "ses_1".into(),
                agent: "a".into(),
                model: "m".into(),
                workspace: "/w".into(),
                tools: vec![],
                unavailable_tools: vec![],
                deferred_tools: vec![],
                warnings: vec![],
            }),
            event(EventKind::TurnStarted {
                session_id: "ses_1".into(),
                turn_id: "turn_1".into(),
            }),
            event(EventKind::MessageReceived {
                turn_id: "turn_1".into(),
                text: "hi".into(),
            }),
            Record::Message {
                message: Message::User { text: "hi".into() },
            },
            event(EventKind::StepStarted {
                turn_id: "turn_1".into(),
                step: 1,
            }),
            Record::Message {
                message: Message::Assistant {
                    text: "Running it.".into(),
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "bash".into(),
                        input: json!({"command": "sleep 9"}),
                    }],
                    provider_blocks: None,
                    reasoning: String::new(),
                },
            },
        ]
    }

    #[test]
    fn an_approval_is_of_the_input_it_showed_and_lasts_one_step() {
        use crate::protocol::{InputKind, InputRequest, Resolution};
        let request = |id: &str, input: serde_json::Value| InputRequest {
            request_id: format!("req_{id}"),
            call_id: id.into(),
            tool: "bash".into(),
            input,
            kind: InputKind::Approval,
        };
        let resolved = |id: &str, input: Option<serde_json::Value>| {
            event(EventKind::InputResolved {
                turn_id: "turn_1".into(),
                request_id: format!("req_{id}"),
                call_id: id.into(),
                resolution: Resolution::Approved { by: None },
                input,
            })
        };
        let mut log = crashed_log();
        log.extend([
            event(EventKind::InputRequested {
                turn_id: "turn_1".into(),
                request: request("c1", json!({"command": "shown"})),
            }),
            resolved("c1", None),
            // `--yes`: nobody was shown a request; the event holds what it approved.
            resolved("c2", Some(json!({"command": "as it was"}))),
        ]);
        let r = replay(log.clone());
        assert_eq!(r.approved_inputs["c1"], json!({"command": "shown"}));
        assert_eq!(r.approved_inputs["c2"], json!({"command": "as it was"}));
        // A later step's call reusing an id inherits no approval.
        log.push(event(EventKind::StepStarted {
            turn_id: "turn_1".into(),
            step: 2,
        }));
        let r = replay(log);
        assert!(r.resolutions.is_empty() && r.approved_inputs.is_empty());
    }

    #[test]
    fn a_turn_left_open_is_closed_with_synthetic_results() {
        let mut r = replay(crashed_log());
        assert_eq!(r.open_turn.as_deref(), Some("turn_1"));
        let fix = repair(&r);
        assert_eq!(fix.len(), 2);
        apply_all(&mut r, &fix);
        assert_eq!(r.open_turn, None);
        assert_eq!(r.turns[0].end, Some(EndReason::Interrupted));
        let Some(Message::Tool { results }) = r.history.last() else {
            panic!("{:?}", r.history)
        };
        assert_eq!(results[0].call_id, "c1");
        assert!(results[0].is_error);
        assert!(repair(&r).is_empty(), "a repaired log needs no more repair");
    }

    #[test]
    fn a_torn_last_line_is_dropped_and_cut_from_the_file() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("ses_1.jsonl");
        let mut text: String = crashed_log()
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        let good_len = text.len();
        text.push_str("{\"record\":\"message\",\"message\":{\"role\":\"tool\",\"resu");
        std::fs::write(&path, &text).unwrap();
        let r = load(&open(&path), &path).unwrap();
        assert!(r.dropped_torn_line);
        assert_eq!(r.history.len(), 2);
        assert_eq!(std::fs::metadata(&path).unwrap().len(), good_len as u64);

        let mut damaged = text[..good_len].to_string();
        damaged.insert_str(0, "not json\n");
        std::fs::write(&path, damaged).unwrap();
        assert!(
            load(&open(&path), &path)
                .unwrap_err()
                .contains("line 1 is not a session record")
        );
    }

    #[test]
    fn a_complete_record_eve_does_not_know_is_kept_and_reported_not_cut() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("ses_1.jsonl");
        let mut text: String = crashed_log()
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        text.push_str("{\"record\":\"from_a_newer_eve\",\"x\":1}\n");
        std::fs::write(&path, &text).unwrap();
        let error = load(&open(&path), &path).unwrap_err();
        assert!(error.contains("line 7 is not a session record"), "{error}");
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "nothing was cut"
        );
    }
}
