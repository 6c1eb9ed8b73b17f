//! The server's index of sessions: one small entry per session. An idle or parked
//! session is nothing more than this entry; everything else is reopened from its log.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::live::Live;
use crate::protocol::{InputKind, InputRequest, Resolution};
use crate::sync::lock;

/// Where a session stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It takes a message.
    Idle,
    /// A turn was accepted and waits for one of the `--max-turns` places.
    Queued,
    /// A turn runs.
    Running,
    /// A turn is parked on a question or an approval (`inputResponses` resumes it).
    Waiting,
}

/// What a parked turn waits for, as much as answering it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    pub request_id: String,
    /// `question` or `approval`.
    pub kind: &'static str,
    pub tool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The answers a question offers, or `approve` and `deny`.
    pub options: Vec<String>,
}

impl Pending {
    /// The part of a request the index keeps.
    pub fn of(request: &InputRequest) -> Pending {
        let (kind, question, options) = match &request.kind {
            InputKind::Question { question, options } => {
                ("question", Some(question.clone()), options.clone())
            }
            InputKind::Approval => ("approval", None, vec!["approve".into(), "deny".into()]),
        };
        Pending {
            request_id: request.request_id.clone(),
            kind,
            tool: request.tool.clone(),
            question,
            options,
        }
    }
}

/// One session.
#[derive(Debug)]
pub struct Entry {
    pub status: Status,
    /// The lines of its stream when it last settled.
    pub events: u64,
    /// Its first message, shortened.
    pub title: String,
    pub pending: Option<Pending>,
    /// The live state, while a turn runs or a reader holds it.
    pub live: Weak<Live>,
    /// Cancels the queued or running turn.
    pub cancel: Option<CancellationToken>,
    /// An answer that came for the request the running turn is parking on (its stream
    /// said `input.requested`, the job had not settled yet): the turn resumes with it
    /// as soon as it has parked, instead of the answer being refused.
    pub answer: Option<(String, Resolution)>,
    /// Bumped each time a job settles: a check made outside the index's lock (is
    /// another process using the log?) holds only if no job settled meanwhile.
    pub settled: u64,
}

impl Entry {
    /// An idle session.
    pub fn idle(events: u64, title: String, pending: Option<Pending>) -> Entry {
        Entry {
            status: if pending.is_some() {
                Status::Waiting
            } else {
                Status::Idle
            },
            events,
            title,
            pending,
            live: Weak::new(),
            cancel: None,
            answer: None,
            settled: 0,
        }
    }
}

/// A session as `GET /eve/v1/sessions` lists it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub session_id: String,
    pub status: Status,
    /// The number of lines in its stream (the next `startIndex`).
    pub events: u64,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pending>,
}

/// Every session of the agent, by id (ids sort by creation time).
#[derive(Debug, Default)]
pub struct Index {
    map: Mutex<BTreeMap<String, Entry>>,
}

impl Index {
    /// Runs `f` on the entry of `id`, if there is one.
    pub fn with<R>(&self, id: &str, f: impl FnOnce(&mut Entry) -> R) -> Option<R> {
        lock(&self.map).get_mut(id).map(f)
    }

    /// Adds a session unless there are `max` already; `false` when full.
    pub fn insert(&self, id: String, entry: Entry, max: usize) -> bool {
        let mut map = lock(&self.map);
        if map.len() >= max && !map.contains_key(&id) {
            return false;
        }
        map.insert(id, entry);
        true
    }

    /// Forgets a session.
    pub fn remove(&self, id: &str) {
        lock(&self.map).remove(id);
    }

    /// How many sessions there are.
    pub fn len(&self) -> usize {
        lock(&self.map).len()
    }

    /// Up to `limit` sessions, newest first, older than `before` when given.
    pub fn list(&self, limit: usize, before: Option<&str>) -> Vec<Summary> {
        let map = lock(&self.map);
        let range: Box<dyn DoubleEndedIterator<Item = (&String, &Entry)>> = match before {
            Some(before) => Box::new(map.range::<str, _>((
                std::ops::Bound::Unbounded,
                std::ops::Bound::Excluded(before),
            ))),
            None => Box::new(map.iter()),
        };
        range
            .rev()
            .take(limit)
            .map(|(id, e)| Summary {
                session_id: id.clone(),
                status: e.status,
                events: e.live.upgrade().map_or(e.events, |live| live.next()),
                title: e.title.clone(),
                pending: e.pending.clone(),
            })
            .collect()
    }

    /// The live state of `id` for a new turn: the one readers hold, or a new one.
    pub fn live_for_turn(entry: &mut Entry) -> Arc<Live> {
        let live = match entry.live.upgrade() {
            Some(live) => {
                live.activate();
                live
            }
            None => Live::new(entry.events),
        };
        entry.live = Arc::downgrade(&live);
        live
    }
}
