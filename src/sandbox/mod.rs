//! Confining the processes eve starts for the model — `bash`, command tools, stdio
//! connections — with the kernel's own mechanisms, no container: Landlock for the file
//! system, seccomp for the network and the terminal, capabilities dropped (root
//! included), a private mount namespace that keeps the agent's `.eve/` (and its
//! definition) read-only inside a writable workspace, and a PID namespace per call so
//! that nothing a call starts outlives it.
//!
//! A [`Policy`] says what a session allows; [`Sandbox::prepare`] decides what this
//! machine enforces of it, without touching the kernel; [`spawn`] is the one door
//! through which every such process starts: the sandbox's launcher process (started
//! at its first call, see `launcher.rs`) applies the policy.

pub mod git;
mod launcher;
mod linux;
pub mod program;
mod session;
#[cfg(target_os = "linux")]
mod supervisor;
pub mod support;
mod wire;
#[cfg(target_os = "linux")]
mod zygote;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use crate::manifest::SandboxMode;

pub use launcher::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Launcher, Stopped};
pub use session::{Recipe, for_session};
pub use support::Support;

/// What the processes of one session may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub mode: SandboxMode,
    /// Whether they may open IP sockets (Unix sockets always work).
    pub network: bool,
    /// Folders they may write beneath (absolute): the workspace, the session's temp
    /// folder and the `[sandbox] writable` ones. Empty in `read-only` mode.
    pub writable: Vec<PathBuf>,
    /// Paths beneath a writable folder that stay read-only: the agent directory's
    /// `.eve/`, and its definition unless the author made it writable.
    pub read_only: Vec<PathBuf>,
}

impl Policy {
    /// The policy of a session: `workspace`, `temp` and `extra` writable (in
    /// `workspace-write` mode), `protected` kept read-only wherever it lies beneath them.
    pub fn new(
        mode: SandboxMode,
        network: bool,
        workspace: &Path,
        temp: &Path,
        extra: &[PathBuf],
        protected: &[PathBuf],
    ) -> Policy {
        let writable: Vec<PathBuf> = match mode {
            SandboxMode::WorkspaceWrite => std::iter::once(workspace.to_path_buf())
                .chain(std::iter::once(temp.to_path_buf()))
                .chain(extra.iter().cloned())
                .collect(),
            SandboxMode::ReadOnly | SandboxMode::Off => Vec::new(),
        };
        let inside: Vec<&PathBuf> = protected
            .iter()
            .filter(|p| p.exists() && writable.iter().any(|w| p.starts_with(w)))
            .collect();
        // A path beneath another read-only one is read-only already; binding it again
        // would pin the folders between them, writable, over the outer bind.
        let read_only = inside
            .iter()
            .filter(|p| !inside.iter().any(|q| q != *p && p.starts_with(q)))
            .map(|p| (*p).clone())
            .fold(Vec::new(), |mut out: Vec<PathBuf>, p| {
                if !out.contains(&p) {
                    out.push(p);
                }
                out
            });
        Policy {
            mode,
            network,
            writable,
            read_only,
        }
    }

    /// One line for the model after a refused write or connection: the mode and what is
    /// writable, so it can adapt instead of retrying.
    pub fn refusal_note(&self, workspace: &Path) -> String {
        let network = if self.network {
            ""
        } else {
            "; the network is off (no IP sockets)"
        };
        match self.mode {
            SandboxMode::ReadOnly => format!(
                "[eve] the sandbox is read-only: nothing may be written except /dev/null{network}."
            ),
            _ => {
                let extra: Vec<String> = self
                    .writable
                    .iter()
                    .skip(2)
                    .map(|p| format!("`{}`", p.display()))
                    .collect();
                let extra = if extra.is_empty() {
                    String::new()
                } else {
                    format!(", {}", extra.join(", "))
                };
                format!(
                    "[eve] the sandbox (workspace-write) allows writes only in the workspace `{}`, $TMPDIR{extra} and /dev/null; the agent's own `.eve/` and definition stay read-only{network}.",
                    workspace.display()
                )
            }
        }
    }
}

