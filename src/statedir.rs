//! eve's own folder of an agent directory (`.eve/` and the folders in it), opened and
//! created beneath the agent directory without following a symbolic link.
//!
//! An agent directory comes from somewhere — a clone, an archive, a workspace a model
//! wrote to — and whoever made it can plant `.eve -> ~/.ssh` or `.eve/sessions ->
//! /elsewhere`. Every file eve writes there (the manifest, the build cache, session
//! logs, the review's records, connection logs and listings, eval artifacts, dev
//! history) goes through a [`StateDir`]: each folder is opened relative to the one above
//! with `O_NOFOLLOW | O_DIRECTORY`, so a link is refused, not followed, and what was
//! checked is what is written to; files in it are opened with `O_NOFOLLOW` too, and
//! replaced by a rename, never written through a link planted at their name.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

/// The name of eve's folder in an agent directory.
pub const NAME: &str = ".eve";

/// One of eve's folders in an agent directory, held open.
#[derive(Debug)]
pub struct StateDir {
    /// The agent directory's path joined with the folder's names, for messages and for
    /// what takes a path.
    path: PathBuf,
    dir: File,
}

/// Opens `.eve/<sub…>` of `agent_dir` if it exists (`None` when a part is missing). A
/// part that is a link, or anything but a folder, is an error naming it.
pub fn open(agent_dir: &Path, sub: &[&str]) -> io::Result<Option<StateDir>> {
    walk(agent_dir, sub, false)
}

/// Opens `.eve/<sub…>` of `agent_dir`, creating the folders that are missing. A part
/// that is a link, or anything but a folder, is an error naming it.
pub fn create(agent_dir: &Path, sub: &[&str]) -> io::Result<StateDir> {
    walk(agent_dir, sub, true)?.ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
}

fn walk(agent_dir: &Path, sub: &[&str], create: bool) -> io::Result<Option<StateDir>> {
    // The agent directory itself is the person's choice, a link to it included.
    let mut dir = match rustix::fs::openat(
        rustix::fs::CWD,
        agent_dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(dir) => File::from(dir),
        // Nothing to open where there is no agent directory: the caller says what is
        // missing in its own words (`no session … in …`).
        Err(Errno::NOENT) if !create => return Ok(None),
        Err(e) => return Err(at(agent_dir, e.into())),
    };
    let mut path = agent_dir.to_path_buf();
    for name in std::iter::once(NAME).chain(sub.iter().copied()) {
        plain(name)?;
        path.push(name);
        match folder(&dir, name, &path, create)? {
            Some(opened) => dir = opened,
            None => return Ok(None),
        }
    }
    Ok(Some(StateDir { path, dir }))
}

/// The folder `name` in `parent`, never through a link; created when `create` says so.
fn folder(parent: &File, name: &str, path: &Path, create: bool) -> io::Result<Option<File>> {
    let mut made = false;
    loop {
        match rustix::fs::openat(
            parent,
            name,
            OFlags::RDONLY
                | OFlags::DIRECTORY
                | OFlags::NOFOLLOW
                | OFlags::NONBLOCK
                | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => return Ok(Some(File::from(fd))),
            Err(Errno::NOENT) if create && !made => {
                match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => made = true,
                    Err(e) => return Err(at(path, e.into())),
                }
            }
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(refusal(parent, name, path, e)),
        }
    }
}

/// Why `name` could not be opened as a folder: a link or another kind of file is named
/// as such.
fn refusal(parent: &File, name: &str, path: &Path, error: Errno) -> io::Error {
    let kind = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)
        .map(|stat| FileType::from_raw_mode(stat.st_mode));
    match kind {
        Ok(FileType::Directory) | Err(_) => at(path, error.into()),
        Ok(kind) => io::Error::other(format!(
            "`{}` is {}; eve keeps its state only in a real folder",
            path.display(),
            describe(kind)
        )),
    }
}

fn describe(kind: FileType) -> &'static str {
    match kind {
        FileType::Symlink => "a symbolic link",
        FileType::RegularFile => "a file",
        FileType::Fifo => "a FIFO (named pipe)",
        FileType::Socket => "a socket",
        FileType::CharacterDevice | FileType::BlockDevice => "a device",
        _ => "not a folder",
    }
}

fn at(path: &Path, error: io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("`{}`: {error}", path.display()))
}

/// Only a single plain name is opened in a folder: nothing that could climb out of it.
fn plain(name: &str) -> io::Result<()> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("`{name}` is not a file name eve keeps its state under"),
        ));
    }
    Ok(())
}

/// Tells apart the temporary files of one process.
static TEMPORARY: AtomicU64 = AtomicU64::new(0);

impl StateDir {
    /// The folder's path (the agent directory's as given, then `.eve/…`).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The folder `name` in this one, created if missing.
    pub fn create_dir(&self, name: &str) -> io::Result<StateDir> {
        plain(name)?;
        let path = self.path.join(name);
        let dir = folder(&self.dir, name, &path, true)?
            .ok_or_else(|| at(&path, io::Error::from(io::ErrorKind::NotFound)))?;
        Ok(StateDir { path, dir })
    }

