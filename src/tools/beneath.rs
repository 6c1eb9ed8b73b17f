//! Opening paths beneath a folder handle, one component at a time, never letting the
//! kernel follow a symlink.
//!
//! Every component is opened relative to the handle of the folder before it with
//! `O_NOFOLLOW`, so what was checked is what is used: a folder swapped for a symlink
//! between two calls makes the open fail instead of leading elsewhere. Symlinks are read
//! (`readlinkat`) and resolved here, by the same walk, so one that stays inside the root
//! works and one that leads out is refused. `openat2(RESOLVE_BENEATH)` is not used: it
//! refuses every absolute symlink, also one that names a file inside the root.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// How many symlinks one resolution may go through (Linux's own limit).
const MAX_SYMLINKS: usize = 40;

/// A folder on the way to a resolved path, held open.
#[derive(Debug, Clone)]
pub struct Level {
    pub dir: Arc<File>,
    /// Its name in the folder above; empty for the root.
    pub name: OsString,
    /// Device and inode, to recognise a folder whatever path leads to it.
    pub id: (u64, u64),
}

/// An opened root folder, the top every resolution starts from.
#[derive(Debug, Clone)]
pub struct Root {
    /// Its real path (no symlink along it).
    pub path: PathBuf,
    pub level: Level,
}

impl Root {
    /// Opens the folder at the absolute `path`, refusing a path that goes through a
    /// symlink: a root that was swapped for a link since it was resolved is not used.
    pub fn open(path: &Path) -> io::Result<Root> {
        let mut dir = open_dir(rustix::fs::CWD, "/")?;
        for component in path.components() {
            match component {
                Component::RootDir => {}
                Component::Normal(name) => dir = open_dir(&dir, name)?,
                _ => return Err(io::Error::from(io::ErrorKind::InvalidInput)),
            }
        }
        let level = level(dir, OsString::new())?;
        Ok(Root {
            path: path.to_path_buf(),
            level,
        })
    }
}

/// What a resolved path names.
#[derive(Debug)]
pub enum Entry {
    /// Nothing exists there (yet).
    Missing,
    /// A regular file, opened for reading (without blocking).
    File(File),
    /// A folder: the last level.
    Dir,
    /// A FIFO, socket or device: never opened.
    Other(FileType),
}

/// A path resolved beneath a root: the open folders leading to it and what it names.
#[derive(Debug)]
pub struct Found {
    /// The root first; the last is the folder holding `name` (or the folder named).
    pub levels: Vec<Level>,
    /// Folders that do not exist yet, under the last level, outermost first.
    pub missing: Vec<OsString>,
    /// The entry's name in its folder; `None` when the path names the last level itself.
    pub name: Option<OsString>,
    pub entry: Entry,
}

impl Found {
    /// The real path: the root's path joined with every name on the way.
    pub fn path(&self, root: &Path) -> PathBuf {
        let mut path = root.to_path_buf();
        for level in &self.levels[1..] {
            path.push(&level.name);
        }
        for name in &self.missing {
            path.push(name);
        }
        if let Some(name) = &self.name {
            path.push(name);
        }
        path
    }

    /// The folder holding the entry.
    pub fn parent(&self) -> &Level {
        &self.levels[self.levels.len() - 1]
    }
}

/// Why a path could not be resolved beneath the root.
#[derive(Debug)]
pub enum Refusal {
    /// A symlink on the way leads outside the root; its text.
    SymlinkOut(PathBuf),
    TooManySymlinks,
    /// A part of the path (given up to it) is a file where a folder is needed.
    NotAFolder(PathBuf),
    Io(io::Error),
}

impl From<Errno> for Refusal {
    fn from(e: Errno) -> Refusal {
        Refusal::Io(e.into())
    }
}

impl From<io::Error> for Refusal {
    fn from(e: io::Error) -> Refusal {
        Refusal::Io(e)
    }
}

