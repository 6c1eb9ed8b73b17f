//! Command tools: a program started with templated arguments, the input as JSON on stdin,
//! stdout as the result. Runs in the workspace under `process::run`: a timeout, an aborted
//! turn or its exit kills everything it started.

use std::time::Duration;

use super::arguments::{self, Argument};
use crate::manifest;
use crate::tools::process::{self, End};
use crate::tools::{ToolContext, ToolExec, ToolOutput};
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

/// Bytes of stdout (and of stderr) a command tool returns at most; the middle is cut.
pub const OUTPUT_LIMIT: usize = 32 * 1024;

/// A `command = [...]` tool.
#[derive(Debug, Clone)]
pub struct CommandTool {
    pub name: String,
    pub argv: Vec<Argument>,
    pub timeout: Duration,
    /// Whether an argument built from the input may start with `-`.
    pub allow_option_arguments: bool,
}

impl CommandTool {
    /// The tool as its manifest entry declares it.
    pub fn from_manifest(tool: &manifest::Tool) -> Result<CommandTool, String> {
        let manifest::Executor::Command {
            argv,
            allow_option_arguments,
        } = &tool.executor
        else {
            return Err(format!("`{}` is not a command tool", tool.name));
        };
        Ok(CommandTool {
            name: tool.name.clone(),
            argv: argv.iter().map(|a| Argument::new(a)).collect(),
            timeout: Duration::from_secs(tool.timeout_secs.max(1)),
            allow_option_arguments: *allow_option_arguments,
        })
    }

    async fn run(&self, input: &Value, ctx: &ToolContext) -> ToolOutput {
        let agent_dir = ctx.agent_dir.to_string_lossy();
        let argv = match arguments::render(
            &self.name,
            &self.argv,
            input,
            &agent_dir,
            self.allow_option_arguments,
        ) {
            Ok(argv) => argv,
            Err(e) => return ToolOutput::error(e),
        };
        let Some((program, args)) = argv.split_first() else {
            return ToolOutput::error("the command is empty");
        };
        let found = match process::find(program, ctx) {
            Ok(found) => found,
            Err(why) => return ToolOutput::error(why),
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let payload = serde_json::to_vec(input).unwrap_or_default();
        let finished = match process::run(
            &found,
            &args,
            Some(payload),
            ctx,
            self.timeout,
            OUTPUT_LIMIT,
        )
        .await
        {
            Ok(finished) => finished,
            Err(e) => return ToolOutput::error(format!("cannot start `{program}`: {e}")),
        };
        let note = finished.notes();
        let output = match finished.end {
            End::TimedOut => ToolOutput::error(format!(
                "`{}` timed out after {} s; eve killed it",
                self.name,
                self.timeout.as_secs()
            )),
            End::Aborted => ToolOutput::error(format!(
                "`{}` was aborted: the turn was interrupted; eve killed it",
                self.name
            )),
            End::Exited(Err(e)) => ToolOutput::error(format!("cannot wait for `{program}`: {e}")),
            End::Exited(Ok(status)) => {
                let out = finished.stdout.text();
                let err = finished.stderr.text();
                if status.success() {
                    ToolOutput::ok(out)
                } else {
                    let how = match status.code() {
                        Some(code) => format!("exit code {code}"),
                        None => "killed by a signal".to_string(),
                    };
                    let mut text = format!("`{program}` failed ({how})");
                    if !err.trim().is_empty() {
                        text.push_str(&format!("\nstderr:\n{}", err.trim_end()));
                    }
                    if !out.trim().is_empty() {
                        text.push_str(&format!("\nstdout:\n{}", out.trim_end()));
                    }
                    ToolOutput::error(text)
                }
            }
        };
        match note {
            Some(note) => ToolOutput {
                content: format!("{}\n\n{note}", output.content.trim_end_matches('\n')),
                ..output
            },
            None => output,
        }
    }
}

impl ToolExec for CommandTool {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        self.run(input, ctx).boxed()
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use serde_json::json;
    use std::sync::Arc;

    fn ctx(dir: &std::path::Path) -> ToolContext {
        ToolContext::new(dir.to_path_buf(), dir.join("agent"))
    }

