//! What the file tools share: blocking work that stops when asked, the read-before-write
//! check, and atomic writes through the handle of the target's folder.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use super::beneath::{self, Entry};
use super::state::Stamp;
use super::workspace::Resolved;
use super::{ToolContext, ToolOutput};

/// Bytes read at a time when streaming a file.
pub const CHUNK: usize = 64 * 1024;

/// Why blocking work ended early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stopped;

/// Runs blocking `work` off the async runtime. It is given a token to check in its
/// loops: cancelled when the turn is interrupted, when `timeout` passes, or when this
/// future is dropped (a caller's own timeout), so abandoned work does not keep a thread
/// busy. Returns the work's result and whether it ran out of time; `Err` when the turn
/// was interrupted.
pub async fn blocking<T, F>(
    ctx: &ToolContext,
    timeout: Option<Duration>,
    work: F,
) -> Result<(T, bool), Stopped>
where
    T: Send + 'static,
    F: FnOnce(CancellationToken) -> T + Send + 'static,
{
    let stop = ctx.cancel.child_token();
    let _stop_when_dropped = stop.clone().drop_guard();
    let mut handle = tokio::task::spawn_blocking({
        let stop = stop.clone();
        move || work(stop)
    });
    let sleep = async {
        match timeout {
            Some(timeout) => tokio::time::sleep(timeout).await,
            None => std::future::pending().await,
        }
    };
    let (joined, timed_out) = tokio::select! {
        joined = &mut handle => (joined, false),
        () = sleep => {
            stop.cancel();
            ((&mut handle).await, true)
        }
    };
    if ctx.cancel.is_cancelled() {
        return Err(Stopped);
    }
    joined
        .map(|result| (result, timed_out))
        .map_err(|_| Stopped)
}

/// The stamp and the line count of a whole file, read as a stream; `keep` bytes or
/// fewer are kept (the content, when the caller needs it and it is not larger).
pub struct Scanned {
    pub stamp: Stamp,
    pub lines: usize,
    pub bytes: Option<Vec<u8>>,
}

/// Reads `file` to its end in chunks, hashing it; stops when `stop` is cancelled.
pub fn scan(
    mut file: &std::fs::File,
    keep: Option<u64>,
    stop: &CancellationToken,
) -> std::io::Result<Result<Scanned, Stopped>> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; CHUNK];
    let mut len: u64 = 0;
    let mut newlines = 0usize;
    let mut last = b'\n';
    let mut kept = keep.map(|_| Vec::new());
    loop {
        if stop.is_cancelled() {
            return Ok(Err(Stopped));
        }
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let chunk = &buf[..n];
        hasher.update(chunk);
        len += n as u64;
        newlines += memchr::memchr_iter(b'\n', chunk).count();
        last = chunk[n - 1];
        if let (Some(bytes), Some(limit)) = (kept.as_mut(), keep) {
            if len <= limit {
                bytes.extend_from_slice(chunk);
            } else {
                kept = None;
            }
        }
    }
    let lines = newlines + usize::from(len > 0 && last != b'\n');
    Ok(Ok(Scanned {
        stamp: Stamp {
            sha256: hasher.finalize().into(),
            len,
        },
        lines,
        bytes: kept,
    }))
}

/// The current state of the file `resolved` names, after checking that `read_file`
/// read it in this session and that it has not changed since; `None` for a file that
/// does not exist. With `keep`, the content is returned too if it is at most that long.
pub fn check_fresh(
    ctx: &ToolContext,
    resolved: &Resolved,
    keep: Option<u64>,
    stop: &CancellationToken,
) -> Result<Option<Scanned>, ToolOutput> {
    let shown = ctx.display(&resolved.path);
    let file = match &resolved.found.entry {
        Entry::Missing => return Ok(None),
        Entry::File(file) => file,
        Entry::Dir => {
            return Err(ToolOutput::error(format!(
                "`{shown}` is a folder; give the path of a file"
            )));
        }
        Entry::Other(kind) => return Err(not_regular(&shown, *kind)),
    };
    let Some(stamp) = ctx.state.stamp_of(&resolved.path) else {
        return Err(ToolOutput::error(format!(
            "`{shown}` already exists and has not been read in this session: read it with read_file first, then change it"
        )));
    };
    let modified = |len: u64| {
        ToolOutput::error(format!(
            "`{shown}` was modified since it was last read (it has {len} bytes now, {} when read): read it again with read_file before changing it",
            stamp.len
        ))
    };
    let unreadable = |e: std::io::Error| ToolOutput::error(format!("cannot read `{shown}`: {e}"));
    // A different length needs no reading to tell.
    let len = file.metadata().map_err(unreadable)?.len();
    if len != stamp.len {
        return Err(modified(len));
    }
    let scanned = scan(file, keep, stop)
        .map_err(unreadable)?
        .map_err(|Stopped| interrupted())?;
    if scanned.stamp != stamp {
        return Err(modified(scanned.stamp.len));
    }
    Ok(Some(scanned))
}

