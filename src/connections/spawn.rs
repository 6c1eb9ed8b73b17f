//! Starting a stdio server's process: [`command`] is the one place its command is built,
//! with a minimal environment; it starts through the sandbox's launcher like every
//! process eve runs for the model, so it and everything it starts die with its
//! [`Process`] (dropped, or eve gone); its stderr goes to its log.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::values::Redactor;
use crate::sync::lock;

/// The variables of eve's environment a stdio server gets; everything else it gets is
/// listed in its `env`.
pub const BASE_ENV: &[&str] = &["PATH", "HOME", "LANG", "TMPDIR"];

/// The most of one process's stderr written to its log.
const LOG_LIMIT: u64 = 8 * 1024 * 1024;
/// A log larger than this when a server starts is emptied first.
const LOG_KEEP: u64 = 4 * 1024 * 1024;
/// How much of the end of stderr is kept for error messages.
const TAIL_BYTES: usize = 2048;

/// What to start: everything resolved (templates rendered, `${VAR}` read).
#[derive(Debug, Clone)]
pub struct Plan {
    pub program: String,
    pub args: Vec<String>,
    /// The server's own variables, from its `env`.
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
    /// The server's own sandbox (made like the session's); `None`: unconfined
    /// (`mode = "off"`, or the connection's `sandbox = false`).
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
    /// The server's private cache folder, writable in its sandbox: its `XDG_CACHE_HOME`
    /// and npm's cache, unless its `env` says otherwise.
    pub cache: Option<PathBuf>,
}

/// A stdio server's sandbox: one of its own, made like the session's (`recipe`), with
/// a cache folder of its own writable besides, so that `npx` and `uvx` work confined.
/// Fails with the reason when the server must not start (`require = true` and this
/// machine cannot confine it).
pub fn confine(
    recipe: &crate::sandbox::Recipe,
    agent_dir: &Path,
    name: &str,
) -> Result<(Option<Arc<crate::sandbox::Sandbox>>, Option<PathBuf>), String> {
    let cache = cache_folder(agent_dir, name);
    let extra: Vec<PathBuf> = cache.iter().cloned().collect();
    let (sandbox, _warnings) = recipe.prepare(&extra, &crate::sandbox::Support::detect())?;
    if let Some(reason) = sandbox.as_ref().and_then(|s| s.withheld.as_deref()) {
        return Err(format!("it is not started: {reason}"));
    }
    Ok((sandbox, cache))
}

/// `$XDG_CACHE_HOME/eve/connections/<agent>/<name>` (`~/.cache` without it), created;
/// `<agent>` is a hash of the agent directory, so agents and servers do not share.
/// `None` when there is no home to put it in, or it cannot be created.
fn cache_folder(agent_dir: &Path, name: &str) -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".cache"))
        })?;
    let agent = agent_dir
        .canonicalize()
        .unwrap_or_else(|_| agent_dir.to_path_buf());
    let digest = <sha2::Sha256 as sha2::Digest>::digest(agent.as_os_str().as_encoded_bytes());
    let folder = base
        .join("eve")
        .join("connections")
        .join(&crate::text::hex(&digest)[..16])
        .join(name);
    std::fs::create_dir_all(&folder).ok()?;
    folder.canonicalize().ok()
}

/// Where a server starts when its file names no `cwd`: its own folder (the cache
/// folder of [`confine`]), which no process of the model may write, or `/` when that
/// folder lies in one of `writable` (the workspace is the home folder) or cannot be
/// made. Not the workspace: `python3 -m MODULE`, `npx`, `uvx` and others load code and
/// settings (`.npmrc`, `pyproject.toml`) from where they start.
pub fn home(agent_dir: &Path, name: &str, writable: &[PathBuf]) -> PathBuf {
    cache_folder(agent_dir, name)
        .filter(|folder| {
            !writable
                .iter()
                .any(|w| folder.starts_with(w.canonicalize().unwrap_or_else(|_| w.clone())))
        })
        .unwrap_or_else(|| PathBuf::from("/"))
}

