//! Shared helpers for the end-to-end tests: the real binary on copies of fixture folders.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

pub mod agent;
pub mod mcp;
pub mod mock;
pub mod otlp;
pub mod restate;
pub mod serve;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

pub use agent::{Agent, AgentBuilder};

/// The `eve` binary, with colour off and a clean environment for model overrides; the
/// MCP test server is on its PATH (fixtures name it `mcp-test-server`).
pub fn eve() -> Command {
    let mut cmd = Command::cargo_bin("eve").expect("the eve binary is built");
    cmd.env("NO_COLOR", "1")
        .env_remove("EVE_MODEL")
        // Nothing is exported unless a test points eve at its own receiver.
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
        .env_remove("TRACEPARENT")
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

/// A shell line for a tool: it finds the eve that runs it (walking up its parents from
/// `/proc/self/stat`: `$PPID` is the call's supervisor, in a PID namespace of its own),
/// prints `eve=<pid>`, then eve's environment block as this process may read it, then its
/// own environment.
pub const READ_EVES_ENVIRONMENT: &str = r#"e=; read -r p _ < /proc/self/stat; while [ "${p:-0}" -gt 1 ]; do if [ "$(cat /proc/$p/comm)" = eve ]; then e=$p; break; fi; read -r _ _ _ p _ < /proc/$p/stat; done; echo "eve=${e:-none}"; tr '\0' '\n' < /proc/$e/environ; echo; env"#;

/// A Python program for a tool: it finds the eve that runs it, tries to read eve's
/// environment block and its memory (`/proc/<eve>/mem`, every readable mapping), and
/// prints what it could: `eve: found`, `environ: …`, `mem: …`, then its own environment.
pub const READ_EVES_MEMORY: &str = r#"import os
def parent(pid):
    stat = open(f"/proc/{pid}/stat").read()
    return int(stat[stat.rindex(")") + 2:].split()[1])
pid, eve = int(open("/proc/self/stat").read().split()[0]), None
while pid > 1:
    pid = parent(pid)
    if open(f"/proc/{pid}/comm").read().strip() == "eve":
        eve = pid
        break
print("eve:", "found" if eve else "not found")
try:
    print("environ:", open(f"/proc/{eve}/environ", "rb").read().replace(b"\0", b"\n").decode(errors="replace"))
except OSError as e:
    print("environ: refused:", e.strerror)
try:
    maps = open(f"/proc/{eve}/maps").read().splitlines()
    mem = open(f"/proc/{eve}/mem", "rb")
    dump = bytearray()
    for line in maps:
        span, perms = line.split()[:2]
        start, end = (int(x, 16) for x in span.split("-"))
        if "r" in perms and end - start < 1 << 28:
            try:
                mem.seek(start)
                dump += mem.read(end - start)
            except OSError:
                pass
    print("mem: read", len(dump), "bytes:", dump.decode("latin-1"))
except OSError as e:
    print("mem: refused:", e.strerror)
print("own:", open("/proc/self/environ", "rb").read().replace(b"\0", b"\n").decode(errors="replace"))
"#;
