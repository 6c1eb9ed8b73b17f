//! Shared helpers for the end-to-end tests: the real binary on copies of fixture folders.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod mcp;
pub mod mock;
pub mod restate;
pub mod serve;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// The `eve` binary, with colour off and a clean environment for model overrides; the
/// MCP test server is on its PATH (fixtures name it `mcp-test-server`).
pub fn eve() -> Command {
    let mut cmd = Command::cargo_bin("eve").expect("the eve binary is built");
    cmd.env("NO_COLOR", "1")
        .env_remove("EVE_MODEL")
        .env("PATH", mcp::path_with_server())
        // The private cache folders of sandboxed MCP servers go below the build's temp
        // folder, not the home folder of whoever runs the tests.
        .env("XDG_CACHE_HOME", test_cache());
    cmd
}

/// `XDG_CACHE_HOME` of the binary under test.
pub fn test_cache() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("xdg-cache")
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A copy of a directory tree in a new temporary folder, under the source's own name
/// (so the agent's default name is stable).
pub struct TempCopy {
    _tmp: tempfile::TempDir,
    path: PathBuf,
}

impl TempCopy {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

pub fn copy_to_temp(src: &Path) -> TempCopy {
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = tmp.path().join(src.file_name().unwrap());
    copy_dir(src, &path);
    make_symlinks(&path);
    TempCopy { _tmp: tmp, path }
}

/// The repository holds no symbolic links (some fixtures need links that lead out of
/// it, or nowhere), so a fixture lists the links it needs in `.symlinks`, one
/// `path -> target` a line; they are made in the copy, and the list removed.
fn make_symlinks(dir: &Path) {
    let list = dir.join(".symlinks");
    let Ok(text) = std::fs::read_to_string(&list) else {
        return;
    };
    std::fs::remove_file(&list).unwrap();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let (link, target) = line.split_once(" -> ").expect("`path -> target`");
        let link = dir.join(link.trim());
        std::fs::create_dir_all(link.parent().unwrap()).unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(target.trim(), &link).unwrap();
    }
}

pub fn copy_dir(src: &Path, dst: &Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let target = dst.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            if entry.file_name() != ".eve" {
                copy_dir(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Replaces the build time in the summary line, which differs run to run.
pub fn mask_time(text: &str) -> String {
    text.lines()
        .map(|line| match (line.rfind(" in "), line.rfind(" ms")) {
            (Some(a), Some(b)) if line.starts_with("built ") && a < b => {
                format!("{} in [time]{}", &line[..a], &line[b..])
            }
            _ => line.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

pub struct Output {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

/// Runs `eve ARGS` in `dir`.
pub fn run_in(dir: &Path, args: &[&str]) -> Output {
    let out = eve().current_dir(dir).args(args).output().unwrap();
    Output {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