/// The command that starts a stdio server. Every server process eve starts is built here.
pub fn command(plan: &Plan) -> crate::sandbox::Command {
    let mut command = crate::sandbox::Command::new(&plan.program, &plan.cwd);
    command.args(&plan.args).stdin_piped();
    for name in BASE_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    if let Some(cache) = &plan.cache {
        command.env("XDG_CACHE_HOME", cache);
        command.env("npm_config_cache", cache.join("npm"));
    }
    // Python puts neither the current folder (`-m`, `-c`) nor the script's folder first
    // on its import path, unless the server's `env` says otherwise.
    command.env("PYTHONSAFEPATH", "1");
    for (name, value) in &plan.env {
        command.env(name, value);
    }
    command
}

/// The end of a server's stderr, for error messages.
#[derive(Debug, Default)]
pub struct Tail {
    bytes: VecDeque<u8>,
}

impl Tail {
    fn push(&mut self, bytes: &[u8]) {
        self.bytes.extend(bytes);
        let excess = self.bytes.len().saturating_sub(TAIL_BYTES);
        self.bytes.drain(..excess);
    }

    /// The last lines, trimmed; empty when the server wrote nothing.
    pub fn text(&self) -> String {
        let bytes: Vec<u8> = self.bytes.iter().copied().collect();
        let text = String::from_utf8_lossy(&bytes);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let from = lines.len().saturating_sub(8);
        lines[from..].join("\n")
    }
}

/// A running server process: it and everything it started die with this value.
#[derive(Debug)]
pub struct Process {
    child: crate::sandbox::Child,
    pub tail: Arc<Mutex<Tail>>,
    /// The log, relative to the agent directory (for messages).
    pub log: String,
    /// Copies stderr to the log; done when stderr closes.
    pump: Option<tokio::task::JoinHandle<()>>,
    /// The server's sandbox, whose temp folder (its `TMPDIR`) lives as long as it runs.
    _sandbox: Option<Arc<crate::sandbox::Sandbox>>,
}

/// The server's stdout and stdin, for the MCP transport.
pub type Pipes = (crate::sandbox::ChildStdout, crate::sandbox::ChildStdin);

impl Process {
    /// Starts `plan`; stderr is appended to `log` (redacted, capped).
    pub async fn start(
        plan: &Plan,
        log: Log,
        log_shown: String,
        header: &str,
        secrets: Redactor,
    ) -> Result<(Process, Pipes), String> {
        let mut command = command(plan);
        let mut child = crate::sandbox::spawn(plan.sandbox.as_deref(), &mut command)
            .await
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::NotFound => {
                    format!("cannot start `{}`: no such program on PATH", plan.program)
                }
                _ => format!("cannot start `{}`: {e}", plan.program),
            })?;
        let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
            return Err(format!(
                "cannot talk to `{}`: its pipes are missing",
                plan.program
            ));
        };
        let tail = Arc::new(Mutex::new(Tail::default()));
        let pump = child.stderr.take().map(|stderr| {
            tokio::spawn(pump(stderr, log, header.to_string(), tail.clone(), secrets))
        });
        Ok((
            Process {
                child,
                tail,
                log: log_shown,
                pump,
                _sandbox: plan.sandbox.clone(),
            },
            (stdout, stdin),
        ))
    }

    /// How the process ended, waiting up to `within` for it to end (a server whose
    /// output just closed is usually exiting).
    pub async fn exit_within(&mut self, within: std::time::Duration) -> Option<String> {
        let _ = tokio::time::timeout(within, self.child.wait()).await;
        self.exit()
    }

    /// Lets the last of stderr reach the tail (and the log) once the process is gone:
    /// up to a second, as a descendant may hold stderr open.
    pub async fn settle(&mut self) {
        if let Some(pump) = &mut self.pump
            && tokio::time::timeout(std::time::Duration::from_secs(1), pump)
                .await
                .is_ok()
        {
            self.pump = None;
        }
    }

    /// How the process ended, if it has.
    pub fn exit(&mut self) -> Option<String> {
        let status = self.child.try_wait()?;
        Some(match status.code() {
            Some(code) => format!("exited with status {code}"),
            None => "was killed by a signal".to_string(),
        })
    }

    /// Stops the server as the MCP specification says: its stdin is already closed;
    /// SIGTERM, a moment to exit, then SIGKILL for whatever of it is left.
    pub async fn stop(mut self) {
        self.child.terminate().await;
        let _ =
            tokio::time::timeout(std::time::Duration::from_millis(500), self.child.wait()).await;
        self.child.stop().await;
    }
}

