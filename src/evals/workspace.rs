//! A case's workspace: a fresh temporary folder per run, made from the case's `from`
//! folder and files; and reading its files afterwards without ever following a link,
//! so a model cannot make an expectation read a file outside it.

use std::fs::File;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use crate::manifest::eval::Workspace;

/// Files larger than this are not compared.
pub const MAX_COMPARED_BYTES: u64 = 8 * 1024 * 1024;

/// Makes a new temporary workspace for one run of a case.
pub fn create(spec: &Workspace) -> Result<tempfile::TempDir, String> {
    let dir = tempfile::Builder::new()
        .prefix("eve-eval-")
        .tempdir()
        .map_err(|e| format!("cannot create a temporary workspace: {e}"))?;
    let root = dir.path().to_path_buf();
    if let Some(from) = &spec.from {
        copy_folder(from, &root)?;
    }
    for (path, text) in &spec.files {
        let target = root.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create the folder of `{path}`: {e}"))?;
        }
        std::fs::write(&target, text).map_err(|e| format!("cannot write `{path}`: {e}"))?;
    }
    Ok(dir)
}

/// Copies `from` into `to`, following the links that stay inside `from` (their targets
/// are copied) and refusing any other: the build refused them already, and a link made
/// since must not carry a file from elsewhere into the workspace.
fn copy_folder(from: &Path, to: &Path) -> Result<(), String> {
    let shown = from.display();
    let mut escaped: Option<PathBuf> = None;
    let walk = walkdir::WalkDir::new(from)
        .follow_links(true)
        .into_iter()
        .filter_entry(|e| {
            let leads_out = e.path_is_symlink()
                && !e
                    .path()
                    .canonicalize()
                    .is_ok_and(|target| target.starts_with(from));
            if leads_out {
                escaped = Some(e.path().to_path_buf());
            }
            !leads_out
        });
    for entry in walk {
        let entry =
            entry.map_err(|e| format!("cannot copy the workspace folder `{shown}`: {e}"))?;
        let Ok(inner) = entry.path().strip_prefix(from) else {
            continue;
        };
        let target = to.join(inner);
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target)
                .map_err(|e| format!("cannot copy `{}`: {e}", entry.path().display()))?;
        } else if entry.file_type().is_file() {
            std::fs::copy(entry.path(), &target)
                .map_err(|e| format!("cannot copy `{}`: {e}", entry.path().display()))?;
        }
    }
    match escaped {
        Some(link) => Err(format!(
            "the workspace folder holds `{}`, a symbolic link that leads out of it",
            link.display()
        )),
        None => Ok(()),
    }
}

/// A workspace file as an expectation sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileState {
    Missing,
    /// A regular file's contents (lossily decoded when not UTF-8).
    Text(String),
    /// Something that is not read: a folder, a link, a device, a file too large.
    Unreadable(String),
}

/// Why `rel` names no file inside a workspace, if it does not: it leaves it (`..`, an
/// absolute path) or names the workspace itself. An expectation on such a path can
/// never hold.
pub fn outside(rel: &str) -> Option<&'static str> {
    let mut names = 0;
    for component in Path::new(rel).components() {
        match component {
            Component::Normal(_) => names += 1,
            Component::CurDir => {}
            _ => return Some("the path leaves the workspace"),
        }
    }
    (names == 0).then_some("the path names the workspace itself")
}

/// Reads `rel` inside `root` without following a symbolic link anywhere on the way.
pub fn read(root: &Path, rel: &str) -> FileState {
    if let Some(why) = outside(rel) {
        return FileState::Unreadable(why.into());
    }
    let mut parts: Vec<_> = Path::new(rel)
        .components()
        .filter_map(|c| match c {
            Component::Normal(part) => Some(part.to_os_string()),
            _ => None,
        })
        .collect();
    let Some(name) = parts.pop() else {
        return FileState::Unreadable("the path names the workspace itself".into());
    };
    match open_beneath(root, &parts, &name) {
        Ok(Some(file)) => read_capped(file),
        Ok(None) => FileState::Missing,
        Err(why) => FileState::Unreadable(why),
    }
}

fn read_capped(file: File) -> FileState {
    let mut bytes = Vec::new();
    match file.take(MAX_COMPARED_BYTES + 1).read_to_end(&mut bytes) {
        Ok(_) if bytes.len() as u64 > MAX_COMPARED_BYTES => FileState::Unreadable(format!(
            "it is larger than {} MiB and is not compared",
            MAX_COMPARED_BYTES / 1024 / 1024
        )),
        Ok(_) => FileState::Text(String::from_utf8_lossy(&bytes).into_owned()),
        Err(e) => FileState::Unreadable(format!("cannot read it: {e}")),
    }
}

