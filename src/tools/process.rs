//! Running a tool's process: in the workspace, in its own process group, without the
//! provider keys, with capped output, a timeout and Ctrl-C. When it ends, nothing it
//! started outlives it. `bash` and command tools share this.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncWriteExt;

use super::ToolContext;
use super::output::{Captured, capture};

/// How long the pipes may stay open after the process exits (a background child
/// holding them) before the group is stopped.
const PIPE_GRACE: Duration = Duration::from_secs(1);

/// How the process ended.
#[derive(Debug)]
pub enum End {
    Exited(std::io::Result<std::process::ExitStatus>),
    TimedOut,
    Aborted,
}

/// A finished process and what it printed.
#[derive(Debug)]
pub struct Finished {
    pub end: End,
    pub stdout: Captured,
    pub stderr: Captured,
    /// Background processes still held its output open after it exited (then stopped).
    pub lingering: bool,
}

/// Kills every process of the group led by `pid`.
pub fn kill_group(pid: u32) {
    #[cfg(unix)]
    {
        let Ok(pid) = i32::try_from(pid) else {
            return;
        };
        // SAFETY: killpg only sends a signal; a stale group id makes it fail with ESRCH, which is fine.
        unsafe {
            libc::killpg(pid, libc::SIGKILL);
        }
    }
    #[cfg(not(unix))]
    let _ = pid;
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
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    #[cfg(unix)]
    command.process_group(0);
    for var in ctx.hidden_env.iter() {
        command.env_remove(var);
    }
    let mut child = command.spawn()?;
    let pid = child.id();
    if let (Some(bytes), Some(mut pipe)) = (stdin, child.stdin.take()) {
        // A program that does not read its input closes the pipe early: not an error.
        tokio::spawn(async move {
            let _ = pipe.write_all(&bytes).await;
            let _ = pipe.shutdown().await;
        });
    }
    let stdout = tokio::spawn(capture(child.stdout.take(), limit));
    let stderr = tokio::spawn(capture(child.stderr.take(), limit));
    let end = tokio::select! {
        status = child.wait() => End::Exited(status),
        () = tokio::time::sleep(timeout) => End::TimedOut,
        () = ctx.cancel.cancelled() => End::Aborted,
    };
    let mut lingering = false;
    if matches!(end, End::Exited(_)) {
        let pipes_closed = async {
            while !(stdout.is_finished() && stderr.is_finished()) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        };
        lingering = tokio::time::timeout(PIPE_GRACE, pipes_closed)
            .await
            .is_err();
    }
    if let Some(pid) = pid {
        kill_group(pid);
    }
    let _ = child.wait().await;
    Ok(Finished {
        end,
        stdout: stdout.await.unwrap_or_default(),
        stderr: stderr.await.unwrap_or_default(),
        lingering,
    })
}