/// The answer when a call was stopped before it finished.
pub fn interrupted() -> ToolOutput {
    ToolOutput::error("the call was interrupted before it finished")
}

/// The refusal for a path that names a FIFO, a socket or a device.
pub fn not_regular(shown: &str, kind: rustix::fs::FileType) -> ToolOutput {
    ToolOutput::error(format!(
        "`{shown}` is {}, not a regular file: file tools only read and write regular files",
        beneath::describe(kind)
    ))
}

/// Writes `bytes` to the file `resolved` names, atomically: missing folders are
/// created, a temporary file is written in the target's folder (through the folder's
/// handle), flushed to disk, and renamed over the target in that same folder. An
/// existing file keeps its permissions.
pub fn write_atomic(resolved: &Resolved, bytes: &[u8]) -> std::io::Result<()> {
    let found = &resolved.found;
    let Some(name) = &found.name else {
        return Err(std::io::Error::from(std::io::ErrorKind::IsADirectory));
    };
    let dir = beneath::create_dirs(&found.parent().dir, &found.missing)?;
    let permissions = match &found.entry {
        Entry::File(file) => Some(file.metadata()?.permissions()),
        _ => None,
    };
    let (temp_name, temp) = create_temp(&dir)?;
    let written = (|| -> std::io::Result<()> {
        let mut temp = temp;
        temp.write_all(bytes)?;
        if let Some(permissions) = &permissions {
            temp.set_permissions(std::fs::Permissions::from_mode(permissions.mode() & 0o7777))?;
        }
        temp.sync_all()?;
        rustix::fs::renameat(&*dir, &temp_name, &*dir, name.as_os_str())?;
        Ok(())
    })();
    if written.is_err() {
        let _ = rustix::fs::unlinkat(&*dir, &temp_name, AtFlags::empty());
    }
    written
}

/// Creates a new temporary file in `dir`, named so no two writers pick the same name.
fn create_temp(dir: &std::fs::File) -> std::io::Result<(String, std::fs::File)> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!(".eve-write-{}-{n}", std::process::id());
        match rustix::fs::openat(
            dir,
            name.as_str(),
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::from_raw_mode(0o666),
        ) {
            Ok(fd) => return Ok((name, std::fs::File::from(fd))),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// `1 line`, `3 lines`.
pub fn lines(n: usize) -> String {
    if n == 1 {
        "1 line".into()
    } else {
        format!("{n} lines")
    }
}

/// How many lines a text has (a final line without `\n` counts).
pub fn count_lines(text: &str) -> usize {
    let newlines = memchr::memchr_iter(b'\n', text.as_bytes()).count();
    newlines + usize::from(!text.is_empty() && !text.ends_with('\n'))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_counted_like_an_editor() {
        assert_eq!(count_lines(""), 0);
        assert_eq!(count_lines("a"), 1);
        assert_eq!(count_lines("a\n"), 1);
        assert_eq!(count_lines("a\nb"), 2);
        assert_eq!(count_lines("\n\n"), 2);
    }

    #[test]
    fn a_scan_hashes_and_counts_without_keeping_a_large_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let text = "x\n".repeat(100_000);
        std::fs::write(&path, &text).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let stop = CancellationToken::new();
        let scanned = scan(&file, Some(10), &stop).unwrap().unwrap();
        assert_eq!(scanned.stamp, Stamp::of(text.as_bytes()));
        assert_eq!(scanned.lines, 100_000);
        assert!(scanned.bytes.is_none());
        stop.cancel();
        let file = std::fs::File::open(&path).unwrap();
        assert!(scan(&file, None, &stop).unwrap().is_err());
    }

    #[tokio::test]
    async fn dropping_a_call_stops_its_blocking_work() {
        let ctx = ToolContext::new("/".into(), "/".into());
        let (tx, rx) = std::sync::mpsc::channel();
        let call = blocking(&ctx, None, move |stop| {
            while !stop.is_cancelled() {
                std::thread::sleep(Duration::from_millis(1));
            }
            let _ = tx.send(());
        });
        // A caller's timeout drops the call…
        let _ = tokio::time::timeout(Duration::from_millis(20), call).await;
        // …and the work on the other thread sees it and ends.
        rx.recv_timeout(Duration::from_secs(60)).unwrap();
    }

    #[tokio::test]
    async fn an_interrupted_turn_is_an_error() {
        let ctx = ToolContext::new("/".into(), "/".into());
        ctx.cancel.cancel();
        let out = blocking(&ctx, None, |stop| stop.is_cancelled()).await;
        assert_eq!(out, Err(Stopped));
    }
}
