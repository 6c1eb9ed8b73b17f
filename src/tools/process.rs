//! Running a tool's process: in the workspace, in its own process group, without the
//! provider keys, with capped output, a timeout and Ctrl-C. When the call ends, nothing it
//! started outlives it: on Linux the program runs under its own supervisor (a child
//! subreaper, see `supervisor.rs`), which kills every descendant, however far it wandered
//! from the process group; elsewhere the process group is killed. `bash` and command tools
//! share this. A long-lived child that is not part of a call (a stdio connection) gets a
//! supervisor of its own through the same [`Tree`], so no call's cleanup reaches it.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio_util::sync::CancellationToken;

use super::ToolContext;
use super::output::{Captured, capture};

/// How long the output may stay open after the program exits (a background process still
/// writing) before the rest of the call's processes are killed.
const PIPE_GRACE: Duration = Duration::from_secs(1);
/// How long the output may stay open once every process of the call is dead (a process
/// outside the call was handed the pipe) before eve stops reading it.
const OUTPUT_GRACE: Duration = Duration::from_millis(500);
/// How long eve waits for the supervisor to kill its tree and exit before it kills the
/// supervisor itself.
#[cfg(target_os = "linux")]
const STOP_WAIT: Duration = Duration::from_secs(5);

/// How the program ended.
#[derive(Debug)]
pub enum End {
    Exited(std::io::Result<std::process::ExitStatus>),
    TimedOut,
    Aborted,
}

/// What was left when the program ended, and what eve did about it.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Cleanup {
    /// Processes of the call still running at its end, killed (on a timeout or an abort,
    /// the program itself among them).
    pub killed: u32,
    /// Killed processes that had not died when eve stopped waiting (stuck in the kernel).
    pub survivors: u32,
    /// The program exited, but background processes kept its output open past the grace.
    pub held_output: bool,
    /// Reading stopped before the output was closed: something outside the call holds it.
    pub output_cut: bool,
    /// The call's supervisor was killed from inside the call; what escaped it was hunted
    /// down on eve's side.
    pub supervisor_lost: bool,
}

impl Cleanup {
    /// What the model is told about the call's leftovers, or `None` when there were none.
    pub fn note(&self, end: &End) -> Option<String> {
        let mut lines = Vec::new();
        let exited = matches!(end, End::Exited(_));
        let background = if exited {
            self.killed
        } else {
            self.killed.saturating_sub(1)
        };
        if exited && self.killed > 0 {
            let held = if self.held_output {
                " and still held its output open"
            } else {
                ""
            };
            lines.push(format!(
                "note: {} started by the command {} still running when it exited{held}; eve killed {} (nothing a call starts outlives it)",
                processes(background, "background process"),
                if background == 1 { "was" } else { "were" },
                if background == 1 { "it" } else { "them" },
            ));
        } else if exited && self.held_output && !self.output_cut {
            lines.push(
                "note: background processes held the output open after the command exited; they ended before eve killed them"
                    .to_string(),
            );
        } else if !exited && background > 0 {
            lines.push(format!(
                "note: eve also killed {} the command had started",
                processes(background, "other process")
            ));
        }
        if self.survivors > 0 {
            lines.push(format!(
                "warning: {} did not die after SIGKILL (stuck in the kernel, e.g. on a hung file system) and may still be running",
                processes(self.survivors, "process")
            ));
        }
        if self.supervisor_lost {
            lines.push("warning: a process of the command killed eve's supervisor of the call; eve killed what it could find of the processes it had started".to_string());
        }
        if self.output_cut {
            lines.push(format!(
                "note: a process outside the call still held the output open; eve stopped reading {} ms after the call's processes were gone, so the end of the output may be missing",
                OUTPUT_GRACE.as_millis()
            ));
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }
}

fn processes(n: u32, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}es")
    }
}

/// A finished process and what it printed.
#[derive(Debug)]
pub struct Finished {
    pub end: End,
    pub stdout: Captured,
    pub stderr: Captured,
    pub cleanup: Cleanup,
    /// The sandbox's line for the model when the output says it refused something.
    pub sandbox_note: Option<String>,
}

impl Finished {
    /// What eve adds to the program's own output: the leftovers it killed, and what the
    /// sandbox refused.
    pub fn notes(&self) -> Option<String> {
        let notes: Vec<String> = self
            .cleanup
            .note(&self.end)
            .into_iter()
            .chain(self.sandbox_note.clone())
            .collect();
        (!notes.is_empty()).then(|| notes.join("\n"))
    }
}