    /// Makes the new folder `name` here: `AlreadyExists` when something has that name.
    pub fn make_dir(&self, name: &str) -> io::Result<PathBuf> {
        plain(name)?;
        let path = self.path.join(name);
        match rustix::fs::mkdirat(&self.dir, name, Mode::from_raw_mode(0o777)) {
            Ok(()) => Ok(path),
            Err(Errno::EXIST) => Err(io::Error::from(io::ErrorKind::AlreadyExists)),
            Err(e) => Err(at(&path, e.into())),
        }
    }

    /// The names in this folder that are UTF-8 (eve names its files so), in no order.
    pub fn names(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in rustix::fs::Dir::read_from(&self.dir).map_err(|e| at(&self.path, e.into()))? {
            let entry = entry.map_err(|e| at(&self.path, e.into()))?;
            if let Ok(name) = entry.file_name().to_str()
                && name != "."
                && name != ".."
            {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    /// The contents of the regular file `name`, at most `limit` bytes; `None` if there is
    /// none. A link, a file of another kind (never waited on: a FIFO is not read) or a
    /// larger one is an error.
    pub fn read(&self, name: &str, limit: u64) -> io::Result<Option<Vec<u8>>> {
        plain(name)?;
        let path = self.path.join(name);
        let file = match rustix::fs::openat(
            &self.dir,
            name,
            OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => File::from(fd),
            Err(Errno::NOENT) => return Ok(None),
            Err(e) => return Err(file_refusal(&self.dir, name, &path, e)),
        };
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other(format!(
                "`{}` is not a regular file",
                path.display()
            )));
        }
        if meta.len() > limit {
            return Err(io::Error::other(format!(
                "`{}` is larger than {limit} bytes",
                path.display()
            )));
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(limit + 1).read_to_end(&mut bytes)?;
        if bytes.len() as u64 > limit {
            return Err(io::Error::other(format!(
                "`{}` is larger than {limit} bytes",
                path.display()
            )));
        }
        Ok(Some(bytes))
    }

    /// Replaces the file `name` with `bytes`: written to a new file of a name nobody could
    /// have planted a link at, then renamed over `name` (a link there is replaced, not
    /// followed). Readable by its owner only.
    pub fn write(&self, name: &str, bytes: &[u8]) -> io::Result<()> {
        plain(name)?;
        let (temporary, mut file) = self.temporary(name)?;
        let written = file
            .write_all(bytes)
            .and_then(|()| {
                rustix::fs::renameat(&self.dir, temporary.as_str(), &self.dir, name)
                    .map_err(io::Error::from)
            })
            .map_err(|e| at(&self.path.join(name), e));
        if written.is_err() {
            let _ = rustix::fs::unlinkat(&self.dir, temporary.as_str(), AtFlags::empty());
        }
        written
    }

    fn temporary(&self, name: &str) -> io::Result<(String, File)> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        for _ in 0..100 {
            let n = TEMPORARY.fetch_add(1, Ordering::Relaxed);
            let temporary = format!(".{name}.{}.{nanos}.{n}.tmp", std::process::id());
            match rustix::fs::openat(
                &self.dir,
                temporary.as_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(0o600),
            ) {
                Ok(fd) => return Ok((temporary, File::from(fd))),
                Err(Errno::EXIST) => continue,
                Err(e) => return Err(at(&self.path, e.into())),
            }
        }
        Err(at(
            &self.path,
            io::Error::from(io::ErrorKind::AlreadyExists),
        ))
    }

    /// Opens the file `name` to append to it (and read it), creating it if missing, never
    /// through a link, symbolic or hard (nor a FIFO or device: only a regular file of one
    /// name is kept open).
    pub fn append(&self, name: &str) -> io::Result<File> {
        self.open_write(name, OFlags::APPEND | OFlags::CREATE)
    }

    /// Opens the file `name` to overwrite it in place (and read it), creating it if
    /// missing. Whatever else holds the name (a link, symbolic or hard, a FIFO, a device)
    /// is removed first and a regular file of one name made in its place: nothing is
    /// written through it.
    pub fn rewrite(&self, name: &str) -> io::Result<File> {
        match self.open_write(name, OFlags::CREATE) {
            Ok(file) => Ok(file),
            Err(_) => {
                self.remove(name)?;
                self.open_write(name, OFlags::CREATE | OFlags::EXCL)
            }
        }
    }

    /// Opens the existing regular file `name` to write to it (and read it), never through
    /// a link, symbolic or hard.
    pub fn open_existing(&self, name: &str) -> io::Result<File> {
        self.open_write(name, OFlags::APPEND)
    }

    fn open_write(&self, name: &str, flags: OFlags) -> io::Result<File> {
        plain(name)?;
        let path = self.path.join(name);
        let file = rustix::fs::openat(
            &self.dir,
            name,
            // Readable too: a session log is read back through the file that was checked.
            OFlags::RDWR | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | flags,
            Mode::from_raw_mode(0o666),
        )
        .map(File::from)
        .map_err(|e| file_refusal(&self.dir, name, &path, e))?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::other(format!(
                "`{}` is not a regular file",
                path.display()
            )));
        }
        // A hard link planted at the name is the same file as one elsewhere (an archive
        // can hold one, and O_NOFOLLOW does not see it): writing to it in place would
        // write there. eve's own files have one name.
        if nlink(&meta) > 1 {
            return Err(io::Error::other(format!(
                "`{}` has other hard links (it is also a file elsewhere); eve writes its state only to files of its own",
                path.display()
            )));
        }
        Ok(file)
    }

    /// Removes the file `name`; `false` when there was none.
    pub fn remove(&self, name: &str) -> io::Result<bool> {
        plain(name)?;
        match rustix::fs::unlinkat(&self.dir, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(at(&self.path.join(name), e.into())),
        }
    }
}

