//! Where the program of a command is, found before its process starts: never in a
//! folder a process of the model may write.
//!
//! A bare program name (`python3`, `npx`, `mcp-server`) is looked up in PATH. A folder
//! of PATH inside the workspace (a project's `.venv/bin` or `node_modules/.bin` put
//! first, a relative `bin`) is one where the model's `bash` could put a program of
//! that name, which would then run as the author's server or command tool, unconfined
//! when the connection says `sandbox = false`. So the lookup skips relative folders
//! and folders inside the workspace or any writable folder of the sandbox, and the
//! process is started by the full path found.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// The program `name` of a command that runs in `cwd`: a name holding a `/` as written
/// (relative to `cwd`); a bare name in the first folder of `path` that holds an
/// executable file of that name, skipping relative folders and folders inside any of
/// `writable`. The error says why, in the words `cannot start …` follows.
pub fn resolve(
    name: &str,
    cwd: &Path,
    path: Option<&OsStr>,
    writable: &[PathBuf],
) -> Result<PathBuf, String> {
    if name.is_empty() {
        return Err("the program is empty".into());
    }
    if name.contains('/') {
        return Ok(cwd.join(name));
    }
    let writable: Vec<PathBuf> = writable
        .iter()
        .map(|w| w.canonicalize().unwrap_or_else(|_| w.clone()))
        .collect();
    let mut skipped = None;
    for folder in std::env::split_paths(path.unwrap_or_default()) {
        if !folder.is_absolute() {
            continue;
        }
        let candidate = folder.join(name);
        if !is_executable(&candidate) {
            continue;
        }
        // Where it is, links resolved: a link to a program in the workspace is one too.
        let real = candidate
            .canonicalize()
            .unwrap_or_else(|_| candidate.clone());
        let folder = folder.canonicalize().unwrap_or(folder);
        if writable
            .iter()
            .any(|w| real.starts_with(w) || folder.starts_with(w))
        {
            skipped.get_or_insert(candidate);
            continue;
        }
        return Ok(candidate);
    }
    Err(match skipped {
        Some(skipped) => format!(
            "no such program on PATH (eve does not take `{}`: it is in the workspace or a folder the sandbox makes writable, where the model's processes could have put it; name the program by its path to run it)",
            skipped.display()
        ),
        None => "no such program on PATH".into(),
    })
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_program_is_never_taken_from_a_writable_folder_of_path() {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let system = base.join("usr-bin");
        for dir in [ws.join(".venv/bin"), system.clone()] {
            std::fs::create_dir_all(&dir).unwrap();
            let program = dir.join("python3");
            std::fs::write(&program, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let path =
            std::env::join_paths([PathBuf::from("bin"), ws.join(".venv/bin"), system.clone()])
                .unwrap();
        let writable = [ws.clone()];
        let found = resolve("python3", &ws, Some(&path), &writable).unwrap();
        assert_eq!(found, system.join("python3"));
        let only_ws = std::env::join_paths([ws.join(".venv/bin")]).unwrap();
        let e = resolve("python3", &ws, Some(&only_ws), &writable).unwrap_err();
        assert!(
            e.starts_with("no such program on PATH (eve does not take"),
            "{e}"
        );
        assert_eq!(
            resolve("./run.sh", &ws, Some(&path), &writable).unwrap(),
            ws.join("./run.sh")
        );
        assert_eq!(
            resolve("nothing-here", &ws, Some(&path), &writable).unwrap_err(),
            "no such program on PATH"
        );
    }
}
