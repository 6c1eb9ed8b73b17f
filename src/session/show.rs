//! What `eve sessions` prints: a list of sessions, a readable transcript, a replay.

use std::path::Path;

use super::Record;
use super::replay::{self, Replayed};
use crate::protocol::Message;
use crate::protocol::{EndReason, Event, EventKind, InputKind, Meta};

/// One line of `eve sessions list`.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub id: String,
    pub started: String,
    pub turns: usize,
    pub last_message: String,
    pub status: String,
}

/// How a session stands, in words.
pub fn status(r: &Replayed) -> String {
    if let Some(waiting) = &r.waiting {
        return match waiting.request.kind {
            InputKind::Question { .. } => "waiting for an answer".into(),
            InputKind::Approval => format!("waiting for approval of `{}`", waiting.request.tool),
        };
    }
    if r.open_turn.is_some() {
        return "running, or interrupted".into();
    }
    match r.turns.last().and_then(|t| t.end) {
        Some(EndReason::Interrupted) => "interrupted".into(),
        Some(EndReason::Error) => "failed".into(),
        Some(EndReason::Aborted) => "aborted".into(),
        Some(EndReason::Refused) => "refused by a hook".into(),
        Some(reason) if reason.is_limit() => format!("stopped ({})", reason.as_str()),
        _ if r.status == "session.waiting" => "waiting for a message".into(),
        _ if r.status == "session.completed" => "completed".into(),
        _ => r.status.trim_start_matches("session.").to_string(),
    }
}

/// The sessions of an agent, oldest first. A log that cannot be read is listed as such.
pub fn rows(agent_dir: &Path) -> std::io::Result<Vec<Row>> {
    Ok(super::store::list(agent_dir)?
        .into_iter()
        .map(|id| {
            let path = super::store::path(agent_dir, &id);
            match read(&path) {
                Ok(r) => Row {
                    started: r
                        .started_at
                        .chars()
                        .take(19)
                        .collect::<String>()
                        .replace('T', " "),
                    turns: r.turns.len(),
                    last_message: r
                        .turns
                        .last()
                        .map(|t| one_line(&t.input, 60))
                        .unwrap_or_default(),
                    status: status(&r),
                    id,
                },
                Err(e) => Row {
                    id,
                    started: String::new(),
                    turns: 0,
                    last_message: String::new(),
                    status: format!("unreadable: {e}"),
                },
            }
        })
        .collect())
}

/// Reads a log without changing it (no repair: listing must not write).
pub fn read(path: &Path) -> Result<Replayed, String> {
    let text = super::store::read(path)
        .and_then(|bytes| String::from_utf8(bytes).map_err(std::io::Error::other))
        .map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    let mut records = Vec::new();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    for (i, line) in lines.iter().enumerate() {
        match serde_json::from_str::<Record>(line) {
            Ok(record) => records.push(record),
            Err(_) if i + 1 == lines.len() => break,
            Err(e) => return Err(format!("line {} is not a session record: {e}", i + 1)),
        }
    }
    Ok(replay::replay(records))
}

fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::shorten(&line, max)
}

/// The first line of `eve sessions show`.
pub fn header(r: &Replayed) -> String {
    format!(
        "session {} · agent {} · started {}",
        r.session_id, r.agent, r.started_at
    )
}

/// The logged events in order, with each assistant message as one `reasoning.appended`
/// (when the model reasoned) and one `message.appended` (the log keeps the text once,
/// not its streamed pieces).
pub fn events(r: &Replayed) -> Vec<Event> {
    let mut projector = Projector::default();
    r.records.iter().flat_map(|r| projector.events(r)).collect()
}

/// Turns records, one at a time and in log order, into the events of [`events`]: a
/// server that writes a log builds the same stream live as a reader of the log gets.
/// A durable engine keeps it with the session's state between turns.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Projector {
    turn_id: String,
    step: u64,
    last: Option<Meta>,
}

impl Projector {
    /// The events `record` adds to the stream: none, one, or (an assistant message that
    /// reasoned) its reasoning, then its text.
    pub fn events(&mut self, record: &Record) -> Vec<Event> {
        match record {
            Record::Event { event } => {
                match &event.kind {
                    EventKind::StepStarted { turn_id, step } => {
                        self.turn_id = turn_id.clone();
                        self.step = *step;
                    }
                    EventKind::TurnStarted { turn_id, .. } => self.turn_id = turn_id.clone(),
                    _ => {}
                }
                self.last = Some(event.meta.clone());
                vec![event.clone()]
            }
            Record::Message {
                message:
                    Message::Assistant {
                        text, reasoning, ..
                    },
            } => {
                // Each sorts right after the event before it, as if emitted then, the
                // reasoning first; the text's id is the one it always had.
                let (turn_id, step) = (self.turn_id.clone(), self.step);
                let mut out = Vec::new();
                if !reasoning.is_empty() {
                    out.push(self.after_last(
                        "reasoning",
                        EventKind::ReasoningAppended {
                            turn_id: turn_id.clone(),
                            step,
                            text: reasoning.clone(),
                        },
                    ));
                }
                if !text.is_empty() {
                    out.push(self.after_last(
                        "text",
                        EventKind::MessageAppended {
                            turn_id,
                            step,
                            text: text.clone(),
                        },
                    ));
                }
                if let Some(last) = out.last() {
                    self.last = Some(last.meta.clone());
                }
                out
            }
            _ => Vec::new(),
        }
    }

    /// `kind` as an event whose id is the last event's with `_suffix`, at its time.
    fn after_last(&self, suffix: &str, kind: EventKind) -> Event {
        Event {
            kind,
            meta: Meta {
                id: self
                    .last
                    .as_ref()
                    .map(|m| format!("{}_{suffix}", m.id))
                    .unwrap_or_default(),
                at: self.last.as_ref().map(|m| m.at.clone()).unwrap_or_default(),
                session_id: None,
            },
        }
    }
}
