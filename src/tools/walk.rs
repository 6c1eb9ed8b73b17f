//! The walk `glob` and `grep` share: in parallel, through folder handles, the way
//! ripgrep chooses files.
//!
//! Every folder is opened relative to the handle of its parent with `O_NOFOLLOW`, and
//! every file relative to the handle of its folder, so a folder swapped for a symlink
//! while the walk runs is never entered: the walk cannot leave the folder it started in.
//! Symlinks are not followed at all. `.gitignore`, `.ignore` and `.git/info/exclude` are
//! honoured even outside a git repository (also those of the folders above, like
//! ripgrep), as is git's global excludes file; hidden files are included; `.git/` and
//! the `.eve/` folder of an agent directory are never entered.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, SystemTime};

use ignore::gitignore::{Gitignore, GitignoreBuilder};
use rustix::fs::{AtFlags, FileType};
use tokio_util::sync::CancellationToken;

use super::beneath::{self, Level};
use super::workspace::is_state;
use crate::sync::lock;

/// Ignore files larger than this are not read.
const MAX_IGNORE_FILE: u64 = 1024 * 1024;

/// A regular file met by the walk.
pub struct FileEntry<'a> {
    /// The handle of the folder holding it.
    pub dir: &'a File,
    pub name: &'a OsStr,
    /// Its real path.
    pub path: &'a Path,
}

impl FileEntry<'_> {
    /// Opens the file for reading, without following a symlink or blocking; `None` when
    /// it is no longer a regular file.
    pub fn open(&self) -> Option<File> {
        let file = beneath::open_file(self.dir, self.name).ok()?;
        let kind = FileType::from_raw_mode(rustix::fs::fstat(&file).ok()?.st_mode);
        (kind == FileType::RegularFile).then_some(file)
    }

    /// When the file was last modified.
    pub fn modified(&self) -> Option<SystemTime> {
        let stat = rustix::fs::statat(self.dir, self.name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let secs = u64::try_from(stat.st_mtime).ok()?;
        let nanos = u32::try_from(stat.st_mtime_nsec).unwrap_or(0);
        Some(SystemTime::UNIX_EPOCH + Duration::new(secs, nanos))
    }
}

/// Where a walk starts: the open folders from the workspace root down to the folder
/// searched (the last), and the real path of that folder.
pub struct Start<'a> {
    pub levels: &'a [Level],
    pub root: &'a Path,
    pub path: &'a Path,
    /// Agent directories (device, inode) whose `.eve/` is never entered.
    pub agents: &'a [(u64, u64)],
}

/// The ignore rules of one folder, with those of the folders above it.
struct Rules {
    parent: Option<Arc<Rules>>,
    ignore: Option<Gitignore>,
    gitignore: Option<Gitignore>,
    exclude: Option<Gitignore>,
}

impl Rules {
    /// Whether `path` is ignored: for each kind of file (`.ignore` before `.gitignore`
    /// before git's exclude file, then the global file), the deepest folder with a
    /// matching rule decides, as in ripgrep.
    fn ignored(&self, path: &Path, is_dir: bool, global: &Gitignore) -> bool {
        let decide = |rules: &Option<Gitignore>| {
            let matched = rules.as_ref()?.matched(path, is_dir);
            if matched.is_ignore() {
                Some(true)
            } else if matched.is_whitelist() {
                Some(false)
            } else {
                None
            }
        };
        let (mut ignore, mut gitignore, mut exclude) = (None, None, None);
        let mut rules = Some(self);
        while let Some(r) = rules {
            ignore = ignore.or_else(|| decide(&r.ignore));
            gitignore = gitignore.or_else(|| decide(&r.gitignore));
            exclude = exclude.or_else(|| decide(&r.exclude));
            rules = r.parent.as_deref();
        }
        ignore
            .or(gitignore)
            .or(exclude)
            .or_else(|| {
                let matched = global.matched(path, is_dir);
                (!matched.is_none()).then(|| matched.is_ignore())
            })
            .unwrap_or(false)
    }
}

