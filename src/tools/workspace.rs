//! The workspace guard: every path a tool takes is resolved inside the workspace.
//!
//! A path may be relative to the workspace root or absolute inside it. `..` that
//! climbs out, an absolute path elsewhere, and a symlink anywhere along the path
//! that leads out are refused, with an error that names the path and says why.

use std::io;
use std::path::{Component, Path, PathBuf};

/// Resolves `path` against the canonical workspace `root` and returns the real path
/// (symlinks resolved) of the file or folder, which may not exist yet.
pub fn resolve(root: &Path, path: &str) -> Result<PathBuf, String> {
    if path.trim().is_empty() {
        return Err("the path is empty".into());
    }
    let given = Path::new(path);
    let relative = if given.is_absolute() {
        let normal = normalize(given).ok_or_else(|| outside(path, root))?;
        match normal.strip_prefix(root) {
            Ok(rest) => rest.to_path_buf(),
            Err(_) => return Err(outside(path, root)),
        }
    } else {
        normalize(given).ok_or_else(|| {
            format!("`{path}` is outside the workspace: `..` climbs above the workspace root")
        })?
    };
    let joined = root.join(&relative);

    // The longest part of the path that exists, symlinks resolved, must stay inside.
    let mut existing = joined.as_path();
    let mut rest = Vec::new();
    loop {
        match std::fs::symlink_metadata(existing) {
            Ok(_) => break,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                let Some(name) = existing.file_name() else {
                    break;
                };
                rest.push(name.to_os_string());
                existing = existing.parent().unwrap_or(root);
            }
            Err(e) => return Err(format!("`{path}`: {e}")),
        }
    }
    let real = match existing.canonicalize() {
        Ok(real) => real,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(format!(
                "`{path}` goes through a symlink whose target does not exist"
            ));
        }
        Err(e) => return Err(format!("`{path}`: {e}")),
    };
    if !real.starts_with(root) {
        return Err(format!(
            "`{path}` is outside the workspace: a symlink leads to `{}`",
            real.display()
        ));
    }
    let mut resolved = real;
    for name in rest.into_iter().rev() {
        resolved.push(name);
    }
    Ok(resolved)
}

fn outside(path: &str, root: &Path) -> String {
    format!(
        "`{path}` is outside the workspace `{}`; use a path inside it",
        root.display()
    )
}

/// Resolves `.` and `..` without touching the file system; `None` when `..` climbs
/// above the start (or above `/` for an absolute path).
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    let mut depth = 0usize;
    for component in path.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return None;
                }
                out.pop();
                depth -= 1;
            }
            Component::Normal(name) => {
                out.push(name);
                depth += 1;
            }
        }
    }
    Some(out)
}

/// `path` relative to the workspace root, with `/` separators, for messages to the model.
pub fn display(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    let text = relative.to_string_lossy().replace('\\', "/");
    if text.is_empty() { ".".into() } else { text }
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _tmp: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
    }

    fn fixture() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        symlink(&outside, root.join("linked_dir")).unwrap();
        symlink(outside.join("secret.txt"), root.join("link_to_secret")).unwrap();
        symlink(root.join("src/main.rs"), root.join("inner_link")).unwrap();
        symlink(outside.join("missing"), root.join("dangling")).unwrap();
        Fixture {
            _tmp: tmp,
            root,
            outside,
        }
    }

    #[test]
    fn paths_inside_resolve_relative_or_absolute() {
        let f = fixture();
        assert_eq!(
            resolve(&f.root, "src/main.rs").unwrap(),
            f.root.join("src/main.rs")
        );
        assert_eq!(
            resolve(&f.root, "./src/../src/main.rs").unwrap(),
            f.root.join("src/main.rs")
        );
        let absolute = f.root.join("src/main.rs");
        assert_eq!(
            resolve(&f.root, absolute.to_str().unwrap()).unwrap(),
            absolute
        );
        assert_eq!(
            resolve(&f.root, "new/dir/file.txt").unwrap(),
            f.root.join("new/dir/file.txt")
        );
        assert_eq!(resolve(&f.root, ".").unwrap(), f.root);
        // A symlink that stays inside is followed.
        assert_eq!(
            resolve(&f.root, "inner_link").unwrap(),
            f.root.join("src/main.rs")
        );
    }

    #[test]
    fn climbing_out_with_dot_dot_is_refused() {
        let f = fixture();
        let err = resolve(&f.root, "../../etc/passwd").unwrap_err();
        assert_eq!(
            err,
            "`../../etc/passwd` is outside the workspace: `..` climbs above the workspace root"
        );
        assert!(resolve(&f.root, "src/../../outside/secret.txt").is_err());
        assert!(resolve(&f.root, "").is_err());
    }

    #[test]
    fn absolute_paths_elsewhere_are_refused() {
        let f = fixture();
        let err = resolve(&f.root, "/etc/passwd").unwrap_err();
        assert!(
            err.starts_with("`/etc/passwd` is outside the workspace"),
            "{err}"
        );
        let sneaky = format!("{}/../outside/secret.txt", f.root.display());
        assert!(resolve(&f.root, &sneaky).is_err());
        let sibling = f.outside.join("secret.txt");
        assert!(resolve(&f.root, sibling.to_str().unwrap()).is_err());
    }

    #[test]
    fn symlinks_that_lead_out_are_refused_at_any_component() {
        let f = fixture();
        let err = resolve(&f.root, "link_to_secret").unwrap_err();
        assert!(err.contains("a symlink leads to"), "{err}");
        // A symlinked parent folder, for a file that exists and one that does not.
        assert!(resolve(&f.root, "linked_dir/secret.txt").is_err());
        assert!(resolve(&f.root, "linked_dir/new.txt").is_err());
        assert!(resolve(&f.root, "linked_dir/a/b/c.txt").is_err());
        let err = resolve(&f.root, "dangling").unwrap_err();
        assert!(err.contains("does not exist"), "{err}");
    }

    #[test]
    fn display_is_relative_to_the_root() {
        let f = fixture();
        assert_eq!(display(&f.root, &f.root.join("src/main.rs")), "src/main.rs");
        assert_eq!(display(&f.root, &f.root), ".");
    }
}
