//! The build cache (`.eve/build-cache`): what the last build looked at — every file it
//! read, every folder it listed, every path it checked — with each one's size,
//! modification and change times (ns) and inode, the way git's index and ninja decide
//! that nothing changed. When nothing did, the manifest on disk and the diagnostics of
//! that build are the answer and no input is read again.
//!
//! Each entry of `skills/` is a *unit*: the paths its loading and checking looked at are
//! kept apart from the rest, with what it compiled to (an opaque payload the skills
//! module writes and reads). When something changed, the next build reads and compiles
//! again everything but the units none of whose paths changed: those come back from
//! here. The rest of an agent (`agent.toml`, instructions, tools, connections, evals) is
//! a few files and is always compiled again, from its files.
//!
//! The cache is only a cache: a missing, damaged or foreign one (another eve version, a
//! bad checksum, another agent directory) costs a full build, never a wrong manifest. An
//! entry modified too close to the start of the build that recorded it ("racily clean":
//! a later edit in the same timestamp tick would not show) is never trusted.
// The compiler's reads of the agent directory are made here (see `compiler/mod.rs`).
#![allow(clippy::disallowed_methods)]

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::diagnostic::{Diagnostic, Diagnostics, Severity};

/// The first word of the file; with the version, anything else is not a cache of ours.
const MAGIC: &str = "eve-build-cache";
/// Bumped whenever the file's meaning changes.
const FORMAT: u32 = 2;
/// Entries modified less than this before their build started are not trusted.
const RACY_NS: i128 = 1_000_000_000;
/// A cache larger than this is not read (a 1,000-skill agent's is about 1.5 MB).
const MAX_CACHE_BYTES: u64 = 256 * 1024 * 1024;
/// Below this many paths, checking them on one thread is faster than sharing the work.
const PARALLEL_FROM: usize = 512;

/// What identifies a file's contents without reading them. `None` in a record: the path
/// did not exist (or could not be looked at).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Fingerprint {
    pub dir: bool,
    pub size: u64,
    /// Modification time in nanoseconds since the epoch.
    pub mtime_ns: i128,
    /// Status change time: a `chmod`, a rename, or a `touch -d` that puts the
    /// modification time back all move it, and no program can set it.
    pub ctime_ns: i128,
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
                ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
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
                ctime_ns: mtime_ns,
                ino: 0,
            }
        }
    }

    /// The fingerprint of what `st` describes, as [`Fingerprint::of`] gives it.
    #[cfg(unix)]
    // The fields' integer types differ from one target to another.
    #[allow(clippy::unnecessary_cast)]
    fn of_stat(st: &rustix::fs::Stat) -> Fingerprint {
        let ns = |secs: i64, nsecs: i64| i128::from(secs) * 1_000_000_000 + i128::from(nsecs);
        Fingerprint {
            dir: rustix::fs::FileType::from_raw_mode(st.st_mode as rustix::fs::RawMode)
                == rustix::fs::FileType::Directory,
            size: st.st_size as u64,
            mtime_ns: ns(st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime_ns: ns(st.st_ctime as i64, st.st_ctime_nsec as i64),
            ino: st.st_ino as u64,
        }
    }

    /// The fingerprint of `path` now (links followed), `None` if it cannot be looked at.
    pub fn now(path: &Path) -> Option<Fingerprint> {
        std::fs::metadata(path).ok().map(|m| Fingerprint::of(&m))
    }

    /// Whether a change in the same timestamp tick as the build that saw this could
    /// have gone unnoticed. Like git's index, by the modification time: the change time
    /// is compared, but it moves with every `chmod` and `touch`, and cannot be set back
    /// to make a file look old.
    fn racy(&self, started: i128) -> bool {
        self.mtime_ns + RACY_NS >= started
    }
}

/// A path as a build saw it.
type Record = (PathBuf, Option<Fingerprint>);