/// A session's sandbox: its policy, what this machine enforces of it, and the launcher
/// its processes start through.
#[derive(Debug)]
pub struct Sandbox {
    /// The policy it enforces.
    pub policy: Policy,
    /// The session's private temp folder (`TMPDIR` of every sandboxed process), made at
    /// the first process and removed with the sandbox.
    pub temp: PathBuf,
    made: OnceLock<Result<(), String>>,
    /// Why the tools that start processes are not offered (`require = true` and the
    /// kernel cannot confine them), if they are not.
    pub withheld: Option<String>,
    launcher: Launcher,
    /// What is really enforced on this machine, for warnings and `eve doctor`.
    pub enforced: Enforced,
    /// What it was made from, to make more like it (an MCP server's own sandbox).
    pub recipe: Option<Recipe>,
}

/// What a prepared sandbox enforces, and what it cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforced {
    /// Writes are confined (Landlock).
    pub files: bool,
    /// IP sockets are refused (seccomp), when the policy turns the network off.
    pub network: bool,
    /// The read-only paths inside writable folders are protected (mount namespace).
    pub read_only_paths: bool,
    /// What the kernel cannot do for this policy, one phrase each (empty: all of it).
    pub missing: Vec<String>,
}

impl Sandbox {
    /// Prepares `policy` with what `support` says this kernel can do; sandboxed
    /// processes get `temp` (a folder that does not exist yet, beneath which `policy`
    /// allows writes) as their `TMPDIR`. With `require`, a policy the kernel cannot
    /// fully enforce withholds the tools that start processes. Nothing is started or
    /// made until the first process.
    pub fn prepare(policy: &Policy, temp: PathBuf, require: bool, support: &Support) -> Sandbox {
        let enforced = linux::enforced(policy, support);
        let withheld = (require && !enforced.missing.is_empty()).then(|| {
            format!(
                "`[sandbox] require = true`, and this machine cannot confine processes: it lacks {}",
                enforced.missing.join(", ")
            )
        });
        let launcher =
            Launcher::new((policy.mode != SandboxMode::Off).then_some((policy, support)));
        Sandbox {
            policy: policy.clone(),
            temp,
            made: OnceLock::new(),
            withheld,
            launcher,
            enforced,
            recipe: None,
        }
    }

    /// The line that says what this machine cannot enforce, once a session (none with
    /// `require = true`: the tools that start processes are withheld instead).
    pub fn warnings(&self) -> Vec<String> {
        let missing = &self.enforced.missing;
        if missing.is_empty() || self.withheld.is_some() {
            return Vec::new();
        }
        vec![format!(
            "the sandbox ({}) is only partly enforced on this machine: it lacks {}; set `[sandbox] require = true` to refuse to run without it",
            self.policy.mode.as_str(),
            missing.join(", ")
        )]
    }

    /// Whether the sandbox confines anything.
    pub fn is_on(&self) -> bool {
        self.policy.mode != SandboxMode::Off
    }

    /// The line for the model after a sandboxed command failed, when its output says a
    /// write or a connection was refused; `None` otherwise.
    pub fn explain_refusal(
        &self,
        workspace: &Path,
        failed: bool,
        output: &[&str],
    ) -> Option<String> {
        const REFUSED: &[&str] = &[
            "Permission denied",
            "Read-only file system",
            "Operation not permitted",
        ];
        (self.is_on() && failed && output.iter().any(|o| REFUSED.iter().any(|r| o.contains(r))))
            .then(|| self.policy.refusal_note(workspace))
    }

