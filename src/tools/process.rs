//! Running a tool's process: in the workspace, without the provider keys, with capped
//! output, a timeout and Ctrl-C, started through the sandbox's one door
//! ([`crate::sandbox::spawn`]). When the call ends, nothing it started outlives it: its
//! supervisor ends the call's PID namespace (or hunts its descendants where there is
//! none), however far they wandered. `bash` and command tools share this.

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

/// Where the program a command names is, looked up as `PATH` says before it starts,
/// never in a folder the model may write (the workspace, the sandbox's writable
/// folders): the error says why it cannot start.
pub fn find(program: &str, ctx: &ToolContext) -> Result<std::path::PathBuf, String> {
    let writable = ctx
        .sandbox
        .as_ref()
        .and_then(|s| s.recipe.as_ref())
        .map_or_else(
            || vec![ctx.workspace.clone()],
            crate::sandbox::Recipe::writable_folders,
        );
    let path = std::env::var_os("PATH");
    crate::sandbox::program::resolve(program, &ctx.workspace, path.as_deref(), &writable)
        .map_err(|why| format!("cannot start `{program}`: {why}"))
}

/// Runs `program` with `args` to its end, in the workspace, with eve's environment but
/// the hidden variables. `stdin` is written to it (then closed), or stdin is closed from
/// the start. `limit` bytes of each output stream are kept. The error is the one of
/// starting the program.
pub async fn run(
    program: impl AsRef<std::ffi::OsStr>,
    args: &[&str],
    stdin: Option<Vec<u8>>,
    ctx: &ToolContext,
    timeout: Duration,
    limit: usize,
) -> std::io::Result<Finished> {
    let launch = Launch {
        env: &[],
        cwd: &ctx.workspace,
    };
    run_with(program, args, launch, stdin, ctx, (timeout, limit)).await
}

/// What [`run_with`] starts a program with beyond [`run`]'s.
pub struct Launch<'a> {
    /// Variables set besides eve's environment.
    pub env: &'a [(&'a str, &'a std::ffi::OsStr)],
    /// Where it runs (inside the workspace or the agent directory: the caller's check).
    pub cwd: &'a std::path::Path,
}

/// [`run`], in `launch.cwd`, with the variables `launch.env` set too.
pub async fn run_with(
    program: impl AsRef<std::ffi::OsStr>,
    args: &[&str],
    launch: Launch<'_>,
    stdin: Option<Vec<u8>>,
    ctx: &ToolContext,
    (timeout, limit): (Duration, usize),
) -> std::io::Result<Finished> {
    let env = launch.env;
    let mut command = crate::sandbox::Command::new(program, launch.cwd);
    command.args(args).inherit_env(&ctx.hidden_env);
    for (name, value) in env {
        command.env(name, value);
    }
    if stdin.is_some() {
        command.stdin_piped();
    }
    let mut child = crate::sandbox::spawn(ctx.sandbox.as_deref(), &mut command).await?;
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A program that does not read its input closes the pipe early: not an error.
        tokio::spawn(async move {
            let _ = pipe.write_all(&bytes).await;
            let _ = pipe.shutdown().await;
        });
    }
    let stop_reading = CancellationToken::new();
    let mut stdout = Reading::start(capture(child.stdout.take(), limit, stop_reading.clone()));
    let mut stderr = Reading::start(capture(child.stderr.take(), limit, stop_reading.clone()));
    let end = tokio::select! {
        status = child.wait() => End::Exited(status),
        () = tokio::time::sleep(timeout) => End::TimedOut,
        () = ctx.cancel.cancelled() => End::Aborted,
    };
    let mut cleanup = Cleanup::default();
    if matches!(end, End::Exited(_)) {
        cleanup.held_output = !closed_within(PIPE_GRACE, &mut stdout, &mut stderr).await;
    }
    let stopped = child.stop().await;
    cleanup.killed = stopped.killed;
    cleanup.survivors = stopped.survivors;
    cleanup.supervisor_lost = stopped.lost;
    if !closed_within(OUTPUT_GRACE, &mut stdout, &mut stderr).await {
        cleanup.output_cut = true;
        stop_reading.cancel();
    }
    let stdout = stdout.finish().await;
    let stderr = stderr.finish().await;
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

/// One output stream being read on its own task, and what it read once it is done.
struct Reading {
    task: Option<tokio::task::JoinHandle<Captured>>,
    done: Option<Captured>,
}

impl Reading {
    fn start(read: impl Future<Output = Captured> + Send + 'static) -> Reading {
        Reading {
            task: Some(tokio::spawn(read)),
            done: None,
        }
    }

    /// Waits for the end of the stream; cancel-safe (the task goes on until awaited
    /// again).
    async fn ended(&mut self) {
        if let Some(task) = &mut self.task {
            let captured = task.await.unwrap_or_default();
            self.task = None;
            self.done = Some(captured);
        }
    }

    async fn finish(mut self) -> Captured {
        self.ended().await;
        self.done.unwrap_or_default()
    }
}

/// Whether both readers reached the end of their stream within `grace`: woken by their
/// end, not by polling.
async fn closed_within(grace: Duration, stdout: &mut Reading, stderr: &mut Reading) -> bool {
    let closed = async {
        stdout.ended().await;
        stderr.ended().await;
    };
    tokio::time::timeout(grace, closed).await.is_ok()
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
        let script = format!(
            // Its pid as the test sees it (`$$` is the pid in the call's own namespace).
            "read -r pid _ < /proc/self/stat; echo $pid > {}; while [ ! -e {}.held ]; do sleep 0.02; done; echo done",
            pidfile.display(),
            pidfile.display()
        );
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
        let finished = run(
            "sh",
            &["-c", &script],
            None,
            &ctx,
            Duration::from_secs(30),
            1024,
        )
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