/// Resolves `names` (plain names, no `.` or `..`) beneath `root`. Folders that do not
/// exist end up in [`Found::missing`], for a writer to create.
pub fn resolve(root: &Root, names: &[OsString]) -> Result<Found, Refusal> {
    let mut levels = vec![root.level.clone()];
    let mut missing: Vec<OsString> = Vec::new();
    let mut pending: VecDeque<OsString> = names.iter().cloned().collect();
    let mut links = 0usize;
    // The text of the last symlink met, for the message when `..` in it climbs out.
    let mut last_link: Option<PathBuf> = None;

    while let Some(name) = pending.pop_front() {
        if name.is_empty() || name == "." {
            continue;
        }
        if name == ".." {
            if missing.pop().is_some() {
                continue;
            }
            if levels.len() == 1 {
                return Err(Refusal::SymlinkOut(last_link.unwrap_or_default()));
            }
            levels.pop();
            continue;
        }
        let last = pending.is_empty();
        if !missing.is_empty() {
            if last {
                return Ok(Found {
                    levels,
                    missing,
                    name: Some(name),
                    entry: Entry::Missing,
                });
            }
            missing.push(name);
            continue;
        }
        let dir = levels[levels.len() - 1].dir.clone();
        if last {
            match final_entry(&dir, &name)? {
                Final::Link(target) => {
                    links += 1;
                    expand(root, &target, &mut levels, &mut pending, links)?;
                    last_link = Some(target);
                }
                Final::Dir(opened) => {
                    levels.push(level(opened, name)?);
                    return Ok(Found {
                        levels,
                        missing,
                        name: None,
                        entry: Entry::Dir,
                    });
                }
                Final::Entry(entry) => {
                    return Ok(Found {
                        levels,
                        missing,
                        name: Some(name),
                        entry,
                    });
                }
            }
            continue;
        }
        match open_dir(&*dir, &name) {
            Ok(opened) => levels.push(level(opened, name)?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(name),
            Err(e) => match read_link(&dir, &name)? {
                Some(target) => {
                    links += 1;
                    expand(root, &target, &mut levels, &mut pending, links)?;
                    last_link = Some(target);
                }
                None if is_not_a_dir(&e) => {
                    let mut at = PathBuf::new();
                    for level in &levels[1..] {
                        at.push(&level.name);
                    }
                    at.push(&name);
                    return Err(Refusal::NotAFolder(at));
                }
                None => return Err(Refusal::Io(e)),
            },
        }
    }
    // The path named the last level itself (the root, or a folder reached through `..`).
    match missing.pop() {
        Some(name) => Ok(Found {
            levels,
            missing,
            name: Some(name),
            entry: Entry::Missing,
        }),
        None => Ok(Found {
            levels,
            missing,
            name: None,
            entry: Entry::Dir,
        }),
    }
}

/// What the last component is.
enum Final {
    Link(PathBuf),
    Dir(File),
    Entry(Entry),
}

/// Looks at the last component without following it: a symlink is returned to be
/// resolved, a folder or a regular file is opened (without blocking, without following
/// a symlink swapped in since the look), anything else is never opened.
fn final_entry(dir: &File, name: &OsStr) -> Result<Final, Refusal> {
    // A component that changes between the look and the open is looked at again.
    for _ in 0..MAX_SYMLINKS {
        let stat = match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => stat,
            Err(Errno::NOENT) => return Ok(Final::Entry(Entry::Missing)),
            Err(e) => return Err(e.into()),
        };
        match FileType::from_raw_mode(stat.st_mode) {
            FileType::Symlink => match read_link(dir, name)? {
                Some(target) => return Ok(Final::Link(target)),
                None => continue,
            },
            FileType::Directory => match open_dir(dir, name) {
                Ok(opened) => return Ok(Final::Dir(opened)),
                Err(e) if swapped(&e) => continue,
                Err(e) => return Err(e.into()),
            },
            FileType::RegularFile => match open_file(dir, name) {
                Ok(file) => {
                    let kind = FileType::from_raw_mode(rustix::fs::fstat(&file)?.st_mode);
                    return Ok(Final::Entry(match kind {
                        FileType::RegularFile => Entry::File(file),
                        FileType::Directory => continue,
                        other => Entry::Other(other),
                    }));
                }
                Err(e) if swapped(&e) => continue,
                Err(e) => return Err(e.into()),
            },
            other => return Ok(Final::Entry(Entry::Other(other))),
        }
    }
    Err(Refusal::TooManySymlinks)
}

