//! Durable sessions: an append-only JSONL log per session under `.eve/sessions/`.
//!
//! Each line is a [`Record`]: an event the run emitted (streamed text deltas are
//! not logged; the assistant message holds the text), a message added to the
//! history, a history replaced by compaction, or the todo list. The history is
//! derived from the log when a session is opened, never stored elsewhere. The log
//! is flushed to disk at every step boundary. Opening a log repairs it: a torn
//! last line is dropped, and a turn a crash left open is closed as `interrupted`,
//! each of its tool calls without a result getting a synthetic error result, so
//! the next request to a provider is always valid.

pub mod replay;
pub mod show;
pub mod store;

use crate::sync::lock;
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use crate::protocol::{Journal, Record, StampRecord};

/// An open session log, appended to by the harness (internally locked: shared by the
/// tasks of one turn).
#[derive(Debug)]
pub struct SessionLog {
    path: PathBuf,
    writer: Mutex<BufWriter<File>>,
    /// The first write error; the harness ends the turn when it sees one.
    error: Mutex<Option<String>>,
}

/// Takes an advisory lock on the log for as long as the file is open, so two eve
/// processes never append to one session at once.
#[cfg(unix)]
fn lock_exclusive(file: &File) -> std::io::Result<()> {
    use std::os::unix::io::AsRawFd;
    // SAFETY: flock only takes a lock on a descriptor this function's caller owns.
    let result = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if result == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

#[cfg(not(unix))]
fn lock_exclusive(_file: &File) -> std::io::Result<()> {
    Ok(())
}

impl SessionLog {
    /// Opens `path` for appending, creating it (and its folder) if needed.
    pub fn open(path: &Path) -> std::io::Result<SessionLog> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        lock_exclusive(&file).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                "another eve process is using this session; wait for it to end",
            )
        })?;
        Ok(SessionLog {
            path: path.to_path_buf(),
            writer: Mutex::new(BufWriter::new(file)),
            error: Mutex::new(None),
        })
    }

    /// The log's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record (buffered until the next [`SessionLog::sync`]).
    pub fn append(&self, record: &Record) {
        let result = serde_json::to_string(record)
            .map_err(std::io::Error::other)
            .and_then(|line| {
                let mut writer = lock(&self.writer);
                writer.write_all(line.as_bytes())?;
                writer.write_all(b"\n")
            });
        if let Err(e) = result {
            self.fail(e);
        }
    }

    /// Writes everything buffered and asks the OS to put it on disk.
    pub fn sync(&self) {
        let mut writer = lock(&self.writer);
        let result = writer.flush().and_then(|()| writer.get_ref().sync_data());
        drop(writer);
        if let Err(e) = result {
            self.fail(e);
        }
    }

    fn fail(&self, e: std::io::Error) {
        let mut error = lock(&self.error);
        if error.is_none() {
            *error = Some(format!(
                "cannot write the session log `{}`: {e}",
                self.path.display()
            ));
        }
    }

    /// The first write error, if any.
    pub fn error(&self) -> Option<String> {
        lock(&self.error).clone()
    }
}

impl Journal for SessionLog {
    fn append(&self, record: &Record) {
        SessionLog::append(self, record);
    }

    fn sync(&self) {
        SessionLog::sync(self);
    }

    fn error(&self) -> Option<String> {
        SessionLog::error(self)
    }
}

impl Drop for SessionLog {
    fn drop(&mut self) {
        let writer = self.writer.get_mut().unwrap_or_else(|p| p.into_inner());
        let _ = writer.flush();
        let _ = writer.get_ref().sync_data();
    }
}
