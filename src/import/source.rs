//! The folder being imported, read as hostile input: every path is resolved beneath its
//! root one component at a time (a symbolic link is followed only while it stays inside,
//! never through a swap), only regular files are read, and each file and the import as
//! a whole are size-capped.

use std::ffi::OsString;
use std::io::Read as _;
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::tools::beneath::{self, Entry, Refusal, Root};

/// The largest file the import copies (a skill's resource: a PDF, an image).
pub const MAX_COPIED_BYTES: u64 = 16 * 1024 * 1024;
/// The most the import reads in all.
pub const MAX_TOTAL_BYTES: u64 = 256 * 1024 * 1024;
/// The most entries the import looks at in all.
pub const MAX_ENTRIES: usize = 20_000;

/// What a path of the source names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    Missing,
    File,
    /// A folder, with its device and inode (to see a folder reached twice).
    Dir((u64, u64)),
    /// A symbolic link that leads outside the folder, or loops; why.
    Refused(String),
    /// A FIFO, socket or device.
    Special(&'static str),
}

/// The folder being imported.
#[derive(Debug)]
pub struct Source {
    root: Root,
    /// How the person named it, for messages.
    pub shown: String,
    read: std::cell::Cell<u64>,
    looked: std::cell::Cell<usize>,
}

impl Source {
    /// Opens the folder at `path` (links in the path itself are the person's and are
    /// followed; links inside it are checked at each use).
    pub fn open(path: &Path) -> anyhow::Result<Source> {
        let real = std::fs::canonicalize(path)
            .with_context(|| format!("cannot open `{}`", path.display()))?;
        let root =
            Root::open(&real).with_context(|| format!("cannot open `{}`", path.display()))?;
        Ok(Source {
            root,
            shown: path.display().to_string(),
            read: std::cell::Cell::new(0),
            looked: std::cell::Cell::new(0),
        })
    }

    /// The real path of the folder.
    pub fn path(&self) -> &Path {
        &self.root.path
    }

    fn resolve(&self, rel: &str) -> Result<beneath::Found, String> {
        self.looked.set(self.looked.get() + 1);
        if self.looked.get() > MAX_ENTRIES {
            return Err(format!("more than {MAX_ENTRIES} entries: not read"));
        }
        let names: Vec<OsString> = rel
            .split('/')
            .filter(|n| !n.is_empty())
            .map(OsString::from)
            .collect();
        beneath::resolve(&self.root, &names).map_err(|r| match r {
            Refusal::SymlinkOut(link) => format!(
                "a symbolic link leads outside the imported folder (to `{}`)",
                link.display()
            ),
            Refusal::TooManySymlinks => "too many symbolic links (a loop?)".to_string(),
            Refusal::NotAFolder(at) => format!("`{}` is not a folder", at.display()),
            Refusal::Io(e) => format!("cannot read: {e}"),
        })
    }

    /// What `rel` (a `/`-separated path inside the folder; `""` is the folder) names.
    pub fn kind(&self, rel: &str) -> Kind {
        match self.resolve(rel) {
            Err(why) => Kind::Refused(why),
            Ok(found) => match found.entry {
                Entry::Missing => Kind::Missing,
                Entry::File(_) => Kind::File,
                Entry::Dir => Kind::Dir(found.levels[found.levels.len() - 1].id),
                Entry::Other(kind) => Kind::Special(beneath::describe(kind)),
            },
        }
    }

    /// The folder `rel` as a source of its own: what is read through it stays beneath
    /// that folder (a link inside leading back up to its parent is refused). The folder
    /// is the one resolved beneath this source, held open: never looked up again by path.
    pub fn sub(&self, rel: &str) -> Result<Source, String> {
        let found = self.resolve(rel)?;
        match found.entry {
            Entry::Dir => {}
            Entry::Missing => return Err("does not exist".into()),
            Entry::File(_) => return Err("is a file, not a folder".into()),
            Entry::Other(kind) => return Err(format!("is {}", beneath::describe(kind))),
        }
        let level = found.levels[found.levels.len() - 1].clone();
        Ok(Source {
            root: Root {
                path: found.path(&self.root.path),
                level: beneath::Level {
                    name: OsString::new(),
                    ..level
                },
            },
            shown: if rel.is_empty() {
                self.shown.clone()
            } else {
                format!("{}/{rel}", self.shown.trim_end_matches('/'))
            },
            read: std::cell::Cell::new(self.read.get()),
            looked: std::cell::Cell::new(self.looked.get()),
        })
    }

    /// The bytes of the regular file `rel`, at most `max` of them.
    pub fn read(&self, rel: &str, max: u64) -> Result<Vec<u8>, String> {
        self.read_file(rel, max).map(|(bytes, _)| bytes)
    }

