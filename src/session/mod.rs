//! Durable sessions: an append-only JSONL log per session under `.eve/sessions/`.
//!
//! Each line is a [`Record`]: an event the run emitted (streamed text deltas are
//! not logged; the assistant message holds the text), a message added to the
//! history, a history replaced by compaction, or the todo list. The history is
//! derived from the log when a session is opened, never stored elsewhere. The log
//! is written out at every point a killed eve must not lose, and put on disk (one
//! `fdatasync`) once a step at most: see `docs/sessions.md`. Opening a log repairs it: a torn
//! last line is dropped, and a turn a crash left open is closed as `interrupted`,
//! each of its tool calls without a result getting a synthetic error result, so
//! the next request to a provider is always valid.

pub mod replay;
pub mod show;
pub mod store;
pub mod timeline;

use crate::sync::lock;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use crate::protocol::{Journal, Record, StampRecord};

/// An open session log, appended to by the harness (internally locked: shared by the
/// tasks of one turn).
///
/// eve only ever appends to the file it opened, and only while that file is still the
/// one at its path and holds exactly what eve wrote: before each write it compares the
/// path's inode with the open file's and the file's length with what it knows. Another
/// writer (a model's `bash`, an editor) makes the log fail instead of mixing records.
#[derive(Debug)]
pub struct SessionLog {
    path: PathBuf,
    inner: Mutex<Inner>,
    /// The first write error; the harness ends the turn when it sees one.
    error: Mutex<Option<String>>,
}

#[derive(Debug)]
struct Inner {
    file: File,
    /// Records appended since the last sync.
    pending: Vec<u8>,
    /// The file's length as eve left it.
    length: u64,
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
    /// Opens the log of session `id` of `agent_dir` for appending, creating it (and its
    /// folder) if needed, never through a link ([`store::open_log`]), and takes its lock.
    pub fn open(agent_dir: &Path, id: &str) -> std::io::Result<SessionLog> {
        let path = store::path(agent_dir, id);
        let file = store::open_log(agent_dir, id)?;
        lock_exclusive(&file).map_err(|e| {
            std::io::Error::new(
                e.kind(),
                "another eve process is using this session; wait for it to end",
            )
        })?;
        let length = file.metadata()?.len();
        Ok(SessionLog {
            path,
            inner: Mutex::new(Inner {
                file,
                pending: Vec::new(),
                length,
            }),
            error: Mutex::new(None),
        })
    }

    /// Reads the log back from the file eve opened and locked, repairing what a crash
    /// left in that file ([`replay::load`]), never through what its path names by now.
    pub fn replay(&self) -> Result<replay::Replayed, String> {
        let inner = lock(&self.inner);
        replay::load(&inner.file, &self.path)
    }

    /// Takes the file's current length as eve's own: after opening a log, replay may
    /// have cut a torn line or ended the last one.
    pub fn adopt_length(&self) -> std::io::Result<()> {
        let mut inner = lock(&self.inner);
        inner.length = inner.file.metadata()?.len();
        Ok(())
    }

    /// The log's file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends one record (held in memory until the next [`SessionLog::sync`]).
    pub fn append(&self, record: &Record) {
        match serde_json::to_vec(record) {
            Ok(mut line) => {
                line.push(b'\n');
                lock(&self.inner).pending.extend_from_slice(&line);
            }
            Err(e) => self.fail(&format!(
                "cannot write the session log `{}`: {e}",
                self.path.display()
            )),
        }
    }

    /// Writes what was appended and asks the OS to put it on disk, if the file is still
    /// the one eve opened and nobody else wrote to it.
    pub fn sync(&self) {
        self.write_out(true);
    }

    /// Writes what was appended to the file, without waiting for the disk: it survives
    /// eve being killed, not the machine losing power (a server syncs when a turn settles).
    pub fn flush(&self) {
        self.write_out(false);
    }

    fn write_out(&self, to_disk: bool) {
        if self.error().is_some() {
            return;
        }
        let mut inner = lock(&self.inner);
        let result = check_same_file(&self.path, &inner).and_then(|()| {
            let Inner {
                file,
                pending,
                length,
            } = &mut *inner;
            if !pending.is_empty() {
                file.write_all(pending)?;
                *length += pending.len() as u64;
                pending.clear();
            }
            if to_disk { file.sync_data() } else { Ok(()) }
        });
        drop(inner);
        if let Err(e) = result {
            self.fail(&format!(
                "cannot write the session log `{}`: {e}",
                self.path.display()
            ));
        }
    }

    fn fail(&self, message: &str) {
        let mut error = lock(&self.error);
        if error.is_none() {
            *error = Some(message.to_string());
        }
    }

    /// The first write error, if any.
    pub fn error(&self) -> Option<String> {
        lock(&self.error).clone()
    }
}

/// Whether the open log is still the file at its path, with the length eve left it.
fn check_same_file(path: &Path, inner: &Inner) -> std::io::Result<()> {
    let open = inner.file.metadata()?;
    let replaced = match std::fs::symlink_metadata(path) {
        Ok(at_path) => !same_file(&open, &at_path),
        Err(_) => true,
    };
    if replaced {
        return Err(std::io::Error::other(
            "another program replaced or removed it; eve stopped writing to it",
        ));
    }
    if open.len() != inner.length {
        return Err(std::io::Error::other(format!(
            "another program changed it ({} bytes where eve wrote {}); eve stopped writing to it",
            open.len(),
            inner.length
        )));
    }
    Ok(())
}

#[cfg(unix)]
fn same_file(a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    a.dev() == b.dev() && a.ino() == b.ino()
}

#[cfg(not(unix))]
fn same_file(_a: &std::fs::Metadata, b: &std::fs::Metadata) -> bool {
    b.is_file()
}

/// Whether an eve process holds the lock of the session log at `path` right now.
pub fn in_use(path: &Path) -> bool {
    use std::os::unix::fs::OpenOptionsExt;
    // A FIFO at the log's name is not waited on, nor a link followed.
    OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .is_ok_and(|file| lock_exclusive(&file).is_err())
}

/// Takes the lock of the log of session `id` to delete it: refused while an eve process
/// holds it. Never through a link ([`store::remove_log`]).
pub fn remove(agent_dir: &Path, id: &str) -> std::io::Result<()> {
    let file = store::open_existing(agent_dir, id)?;
    lock_exclusive(&file).map_err(|e| {
        std::io::Error::new(
            e.kind(),
            "an eve process is using this session right now; wait for it to end",
        )
    })?;
    store::remove_log(agent_dir, id)
}

impl Journal for SessionLog {
    fn append(&self, record: &Record) {
        SessionLog::append(self, record);
    }

    fn flush(&self) {
        SessionLog::flush(self);
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
        self.sync();
    }
}