    fn tool(argv: &[&str], timeout_ms: u64) -> CommandTool {
        CommandTool {
            name: "t".into(),
            argv: argv.iter().map(|s| Argument::new(s)).collect(),
            timeout: Duration::from_millis(timeout_ms),
            allow_option_arguments: false,
        }
    }

    #[tokio::test]
    async fn stdin_carries_the_input_and_stdout_is_the_result() {
        let dir = tempfile::tempdir().unwrap();
        let out = tool(&["sh", "-c", "cat; echo; pwd"], 10_000)
            .call(&json!({"a": 1}), &ctx(dir.path()))
            .await;
        assert!(!out.is_error, "{out:?}");
        let canonical = dir.path().canonicalize().unwrap();
        assert_eq!(
            out.content,
            format!("{{\"a\":1}}\n{}\n", canonical.display())
        );
    }

    #[tokio::test]
    async fn a_failing_command_returns_its_exit_code_and_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let out = tool(&["sh", "-c", "echo oops >&2; exit 3"], 10_000)
            .call(&json!({}), &ctx(dir.path()))
            .await;
        assert!(out.is_error);
        assert_eq!(out.content, "`sh` failed (exit code 3)\nstderr:\noops");
        let missing = tool(&["/no/such/program"], 10_000)
            .call(&json!({}), &ctx(dir.path()))
            .await;
        assert!(
            missing.is_error
                && missing
                    .content
                    .starts_with("cannot start `/no/such/program`"),
            "{missing:?}"
        );
    }

    #[tokio::test]
    async fn hidden_variables_are_removed_from_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let script = tool(&["sh", "-c", "echo \"[${HOME-unset}]\""], 10_000);
        let visible = script.call(&json!({}), &ctx(dir.path())).await;
        assert_ne!(
            visible.content, "[unset]\n",
            "HOME is set in the test environment"
        );
        let mut hidden = ctx(dir.path());
        hidden.hidden_env = Arc::new(vec!["HOME".into()]);
        assert_eq!(script.call(&json!({}), &hidden).await.content, "[unset]\n");
    }

    #[tokio::test]
    async fn a_timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("child.pid");
        // The child forks a sleeper that would outlive it, then waits.
        // The sleeper's pid as the test sees it (`$!` is its pid in the call's own PID
        // namespace).
        let script = format!(
            "sh -c 'read -r p _ < /proc/self/stat; echo $p > {}; exec sleep 30' & wait",
            marker.display()
        );
        let out = tool(&["sh", "-c", &script], 300)
            .call(&json!({}), &ctx(dir.path()))
            .await;
        assert!(out.is_error);
        assert!(out.content.contains("timed out after 0 s"), "{out:?}");
        let pid: i32 = std::fs::read_to_string(&marker)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        // The sleeper is gone, or a zombie waiting for a reaper (PID 1 of a container may never reap it).
        let mut gone = false;
        for _ in 0..50 {
            match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                Err(_) => gone = true,
                Ok(stat) => {
                    gone = stat
                        .rsplit(')')
                        .next()
                        .is_some_and(|rest| rest.trim_start().starts_with('Z'))
                }
            }
            if gone {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(gone, "the forked sleeper {pid} survived the timeout");
    }

    #[tokio::test]
    async fn a_background_child_does_not_outlive_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let out = tool(
            &[
                "sh",
                "-c",
                "sh -c 'read -r p _ < /proc/self/stat; echo $p; exec sleep 100' & sleep 0.2",
            ],
            60_000,
        )
        .call(&json!({}), &ctx(dir.path()))
        .await;
        assert!(!out.is_error, "{out:?}");
        let (pid, note) = out.content.split_once("\n\n").unwrap();
        let pid: i32 = pid.trim().parse().unwrap();
        assert!(
            note.starts_with(
                "note: 1 background process started by the command was still running when it exited"
            ),
            "{note}"
        );
        std::thread::sleep(Duration::from_millis(100));
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty()
                || stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z')),
            "the backgrounded sleep {pid} survived"
        );
    }

    #[tokio::test]
    async fn an_aborted_turn_kills_the_command() {
        let dir = tempfile::tempdir().unwrap();
        let c = ctx(dir.path());
        let cancel = c.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            cancel.cancel();
        });
        let out = tool(&["sleep", "30"], 60_000).call(&json!({}), &c).await;
        assert!(out.is_error);
        assert!(out.content.contains("aborted"), "{out:?}");
    }
}