/// A unit of a build (one entry of `skills/`): the paths it looked at and what it
/// compiled to, in the skills module's words.
#[derive(Debug, Clone)]
pub struct Unit {
    key: String,
    payload: String,
    paths: Vec<Record>,
}

/// The units of the last build none of whose paths changed since.
#[derive(Debug, Default)]
pub struct Reuse(HashMap<String, Unit>);

impl Reuse {
    /// How many units there are to reuse.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there is nothing to reuse.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Everything a build looked at, in the order it looked (internally locked: the loaders
/// of an agent and its subagents, the workers that load skills side by side, and the
/// checks of the compiler share it), and the units it kept.
#[derive(Debug)]
pub struct Seen {
    /// When the build started: an entry is trusted only if it was last changed safely
    /// before (see [`RACY_NS`]).
    started: i128,
    paths: Mutex<Vec<Record>>,
    units: Mutex<Vec<Unit>>,
    /// The last build's units that may be reused.
    reuse: Reuse,
    /// How many units came from `reuse`.
    reused: std::sync::atomic::AtomicUsize,
    /// This records one unit: a unit inside it is part of it.
    in_unit: bool,
    /// Set when the build used something the files do not decide (a connection whose
    /// tools could not be listed): such a build is not a cache hit next time, so the
    /// next one tries again.
    unsettled: AtomicBool,
}

impl Default for Seen {
    fn default() -> Seen {
        Seen::reusing(Reuse::default())
    }
}

impl Seen {
    /// A recorder for a build that may take units from `reuse`.
    pub fn reusing(reuse: Reuse) -> Seen {
        Seen {
            started: now_ns(),
            paths: Mutex::new(Vec::new()),
            units: Mutex::new(Vec::new()),
            reuse,
            reused: std::sync::atomic::AtomicUsize::new(0),
            in_unit: false,
            unsettled: AtomicBool::new(false),
        }
    }

    /// How many units this build took from the last one.
    pub fn reused(&self) -> usize {
        self.reused.load(Ordering::Relaxed)
    }

    fn note(&self, path: &Path, fingerprint: Option<Fingerprint>) {
        crate::sync::lock(&self.paths).push((path.to_path_buf(), fingerprint));
    }

    fn take(&self) -> Vec<Record> {
        std::mem::take(&mut *crate::sync::lock(&self.paths))
    }
}

thread_local! {
    /// Where this thread's file system queries are recorded, while a build runs.
    static CURRENT: std::cell::RefCell<Option<Arc<Seen>>> = const { std::cell::RefCell::new(None) };
}

/// Runs `f` with every query of this module recorded in `seen` (on this thread; a worker
/// thread of the build enters the same scope with [`within`]).
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

/// Runs `f` in the scope `seen` came from (see [`current`]), or in none.
pub fn within<T>(seen: Option<&Arc<Seen>>, f: impl FnOnce() -> T) -> T {
    match seen {
        Some(seen) => recording(seen, f),
        None => f(),
    }
}

/// Whether a build is recording what it looks at (see [`recording`]).
pub fn active() -> bool {
    CURRENT.with(|c| c.borrow().is_some())
}

/// Records `path` as it is now, looking at it only when a build records: a compile
/// outside [`recording`] (`eve eval`, a test, the benchmark) pays nothing for the cache.
pub fn look(path: &Path) {
    if active() {
        note(path, Fingerprint::now(path));
    }
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
            seen.unsettled.store(true, Ordering::Relaxed);
        }
    });
}

/// Runs `f`, one unit of the build named `key`, with what it looks at recorded apart;
/// `payload` says what to keep of its result (`None`: nothing, it runs again next time).
pub fn unit<T>(key: &str, f: impl FnOnce() -> T, payload: impl FnOnce(&T) -> Option<String>) -> T {
    let Some(parent) = current().filter(|s| !s.in_unit) else {
        return f();
    };
    let child = Arc::new(Seen {
        in_unit: true,
        started: parent.started,
        ..Seen::default()
    });
    let value = recording(&child, f);
    if child.unsettled.load(Ordering::Relaxed) {
        parent.unsettled.store(true, Ordering::Relaxed);
    }
    if let Some(payload) = payload(&value) {
        crate::sync::lock(&parent.units).push(Unit {
            key: key.to_string(),
            payload,
            paths: child.take(),
        });
    }
    value
}