/// Puts a symlink's target in front of what is left to resolve.
fn expand(
    root: &Root,
    target: &Path,
    levels: &mut Vec<Level>,
    pending: &mut VecDeque<OsString>,
    links: usize,
) -> Result<(), Refusal> {
    if links > MAX_SYMLINKS {
        return Err(Refusal::TooManySymlinks);
    }
    let relative = if target.is_absolute() {
        // An absolute link is followed only when it names a place inside the root.
        let Ok(rest) = target.strip_prefix(&root.path) else {
            return Err(Refusal::SymlinkOut(target.to_path_buf()));
        };
        levels.truncate(1);
        rest
    } else {
        target
    };
    let names: Vec<OsString> = relative
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_os_string()),
            Component::ParentDir => Some(OsString::from("..")),
            _ => None,
        })
        .collect();
    for name in names.into_iter().rev() {
        pending.push_front(name);
    }
    Ok(())
}

/// The target of `name` in `dir` if it is a symlink.
fn read_link(dir: &File, name: &OsStr) -> Result<Option<PathBuf>, Refusal> {
    match rustix::fs::readlinkat(dir, name, Vec::new()) {
        Ok(target) => Ok(Some(PathBuf::from(OsStr::from_bytes(target.as_bytes())))),
        Err(Errno::INVAL) | Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Whether an open with `O_NOFOLLOW` met a symlink (Linux and macOS say `ELOOP`,
/// FreeBSD `EMLINK`) or a non-folder where a folder was expected.
fn swapped(e: &io::Error) -> bool {
    let raw = e.raw_os_error();
    raw == Some(Errno::LOOP.raw_os_error())
        || raw == Some(Errno::MLINK.raw_os_error())
        || raw == Some(Errno::NOTDIR.raw_os_error())
}

fn is_not_a_dir(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::NOTDIR.raw_os_error())
}

fn level(dir: File, name: OsString) -> io::Result<Level> {
    let meta = dir.metadata()?;
    Ok(Level {
        dir: Arc::new(dir),
        name,
        id: (meta.dev(), meta.ino()),
    })
}

/// Opens the folder `name` in `dir`, never through a symlink (and never waiting on
/// something that is not a folder).
pub fn open_dir<Fd: rustix::fd::AsFd, P: rustix::path::Arg>(dir: Fd, name: P) -> io::Result<File> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok(File::from(fd))
}

/// Opens the file `name` in `dir` for reading, never through a symlink and without
/// blocking (a FIFO swapped in opens at once and is then refused by its type).
pub fn open_file<P: rustix::path::Arg>(dir: &File, name: P) -> io::Result<File> {
    let fd = rustix::fs::openat(
        dir,
        name,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    Ok(File::from(fd))
}

/// Creates the folders `names` under `dir` (outermost first) and opens the innermost.
pub fn create_dirs(dir: &Arc<File>, names: &[OsString]) -> io::Result<Arc<File>> {
    let mut current = dir.clone();
    for name in names {
        match rustix::fs::mkdirat(&*current, name.as_os_str(), Mode::from_raw_mode(0o777)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        current = Arc::new(open_dir(&*current, name.as_os_str())?);
    }
    Ok(current)
}

/// A short word for a file type in messages.
pub fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice => "a character device",
        FileType::BlockDevice => "a block device",
        FileType::Symlink => "a symlink",
        FileType::Directory => "a folder",
        FileType::RegularFile => "a file",
        _ => "not a regular file",
    }
}
