//! A session's live stream while a turn runs: the lines of the turn (each event of the
//! log with its index, as a reader of the log would get it) and the streamed pieces of
//! the reply being written, for the readers that follow it.
//!
//! The lines are built from the records the harness journals, in the order it journals
//! them, with the same [`Projector`] that reads a log back: a line has one index whether
//! a reader gets it live or from the log later. Lines already on disk are dropped from
//! memory past [`MEMORY_CAP`]; pieces are previews, kept only until the next line.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::api::Pending;
use crate::protocol::{Event, EventKind, Journal, Record};
use crate::session::SessionLog;
use crate::session::show::Projector;
use crate::sync::lock;

/// The bytes of a turn's lines kept in memory beyond those not yet on disk.
pub const MEMORY_CAP: usize = 1024 * 1024;
/// The bytes of pieces kept for the reply being written; later pieces are not sent live
/// (the whole text comes as a line).
const PIECES_CAP: usize = 1024 * 1024;

/// One NDJSON line: the event's JSON with `"index"` first, and a newline.
pub fn line(index: u64, event: &Event) -> Arc<[u8]> {
    let json = serde_json::to_string(event).unwrap_or_else(|_| "{}".into());
    let rest = json.strip_prefix('{').unwrap_or(&json);
    let mut out = format!("{{\"index\":{index},");
    out.push_str(rest);
    out.push('\n');
    Arc::from(out.into_bytes())
}

/// A streamed piece: the event's JSON without an index.
fn piece_line(event: &Event) -> Arc<[u8]> {
    let mut json = serde_json::to_string(event).unwrap_or_else(|_| "{}".into());
    json.push('\n');
    Arc::from(json.into_bytes())
}

/// The live state of one session.
#[derive(Debug)]
pub struct Live {
    inner: Mutex<Inner>,
    /// Bumped at every change, so readers wake.
    version: watch::Sender<u64>,
}

#[derive(Debug)]
pub struct Inner {
    /// The index of the next line.
    pub next: u64,
    /// The index of `lines[0]`.
    pub base: u64,
    pub lines: VecDeque<Arc<[u8]>>,
    bytes: usize,
    /// Lines below this index are on disk.
    synced: u64,
    /// Pieces of the reply being written (they belong before line `next`).
    pub pieces: Vec<Arc<[u8]>>,
    pieces_bytes: usize,
    /// Bumped whenever `pieces` is emptied.
    pub piece_epoch: u64,
    /// A turn runs or waits for its turn to run: readers wait for more.
    pub active: bool,
    projector: Projector,
    /// The request the running turn's stream last said it waits for
    /// (`input.requested`): the turn parks on it.
    requested: Option<Pending>,
}

/// Where a reader stands, as [`Live::read`] moves it.
#[derive(Debug, Clone, Default)]
pub struct Cursor {
    /// The next index it wants.
    pub index: u64,
    /// The piece epoch and position it has reached.
    pub epoch: u64,
    pub piece: usize,
}

/// What a reader gets from the live state.
#[derive(Debug, PartialEq)]
pub enum Read {
    /// These bytes (lines, maybe pieces after them).
    Lines(Vec<u8>),
    /// Lines below this index are not in memory: read them from the log first.
    FromDisk(u64),
    /// Nothing new yet: wait for a change.
    Wait,
    /// Caught up and no turn runs: the stream is over.
    End,
}

impl Live {
    /// The live state of a session whose stream holds `next` lines, with a turn to come.
    pub fn new(next: u64) -> Arc<Live> {
        Arc::new(Live {
            inner: Mutex::new(Inner {
                next,
                base: next,
                lines: VecDeque::new(),
                bytes: 0,
                synced: next,
                pieces: Vec::new(),
                pieces_bytes: 0,
                piece_epoch: 0,
                active: true,
                projector: Projector::default(),
                requested: None,
            }),
            version: watch::Sender::new(0),
        })
    }

