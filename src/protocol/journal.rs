//! Where the harness writes what must survive the process: the session log is one [`Journal`].

use super::event::Event;
use super::record::Record;

/// A sink for a session's records. The harness appends to it, flushes at every point a
/// killed process must not lose (a step's reply before its tools run, the results after
/// them) and syncs once a step at most; it never knows what is behind it (a JSONL file,
/// a durable engine's state).
pub trait Journal: Send + Sync + std::fmt::Debug {
    /// Appends one record (it may be buffered until [`Journal::flush`]).
    fn append(&self, record: &Record);

    /// Hands everything appended so far to the storage, so that it survives this process
    /// being killed (not the machine losing power). By default, a [`Journal::sync`].
    fn flush(&self) {
        self.sync();
    }

    /// Puts everything appended so far on durable storage (it survives a power loss).
    fn sync(&self);

    /// The first write error, if any; the harness ends the turn when it sees one.
    fn error(&self) -> Option<String>;

    /// An event that is not kept (a streamed piece of text or reasoning), in order with
    /// what is appended: a journal that also feeds live readers passes it on; a log
    /// ignores it.
    fn stream(&self, _event: &Event) {}
}

/// Something that watches every event of a session, the streamed pieces and a child
/// agent's included, as it is emitted (the telemetry exporter). It is called on the
/// harness's task, in order, and must return at once: it may queue, never wait.
pub trait Observer: Send + Sync + std::fmt::Debug {
    fn observe(&self, event: &Event);

    /// The W3C `traceparent` of a running tool call of `session` (`""`: the top-level
    /// session), which an HTTP tool sends on so the server's spans join the turn's trace.
    fn traceparent(&self, _session: &str, _call_id: &str) -> Option<String> {
        None
    }
}