/// Which ignore files a folder has.
#[derive(Default)]
struct Has {
    ignore: bool,
    gitignore: bool,
    git: bool,
}

impl Has {
    fn all() -> Has {
        Has {
            ignore: true,
            gitignore: true,
            git: true,
        }
    }
}

/// Compiles the text of an ignore file found in `dir`.
fn compile(dir: &Path, text: Option<Vec<u8>>, file: &str) -> Option<Gitignore> {
    let text = text?;
    let mut builder = GitignoreBuilder::new(dir);
    let text = String::from_utf8_lossy(&text);
    let from = Some(dir.join(file));
    for (i, line) in text.lines().enumerate() {
        let line = if i == 0 {
            line.trim_start_matches('\u{feff}')
        } else {
            line
        };
        // A pattern that does not compile is left out, as git does.
        let _ = builder.add_line(from.clone(), line);
    }
    builder.build().ok().filter(|g| !g.is_empty())
}

/// The content of a small regular file `name` in `dir`, read through the handle.
fn read_small(dir: &File, name: &str) -> Option<Vec<u8>> {
    let file = beneath::open_file(dir, name).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.len() > MAX_IGNORE_FILE {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_IGNORE_FILE).read_to_end(&mut bytes).ok()?;
    Some(bytes)
}

/// The rules of the folder `dir` at `path`.
fn rules_of(dir: &File, path: &Path, has: &Has, parent: Option<Arc<Rules>>) -> Arc<Rules> {
    let exclude = has
        .git
        .then(|| {
            let git = beneath::open_dir(dir, ".git").ok()?;
            let info = beneath::open_dir(&git, "info").ok()?;
            read_small(&info, "exclude")
        })
        .flatten();
    Arc::new(Rules {
        parent,
        ignore: compile(
            path,
            has.ignore.then(|| read_small(dir, ".ignore")).flatten(),
            ".ignore",
        ),
        gitignore: compile(
            path,
            has.gitignore
                .then(|| read_small(dir, ".gitignore"))
                .flatten(),
            ".gitignore",
        ),
        exclude: compile(path, exclude, ".git/info/exclude"),
    })
}

/// The rules of the folders above the workspace root, read by path (they are the
/// person's, outside anything the model may change through the file tools).
fn rules_above(root: &Path) -> Option<Arc<Rules>> {
    let mut rules = None;
    let ancestors: Vec<&Path> = root.ancestors().skip(1).collect();
    for dir in ancestors.into_iter().rev() {
        let Ok(handle) = beneath::open_dir(rustix::fs::CWD, dir) else {
            continue;
        };
        rules = Some(rules_of(&handle, dir, &Has::all(), rules));
    }
    rules
}

/// A folder to walk.
struct Job {
    /// The folder's handle, or its parent's handle and its name.
    dir: Source,
    path: PathBuf,
    parent: Option<Arc<Rules>>,
}

enum Source {
    Open(Arc<File>),
    Child(Arc<File>, OsString),
}

/// The folders waiting, and how many are being walked.
struct Queue {
    jobs: Mutex<(Vec<Job>, usize)>,
    ready: Condvar,
}

