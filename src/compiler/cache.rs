//! The build cache (`.eve/build-cache`): what the last build looked at — every file it
//! read, every folder it listed, every path it checked — with each one's size,
//! modification time (ns) and inode, the way git's index and ninja decide that nothing
//! changed. When nothing did, the manifest on disk and the diagnostics of that build are
//! the answer and no input is read again.
//!
//! The cache is only a cache: a missing, damaged or foreign one (another eve version, a
//! bad checksum) costs a full build, never a wrong manifest. An entry modified too close
//! to the cache's own writing ("racily clean": a later edit in the same timestamp tick
//! would not show) makes the build a full one as well.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use sha2::{Digest, Sha256};

use super::diagnostic::{Diagnostic, Diagnostics, Severity};

/// The first word of the file; with the version, anything else is not a cache of ours.
const MAGIC: &str = "eve-build-cache";
/// Bumped whenever the file's meaning changes.
const FORMAT: u32 = 1;
/// Entries modified less than this before the cache was written are not trusted.
const RACY_NS: i128 = 1_000_000_000;

/// What identifies a file's contents without reading them. `None` in a record: the path
/// did not exist (or could not be looked at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub dir: bool,
    pub size: u64,
    /// Modification time in nanoseconds since the epoch.
    pub mtime_ns: i128,
    pub ino: u64,
}

impl Fingerprint {
    /// The fingerprint of what `meta` describes.
    pub fn of(meta: &std::fs::Metadata) -> Fingerprint {
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt;
            Fingerprint {
                dir: meta.is_dir(),
                size: meta.len(),
                mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
                ino: meta.ino(),
            }
        }
        #[cfg(not(unix))]
        {
            let mtime_ns = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos() as i128);
            Fingerprint {
                dir: meta.is_dir(),
                size: meta.len(),
                mtime_ns,
                ino: 0,
            }
        }
    }

    /// The fingerprint of `path` now (links followed), `None` if it cannot be looked at.
    pub fn now(path: &Path) -> Option<Fingerprint> {
        std::fs::metadata(path).ok().map(|m| Fingerprint::of(&m))
    }
}

/// Everything a build looked at, in the order it looked (internally locked: the loaders
/// of an agent and its subagents and the checks of the compiler share it).
#[derive(Debug, Default)]
pub struct Seen {
    paths: Mutex<Vec<(PathBuf, Option<Fingerprint>)>>,
    /// Set when the build used something the files do not decide (a connection whose
    /// tools could not be listed): such a build is not kept, so the next one tries again.
    unsettled: std::sync::atomic::AtomicBool,
}

impl Seen {
    fn note(&self, path: &Path, fingerprint: Option<Fingerprint>) {
        crate::sync::lock(&self.paths).push((path.to_path_buf(), fingerprint));
    }

    fn take(&self) -> Vec<(PathBuf, Option<Fingerprint>)> {
        std::mem::take(&mut *crate::sync::lock(&self.paths))
    }
}

