//! Where the harness sends what happens: events on a channel for the renderers, and
//! events and records to the session's [`Journal`]. It never prints.

use std::sync::Arc;

use tokio::sync::mpsc;

use crate::ids;
use crate::protocol::{Event, EventKind, Journal, Meta, Observer, Record};

/// Stamps events and hands them to their consumers; a closed receiver is not an error.
#[derive(Debug, Clone)]
pub struct Emitter {
    tx: mpsc::UnboundedSender<Event>,
    /// A child agent's session id, stamped on each of its events.
    session_id: Option<String>,
    /// The journal every event but the streamed deltas is appended to.
    journal: Option<Arc<dyn Journal>>,
    /// What watches every event (telemetry); a child agent's emitter shares it.
    observer: Option<Arc<dyn Observer>>,
}

impl Emitter {
    /// An emitter and the receiving end of its channel.
    pub fn channel() -> (Emitter, mpsc::UnboundedReceiver<Event>) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Emitter {
                tx,
                session_id: None,
                journal: None,
                observer: None,
            },
            rx,
        )
    }

    /// The same channel, for a child agent's events: each carries `meta.session_id`.
    pub fn for_child(&self, session_id: &str) -> Emitter {
        Emitter {
            tx: self.tx.clone(),
            session_id: Some(session_id.to_string()),
            journal: None,
            observer: self.observer.clone(),
        }
    }

    /// The same channel, also writing to `journal`.
    pub fn with_journal(&self, journal: Arc<dyn Journal>) -> Emitter {
        Emitter {
            tx: self.tx.clone(),
            session_id: self.session_id.clone(),
            journal: Some(journal),
            observer: self.observer.clone(),
        }
    }

    /// The same emitter, also showing every event to `observer`.
    pub fn observed_by(mut self, observer: Arc<dyn Observer>) -> Emitter {
        self.observer = Some(observer);
        self
    }

    /// The journal, if this emitter writes one.
    pub fn journal(&self) -> Option<&dyn Journal> {
        self.journal.as_deref()
    }

    /// Appends a record to the journal (if any); not sent to the channel.
    pub fn record(&self, record: &Record) {
        if let Some(journal) = &self.journal {
            journal.append(record);
        }
    }

    /// The W3C trace context of a running call of this emitter's session, when an
    /// observer exports spans.
    pub fn traceparent(&self, call_id: &str) -> Option<String> {
        let session = self.session_id.as_deref().unwrap_or_default();
        self.observer.as_ref()?.traceparent(session, call_id)
    }

    /// Stamps `kind` with a new id and the current time and sends it.
    pub fn emit(&self, kind: EventKind) {
        let event = Event {
            kind,
            meta: Meta {
                id: ids::new_id("evt"),
                at: ids::now_rfc3339(),
                session_id: self.session_id.clone(),
            },
        };
        if let Some(observer) = &self.observer {
            observer.observe(&event);
        }
        if let Some(journal) = &self.journal {
            if matches!(
                event.kind,
                EventKind::MessageAppended { .. } | EventKind::ReasoningAppended { .. }
            ) {
                journal.stream(&event);
            } else {
                journal.append(&Record::Event {
                    event: event.clone(),
                });
            }
        }
        let _ = self.tx.send(event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_get_an_id_and_a_time() {
        let (emitter, mut rx) = Emitter::channel();
        emitter.emit(EventKind::StepStarted {
            turn_id: "turn_1".into(),
            step: 2,
        });
        let event = rx.try_recv().unwrap();
        assert!(event.meta.id.starts_with("evt_"));
        assert!(event.meta.at.ends_with('Z'));
        assert_eq!(event.meta.session_id, None);
        let child = emitter.for_child("ses_2");
        child.emit(EventKind::StepStarted {
            turn_id: "turn_1".into(),
            step: 1,
        });
        assert_eq!(
            rx.try_recv().unwrap().meta.session_id.as_deref(),
            Some("ses_2")
        );
    }
}