/// The unit `key` of the last build, if none of its paths changed since and `decode`
/// can read its payload; it is then kept for the next build as it was.
pub fn reuse<T>(key: &str, decode: impl FnOnce(&str) -> Option<T>) -> Option<T> {
    let seen = current().filter(|s| !s.in_unit)?;
    let unit = seen.reuse.0.get(key)?;
    let value = decode(&unit.payload)?;
    crate::sync::lock(&seen.units).push(unit.clone());
    seen.reused.fetch_add(1, Ordering::Relaxed);
    Some(value)
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

/// `fs::symlink_metadata(path)` (the link itself, not followed), with the path recorded.
pub fn symlink_metadata(path: &Path) -> std::io::Result<std::fs::Metadata> {
    look(path);
    std::fs::symlink_metadata(path)
}

/// `fs::read_link(path)`, with the link recorded.
pub fn read_link(path: &Path) -> std::io::Result<PathBuf> {
    look(path);
    std::fs::read_link(path)
}

/// The file at `path` opened to read, without following a link and without blocking
/// (a FIFO opens and reads nothing), recorded.
#[cfg(unix)]
pub fn open_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    look(path);
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
}

/// The entries under `root` (itself first), in name order, links not followed, each
/// recorded as it is reached.
pub fn walk(root: &Path) -> impl Iterator<Item = walkdir::Result<walkdir::DirEntry>> {
    walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .inspect(|entry| {
            if let Ok(entry) = entry {
                look(entry.path());
            }
        })
}

/// `fs::canonicalize(path)`, with the path it names recorded.
pub fn canonicalize(path: &Path) -> std::io::Result<PathBuf> {
    note(path, Fingerprint::now(path));
    std::fs::canonicalize(path)
}

