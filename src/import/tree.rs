//! The files an import makes, held in memory until every one is known, then written
//! beneath the destination folder: each path is checked to be plain names (no `..`, no
//! absolute path), folders are created and files opened one component at a time
//! relative to the folder above, never through a symlink that leads out, and a file is
//! created only where none is, unless replacing was asked for.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write as _;
use std::path::Path;

use anyhow::{Context as _, bail};
use rustix::fs::{Mode, OFlags};

use crate::tools::beneath::{self, Entry, Refusal, Root};

/// Relative path (with `/`) → contents.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Tree {
    files: BTreeMap<String, Vec<u8>>,
    /// The files written executable (a server's program, a skill's script).
    executable: std::collections::BTreeSet<String>,
}

/// Whether `path` is a relative path of plain names eve may write.
fn is_plain(path: &str) -> bool {
    !path.is_empty()
        && path
            .split('/')
            .all(|name| !name.is_empty() && name != "." && name != ".." && !name.contains('\0'))
}

impl Tree {
    /// Adds a file. A path that is not plain names is a bug of the import, refused here
    /// too, so that no name from an imported file can lead a write elsewhere.
    pub fn add(&mut self, path: &str, contents: impl Into<Vec<u8>>) -> anyhow::Result<()> {
        if !is_plain(path) {
            bail!("refusing to write `{path}`: not a path inside the agent directory");
        }
        self.files.insert(path.to_string(), contents.into());
        self.executable.remove(path);
        Ok(())
    }

    /// Adds a file, executable when `executable` (as the file it copies was).
    pub fn add_copy(
        &mut self,
        path: &str,
        contents: impl Into<Vec<u8>>,
        executable: bool,
    ) -> anyhow::Result<()> {
        self.add(path, contents)?;
        if executable {
            self.executable.insert(path.to_string());
        }
        Ok(())
    }