    /// A receiver that sees every change.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.version.subscribe()
    }

    fn changed(&self) {
        self.version.send_modify(|v| *v = v.wrapping_add(1));
    }

    /// The index of the next line.
    pub fn next(&self) -> u64 {
        lock(&self.inner).next
    }

    /// Whether a turn runs or waits to.
    pub fn is_active(&self) -> bool {
        lock(&self.inner).active
    }

    /// The log was opened: it holds `records`, all on disk; the turn's lines follow.
    pub fn open(&self, records: &[Record]) {
        let mut projector = Projector::default();
        let count = records
            .iter()
            .map(|r| projector.events(r).len())
            .sum::<usize>() as u64;
        let mut inner = lock(&self.inner);
        inner.next = count;
        inner.base = count;
        inner.synced = count;
        inner.lines.clear();
        inner.bytes = 0;
        inner.projector = projector;
        inner.requested = None;
        clear_pieces(&mut inner);
        drop(inner);
        self.changed();
    }

    /// The request this turn's stream said it waits for, if it did.
    pub fn requested(&self) -> Option<Pending> {
        lock(&self.inner).requested.clone()
    }

    /// A record was journaled: the line it adds, if any.
    pub fn record(&self, record: &Record) {
        let mut inner = lock(&self.inner);
        let events = inner.projector.events(record);
        if events.is_empty() {
            return;
        }
        for event in &events {
            if let EventKind::InputRequested { request, .. } = &event.kind {
                inner.requested = Some(Pending::of(request));
            }
            let index = inner.next;
            let bytes = line(index, event);
            inner.bytes += bytes.len();
            inner.lines.push_back(bytes);
            inner.next += 1;
        }
        clear_pieces(&mut inner);
        trim(&mut inner);
        drop(inner);
        self.changed();
    }

    /// A streamed piece of the reply being written.
    pub fn piece(&self, event: &Event) {
        let mut inner = lock(&self.inner);
        if inner.pieces_bytes > PIECES_CAP {
            return;
        }
        let bytes = piece_line(event);
        inner.pieces_bytes += bytes.len();
        inner.pieces.push(bytes);
        drop(inner);
        self.changed();
    }

    /// Everything journaled so far is on disk.
    pub fn synced(&self) {
        let mut inner = lock(&self.inner);
        inner.synced = inner.next;
        trim(&mut inner);
    }

    /// The turn is over and its log closed: every line is on disk.
    pub fn end(&self) {
        let mut inner = lock(&self.inner);
        inner.active = false;
        inner.synced = inner.next;
        inner.base = inner.next;
        inner.lines.clear();
        inner.bytes = 0;
        clear_pieces(&mut inner);
        drop(inner);
        self.changed();
    }

    /// A turn is coming (queued): readers wait for it.
    pub fn activate(&self) {
        let mut inner = lock(&self.inner);
        inner.active = true;
        inner.requested = None;
        drop(inner);
        self.changed();
    }

    /// What a reader at `cursor` gets now; moves the cursor past what it returns.
    /// `pieces`: whether it wants the streamed pieces.
    pub fn read(&self, cursor: &mut Cursor, pieces: bool) -> Read {
        let inner = lock(&self.inner);
        if cursor.index < inner.base {
            return Read::FromDisk(inner.base);
        }
        let mut out = Vec::new();
        if cursor.index < inner.next {
            let from = (cursor.index - inner.base) as usize;
            for bytes in inner.lines.iter().skip(from) {
                out.extend_from_slice(bytes);
            }
            cursor.index = inner.next;
        }
        if pieces && inner.active {
            if cursor.epoch != inner.piece_epoch {
                cursor.epoch = inner.piece_epoch;
                cursor.piece = 0;
            }
            for bytes in inner.pieces.iter().skip(cursor.piece) {
                out.extend_from_slice(bytes);
            }
            cursor.piece = inner.pieces.len();
        }
        if !out.is_empty() {
            Read::Lines(out)
        } else if inner.active {
            Read::Wait
        } else {
            Read::End
        }
    }
}

