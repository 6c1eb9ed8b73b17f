//! What git reads as configuration or runs, in the workspace's repository: kept
//! read-only to the processes the model starts and to eve's own file tools, so that a
//! person's next `git status`, `git commit` or `git fetch` — outside any sandbox — runs
//! nothing the model wrote.
//!
//! git runs programs named by its configuration (`core.fsmonitor`, `core.hooksPath`,
//! `core.sshCommand`, `diff.external`, filters, aliases) and by its hooks, and it finds
//! that configuration through files that redirect it: `commondir`, a `gitdir:` file (a
//! `.git` that is a file, in submodules and linked worktrees), `config.worktree`. A
//! name that does not exist yet (`commondir`) cannot be made read-only on its own, only
//! its folder can; so the repository's whole git directory is read-only. git still reads
//! it (`git status`, `git diff`, `git log` work); what writes it (`git commit`,
//! `git checkout`, `git fetch`) fails in the sandbox with `Read-only file system`.
//!
//! An author who lists the git directory (`.git`) in `[sandbox] writable` lets the
//! processes write it: then only the configuration files that exist stay read-only,
//! and a process can add one git reads (`commondir`). That is the author's choice.

use std::path::{Component, Path, PathBuf};

/// The entries of a git directory that are configuration or code, kept read-only when
/// the author made the git directory writable.
const CONFIGURATION: &[&str] = &[
    "config",
    "config.worktree",
    "commondir",
    "gitdir",
    "hooks",
    "info",
    "modules",
    "worktrees",
    "branches",
    "remotes",
];

/// Submodules looked at, at most (nested ones count).
const MAX_SUBMODULES: usize = 256;
/// How deep submodules of submodules are followed.
const MAX_DEPTH: usize = 4;
/// The largest `.gitmodules` or `gitdir:` file read.
const MAX_READ: u64 = 256 * 1024;

/// The paths of the repository at `workspace` that git reads as configuration or runs:
/// its `.git` (a folder, or a `gitdir:` file and the git directory it names), and for
/// each submodule its `.git` file and git directory, or its folder while it is empty (a
/// `.git` created there would make it a repository git enters). Paths that do not
/// exist are left out by the sandbox; `git_writable`: the author made `.git` writable
/// (only its configuration entries are listed).
pub fn protected(workspace: &Path, git_writable: bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    repository(workspace, git_writable, 0, &mut 0, &mut out);
    out
}

fn repository(
    worktree: &Path,
    git_writable: bool,
    depth: usize,
    seen: &mut usize,
    out: &mut Vec<PathBuf>,
) {
    let dot_git = worktree.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&dot_git) else {
        return;
    };
    let git_dir = if meta.is_file() {
        out.push(dot_git.clone());
        gitdir_of(&dot_git)
    } else {
        Some(dot_git.clone())
    };
    if let Some(git_dir) = git_dir {
        if git_writable && depth == 0 {
            out.extend(CONFIGURATION.iter().map(|e| git_dir.join(e)));
        } else {
            out.push(git_dir.clone());
        }
        // A linked worktree's repository is found through `commondir`.
        if let Some(common) = read_small(&git_dir.join("commondir")) {
            let common = git_dir.join(common.trim());
            if let Ok(common) = common.canonicalize() {
                out.push(common);
            }
        }
    }
    if depth >= MAX_DEPTH {
        return;
    }
    let Some(modules) = read_small(&worktree.join(".gitmodules")) else {
        return;
    };
    for path in submodule_paths(&modules) {
        if *seen >= MAX_SUBMODULES {
            return;
        }
        *seen += 1;
        let sub = worktree.join(&path);
        if std::fs::symlink_metadata(sub.join(".git")).is_ok() {
            repository(&sub, false, depth + 1, seen, out);
        } else if std::fs::read_dir(&sub).is_ok_and(|mut d| d.next().is_none()) {
            out.push(sub);
        }
    }
}

/// The git directory a `gitdir:` file names (relative to the file's folder), real.
fn gitdir_of(file: &Path) -> Option<PathBuf> {
    let text = read_small(file)?;
    let target = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let base = file.parent()?;
    base.join(target).canonicalize().ok()
}

/// The `path = …` values of a `.gitmodules`: relative, inside the worktree.
fn submodule_paths(text: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for line in text.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if key.trim() != "path" {
            continue;
        }
        let value = value.trim().trim_matches('"');
        let path = Path::new(value);
        let inside = !value.is_empty()
            && path
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if inside {
            out.push(path.to_path_buf());
        }
    }
    out
}

/// A small regular file's text (never a FIFO, never through a link).
fn read_small(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > MAX_READ {
        return None;
    }
    std::fs::read_to_string(path).ok()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_git_directory_gitdir_files_and_submodules_are_listed() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".git/modules/sub")).unwrap();
        std::fs::create_dir_all(ws.join("sub")).unwrap();
        std::fs::create_dir_all(ws.join("empty")).unwrap();
        std::fs::write(ws.join("sub/.git"), "gitdir: ../.git/modules/sub\n").unwrap();
        std::fs::write(
            ws.join(".gitmodules"),
            "[submodule \"sub\"]\n\tpath = sub\n[submodule \"e\"]\n\tpath = empty\n[submodule \"x\"]\n\tpath = ../out\n",
        )
        .unwrap();
        let listed = protected(&ws, false);
        assert_eq!(
            listed,
            [
                ws.join(".git"),
                ws.join("sub/.git"),
                ws.join(".git/modules/sub"),
                ws.join("empty"),
            ]
        );
        let writable = protected(&ws, true);
        assert!(writable.contains(&ws.join(".git/config")));
        assert!(writable.contains(&ws.join(".git/commondir")));
        assert!(!writable.contains(&ws.join(".git")));
        // A linked worktree: its `.git` file, its git directory and the repository's.
        let main = tmp.path().join("main");
        std::fs::create_dir_all(main.join(".git/worktrees/wt")).unwrap();
        std::fs::write(main.join(".git/worktrees/wt/commondir"), "../..\n").unwrap();
        let wt = tmp.path().join("wt");
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", main.join(".git/worktrees/wt").display()),
        )
        .unwrap();
        let main = main.canonicalize().unwrap();
        assert_eq!(
            protected(&wt, false),
            [
                wt.join(".git"),
                main.join(".git/worktrees/wt"),
                main.join(".git")
            ]
        );
    }
}