    /// Whether a file is planned at `path`.
    pub fn has(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    /// Whether a file is planned below the folder `dir`.
    pub fn has_below(&self, dir: &str) -> bool {
        let prefix = format!("{dir}/");
        self.files
            .range(prefix.clone()..)
            .next()
            .is_some_and(|(p, _)| p.starts_with(&prefix))
    }

    /// Whether nothing is planned.
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Every file, by path.
    pub fn files(&self) -> impl Iterator<Item = (&str, &[u8])> {
        self.files.iter().map(|(p, c)| (p.as_str(), c.as_slice()))
    }

    /// The paths of the files that already exist beneath `dir`.
    pub fn existing(&self, dir: &Path) -> anyhow::Result<Vec<String>> {
        let root = open_root(dir)?;
        let mut found = Vec::new();
        for path in self.files.keys() {
            match beneath::resolve(&root, &names(path)) {
                Ok(f) if matches!(f.entry, Entry::Missing) => {}
                Ok(_) => found.push(path.clone()),
                Err(refusal) => bail!("{}", refused(dir, path, refusal)),
            }
        }
        Ok(found)
    }

    /// Writes every file beneath `dir` (which exists). A file already there is replaced
    /// only when `replace` is set; a folder, a special file or a symlink that leads out
    /// of `dir` is never written through.
    pub fn write(&self, dir: &Path, replace: bool) -> anyhow::Result<()> {
        let root = open_root(dir)?;
        for (path, contents) in &self.files {
            let found = beneath::resolve(&root, &names(path))
                .map_err(|r| anyhow::anyhow!("{}", refused(dir, path, r)))?;
            let Some(name) = &found.name else {
                bail!("cannot write `{path}`: a folder is there");
            };
            match found.entry {
                Entry::Missing => {}
                Entry::File(_) if replace => {
                    rustix::fs::unlinkat(
                        &*found.parent().dir,
                        name.as_os_str(),
                        rustix::fs::AtFlags::empty(),
                    )
                    .with_context(|| format!("cannot replace `{path}`"))?;
                }
                Entry::File(_) => bail!("`{path}` exists"),
                Entry::Dir => bail!("cannot write `{path}`: a folder is there"),
                Entry::Other(kind) => {
                    bail!(
                        "cannot write `{path}`: {} is there",
                        beneath::describe(kind)
                    )
                }
            }
            let parent = beneath::create_dirs(&found.parent().dir, &found.missing)
                .with_context(|| format!("cannot create the folders of `{path}`"))?;
            let fd = rustix::fs::openat(
                &*parent,
                name.as_os_str(),
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                Mode::from_raw_mode(if self.executable.contains(path) {
                    0o755
                } else {
                    0o644
                }),
            )
            .with_context(|| format!("cannot create `{path}`"))?;
            std::fs::File::from(fd)
                .write_all(contents)
                .with_context(|| format!("cannot write `{path}`"))?;
        }
        Ok(())
    }
}

fn open_root(dir: &Path) -> anyhow::Result<Root> {
    let real =
        std::fs::canonicalize(dir).with_context(|| format!("cannot open `{}`", dir.display()))?;
    Root::open(&real).with_context(|| format!("cannot open `{}`", dir.display()))
}

fn names(path: &str) -> Vec<OsString> {
    path.split('/').map(OsString::from).collect()
}

fn refused(dir: &Path, path: &str, refusal: Refusal) -> String {
    let at = dir.join(path);
    match refusal {
        Refusal::SymlinkOut(link) => format!(
            "refusing to write `{}`: a symbolic link on the way leads outside `{}` (to `{}`)",
            at.display(),
            dir.display(),
            link.display()
        ),
        Refusal::TooManySymlinks => format!(
            "refusing to write `{}`: too many symbolic links on the way",
            at.display()
        ),
        Refusal::NotAFolder(part) => format!(
            "cannot write `{}`: `{}` is a file, not a folder",
            at.display(),
            part.display()
        ),
        Refusal::Io(e) => format!("cannot write `{}`: {e}", at.display()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_paths_are_taken() {
        let mut tree = Tree::default();
        for bad in ["", "/etc/x", "a/../b", "../x", "a//b", "./a", "a/\0"] {
            assert!(tree.add(bad, "x").is_err(), "{bad:?}");
        }
        tree.add("skills/a/SKILL.md", "x").unwrap();
        assert_eq!(tree.files().count(), 1);
    }

    #[test]
    fn a_symlink_in_the_destination_is_not_written_through() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("skills")).unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("agent.toml"),
            dir.path().join("agent.toml"),
        )
        .unwrap();
        let mut tree = Tree::default();
        tree.add("skills/x/SKILL.md", "planted").unwrap();
        let error = tree.write(dir.path(), true).unwrap_err().to_string();
        assert!(error.contains("leads outside"), "{error}");
        let mut tree = Tree::default();
        tree.add("agent.toml", "planted").unwrap();
        let error = tree.write(dir.path(), true).unwrap_err().to_string();
        assert!(error.contains("leads outside"), "{error}");
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_copied_program_stays_executable() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let mut tree = Tree::default();
        tree.add_copy("bin/server", "#!/bin/sh\n", true).unwrap();
        tree.add_copy("bin/README", "x", false).unwrap();
        assert!(tree.has("bin/server") && tree.has_below("bin") && !tree.has_below("bi"));
        tree.write(dir.path(), false).unwrap();
        let mode = |p: &str| {
            std::fs::metadata(dir.path().join(p))
                .unwrap()
                .permissions()
                .mode()
        };
        assert_ne!(mode("bin/server") & 0o111, 0);
        assert_eq!(mode("bin/README") & 0o111, 0);
    }

    #[test]
    fn an_existing_file_is_replaced_only_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("agent.toml"), "mine").unwrap();
        let mut tree = Tree::default();
        tree.add("agent.toml", "new").unwrap();
        tree.add("subagents/a/agent.toml", "sub").unwrap();
        assert_eq!(tree.existing(dir.path()).unwrap(), ["agent.toml"]);
        assert!(tree.write(dir.path(), false).is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("agent.toml")).unwrap(),
            "mine"
        );
        tree.write(dir.path(), true).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("agent.toml")).unwrap(),
            "new"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("subagents/a/agent.toml")).unwrap(),
            "sub"
        );
    }
}