fn clear_pieces(inner: &mut Inner) {
    if !inner.pieces.is_empty() {
        inner.pieces.clear();
        inner.pieces_bytes = 0;
    }
    inner.piece_epoch += 1;
}

/// Drops lines that are on disk while the turn's lines take more than the cap.
fn trim(inner: &mut Inner) {
    while inner.bytes > MEMORY_CAP && inner.base < inner.synced {
        let Some(front) = inner.lines.pop_front() else {
            break;
        };
        inner.bytes -= front.len();
        inner.base += 1;
    }
}

/// A session log that also feeds the session's live state.
#[derive(Debug)]
pub struct LiveLog {
    log: SessionLog,
    live: Arc<Live>,
}

impl LiveLog {
    /// `log`, feeding `live`.
    pub fn new(log: SessionLog, live: Arc<Live>) -> LiveLog {
        LiveLog { log, live }
    }
}

impl Journal for LiveLog {
    fn append(&self, record: &Record) {
        self.log.append(record);
        self.live.record(record);
    }

    fn sync(&self) {
        // Written at every step boundary (a killed server loses nothing); put on disk
        // when the log is closed, as the turn settles: waiting for the disk at every
        // step would cost each step several milliseconds.
        self.log.flush();
        if self.log.error().is_none() {
            self.live.synced();
        }
    }

    fn error(&self) -> Option<String> {
        self.log.error()
    }

    fn stream(&self, event: &Event) {
        self.live.piece(event);
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::protocol::{EventKind, Meta};

    fn event(kind: EventKind) -> Event {
        Event {
            kind,
            meta: Meta {
                id: "evt_1".into(),
                at: "2026-01-01T00:00:00.000Z".into(),
                session_id: None,
            },
        }
    }

    fn step(n: u64) -> Record {
        Record::Event {
            event: event(EventKind::StepStarted {
                turn_id: "turn_1".into(),
                step: n,
            }),
        }
    }

    fn text(piece: &str) -> Event {
        event(EventKind::MessageAppended {
            turn_id: "turn_1".into(),
            step: 1,
            text: piece.into(),
        })
    }

    #[test]
    fn lines_carry_their_index_first_and_pieces_none() {
        let live = Live::new(0);
        live.open(&[step(1)]);
        live.piece(&text("Hel"));
        live.record(&step(2));
        let mut cursor = Cursor {
            index: 1,
            ..Cursor::default()
        };
        let Read::Lines(bytes) = live.read(&mut cursor, true) else {
            panic!()
        };
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            text.starts_with("{\"index\":1,\"type\":\"step.started\""),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1, "the piece before the line is gone");
        live.piece(&super::tests::text("lo"));
        let Read::Lines(bytes) = live.read(&mut cursor, true) else {
            panic!()
        };
        assert!(
            String::from_utf8(bytes)
                .unwrap()
                .starts_with("{\"type\":\"message.appended\"")
        );
        assert_eq!(live.read(&mut cursor, true), Read::Wait);
        assert_eq!(
            live.read(&mut Cursor::default(), true),
            Read::FromDisk(1),
            "line 0 was in the log before the turn"
        );
        live.end();
        assert_eq!(live.read(&mut cursor, true), Read::End);
        assert_eq!(
            live.read(
                &mut Cursor {
                    index: 1,
                    ..Cursor::default()
                },
                true
            ),
            Read::FromDisk(2)
        );
    }

    #[test]
    fn only_lines_on_disk_leave_memory() {
        let live = Live::new(0);
        live.open(&[]);
        let big = Record::Message {
            message: crate::protocol::Message::Assistant {
                text: "x".repeat(MEMORY_CAP),
                tool_calls: Vec::new(),
                provider_blocks: None,
                reasoning: String::new(),
            },
        };
        live.record(&step(1));
        live.record(&big);
        live.record(&step(2));
        let mut cursor = Cursor::default();
        assert!(
            matches!(live.read(&mut cursor.clone(), false), Read::Lines(_)),
            "nothing synced yet: all kept"
        );
        live.synced();
        assert_eq!(live.read(&mut cursor, false), Read::FromDisk(2));
    }
}