/// A diagnostic as the cache keeps it (codes are looked up again on the way back).
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct KeptDiagnostic {
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

impl KeptDiagnostic {
    /// `d`, to be kept.
    pub fn of(d: &Diagnostic) -> KeptDiagnostic {
        KeptDiagnostic {
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

    /// The diagnostic again; `None` for a code this eve does not know.
    pub fn back(self) -> Option<Diagnostic> {
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

/// What the last build can do for this one.
#[derive(Debug, Default)]
pub struct Verdict {
    /// Nothing changed: that build is the answer (if its manifest is still on disk).
    pub hit: Option<Hit>,
    /// Its units none of whose paths changed.
    pub reuse: Reuse,
}

/// What a finished build produced, for the cache to answer with next time.
#[derive(Debug, Clone, Copy)]
pub struct Finished<'a> {
    pub inputs_hash: &'a str,
    pub diagnostics: &'a Diagnostics,
    pub eval_cases: usize,
}

#[cfg(test)]
fn path(dir: &Path) -> PathBuf {
    dir.join(".eve").join(FILE)
}

/// The file name of the cache in `.eve/`.
const FILE: &str = "build-cache";

/// Reads eve's own file `name` of the agent directory at `dir` (`.eve/<name>`: the cache,
/// the manifest) as an untrusted file: only if `.eve` is a folder and the file a regular
/// one of at most `limit` bytes, neither reached through a symbolic link — a link there
/// would make eve trust a file kept outside the agent directory — and never waiting on a
/// FIFO ([`crate::statedir`]). `None` for anything else: the caller then builds from the
/// files.
pub fn read_own(dir: &Path, name: &str, limit: u64) -> Option<String> {
    let bytes = crate::statedir::open(dir, &[])
        .ok()??
        .read(name, limit)
        .ok()??;
    String::from_utf8(bytes).ok()
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

/// Writes the path records of one list, each distinct record once; `false` when a path
/// cannot be written down (not UTF-8, or holding a line break).
fn write_records(body: &mut String, records: &[Record]) -> bool {
    let mut written: HashSet<&Record> = HashSet::with_capacity(records.len());
    for record in records {
        if !written.insert(record) {
            continue;
        }
        let (path, fingerprint) = record;
        let Some(path) = path.to_str().filter(|p| !p.contains('\n')) else {
            return false;
        };
        match fingerprint {
            Some(f) => {
                let _ = writeln!(
                    body,
                    "{} {} {} {} {} {path}",
                    if f.dir { 'D' } else { 'F' },
                    f.size,
                    f.mtime_ns,
                    f.ctime_ns,
                    f.ino
                );
            }
            None => {
                let _ = writeln!(body, "- {path}");
            }
        }
    }
    true
}

/// Writes what a build saw and produced; `outcome` is `None` for a build that must not
/// answer the next one (it failed, or it was unsettled), whose units are kept all the
/// same. `identity` names the agent directory the build was of. Best effort: a cache
/// that cannot be written costs the next build its speed, nothing else.
pub fn store(dir: &Path, seen: &Seen, identity: &str, outcome: Option<Finished<'_>>) {
    if identity.contains('\n') {
        return;
    }
    let outcome = outcome.filter(|_| !seen.unsettled.load(Ordering::Relaxed));
    let mut body = format!("started {}\nagent {identity}\n", seen.started);
    match outcome {
        Some(outcome) => {
            let _ = writeln!(
                body,
                "inputs {}\nevals {}",
                outcome.inputs_hash, outcome.eval_cases
            );
            for d in outcome.diagnostics.iter() {
                if let Ok(json) = serde_json::to_string(&KeptDiagnostic::of(d)) {
                    let _ = writeln!(body, "d {json}");
                }
            }
        }
        None => body.push_str("inputs -\nevals 0\n"),
    }
    if !write_records(&mut body, &seen.take()) {
        return;
    }
    let mut units = std::mem::take(&mut *crate::sync::lock(&seen.units));
    units.sort_by(|a, b| a.key.cmp(&b.key));
    for unit in &units {
        if unit.key.contains('\n') || unit.payload.contains('\n') {
            continue;
        }
        let mark = body.len();
        let _ = writeln!(body, "u {}\np {}", unit.key, unit.payload);
        if !write_records(&mut body, &unit.paths) {
            // This unit is compiled again next time.
            body.truncate(mark);
        }
    }
    let sum = crate::text::hex(&Sha256::digest(body.as_bytes()));
    let text = format!("{}\n{sum}\n{body}", header());
    // Never through a link at `.eve` or at the cache's name (see `crate::statedir`).
    if let Ok(eve) = crate::statedir::create(dir, &[]) {
        let _ = eve.write(FILE, text.as_bytes());
    }
}

/// One path record of the cache file, as written.
struct Entry<'a> {
    path: &'a str,
    fingerprint: Option<Fingerprint>,
}

impl Entry<'_> {
    fn parse(line: &str) -> Option<Entry<'_>> {
        if let Some(path) = line.strip_prefix("- ") {
            return Some(Entry {
                path,
                fingerprint: None,
            });
        }
        let mut parts = line.splitn(6, ' ');
        let dir = match parts.next()? {
            "D" => true,
            "F" => false,
            _ => return None,
        };
        let fingerprint = Fingerprint {
            dir,
            size: parts.next()?.parse().ok()?,
            mtime_ns: parts.next()?.parse().ok()?,
            ctime_ns: parts.next()?.parse().ok()?,
            ino: parts.next()?.parse().ok()?,
        };
        Some(Entry {
            path: parts.next()?,
            fingerprint: Some(fingerprint),
        })
    }

    /// Whether the path, which is `now` now, is as recorded, and was recorded safely
    /// after its last change.
    fn fresh(&self, started: i128, now: Option<Fingerprint>) -> bool {
        match self.fingerprint {
            None => now.is_none(),
            Some(f) => !f.racy(started) && now == Some(f),
        }
    }

    fn record(&self) -> Record {
        (PathBuf::from(self.path), self.fingerprint)
    }
}

struct ParsedUnit<'a> {
    key: &'a str,
    payload: &'a str,
    /// Its entries: a range of [`Parsed::entries`].
    entries: std::ops::Range<usize>,
}

struct Parsed<'a> {
    started: i128,
    identity: &'a str,
    inputs: Option<&'a str>,
    eval_cases: usize,
    diagnostics: Vec<&'a str>,
    entries: Vec<Entry<'a>>,
    /// The entries before the first unit are the build's own.
    global: usize,
    units: Vec<ParsedUnit<'a>>,
}