thread_local! {
    /// Where this thread's file system queries are recorded, while a build runs.
    static CURRENT: std::cell::RefCell<Option<Arc<Seen>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with every query of this module recorded in `seen` (on this thread; a worker
/// thread of the build enters the same scope).
pub fn recording<T>(seen: &Arc<Seen>, f: impl FnOnce() -> T) -> T {
    struct Restore(Option<Arc<Seen>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let previous = self.0.take();
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
    let previous = CURRENT.with(|c| c.borrow_mut().replace(seen.clone()));
    let _restore = Restore(previous);
    f()
}

/// The scope's recorder, to hand to a worker thread.
pub fn current() -> Option<Arc<Seen>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// Records `path` as it is now.
pub fn note(path: &Path, fingerprint: Option<Fingerprint>) {
    CURRENT.with(|c| {
        if let Some(seen) = &*c.borrow() {
            seen.note(path, fingerprint);
        }
    });
}

/// Marks the scope's build as not to be kept (see [`Seen`]).
pub fn unsettled() {
    CURRENT.with(|c| {
        if let Some(seen) = &*c.borrow() {
            seen.unsettled
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    });
}

/// Records `path` from metadata already read.
pub fn note_meta(path: &Path, meta: &std::fs::Metadata) {
    note(path, Some(Fingerprint::of(meta)));
}

/// `path.is_dir()`, recorded.
pub fn is_dir(path: &Path) -> bool {
    let fingerprint = Fingerprint::now(path);
    note(path, fingerprint);
    fingerprint.is_some_and(|f| f.dir)
}

/// `path.is_file()`, recorded.
pub fn is_file(path: &Path) -> bool {
    let meta = std::fs::metadata(path).ok();
    note(path, meta.as_ref().map(Fingerprint::of));
    meta.is_some_and(|m| m.is_file())
}

/// `path.exists()` (links followed), recorded.
pub fn exists(path: &Path) -> bool {
    let fingerprint = Fingerprint::now(path);
    note(path, fingerprint);
    fingerprint.is_some()
}

/// `fs::canonicalize(path)`, with the path it names recorded.
pub fn canonicalize(path: &Path) -> std::io::Result<PathBuf> {
    note(path, Fingerprint::now(path));
    std::fs::canonicalize(path)
}

/// A diagnostic as the cache keeps it (codes are looked up again on the way back).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Kept {
    error: bool,
    code: String,
    message: String,
    file: Option<String>,
    line: Option<usize>,
    column: Option<usize>,
    help: Option<String>,
    notes: Vec<String>,
    label: Option<String>,
    source_line: Option<String>,
    source_column: usize,
    width: usize,
    omitted: usize,
}

impl Kept {
    fn of(d: &Diagnostic) -> Kept {
        Kept {
            error: d.severity == Severity::Error,
            code: d.code.to_string(),
            message: d.message.clone(),
            file: d.file.clone(),
            line: d.line,
            column: d.column,
            help: d.help.clone(),
            notes: d.notes.clone(),
            label: d.label.clone(),
            source_line: d.source_line.clone(),
            source_column: d.source_column,
            width: d.width,
            omitted: d.omitted,
        }
    }

    fn back(self) -> Option<Diagnostic> {
        let code = super::diagnostic::code::intern(&self.code)?;
        let mut d = if self.error {
            Diagnostic::error(code, self.message)
        } else {
            Diagnostic::warning(code, self.message)
        };
        d.file = self.file;
        d.line = self.line;
        d.column = self.column;
        d.help = self.help;
        d.notes = self.notes;
        d.label = self.label;
        d.source_line = self.source_line;
        d.source_column = self.source_column;
        d.width = self.width;
        d.omitted = self.omitted;
        Some(d)
    }
}

/// What a cache hit gives back.
#[derive(Debug)]
pub struct Hit {
    /// The inputs hash of the manifest that build wrote.
    pub inputs_hash: String,
    pub diagnostics: Diagnostics,
    pub eval_cases: usize,
}

fn path(dir: &Path) -> PathBuf {
    dir.join(".eve").join("build-cache")
}

fn now_ns() -> i128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128)
}

fn header() -> String {
    format!(
        "{MAGIC} {FORMAT} {} {}",
        env!("CARGO_PKG_VERSION"),
        crate::manifest::SCHEMA_VERSION
    )
}

/// Writes what a build saw and produced. Best effort: a cache that cannot be written
/// costs the next build its speed, nothing else.
pub fn store(dir: &Path, seen: &Seen, inputs_hash: &str, build: &Diagnostics, eval_cases: usize) {
    if seen.unsettled.load(std::sync::atomic::Ordering::Relaxed) {
        // Forget what an unsettled build saw, and any cache an earlier build left.
        seen.take();
        let _ = std::fs::remove_file(path(dir));
        return;
    }
    let written = now_ns();
    let mut body = format!("written {written}\ninputs {inputs_hash}\nevals {eval_cases}\n");
    for d in build.iter() {
        if let Ok(json) = serde_json::to_string(&Kept::of(d)) {
            let _ = writeln!(body, "d {json}");
        }
    }
    for (path, fingerprint) in seen.take() {
        let Some(path) = path.to_str().filter(|p| !p.contains('\n')) else {
            // A name that is not UTF-8, or holds a line break, cannot be written down:
            // no cache this time.
            return;
        };
        match fingerprint {
            Some(f) => {
                let _ = writeln!(
                    body,
                    "{} {} {} {} {path}",
                    if f.dir { 'D' } else { 'F' },
                    f.size,
                    f.mtime_ns,
                    f.ino
                );
            }
            None => {
                let _ = writeln!(body, "- {path}");
            }
        }
    }
    let sum = crate::text::hex(&Sha256::digest(body.as_bytes()));
    let text = format!("{}\n{sum}\n{body}", header());
    let file = path(dir);
    let tmp = file.with_extension("tmp");
    if std::fs::create_dir_all(dir.join(".eve")).is_ok() && std::fs::write(&tmp, text).is_ok() {
        let _ = std::fs::rename(&tmp, &file);
    }
}

/// The last build's result, if nothing it looked at has changed since.
pub fn check(dir: &Path) -> Option<Hit> {
    let text = std::fs::read_to_string(path(dir)).ok()?;
    let (head, rest) = text.split_once('\n')?;
    if head != header() {
        return None;
    }
    let (sum, body) = rest.split_once('\n')?;
    if crate::text::hex(&Sha256::digest(body.as_bytes())) != sum {
        return None;
    }
    let mut lines = body.lines();
    let written: i128 = lines.next()?.strip_prefix("written ")?.parse().ok()?;
    let inputs_hash = lines.next()?.strip_prefix("inputs ")?.to_string();
    let eval_cases: usize = lines.next()?.strip_prefix("evals ")?.parse().ok()?;
    let mut diagnostics = Diagnostics::default();
    for line in lines {
        if let Some(json) = line.strip_prefix("d ") {
            diagnostics.push(serde_json::from_str::<Kept>(json).ok()?.back()?);
            continue;
        }
        if let Some(path) = line.strip_prefix("- ") {
            if std::fs::symlink_metadata(path).is_ok() {
                return None;
            }
            continue;
        }
        let mut parts = line.splitn(5, ' ');
        let kind = parts.next()?;
        let size: u64 = parts.next()?.parse().ok()?;
        let mtime_ns: i128 = parts.next()?.parse().ok()?;
        let ino: u64 = parts.next()?.parse().ok()?;
        let path = parts.next()?;
        let expected = Fingerprint {
            dir: kind == "D",
            size,
            mtime_ns,
            ino,
        };
        if mtime_ns + RACY_NS >= written || Fingerprint::now(Path::new(path)) != Some(expected) {
            return None;
        }
    }
    Some(Hit {
        inputs_hash,
        diagnostics,
        eval_cases,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_damaged_or_foreign_cache_is_no_cache() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        // Old enough not to be racily clean.
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let seen = Arc::new(Seen::default());
        assert!(recording(&seen, || is_file(&file)));
        let mut diags = Diagnostics::default();
        diags.push(Diagnostic::warning(
            super::super::diagnostic::code::NOT_A_SKILL,
            "w",
        ));
        store(tmp.path(), &seen, "sha256:abc", &diags, 2);
        let hit = check(tmp.path()).unwrap();
        assert_eq!(hit.inputs_hash, "sha256:abc");
        assert_eq!(hit.eval_cases, 2);
        assert_eq!(hit.diagnostics.iter().count(), 1);

        let cache = path(tmp.path());
        let text = std::fs::read_to_string(&cache).unwrap();
        std::fs::write(
            &cache,
            text.replace("inputs sha256:abc", "inputs sha256:abd"),
        )
        .unwrap();
        assert!(check(tmp.path()).is_none(), "a bad checksum");
        std::fs::write(&cache, text.replacen(env!("CARGO_PKG_VERSION"), "0.0.0", 1)).unwrap();
        assert!(check(tmp.path()).is_none(), "another version");
        std::fs::write(&cache, &text).unwrap();
        assert!(check(tmp.path()).is_some());
        std::fs::write(&file, "y").unwrap();
        assert!(check(tmp.path()).is_none(), "a changed file");
    }

    #[test]
    fn an_entry_written_just_before_the_cache_is_not_trusted() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let seen = Arc::new(Seen::default());
        assert!(recording(&seen, || is_file(&file)));
        store(tmp.path(), &seen, "sha256:abc", &Diagnostics::default(), 0);
        assert!(check(tmp.path()).is_none());
    }
}