    /// Makes the temp folder, once (private to eve's user).
    fn make_temp(&self) -> std::io::Result<()> {
        let made = self.made.get_or_init(|| {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&self.temp)
                .map_err(|e| {
                    format!(
                        "cannot create the session's temp folder `{}`: {e}",
                        self.temp.display()
                    )
                })
        });
        made.clone().map_err(std::io::Error::other)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if matches!(self.made.get(), Some(Ok(()))) {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// A new name for a session's temp folder, beneath the system's temp folder: not made.
pub fn temp_folder() -> PathBuf {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let base = std::env::temp_dir();
    let base = base.canonicalize().unwrap_or(base);
    base.join(format!("eve-session-{:016x}", hasher.finish()))
}

/// Starts `command` — the one door for every process eve runs for the model: through
/// `sandbox`'s launcher, confined, with the session's temp folder as `TMPDIR`; or,
/// without a sandbox (`mode = "off"`), through eve's unconfined launcher. Either way
/// nothing the program starts outlives the [`Child`]: dropping it, or [`Child::stop`],
/// ends the whole call.
pub async fn spawn(sandbox: Option<&Sandbox>, command: &mut Command) -> std::io::Result<Child> {
    match sandbox.filter(|s| s.is_on()) {
        Some(sandbox) => {
            sandbox.make_temp()?;
            // The session's private temp folder, like every sandboxed process (a
            // program's own `env` cannot point it elsewhere: that would not be writable).
            command.env("TMPDIR", &sandbox.temp);
            sandbox.launcher.spawn(command).await
        }
        None => {
            static UNCONFINED: OnceLock<Launcher> = OnceLock::new();
            UNCONFINED
                .get_or_init(|| Launcher::new(None))
                .spawn(command)
                .await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_protected_paths_inside_writable_folders_need_protecting() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let agent_eve = ws.join("agent/.eve");
        std::fs::create_dir_all(&agent_eve).unwrap();
        let elsewhere = tmp.path().join("other/.eve");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let temp = tmp.path().join("t");
        let policy = Policy::new(
            SandboxMode::WorkspaceWrite,
            false,
            &ws,
            &temp,
            &[],
            &[agent_eve.clone(), elsewhere, ws.join("agent/missing")],
        );
        assert_eq!(policy.writable, vec![ws.clone(), temp.clone()]);
        assert_eq!(policy.read_only, vec![agent_eve]);
        assert!(policy.refusal_note(&ws).contains("the network is off"));
        let read_only = Policy::new(SandboxMode::ReadOnly, true, &ws, &temp, &[], &[]);
        assert!(read_only.writable.is_empty());
        assert_eq!(
            read_only.refusal_note(&ws),
            "[eve] the sandbox is read-only: nothing may be written except /dev/null."
        );
    }
}

#[cfg(all(test, target_os = "linux"))]
#[allow(clippy::unwrap_used)]
mod linux_tests {
    use super::*;

    /// Runs `script` with `sh -c` under `policy`; returns (exit code, stderr).
    fn run(policy: &Policy, cwd: &Path, script: &str) -> (i32, String) {
        let sandbox = Sandbox::prepare(policy, temp_folder(), false, &Support::detect());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let (status, _, stderr) = runtime.block_on(async {
            let mut command = Command::new("sh", cwd);
            command.arg("-c").arg(script).inherit_env(&[]);
            spawn(Some(&sandbox), &mut command)
                .await
                .unwrap()
                .output()
                .await
                .unwrap()
        });
        (
            status.code().unwrap_or(-1),
            String::from_utf8_lossy(&stderr).into_owned(),
        )
    }

    struct Layout {
        _tmp: tempfile::TempDir,
        ws: PathBuf,
        agent: PathBuf,
        temp: PathBuf,
        outside: PathBuf,
    }

    fn layout() -> Layout {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let agent = ws.join("sub/agent");
        std::fs::create_dir_all(agent.join(".eve/sessions")).unwrap();
        std::fs::write(agent.join(".eve/sessions/s.jsonl"), "log\n").unwrap();
        std::fs::write(agent.join("agent.toml"), "model = \"x\"\n").unwrap();
        let temp = base.join("tmp");
        std::fs::create_dir_all(&temp).unwrap();
        let outside = base.join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        Layout {
            _tmp: tmp,
            ws,
            agent,
            temp,
            outside,
        }
    }

    fn supported() -> bool {
        let support = Support::detect();
        if support.landlock_abi == 0 || !support.mount_namespace {
            eprintln!("skipped: this kernel lacks Landlock or mount namespaces ({support:?})");
            return false;
        }
        true
    }

    #[test]
    fn workspace_write_confines_writes_even_for_root_and_grandchildren() {
        if !supported() {
            return;
        }
        let l = layout();
        let policy = Policy::new(
            SandboxMode::WorkspaceWrite,
            true,
            &l.ws,
            &l.temp,
            &[],
            &[l.agent.join(".eve"), l.agent.join("agent.toml")],
        );
        let ok = |script: &str| {
            let (code, err) = run(&policy, &l.ws, script);
            assert_eq!(code, 0, "{script}: {err}");
        };
        let refused = |script: &str| {
            let (code, _) = run(&policy, &l.ws, script);
            assert_ne!(code, 0, "{script} must be refused");
        };
        ok("touch inside && sh -c 'sh -c \"touch deeper\"'");
        ok(&format!("touch {}/t", l.temp.display()));
        ok("echo x > /dev/null");
        refused(&format!("touch {}/x", l.outside.display()));
        refused(&format!(
            "cd / && sh -c 'sh -c \"touch {}/y\"'",
            l.outside.display()
        ));
        refused("touch ../escape");
        refused("touch /etc/eve-sandbox-test");
        // The agent's log and definition, though inside the workspace.
        refused(&format!(
            "echo forged >> {}/.eve/sessions/s.jsonl",
            l.agent.display()
        ));
        refused(&format!("touch {}/.eve/new", l.agent.display()));
        refused(&format!("rm -rf {}/.eve", l.agent.display()));
        refused(&format!("echo x >> {}/agent.toml", l.agent.display()));
        refused(&format!("mv {0} {0}-moved", l.agent.display()));
        refused(&format!("mv {0} {0}-moved", l.ws.join("sub").display()));
        // A symlink inside the workspace that points outside leads nowhere writable.
        std::os::unix::fs::symlink(&l.outside, l.ws.join("link")).unwrap();
        refused("touch link/through");
        assert!(!l.outside.join("through").exists());
        assert_eq!(
            std::fs::read_to_string(l.agent.join(".eve/sessions/s.jsonl")).unwrap(),
            "log\n"
        );
        assert!(l.ws.join("inside").exists() && l.ws.join("deeper").exists());
    }

    #[test]
    fn read_only_allows_reads_and_no_writes() {
        if !supported() {
            return;
        }
        let l = layout();
        std::fs::write(l.ws.join("file"), "content\n").unwrap();
        let policy = Policy::new(SandboxMode::ReadOnly, true, &l.ws, &l.temp, &[], &[]);
        let (code, err) = run(&policy, &l.ws, "cat file && ls / > /dev/null");
        assert_eq!(code, 0, "{err}");
        for script in ["touch new", "echo x >> file", "touch /tmp/x-eve"] {
            assert_ne!(run(&policy, &l.ws, script).0, 0, "{script}");
        }
        assert_eq!(
            std::fs::read_to_string(l.ws.join("file")).unwrap(),
            "content\n"
        );
    }

    #[test]
    fn without_network_ip_sockets_fail_and_unix_sockets_work() {
        if !supported() {
            return;
        }
        let l = layout();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let connect = format!(
            "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)'"
        );
        let unix = "python3 -c 'import socket; a, b = socket.socketpair(); a.send(b\"x\"); assert b.recv(1) == b\"x\"'";
        let off = Policy::new(SandboxMode::WorkspaceWrite, false, &l.ws, &l.temp, &[], &[]);
        let (code, err) = run(&off, &l.ws, &connect);
        assert_ne!(code, 0, "the connection must fail");
        assert!(err.contains("Permission denied"), "{err}");
        assert_eq!(run(&off, &l.ws, unix).0, 0, "unix sockets work");
        let on = Policy::new(SandboxMode::WorkspaceWrite, true, &l.ws, &l.temp, &[], &[]);
        let (code, err) = run(&on, &l.ws, &connect);
        assert_eq!(code, 0, "{err}");
    }

    #[test]
    fn mode_off_confines_nothing() {
        let l = layout();
        let policy = Policy::new(SandboxMode::Off, false, &l.ws, &l.temp, &[], &[]);
        let (code, err) = run(&policy, &l.ws, &format!("touch {}/x", l.outside.display()));
        assert_eq!(code, 0, "{err}");
        assert!(l.outside.join("x").exists());
    }
}