fn parse(text: &str) -> Option<Parsed<'_>> {
    let (head, rest) = text.split_once('\n')?;
    if head != header() {
        return None;
    }
    let (sum, body) = rest.split_once('\n')?;
    if crate::text::hex(&Sha256::digest(body.as_bytes())) != sum {
        return None;
    }
    let mut lines = body.lines().peekable();
    let started: i128 = lines.next()?.strip_prefix("started ")?.parse().ok()?;
    let identity = lines.next()?.strip_prefix("agent ")?;
    let inputs = lines.next()?.strip_prefix("inputs ")?;
    let inputs = (inputs != "-").then_some(inputs);
    let eval_cases: usize = lines.next()?.strip_prefix("evals ")?.parse().ok()?;
    let mut diagnostics = Vec::new();
    while let Some(json) = lines.peek().and_then(|l| l.strip_prefix("d ")) {
        diagnostics.push(json);
        lines.next();
    }
    let mut entries = Vec::new();
    let mut units: Vec<ParsedUnit<'_>> = Vec::new();
    let mut global = None;
    while let Some(line) = lines.next() {
        if let Some(key) = line.strip_prefix("u ") {
            let payload = lines.next()?.strip_prefix("p ")?;
            global.get_or_insert(entries.len());
            if let Some(last) = units.last_mut() {
                last.entries.end = entries.len();
            }
            units.push(ParsedUnit {
                key,
                payload,
                entries: entries.len()..entries.len(),
            });
            continue;
        }
        entries.push(Entry::parse(line)?);
    }
    if let Some(last) = units.last_mut() {
        last.entries.end = entries.len();
    }
    Some(Parsed {
        started,
        identity,
        inputs,
        eval_cases,
        diagnostics,
        global: global.unwrap_or(entries.len()),
        entries,
        units,
    })
}

/// Looks at paths as [`Fingerprint::now`] does, those beneath the agent directory
/// relative to it, held open: the walk from `/` down to the agent directory is the same
/// for every path, and made once instead of once a path (with thousands of paths and a
/// deep directory, it was a good part of an unchanged start).
struct Looker {
    #[cfg(unix)]
    dir: Option<std::os::fd::OwnedFd>,
    /// The agent directory as the recorded paths begin, with a final `/`.
    prefix: String,
}

