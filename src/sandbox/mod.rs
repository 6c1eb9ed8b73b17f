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
mod policy;
pub mod program;
mod session;
#[cfg(target_os = "linux")]
mod supervisor;
pub mod support;
mod wire;
#[cfg(target_os = "linux")]
mod zygote;

pub use launcher::{Child, ChildStderr, ChildStdin, ChildStdout, Command, Launcher, Stopped};
pub use policy::{Enforced, Policy};
pub use session::{Recipe, Sandbox, for_session, spawn, temp_folder};
pub use support::Support;

#[cfg(test)]
#[cfg(target_os = "linux")]
#[allow(clippy::unwrap_used)]
mod linux_tests {
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::manifest::SandboxMode;

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