/// Runs `command` to its end. `stdin` is written to it (then closed), or stdin is
/// closed from the start. `limit` bytes of each output stream are kept. The error is
/// the one of starting the program.
pub async fn run(
    mut command: tokio::process::Command,
    stdin: Option<Vec<u8>>,
    ctx: &ToolContext,
    timeout: Duration,
    limit: usize,
) -> std::io::Result<Finished> {
    command
        .current_dir(&ctx.workspace)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    #[cfg(unix)]
    command.process_group(0);
    for var in ctx.hidden_env.iter() {
        command.env_remove(var);
    }
    if let Some(sandbox) = ctx.sandbox.as_ref().filter(|s| s.is_on()) {
        command.env("TMPDIR", &sandbox.temp);
    }
    let mut tree = Tree::spawn(command, ctx.sandbox.clone())?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, tree.child.stdin.take()) {
        // A program that does not read its input closes the pipe early: not an error.
        tokio::spawn(async move {
            let _ = pipe.write_all(&bytes).await;
            let _ = pipe.shutdown().await;
        });
    }
    let stop_reading = CancellationToken::new();
    let stdout = tokio::spawn(capture(
        tree.child.stdout.take(),
        limit,
        stop_reading.clone(),
    ));
    let stderr = tokio::spawn(capture(
        tree.child.stderr.take(),
        limit,
        stop_reading.clone(),
    ));
    let end = tokio::select! {
        status = tree.exited() => End::Exited(status),
        () = tokio::time::sleep(timeout) => End::TimedOut,
        () = ctx.cancel.cancelled() => End::Aborted,
    };
    let mut cleanup = Cleanup::default();
    if matches!(end, End::Exited(_)) {
        cleanup.held_output = !closed_within(PIPE_GRACE, &stdout, &stderr).await;
    }
    tree.stop(&mut cleanup).await;
    if !closed_within(OUTPUT_GRACE, &stdout, &stderr).await {
        cleanup.output_cut = true;
        stop_reading.cancel();
    }
    let stdout = stdout.await.unwrap_or_default();
    let stderr = stderr.await.unwrap_or_default();
    let failed = !matches!(&end, End::Exited(Ok(status)) if status.success());
    let sandbox_note = ctx
        .sandbox
        .as_ref()
        .and_then(|s| s.explain_refusal(&ctx.workspace, failed, &[&stdout.text(), &stderr.text()]));
    Ok(Finished {
        end,
        stdout,
        stderr,
        cleanup,
        sandbox_note,
    })
}