impl Queue {
    fn pop(&self, stop: &CancellationToken) -> Option<Job> {
        let mut state = lock(&self.jobs);
        loop {
            if stop.is_cancelled() {
                return None;
            }
            if let Some(job) = state.0.pop() {
                state.1 += 1;
                return Some(job);
            }
            if state.1 == 0 {
                return None;
            }
            // A bounded wait, so a stop is seen even if nobody signals.
            state = match self.ready.wait_timeout(state, Duration::from_millis(50)) {
                Ok((state, _)) => state,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    fn push(&self, job: Job) {
        lock(&self.jobs).0.push(job);
        self.ready.notify_one();
    }

    fn done(&self) {
        let mut state = lock(&self.jobs);
        state.1 -= 1;
        if state.1 == 0 && state.0.is_empty() {
            self.ready.notify_all();
        }
    }
}

/// Walks the folder `start` names in parallel: each thread gets its own state from
/// `init` and `visit`s regular files with it; the states are returned when the walk
/// ends or `stop` is cancelled. Entries that cannot be read are skipped.
pub fn walk<S, I, V>(start: &Start<'_>, stop: &CancellationToken, init: I, visit: V) -> Vec<S>
where
    S: Send,
    I: Fn() -> S + Sync,
    V: Fn(&mut S, &FileEntry<'_>) + Sync,
{
    let global = Gitignore::global().0;
    let mut parent = rules_above(start.root);
    let (last, above) = match start.levels.split_last() {
        Some(split) => split,
        None => return Vec::new(),
    };
    let mut path = start.root.to_path_buf();
    for (i, level) in above.iter().enumerate() {
        if i > 0 {
            path.push(&level.name);
        }
        parent = Some(rules_of(&level.dir, &path, &Has::all(), parent));
    }
    let queue = Queue {
        jobs: Mutex::new((
            vec![Job {
                dir: Source::Open(last.dir.clone()),
                path: start.path.to_path_buf(),
                parent,
            }],
            0,
        )),
        ready: Condvar::new(),
    };
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut state = init();
                    while let Some(job) = queue.pop(stop) {
                        folder(job, start.agents, &global, &queue, stop, &mut state, &visit);
                        queue.done();
                    }
                    state
                })
            })
            .collect();
        workers.into_iter().filter_map(|w| w.join().ok()).collect()
    })
}

/// Walks one folder: its files are visited, its folders queued.
fn folder<S, V>(
    job: Job,
    agents: &[(u64, u64)],
    global: &Gitignore,
    queue: &Queue,
    stop: &CancellationToken,
    state: &mut S,
    visit: &V,
) where
    V: Fn(&mut S, &FileEntry<'_>),
{
    let dir = match job.dir {
        Source::Open(dir) => dir,
        // A folder swapped for a symlink since it was listed fails to open here.
        Source::Child(parent, name) => match beneath::open_dir(&*parent, name.as_os_str()) {
            Ok(dir) => Arc::new(dir),
            Err(_) => return,
        },
    };
    let Ok(meta) = dir.metadata() else {
        return;
    };
    let is_agent = agents.contains(&(meta.dev(), meta.ino()));
    let Ok(listing) = rustix::fs::Dir::read_from(&*dir) else {
        return;
    };
    let mut entries: Vec<(OsString, FileType)> = Vec::new();
    let mut has = Has::default();
    for entry in listing {
        let Ok(entry) = entry else {
            break;
        };
        let name = OsStr::from_bytes(entry.file_name().to_bytes());
        match name.as_bytes() {
            b"." | b".." => continue,
            b".ignore" => has.ignore = true,
            b".gitignore" => has.gitignore = true,
            b".git" => has.git = true,
            _ => {}
        }
        entries.push((name.to_os_string(), entry.file_type()));
    }
    let rules = rules_of(&dir, &job.path, &has, job.parent);
    for (i, (name, kind)) in entries.iter().enumerate() {
        if i % 256 == 0 && stop.is_cancelled() {
            return;
        }
        if name == ".git" || (is_agent && is_state(name)) {
            continue;
        }
        let kind = if *kind == FileType::Unknown {
            match rustix::fs::statat(&*dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => FileType::from_raw_mode(stat.st_mode),
                Err(_) => continue,
            }
        } else {
            *kind
        };
        let path = job.path.join(name);
        match kind {
            FileType::Directory if !rules.ignored(&path, true, global) => {
                queue.push(Job {
                    dir: Source::Child(dir.clone(), name.clone()),
                    path,
                    parent: Some(rules.clone()),
                });
            }
            FileType::RegularFile if !rules.ignored(&path, false, global) => {
                let entry = FileEntry {
                    dir: &dir,
                    name,
                    path: &path,
                };
                visit(state, &entry);
            }
            _ => {}
        }
    }
}