    /// The bytes of the regular file `rel`, at most `max` of them, and whether it is
    /// executable (a server's program keeps that when it is copied).
    pub fn read_file(&self, rel: &str, max: u64) -> Result<(Vec<u8>, bool), String> {
        use std::os::unix::fs::PermissionsExt as _;
        let found = self.resolve(rel)?;
        let file = match found.entry {
            Entry::File(file) => file,
            Entry::Missing => return Err("does not exist".into()),
            Entry::Dir => return Err("is a folder".into()),
            Entry::Other(kind) => return Err(format!("is {}", beneath::describe(kind))),
        };
        let meta = file.metadata().map_err(|e| format!("cannot read: {e}"))?;
        let (size, executable) = (meta.len(), meta.permissions().mode() & 0o111 != 0);
        if size > max {
            return Err(format!("is too large ({size} bytes; the limit is {max})"));
        }
        if self.read.get() + size > MAX_TOTAL_BYTES {
            return Err(format!(
                "not read: the import reads at most {MAX_TOTAL_BYTES} bytes in all"
            ));
        }
        let mut bytes = Vec::with_capacity(size as usize);
        file.take(max + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read: {e}"))?;
        if bytes.len() as u64 > max {
            return Err(format!("is too large (over {max} bytes)"));
        }
        self.read.set(self.read.get() + bytes.len() as u64);
        Ok((bytes, executable))
    }

    /// The UTF-8 text of `rel`, at most [`crate::textfile::MAX_FILE_BYTES`] (what eve
    /// reads of any file it builds from).
    pub fn read_text(&self, rel: &str) -> Result<String, String> {
        let bytes = self.read(rel, crate::textfile::MAX_FILE_BYTES)?;
        String::from_utf8(bytes).map_err(|_| "is not UTF-8 text".to_string())
    }

    /// The names in the folder `rel`, sorted; names that are not UTF-8, or hold a line
    /// break or a control character, come back apart (they cannot be written down safely).
    pub fn list(&self, rel: &str) -> Result<Listing, String> {
        let found = self.resolve(rel)?;
        if !matches!(found.entry, Entry::Dir) {
            return Err("is not a folder".into());
        }
        let dir = &found.levels[found.levels.len() - 1].dir;
        let entries =
            rustix::fs::Dir::read_from(&**dir).map_err(|e| format!("cannot list: {e}"))?;
        let mut listing = Listing::default();
        for entry in entries {
            let entry = entry.map_err(|e| format!("cannot list: {e}"))?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            match std::str::from_utf8(name) {
                Ok(text) if !text.chars().any(char::is_control) => {
                    listing.names.push(text.to_string())
                }
                _ => listing
                    .unreadable
                    .push(PathBuf::from(std::ffi::OsStr::from_bytes(name))),
            }
            if listing.names.len() + listing.unreadable.len() > MAX_ENTRIES {
                return Err(format!("holds more than {MAX_ENTRIES} entries"));
            }
        }
        listing.names.sort();
        Ok(listing)
    }
}

/// The entries of a folder.
#[derive(Debug, Default)]
pub struct Listing {
    pub names: Vec<String>,
    pub unreadable: Vec<PathBuf>,
}

/// `a/b` from `a` and `b` (`b` alone when `a` is the root).
pub fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn links_are_followed_only_inside_and_specials_are_not_read() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "key").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("skills")).unwrap();
        std::fs::write(dir.path().join("skills/a.md"), "a").unwrap();
        let link = |target: &Path, name: &str| {
            std::os::unix::fs::symlink(target, dir.path().join(name)).unwrap()
        };
        link(&outside.path().join("secret"), "skills/out.md");
        link(outside.path(), "skills/outdir");
        link(Path::new("a.md"), "skills/in.md");
        link(Path::new("../../.."), "skills/up");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            dir.path().join("skills/fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
            0,
        )
        .unwrap();
        let source = Source::open(dir.path()).unwrap();
        assert_eq!(source.read("skills/in.md", 10).unwrap(), b"a");
        assert!(matches!(source.kind("skills/out.md"), Kind::Refused(_)));
        assert!(
            source
                .read("skills/out.md", 10)
                .unwrap_err()
                .contains("outside")
        );
        assert!(matches!(source.kind("skills/outdir"), Kind::Refused(_)));
        assert!(source.list("skills/outdir").is_err());
        assert!(matches!(source.kind("skills/up"), Kind::Refused(_)));
        assert_eq!(
            source.kind("skills/fifo"),
            Kind::Special("a FIFO (named pipe)")
        );
        assert!(source.read("skills/fifo", 10).is_err());
        assert!(
            source
                .read("skills/a.md", 0)
                .unwrap_err()
                .contains("too large")
        );
        assert_eq!(
            source.list("skills").unwrap().names,
            ["a.md", "fifo", "in.md", "out.md", "outdir", "up"]
        );
    }

    #[test]
    fn a_sub_folder_is_a_source_that_nothing_leaves() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("plugins/a/bin")).unwrap();
        std::fs::create_dir_all(dir.path().join("plugins/b")).unwrap();
        std::fs::write(dir.path().join("plugins/b/secret"), "b's").unwrap();
        std::fs::write(dir.path().join("plugins/a/bin/run"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(
            dir.path().join("plugins/a/bin/run"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::os::unix::fs::symlink("../b/secret", dir.path().join("plugins/a/peek")).unwrap();
        std::os::unix::fs::symlink(
            dir.path().join("plugins/b"),
            dir.path().join("plugins/a/abs"),
        )
        .unwrap();
        let market = Source::open(dir.path()).unwrap();
        // Inside the marketplace, the link is followed; inside the plugin, it leads out.
        assert_eq!(market.read("plugins/a/peek", 10).unwrap(), b"b's");
        let plugin = market.sub("plugins/a").unwrap();
        assert!(plugin.read("peek", 10).unwrap_err().contains("outside"));
        assert!(matches!(plugin.kind("abs"), Kind::Refused(_)));
        assert_eq!(
            plugin.read_file("bin/run", 100).unwrap(),
            (b"#!/bin/sh\n".to_vec(), true)
        );
        assert_eq!(
            plugin.path(),
            dir.path().canonicalize().unwrap().join("plugins/a")
        );
        assert!(market.sub("plugins/a/bin/run").is_err());
        assert!(market.sub("nowhere").is_err());
    }
}