fn nlink(meta: &std::fs::Metadata) -> u64 {
    std::os::unix::fs::MetadataExt::nlink(meta)
}

/// Why the file `name` could not be opened: a link is named as such.
fn file_refusal(dir: &File, name: &str, path: &Path, error: Errno) -> io::Error {
    let link = rustix::fs::statat(dir, OsStr::new(name), AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|stat| FileType::from_raw_mode(stat.st_mode) == FileType::Symlink);
    if link {
        io::Error::other(format!(
            "`{}` is a symbolic link; eve writes its state only to real files",
            path.display()
        ))
    } else {
        at(path, error.into())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn a_missing_agent_directory_holds_nothing_and_is_never_made() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("missing");
        assert!(open(&missing, &["sessions"]).unwrap().is_none());
        assert!(create(&missing, &["sessions"]).is_err());
        assert!(!missing.exists());
    }

    #[test]
    fn a_link_at_eve_or_below_is_refused_and_nothing_is_written_through_it() {
        let tmp = tempfile::tempdir().unwrap();
        let agent = tmp.path().join("agent");
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        symlink(&elsewhere, agent.join(NAME)).unwrap();
        for result in [
            open(&agent, &[]).map(|_| ()),
            create(&agent, &[]).map(|_| ()),
            create(&agent, &["sessions"]).map(|_| ()),
        ] {
            let e = result.unwrap_err().to_string();
            assert_eq!(
                e,
                format!(
                    "`{}` is a symbolic link; eve keeps its state only in a real folder",
                    agent.join(NAME).display()
                )
            );
        }
        // A link to nowhere is refused too, and not made into a folder.
        std::fs::remove_file(agent.join(NAME)).unwrap();
        symlink(tmp.path().join("missing"), agent.join(NAME)).unwrap();
        assert!(create(&agent, &[]).is_err());
        assert!(!tmp.path().join("missing").exists());
        // A real `.eve` with a linked folder in it.
        std::fs::remove_file(agent.join(NAME)).unwrap();
        std::fs::create_dir(agent.join(NAME)).unwrap();
        symlink(&elsewhere, agent.join(".eve/sessions")).unwrap();
        let e = create(&agent, &["sessions"]).unwrap_err().to_string();
        assert!(
            e.ends_with(
                ".eve/sessions` is a symbolic link; eve keeps its state only in a real folder"
            ),
            "{e}"
        );
        assert!(open(&agent, &["sessions"]).is_err());
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    }

    #[test]
    fn files_are_written_by_rename_and_never_through_a_planted_link() {
        let tmp = tempfile::tempdir().unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        let eve = create(tmp.path(), &["sessions"]).unwrap();
        symlink(&victim, eve.path().join("a.json")).unwrap();
        symlink(&victim, eve.path().join("b.jsonl")).unwrap();
        assert!(
            eve.read("a.json", 100)
                .unwrap_err()
                .to_string()
                .contains("symbolic link")
        );
        let e = eve.append("b.jsonl").unwrap_err().to_string();
        assert!(e.contains("b.jsonl` is a symbolic link"), "{e}");
        assert!(eve.open_existing("b.jsonl").is_err());
        eve.write("a.json", b"{}").unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(eve.read("a.json", 100).unwrap().unwrap(), b"{}");
        assert!(eve.read("a.json", 1).is_err(), "over the limit");
        assert_eq!(eve.read("none", 100).unwrap(), None);
        let mut names = eve.names().unwrap();
        names.sort();
        assert_eq!(names, ["a.json", "b.jsonl"], "no temporary file left");
        assert!(eve.remove("a.json").unwrap());
        assert!(!eve.remove("a.json").unwrap());
        for bad in ["", ".", "..", "../x", "a/b"] {
            assert!(eve.write(bad, b"x").is_err(), "{bad}");
            assert!(create(tmp.path(), &[bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_file_in_place_of_a_folder_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(NAME), "").unwrap();
        let e = create(tmp.path(), &[]).unwrap_err().to_string();
        assert!(
            e.ends_with(".eve` is a file; eve keeps its state only in a real folder"),
            "{e}"
        );
        assert_eq!(
            open(tempfile::tempdir().unwrap().path(), &[])
                .unwrap()
                .map(|_| ()),
            None
        );
    }
}