/// Copies stderr to the log line by line (secrets redacted, at most [`LOG_LIMIT`]
/// bytes), keeping the end for error messages; reads to the end whatever it keeps.
async fn pump(
    mut stderr: crate::sandbox::ChildStderr,
    log: Log,
    header: String,
    tail: Arc<Mutex<Tail>>,
    secrets: Redactor,
) {
    let mut file = tokio::task::spawn_blocking(move || open_log(&log, &header))
        .await
        .ok()
        .flatten()
        .map(tokio::fs::File::from_std);
    let mut written: u64 = 0;
    let mut buf = vec![0u8; 8192];
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let text = secrets.redact(&String::from_utf8_lossy(&buf[..n]));
        lock(&tail).push(text.as_bytes());
        let Some(out) = file.as_mut() else { continue };
        if written >= LOG_LIMIT {
            continue;
        }
        written += text.len() as u64;
        let _ = out.write_all(text.as_bytes()).await;
        if written >= LOG_LIMIT {
            let _ = out
                .write_all(b"\n[eve: the rest of this server's stderr is not logged: over 8 MiB]\n")
                .await;
        }
    }
    if let Some(out) = file.as_mut() {
        let _ = out.flush().await;
    }
}

/// Where a server's stderr is kept: `.eve/logs/<name>.log` of its agent directory.
#[derive(Debug, Clone)]
pub struct Log {
    pub agent_dir: PathBuf,
    pub name: String,
}

/// Opens the log to append to it, emptied first when over [`LOG_KEEP`]: beneath the
/// agent directory, never through a link ([`crate::statedir`]). Best effort.
fn open_log(log: &Log, header: &str) -> Option<std::fs::File> {
    let mut file = crate::statedir::create(&log.agent_dir, &["logs"])
        .ok()?
        .append(&format!("{}.log", log.name))
        .ok()?;
    if file.metadata().is_ok_and(|m| m.len() > LOG_KEEP) {
        file.set_len(0).ok()?;
    }
    let _ = std::io::Write::write_all(&mut file, header.as_bytes());
    Some(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tail_keeps_the_last_lines() {
        let mut tail = Tail::default();
        for i in 0..1000 {
            tail.push(format!("line {i}\n").as_bytes());
        }
        let text = tail.text();
        assert_eq!(text.lines().count(), 8);
        assert!(text.ends_with("line 999"), "{text}");
    }

    #[tokio::test]
    async fn a_server_sees_only_the_base_variables_and_its_own() {
        // SAFETY: the test sets a variable no other test reads.
        unsafe { std::env::set_var("EVE_TEST_SPAWN_SECRET_API_KEY", "sk-nope") };
        let plan = Plan {
            program: "env".into(),
            args: Vec::new(),
            env: vec![("ONLY_THIS".into(), "yes".into())],
            cwd: std::env::temp_dir(),
            sandbox: None,
            cache: None,
        };
        let (_, stdout, _) = crate::sandbox::spawn(None, &mut command(&plan))
            .await
            .unwrap()
            .output()
            .await
            .unwrap();
        let text = String::from_utf8_lossy(&stdout);
        let names: Vec<&str> = text.lines().filter_map(|l| l.split('=').next()).collect();
        assert!(names.contains(&"ONLY_THIS"), "{text}");
        for name in &names {
            assert!(
                BASE_ENV.contains(name) || ["ONLY_THIS", "PYTHONSAFEPATH"].contains(name),
                "the server saw `{name}`"
            );
        }
    }
}
