//! Where the harness writes what must survive the process: the session log is one [`Journal`].

use super::event::Event;
use super::record::Record;

/// A sink for a session's records. The harness appends to it and syncs at step
/// boundaries; it never knows what is behind it (a JSONL file, a durable engine's state).
pub trait Journal: Send + Sync + std::fmt::Debug {
    /// Appends one record (it may be buffered until [`Journal::sync`]).
    fn append(&self, record: &Record);

    /// Puts everything appended so far on durable storage.
    fn sync(&self);

    /// The first write error, if any; the harness ends the turn when it sees one.
    fn error(&self) -> Option<String>;

    /// An event that is not kept (a streamed piece of text or reasoning), in order with
    /// what is appended: a journal that also feeds live readers passes it on; a log
    /// ignores it.
    fn stream(&self, _event: &Event) {}
}
