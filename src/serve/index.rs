//! The server's index of sessions: one small entry per session. An idle or parked
//! session is nothing more than this entry; everything else is reopened from its log.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, Weak};

use tokio_util::sync::CancellationToken;

use super::api::{Pending, SessionStatus, Summary};
use super::live::Live;
use crate::protocol::Resolution;
use crate::sync::lock;

/// One session.
#[derive(Debug)]
pub struct Entry {
    pub status: SessionStatus,
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
                SessionStatus::Waiting
            } else {
                SessionStatus::Idle
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