#[cfg(unix)]
fn open_beneath(
    root: &Path,
    dirs: &[std::ffi::OsString],
    name: &std::ffi::OsStr,
) -> Result<Option<File>, String> {
    use std::ffi::CString;
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::ffi::OsStrExt;

    let c_name = |part: &std::ffi::OsStr| {
        CString::new(part.as_bytes()).map_err(|_| "the path holds a NUL byte".to_string())
    };
    let open_at = |dir: &OwnedFd, part: &std::ffi::OsStr, flags: libc::c_int| {
        let part = CString::new(part.as_bytes())
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
        // SAFETY: openat reads a NUL-terminated path and a descriptor this function owns;
        // the descriptor it returns is owned by the OwnedFd made from it.
        let fd = unsafe { libc::openat(dir.as_raw_fd(), part.as_ptr(), flags | libc::O_CLOEXEC) };
        if fd < 0 {
            Err(std::io::Error::last_os_error())
        } else {
            // SAFETY: fd is a new descriptor nothing else owns.
            Ok(unsafe { OwnedFd::from_raw_fd(fd) })
        }
    };
    let mut dir: OwnedFd = File::open(root)
        .map_err(|e| format!("cannot open the workspace: {e}"))?
        .into();
    for part in dirs {
        match open_at(
            &dir,
            part,
            libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW,
        ) {
            Ok(next) => dir = next,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
            Err(e) if matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)) => {
                return Err(format!(
                    "`{}` on the way is a symbolic link or not a folder, and eve does not follow links in a workspace",
                    part.to_string_lossy()
                ));
            }
            Err(e) => return Err(format!("cannot open `{}`: {e}", part.to_string_lossy())),
        }
    }
    // Look before opening: opening a FIFO would wait for a writer, a device could act.
    let c = c_name(name)?;
    // SAFETY: a zeroed stat is a valid out-parameter for fstatat.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat writes into `stat`; the path is NUL-terminated; the descriptor is open.
    let found = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            c.as_ptr(),
            &mut stat,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if found != 0 {
        let e = std::io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOENT) => Ok(None),
            _ => Err(format!("cannot look at it: {e}")),
        };
    }
    match stat.st_mode & libc::S_IFMT {
        libc::S_IFREG => {}
        libc::S_IFLNK => {
            return Err(
                "it is a symbolic link, and eve does not follow links in a workspace".into(),
            );
        }
        libc::S_IFDIR => return Err("it is a folder".into()),
        _ => return Err("it is not a regular file".into()),
    }
    let fd = open_at(
        &dir,
        name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK,
    )
    .map_err(|e| format!("cannot open it: {e}"))?;
    let file = File::from(fd);
    match file.metadata() {
        Ok(meta) if meta.is_file() => Ok(Some(file)),
        Ok(_) => Err("it is not a regular file".into()),
        Err(e) => Err(format!("cannot look at it: {e}")),
    }
}

#[cfg(not(unix))]
fn open_beneath(
    root: &Path,
    dirs: &[std::ffi::OsString],
    name: &std::ffi::OsStr,
) -> Result<Option<File>, String> {
    let mut at = root.to_path_buf();
    for part in dirs
        .iter()
        .map(|p| p.as_os_str())
        .chain(std::iter::once(name))
    {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(meta) if meta.file_type().is_symlink() => {
                return Err(
                    "a symbolic link is on the way, and eve does not follow links in a workspace"
                        .into(),
                );
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("cannot look at it: {e}")),
        }
    }
    match std::fs::metadata(&at) {
        Ok(meta) if meta.is_file() => File::open(&at)
            .map(Some)
            .map_err(|e| format!("cannot open it: {e}")),
        Ok(_) => Err("it is not a regular file".into()),
        Err(e) => Err(format!("cannot look at it: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workspace_is_made_from_a_folder_and_files() {
        let src = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(src.path().join("sub")).unwrap();
        std::fs::write(src.path().join("sub/a.txt"), "from the folder").unwrap();
        std::fs::write(src.path().join("b.txt"), "replaced").unwrap();
        let spec = Workspace {
            from: Some(src.path().canonicalize().unwrap()),
            files: [
                ("b.txt".to_string(), "written".to_string()),
                ("new/c.txt".into(), "c".into()),
            ]
            .into_iter()
            .collect(),
        };
        let dir = create(&spec).unwrap();
        assert_eq!(
            read(dir.path(), "sub/a.txt"),
            FileState::Text("from the folder".into())
        );
        assert_eq!(read(dir.path(), "b.txt"), FileState::Text("written".into()));
        assert_eq!(read(dir.path(), "new/c.txt"), FileState::Text("c".into()));
        assert_eq!(read(dir.path(), "nope.txt"), FileState::Missing);
        assert_eq!(read(dir.path(), "nope/x.txt"), FileState::Missing);
        assert!(matches!(read(dir.path(), "sub"), FileState::Unreadable(_)));
    }

    #[cfg(unix)]
    #[test]
    fn links_are_never_followed_out_of_the_workspace() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "secret").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("dir")).unwrap();
        let fifo = std::ffi::CString::new(dir.path().join("fifo").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo reads a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        for rel in ["link", "dir/secret", "fifo", "../x"] {
            let state = read(dir.path(), rel);
            assert!(
                matches!(state, FileState::Unreadable(_)),
                "{rel}: {state:?}"
            );
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_with_a_link_out_is_not_copied() {
        let outside = tempfile::tempdir().unwrap();
        let src = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), src.path().join("out")).unwrap();
        let spec = Workspace {
            from: Some(src.path().canonicalize().unwrap()),
            files: Default::default(),
        };
        let err = create(&spec).unwrap_err();
        assert!(err.contains("leads out"), "{err}");
    }
}