/// Whether both readers reached the end of their stream within `grace`.
async fn closed_within<T>(
    grace: Duration,
    stdout: &tokio::task::JoinHandle<T>,
    stderr: &tokio::task::JoinHandle<T>,
) -> bool {
    let closed = async {
        while !(stdout.is_finished() && stderr.is_finished()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(grace, closed).await.is_ok()
}

/// A started program and whatever it starts.
#[cfg(target_os = "linux")]
struct Tree {
    child: tokio::process::Child,
    pid: Option<u32>,
    reports: Reports,
}

#[cfg(target_os = "linux")]
impl Tree {
    fn spawn(
        mut command: tokio::process::Command,
        sandbox: Option<std::sync::Arc<crate::sandbox::Sandbox>>,
    ) -> std::io::Result<Tree> {
        use std::os::fd::AsRawFd;
        let (ours, theirs) = std::os::unix::net::UnixStream::pair()?;
        super::supervisor::install(&mut command, theirs.as_raw_fd());
        if let Some(sandbox) = sandbox.filter(|s| s.is_on()) {
            // Runs after the supervisor's hook, in the program only (the supervisor never
            // returns from its hook): the program and all it starts are confined.
            // SAFETY: confine only makes system calls on data prepared before the fork.
            unsafe {
                command.pre_exec(move || sandbox.confine());
            }
        }
        let child =
            super::orphans::spawn_registered(|| command.spawn(), tokio::process::Child::id)?;
        drop(theirs);
        ours.set_nonblocking(true)?;
        Ok(Tree {
            pid: child.id(),
            child,
            reports: Reports::new(tokio::net::UnixStream::from_std(ours)?),
        })
    }

    /// Waits for the program to exit.
    async fn exited(&mut self) -> std::io::Result<std::process::ExitStatus> {
        use super::supervisor::Report;
        use std::os::unix::process::ExitStatusExt;
        loop {
            match self.reports.next().await {
                Some(Report::Exited(raw)) => return Ok(std::process::ExitStatus::from_raw(raw)),
                Some(Report::Ended { .. }) => {}
                None => {
                    return Err(std::io::Error::other(
                        "its supervisor was killed, so its exit status is unknown",
                    ));
                }
            }
        }
    }

    /// Has the supervisor kill everything that is left, and waits for it.
    async fn stop(mut self, cleanup: &mut Cleanup) {
        use super::supervisor::Report;
        // The supervisor reads the end of eve's half of the socket as the word to stop.
        let _ = self.reports.stream.shutdown().await;
        let ended = tokio::time::timeout(STOP_WAIT, async {
            loop {
                match self.reports.next().await {
                    Some(Report::Ended { killed, survivors }) => return Some((killed, survivors)),
                    Some(Report::Exited(_)) => {}
                    None => return None,
                }
            }
        })
        .await;
        match ended {
            Ok(Some((killed, survivors))) => {
                cleanup.killed = killed;
                cleanup.survivors = survivors;
            }
            Ok(None) | Err(_) => {
                cleanup.supervisor_lost = true;
                let _ = self.child.start_kill();
            }
        }
        let _ = self.child.wait().await;
        if let Some(pid) = self.pid {
            super::orphans::unregister(pid);
        }
        // Survivors and the tree of a lost supervisor land on eve.
        if cleanup.supervisor_lost || cleanup.survivors > 0 {
            let swept = tokio::task::spawn_blocking(super::orphans::sweep)
                .await
                .unwrap_or(0);
            cleanup.killed = cleanup.killed.saturating_add(swept);
        }
    }
}

/// The supervisor's reports, read record by record; cancel-safe (a partial record waits
/// in the buffer).
#[cfg(target_os = "linux")]
struct Reports {
    stream: tokio::net::UnixStream,
    buf: [u8; super::supervisor::RECORD],
    have: usize,
}

#[cfg(target_os = "linux")]
impl Reports {
    fn new(stream: tokio::net::UnixStream) -> Reports {
        Reports {
            stream,
            buf: [0; super::supervisor::RECORD],
            have: 0,
        }
    }

    /// The next report; `None` once the supervisor is gone.
    async fn next(&mut self) -> Option<super::supervisor::Report> {
        use tokio::io::AsyncReadExt;
        loop {
            match self.stream.read(&mut self.buf[self.have..]).await {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.have += n,
            }
            if self.have == self.buf.len() {
                self.have = 0;
                if let Some(report) = super::supervisor::Report::decode(&self.buf) {
                    return Some(report);
                }
            }
        }
    }
}

/// A started program in its own process group (no supervisor outside Linux: what leaves the
/// group escapes).
#[cfg(not(target_os = "linux"))]
struct Tree {
    child: tokio::process::Child,
    pid: Option<u32>,
}

#[cfg(not(target_os = "linux"))]
impl Tree {
    fn spawn(
        mut command: tokio::process::Command,
        _sandbox: Option<std::sync::Arc<crate::sandbox::Sandbox>>,
    ) -> std::io::Result<Tree> {
        let child = command.kill_on_drop(true).spawn()?;
        Ok(Tree {
            pid: child.id(),
            child,
        })
    }

    async fn exited(&mut self) -> std::io::Result<std::process::ExitStatus> {
        self.child.wait().await
    }

    async fn stop(mut self, _cleanup: &mut Cleanup) {
        #[cfg(unix)]
        if let Some(pid) = self.pid.and_then(|p| i32::try_from(p).ok()) {
            // SAFETY: killpg only sends a signal; a stale group id makes it fail with ESRCH.
            unsafe {
                libc::killpg(pid, libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

#[cfg(all(test, target_os = "linux"))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reading_stops_when_a_process_outside_the_call_holds_the_output() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ToolContext::new(dir.path().to_path_buf(), dir.path().join("agent"));
        let pidfile = dir.path().join("pid");
        let mut command = tokio::process::Command::new("sh");
        command.arg("-c").arg(format!(
            "echo $$ > {}; while [ ! -e {}.held ]; do sleep 0.02; done; echo done",
            pidfile.display(),
            pidfile.display()
        ));
        let pidfile2 = pidfile.clone();
        // The test process, outside the call, opens the program's stdout and keeps it.
        let holder = tokio::task::spawn_blocking(move || {
            loop {
                if let Ok(pid) = std::fs::read_to_string(&pidfile2)
                    && let Ok(pid) = pid.trim().parse::<u32>()
                {
                    let pipe = std::fs::OpenOptions::new()
                        .write(true)
                        .open(format!("/proc/{pid}/fd/1"))
                        .unwrap();
                    std::fs::write(pidfile2.with_extension("held"), "").unwrap();
                    return pipe;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        let finished = run(command, None, &ctx, Duration::from_secs(30), 1024)
            .await
            .unwrap();
        let _pipe = holder.await.unwrap();
        assert!(matches!(finished.end, End::Exited(Ok(s)) if s.success()));
        assert_eq!(finished.stdout.text(), "done\n");
        assert_eq!(
            finished.cleanup,
            Cleanup {
                held_output: true,
                output_cut: true,
                ..Cleanup::default()
            }
        );
        assert_eq!(
            finished.cleanup.note(&finished.end).unwrap(),
            "note: a process outside the call still held the output open; eve stopped reading 500 ms after the call's processes were gone, so the end of the output may be missing"
        );
    }
}
