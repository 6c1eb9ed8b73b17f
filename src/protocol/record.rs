//! The lines of a session log, and the tool state they carry (read stamps, the todo list).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::event::Event;
use super::message::Message;

/// One line of a session log.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", rename_all = "snake_case")]
pub enum Record {
    /// An event of the run, as `--output stream-json` prints it.
    Event { event: Event },
    /// A message appended to the history.
    Message { message: Message },
    /// Compaction replaced the whole history with these messages.
    Compacted { messages: Vec<Message> },
    /// The todo list changed.
    Todos { todos: Vec<Todo> },
    /// The files read in the session (read-before-write stamps) changed: all of them.
    Stamps { stamps: Vec<StampRecord> },
}

/// What `read_file` saw of a file: the SHA-256 of its content and its length in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub sha256: [u8; 32],
    pub len: u64,
}

impl Stamp {
    /// The stamp of `bytes`.
    pub fn of(bytes: &[u8]) -> Stamp {
        use sha2::{Digest, Sha256};
        Stamp {
            sha256: Sha256::digest(bytes).into(),
            len: bytes.len() as u64,
        }
    }
}

/// One item of the todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Todo {
    pub content: String,
    pub status: TodoStatus,
}

/// Where a todo item stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    Pending,
    InProgress,
    Completed,
}

/// A read stamp as the log keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StampRecord {
    pub path: String,
    /// Hex SHA-256 of the content.
    pub sha256: String,
    pub len: u64,
}

impl StampRecord {
    /// The log form of a stamp.
    pub fn new(path: &Path, stamp: &Stamp) -> StampRecord {
        StampRecord {
            path: path.to_string_lossy().into_owned(),
            sha256: stamp.sha256.iter().map(|b| format!("{b:02x}")).collect(),
            len: stamp.len,
        }
    }

    /// Back to a stamp; `None` if the record is damaged.
    pub fn stamp(&self) -> Option<(PathBuf, Stamp)> {
        let bytes: Vec<u8> = (0..self.sha256.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(self.sha256.get(i..i + 2)?, 16).ok())
            .collect::<Option<_>>()?;
        let sha256: [u8; 32] = bytes.try_into().ok()?;
        Some((
            PathBuf::from(&self.path),
            Stamp {
                sha256,
                len: self.len,
            },
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_survive_the_log_and_damaged_ones_are_refused() {
        let stamp = Stamp {
            sha256: [0xab; 32],
            len: 7,
        };
        let record = StampRecord::new(Path::new("/w/a"), &stamp);
        assert_eq!(record.sha256.len(), 64);
        assert_eq!(record.stamp(), Some((PathBuf::from("/w/a"), stamp)));
        let damaged = StampRecord {
            sha256: "zz".into(),
            ..record
        };
        assert_eq!(damaged.stamp(), None);
    }
}