impl Looker {
    fn new(dir: &Path) -> Looker {
        let mut prefix = dir.to_string_lossy().into_owned();
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        Looker {
            #[cfg(unix)]
            dir: rustix::fs::open(
                dir,
                rustix::fs::OFlags::PATH
                    | rustix::fs::OFlags::DIRECTORY
                    | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .ok(),
            prefix,
        }
    }

    /// What `path` (as recorded) is now, links followed; `None` if it cannot be looked at.
    fn look(&self, path: &str) -> Option<Fingerprint> {
        #[cfg(unix)]
        if let Some(dir) = &self.dir
            && let Some(rel) = path.strip_prefix(&self.prefix)
            && !rel.is_empty()
        {
            // Relative to the folder the recorded path names: the same file, as `..`
            // and links resolve from that folder either way.
            return rustix::fs::statat(dir, rel, rustix::fs::AtFlags::empty())
                .ok()
                .map(|st| Fingerprint::of_stat(&st));
        }
        Fingerprint::now(Path::new(path))
    }
}

/// Whether each of `entries` is as recorded, looking at each path once: a path the
/// build's own entries and a unit's both hold (a skill's folder) is not looked at twice.
fn freshness(dir: &Path, entries: &[Entry<'_>], started: i128) -> Vec<bool> {
    let looker = Looker::new(dir);
    let look = |path: &str| looker.look(path);
    let now: Vec<Option<Fingerprint>> = if entries.len() >= PARALLEL_FROM {
        let mut first: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
        let mut again = vec![None; entries.len()];
        for (i, entry) in entries.iter().enumerate() {
            if let Some(&at) = first.get(entry.path) {
                again[i] = Some(at);
            } else {
                first.insert(entry.path, i);
            }
        }
        let looked: Vec<Option<Fingerprint>> = entries
            .par_iter()
            .zip(again.par_iter())
            .map(|(entry, again)| match again {
                Some(_) => None,
                None => look(entry.path),
            })
            .collect();
        again
            .iter()
            .enumerate()
            .map(|(i, again)| looked[again.unwrap_or(i)])
            .collect()
    } else {
        entries.iter().map(|e| look(e.path)).collect()
    };
    entries
        .iter()
        .zip(now)
        .map(|(entry, now)| entry.fresh(started, now))
        .collect()
}

/// What the last build of the agent directory at `dir` (named by `identity`) can do for
/// this one. `touched` are paths (relative to `dir`, with `/`) known to have changed,
/// whatever their metadata says: the units holding them are compiled again, and the
/// build is never a hit.
pub fn check(dir: &Path, identity: &str, touched: &[String]) -> Verdict {
    let Some(text) = read_own(dir, FILE, MAX_CACHE_BYTES) else {
        return Verdict::default();
    };
    let Some(parsed) = parse(&text).filter(|p| p.identity == identity) else {
        return Verdict::default();
    };
    let started = parsed.started;
    let fresh = freshness(dir, &parsed.entries, started);
    let touches = |key: &str| {
        touched
            .iter()
            .any(|t| t == key || t.strip_prefix(key).is_some_and(|r| r.starts_with('/')))
    };
    let reusable = |unit: &ParsedUnit<'_>| {
        // A unit always looked at its own entry: one with no paths is not ours.
        !unit.entries.is_empty()
            && fresh[unit.entries.clone()].iter().all(|f| *f)
            && !touches(unit.key)
    };
    let unchanged = touched.is_empty()
        && fresh[..parsed.global].iter().all(|f| *f)
        && parsed.units.iter().all(reusable);
    let hit = parsed.inputs.filter(|_| unchanged).and_then(|inputs| {
        let mut diagnostics = Diagnostics::default();
        for json in &parsed.diagnostics {
            diagnostics.push(serde_json::from_str::<KeptDiagnostic>(json).ok()?.back()?);
        }
        Some(Hit {
            inputs_hash: inputs.to_string(),
            diagnostics,
            eval_cases: parsed.eval_cases,
        })
    });
    // On a hit nothing is compiled, so the units are not copied out (a thousand skills'
    // payloads): they are only wanted when something must be built again.
    let mut reuse = HashMap::new();
    if hit.is_none() {
        reuse.reserve(parsed.units.len());
        for unit in parsed.units.iter().filter(|u| reusable(u)) {
            reuse.insert(
                unit.key.to_string(),
                Unit {
                    key: unit.key.to_string(),
                    payload: unit.payload.to_string(),
                    paths: parsed.entries[unit.entries.clone()]
                        .iter()
                        .map(Entry::record)
                        .collect(),
                },
            );
        }
    }
    Verdict {
        hit,
        reuse: Reuse(reuse),
    }
}

#[cfg(test)]
mod tests;
