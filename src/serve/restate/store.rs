//! What a session keeps in its virtual object's K/V state in Restate, and the limits
//! on it.
//!
//! - `meta`: a small [`Meta`]: status, what it waits for, the count of stream lines
//!   and where each chunk of them starts, the projector that numbers the lines.
//! - `fold`: the session folded from its records (a [`Replayed`] without the records),
//!   what the next turn's harness is rebuilt from.
//! - `c/<n>`: chunk `n` of the stream: NDJSON lines with their indices, written at
//!   each journaled step of a turn.
//!
//! Restate takes a state value or journal entry of up to 32 MiB by default
//! (`message-size-limit`), and every turn reads `meta` and `fold` into its journal.
//! eve keeps far below: the limits here turn a session that would outgrow them into
//! a clear error instead of an invocation Restate retries for ever.

use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::serve::api::Pending;
pub use crate::serve::api::SessionStatus;
use crate::session::show::Projector;

/// The name of the virtual object, as clients of Restate's ingress call it.
pub const OBJECT: &str = "EveSession";

/// The most bytes of stream lines one session keeps.
pub const MAX_SESSION_BYTES: u64 = 64 * 1024 * 1024;
/// The most bytes of one chunk (the lines of one step's part).
pub const MAX_CHUNK_BYTES: usize = 8 * 1024 * 1024;
/// The most chunks one session keeps.
pub const MAX_CHUNKS: usize = 65_536;
/// The most bytes of a session's folded state (its history, mostly).
pub const MAX_FOLD_BYTES: usize = 16 * 1024 * 1024;
/// The most bytes one read of the stream returns.
pub const READ_BYTES: usize = 1024 * 1024;

/// A session's `meta` state.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Meta {
    pub status: SessionStatus,
    /// The first message, shortened.
    pub title: String,
    /// The index of the next stream line.
    pub events: u64,
    /// The index of the first line of each chunk.
    pub chunks: Vec<u64>,
    /// The bytes of all lines.
    pub bytes: u64,
    /// What a parked turn waits for.
    pub pending: Option<PendingState>,
    /// The awakeable a parked turn waits on.
    pub awakeable: Option<String>,
    /// The invocation of the queued or running turn (what cancel cancels).
    pub invocation: Option<String>,
    /// Why the session takes no more turns (it reached a limit).
    pub full: Option<String>,
    /// The projector after the last line.
    pub projector: Projector,
}

/// [`Pending`] as kept in state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingState {
    pub request_id: String,
    pub kind: String,
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    pub options: Vec<String>,
}

impl PendingState {
    pub fn of(pending: &Pending) -> PendingState {
        PendingState {
            request_id: pending.request_id.clone(),
            kind: pending.kind.to_string(),
            tool: pending.tool.clone(),
            question: pending.question.clone(),
            options: pending.options.clone(),
        }
    }

    /// Back to the form the API's checks take (`None` for a kind eve does not know).
    pub fn pending(&self) -> Option<Pending> {
        let kind = match self.kind.as_str() {
            "question" => "question",
            "approval" => "approval",
            _ => return None,
        };
        Some(Pending {
            request_id: self.request_id.clone(),
            kind,
            tool: self.tool.clone(),
            question: self.question.clone(),
            options: self.options.clone(),
        })
    }
}

/// The state key of chunk `n`.
///
/// The SDK takes a key to read as a string that lives as long as the handler's
/// context, so the keys are made once and kept: they are the same for every session
/// (state is per object), and at most [`MAX_CHUNKS`] of them, a few hundred KiB.
pub fn chunk_key(n: usize) -> &'static str {
    static KEYS: OnceLock<Mutex<Vec<&'static str>>> = OnceLock::new();
    let mut keys = crate::sync::lock(KEYS.get_or_init(|| Mutex::new(Vec::new())));
    let n = n.min(MAX_CHUNKS);
    while keys.len() <= n {
        let key: &'static str = Box::leak(format!("c/{}", keys.len()).into_boxed_str());
        keys.push(key);
    }
    keys[n]
}

/// Why a session that holds `bytes` of lines in `chunks` chunks cannot keep a new
/// chunk of `len` bytes, if it cannot.
pub fn over_limit(bytes: u64, chunks: usize, len: usize) -> Option<String> {
    if len > MAX_CHUNK_BYTES {
        return Some(format!(
            "one step wrote {} MiB of events, more than the {} MiB eve keeps in Restate at once",
            len >> 20,
            MAX_CHUNK_BYTES >> 20
        ));
    }
    if bytes + len as u64 > MAX_SESSION_BYTES || chunks >= MAX_CHUNKS {
        return Some(format!(
            "the session's events reached {} MiB or {MAX_CHUNKS} steps, what eve keeps in Restate for one session: start a new session",
            MAX_SESSION_BYTES >> 20
        ));
    }
    None
}

/// The chunk that holds line `index`, given where each chunk starts.
pub fn chunk_of(chunks: &[u64], index: u64) -> Option<usize> {
    match chunks.binary_search(&index) {
        Ok(n) => Some(n),
        Err(0) => None,
        Err(n) => Some(n - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_past_its_limits_is_refused_with_the_reason() {
        assert_eq!(over_limit(0, 0, 1000), None);
        assert!(
            over_limit(0, 0, MAX_CHUNK_BYTES + 1)
                .unwrap()
                .contains("one step")
        );
        assert!(
            over_limit(MAX_SESSION_BYTES - 10, 5, 11)
                .unwrap()
                .contains("start a new session")
        );
        assert_eq!(over_limit(MAX_SESSION_BYTES - 10, 5, 10), None);
        assert!(over_limit(0, MAX_CHUNKS, 1).is_some());
    }

    #[test]
    fn chunks_are_found_by_line_and_keys_are_kept_once() {
        let chunks = [0, 3, 7];
        assert_eq!(chunk_of(&chunks, 0), Some(0));
        assert_eq!(chunk_of(&chunks, 2), Some(0));
        assert_eq!(chunk_of(&chunks, 3), Some(1));
        assert_eq!(chunk_of(&chunks, 100), Some(2));
        assert_eq!(chunk_of(&[], 0), None);
        assert_eq!(chunk_key(2), "c/2");
        assert!(std::ptr::eq(chunk_key(2), chunk_key(2)));
        assert_eq!(chunk_key(usize::MAX), chunk_key(MAX_CHUNKS));
    }
}
