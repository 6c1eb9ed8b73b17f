//! `bash`: `bash -c` in the workspace, in its own process group, with a timeout, capped
//! output, and the agent's `allow` / `deny` patterns over the command line.

use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::Value;

use crate::tools::process;
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};
use crate::manifest;
use crate::catalog::{Availability, BuiltinTool, Setting, SettingKind};

/// What the model is told about `bash`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "bash",
    description: "Runs a shell command with `bash -c` in the workspace root and returns its exit \
        code, stdout and stderr. The command runs in its own process group and is killed when \
        it exceeds timeout_secs (default 120, at most 600). Each call starts a fresh shell: \
        `cd` and exported variables do not carry over to the next call, so chain dependent \
        commands with `&&` in one call. Long output is truncated, keeping its beginning and \
        its end. Provider API keys are removed from the environment. Use it for builds, \
        tests, git, package managers and other programs. Do not use it to find, read or edit \
        files: prefer glob over find or ls, grep over grep or rg, read_file over cat, head or \
        tail, and edit_file or write_file over sed, awk or echo redirection. Avoid commands \
        that wait for input or never exit (servers, watchers, editors, pagers); they hang \
        until the timeout. Some commands may require a person's approval first or be refused \
        by the agent's configuration; a refusal comes back as an error.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "The command line to run with bash -c in the workspace root."
            },
            "timeout_secs": {
                "type": "integer",
                "minimum": 1,
                "maximum": 600,
                "default": 120,
                "description": "Seconds after which the command is killed (1 to 600, default 120). Raise it only for commands known to be slow, such as full builds or test suites."
            }
        },
        "required": ["command"],
        "additionalProperties": false
    }"#,
    read_only: false,
    timeout_secs: 600,
    settings: &[
        Setting {
            name: "allow",
            kind: SettingKind::StringList,
            description: "glob patterns over the command line that run without asking, even \
                when approval = \"always\"",
        },
        Setting {
            name: "deny",
            kind: SettingKind::StringList,
            description: "glob patterns over the command line that are refused",
        },
    ],
    availability: Availability::Always,
};

/// Seconds a command may run when the model does not say.
pub const DEFAULT_TIMEOUT_SECS: u64 = 120;
/// Bytes of stdout (and of stderr) kept: the first and last half.
pub const OUTPUT_LIMIT: usize = 30 * 1024;

#[derive(Debug, Deserialize)]
struct Input {
    command: String,
    timeout_secs: Option<u64>,
}

#[derive(Debug, Clone)]
struct Pattern {
    text: String,
    matcher: GlobMatcher,
}

/// The `bash` tool with its settings.
#[derive(Debug, Clone)]
pub struct Bash {
    allow: Vec<Pattern>,
    deny: Vec<Pattern>,
    max_timeout: Duration,
}

fn patterns(tool: &manifest::Tool, key: &str) -> Result<Vec<Pattern>, String> {
    let Some(list) = tool.settings.get(key).and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    list.iter()
        .filter_map(Value::as_str)
        .map(|text| {
            GlobBuilder::new(text)
                .literal_separator(false)
                .backslash_escape(true)
                .build()
                .map(|glob| Pattern {
                    text: text.to_string(),
                    matcher: glob.compile_matcher(),
                })
                .map_err(|e| format!("settings.{key}: `{text}` is not a valid pattern: {e}"))
        })
        .collect()
}

/// Whether a command line is one simple command: no `;`, `&`, `|`, backquote, `$(`,
/// redirection or line break that could chain a second command after an allowed one.
pub fn is_simple(command: &str) -> bool {
    !command.contains([';', '&', '|', '`', '>', '<', '\n', '\r']) && !command.contains("$(")
}

impl Bash {
    /// The tool as its manifest entry configures it.
    pub fn new(tool: &manifest::Tool) -> Result<Bash, String> {
        Ok(Bash {
            allow: patterns(tool, "allow")?,
            deny: patterns(tool, "deny")?,
            max_timeout: Duration::from_secs(tool.timeout_secs.max(1)),
        })
    }

    /// The deny pattern the command matches, as a whole or on any of its lines.
    fn denied_by(&self, command: &str) -> Option<&str> {
        let command = command.trim();
        self.deny
            .iter()
            .find(|p| {
                p.matcher.is_match(command) || command.lines().any(|l| p.matcher.is_match(l.trim()))
            })
            .map(|p| p.text.as_str())
    }

    /// Whether an allow pattern lets this command run without approval.
    fn allowed(&self, command: &str) -> bool {
        let command = command.trim();
        is_simple(command) && self.allow.iter().any(|p| p.matcher.is_match(command))
    }

    async fn run(&self, input: Input, ctx: &ToolContext) -> ToolOutput {
        let timeout =
            Duration::from_secs(input.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1))
                .min(self.max_timeout);
        let mut command = tokio::process::Command::new("bash");
        command.arg("-c").arg(&input.command);
        let finished = match process::run(command, None, ctx, timeout, OUTPUT_LIMIT).await {
            Ok(finished) => finished,
            Err(e) => return ToolOutput::error(format!("cannot start bash: {e}")),
        };
        let (end, out, err, lingering) = (
            finished.end,
            finished.stdout,
            finished.stderr,
            finished.lingering,
        );
        let mut text = String::new();
        let (is_error, status_line) = match &end {
            process::End::Exited(Ok(status)) => match status.code() {
                Some(0) => (false, "exit code: 0".to_string()),
                Some(code) => (true, format!("exit code: {code}")),
                None => (true, "killed by a signal".to_string()),
            },
            process::End::Exited(Err(e)) => (true, format!("cannot wait for bash: {e}")),
            process::End::TimedOut => (
                true,
                format!(
                    "timed_out: the command ran longer than {} s; it and every process it started were killed",
                    timeout.as_secs()
                ),
            ),
            process::End::Aborted => (
                true,
                "aborted: the turn was interrupted; the command and its processes were killed"
                    .into(),
            ),
        };
        text.push_str(&status_line);
        if lingering {
            text.push_str("\nnote: background processes still held the output open after the command exited; they were stopped");
        }
        if out.truncated() || err.truncated() {
            text.push_str("\ntruncated: true (the middle of the output was cut)");
        }
        let stdout_text = out.text();
        let stderr_text = err.text();
        if !stdout_text.is_empty() {
            text.push_str(&format!(
                "\n<stdout>\n{}\n</stdout>",
                stdout_text.trim_end_matches('\n')
            ));
        }
        if !stderr_text.is_empty() {
            text.push_str(&format!(
                "\n<stderr>\n{}\n</stderr>",
                stderr_text.trim_end_matches('\n')
            ));
        }
        ToolOutput {
            content: text,
            is_error,
            images: Vec::new(),
        }
    }
}

impl ToolExec for Bash {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let input: Input = match parse_input(input) {
                Ok(input) => input,
                Err(e) => return e,
            };
            if let Some(pattern) = self.denied_by(&input.command) {
                return ToolOutput::error(format!("Refused by the agent's configuration: the command matches the deny pattern `{pattern}`."));
            }
            self.run(input, ctx).await
        }
        .boxed()
    }

    fn precheck(&self, input: &Value) -> Option<ToolOutput> {
        let command = input.get("command")?.as_str()?;
        self.denied_by(command).map(|pattern| {
            ToolOutput::error(format!(
                "Refused by the agent's configuration: the command matches the deny pattern `{pattern}`."
            ))
        })
    }

    fn approved_by_policy(&self, input: &Value) -> bool {
        input
            .get("command")
            .and_then(Value::as_str)
            .is_some_and(|command| self.allowed(command))
    }
}

#[cfg(all(test, unix))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    fn bash(allow: &[&str], deny: &[&str], timeout_secs: u64) -> Bash {
        let tool = manifest::Tool {
            name: "bash".into(),
            description: String::new(),
            input_schema: json!({}),
            source: manifest::ToolSource::Builtin,
            approval: manifest::Approval::Never,
            timeout_secs,
            read_only: false,
            executor: manifest::Executor::Builtin,
            defer: false,
            settings: BTreeMap::from([
                ("allow".to_string(), json!(allow)),
                ("deny".to_string(), json!(deny)),
            ]),
        };
        Bash::new(&tool).unwrap()
    }

    fn ctx() -> (tempfile::TempDir, ToolContext) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        (tmp, ToolContext::new(root.clone(), root.join("agent")))
    }

    fn gone(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Err(_) => true,
            Ok(stat) => stat
                .rsplit(')')
                .next()
                .is_some_and(|r| r.trim_start().starts_with('Z')),
        }
    }

    #[tokio::test]
    async fn runs_in_the_workspace_and_returns_exit_code_and_both_streams() {
        let (_tmp, ctx) = ctx();
        let out = bash(&[], &[], 600)
            .call(&json!({"command": "pwd; echo oops >&2; exit 3"}), &ctx)
            .await;
        assert!(out.is_error);
        assert_eq!(
            out.content,
            format!(
                "exit code: 3\n<stdout>\n{}\n</stdout>\n<stderr>\noops\n</stderr>",
                ctx.workspace.display()
            )
        );
        let ok = bash(&[], &[], 600)
            .call(&json!({"command": "true"}), &ctx)
            .await;
        assert_eq!(ok, ToolOutput::ok("exit code: 0"));
    }

    #[tokio::test]
    async fn a_timeout_kills_the_command_and_the_children_it_forked() {
        let (_tmp, ctx) = ctx();
        let out = bash(&[], &[], 600)
            .call(
                &json!({"command": "sleep 100 & echo $!; wait", "timeout_secs": 1}),
                &ctx,
            )
            .await;
        assert!(out.is_error);
        assert!(
            out.content
                .starts_with("timed_out: the command ran longer than 1 s"),
            "{}",
            out.content
        );
        let pid: i32 = out
            .content
            .split("<stdout>\n")
            .nth(1)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        for _ in 0..50 {
            if gone(pid) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(gone(pid), "the forked sleep {pid} survived");
    }

    #[tokio::test]
    async fn the_model_cannot_exceed_the_tools_timeout() {
        let (_tmp, ctx) = ctx();
        let out = bash(&[], &[], 1)
            .call(&json!({"command": "sleep 5", "timeout_secs": 600}), &ctx)
            .await;
        assert!(out.content.contains("longer than 1 s"), "{}", out.content);
    }

    #[tokio::test]
    async fn a_background_child_left_running_is_stopped_after_the_command_exits() {
        let (_tmp, ctx) = ctx();
        let out = bash(&[], &[], 600)
            .call(&json!({"command": "sleep 100 & echo $!"}), &ctx)
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content
                .contains("background processes still held the output open"),
            "{}",
            out.content
        );
        let pid: i32 = out
            .content
            .split("<stdout>\n")
            .nth(1)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(gone(pid));
    }

    #[tokio::test]
    async fn ten_megabytes_of_output_are_cut_to_head_and_tail() {
        let (_tmp, ctx) = ctx();
        let out = bash(&[], &[], 600)
            .call(&json!({"command": "echo START; head -c 10000000 /dev/zero | tr '\\0' x; echo; echo END"}), &ctx)
            .await;
        assert!(!out.is_error);
        assert!(out.content.contains("truncated: true"));
        assert!(out.content.contains("<stdout>\nSTART\nxxx"));
        assert!(out.content.contains("xxx\nEND\n</stdout>"));
        assert!(out.content.contains("bytes cut from the middle"));
        assert!(out.content.len() < 40 * 1024, "{} bytes", out.content.len());
    }

    #[tokio::test]
    async fn provider_keys_are_removed_from_the_environment() {
        let (_tmp, mut ctx) = ctx();
        ctx.hidden_env = std::sync::Arc::new(vec!["HOME".into()]);
        let out = bash(&[], &[], 600)
            .call(&json!({"command": "echo \"[${HOME-unset}]\""}), &ctx)
            .await;
        assert!(out.content.contains("[unset]"), "{}", out.content);
    }

    #[test]
    fn deny_refuses_and_allow_approves_only_simple_commands() {
        let tool = bash(&["git status*", "ls"], &["*git push*", "*rm -rf /*"], 600);
        assert!(
            tool.precheck(&json!({"command": "git push origin main"}))
                .is_some()
        );
        assert!(
            tool.precheck(&json!({"command": "make && git push"}))
                .is_some()
        );
        assert!(
            tool.precheck(&json!({"command": "echo hi\ngit push"}))
                .is_some()
        );
        let refused = tool
            .precheck(&json!({"command": "sudo rm -rf / --no-preserve-root"}))
            .unwrap();
        assert_eq!(
            refused.content,
            "Refused by the agent's configuration: the command matches the deny pattern `*rm -rf /*`."
        );
        assert!(tool.precheck(&json!({"command": "git status"})).is_none());
        assert!(tool.approved_by_policy(&json!({"command": "git status --short"})));
        assert!(tool.approved_by_policy(&json!({"command": "ls"})));
        assert!(!tool.approved_by_policy(&json!({"command": "ls -la"})));
        assert!(!tool.approved_by_policy(&json!({"command": "git status; rm -rf ~"})));
        assert!(!tool.approved_by_policy(&json!({"command": "git status && curl evil"})));
        assert!(!tool.approved_by_policy(&json!({"command": "git status $(touch x)"})));
        assert!(!tool.approved_by_policy(&json!({"command": "git status > /etc/x"})));
    }
}

/// `bash` for an agent, configured by its manifest entry.
pub fn build(tool: &crate::manifest::Tool, _manifest: &crate::manifest::Manifest) -> Result<std::sync::Arc<dyn ToolExec>, String> {
    Ok(std::sync::Arc::new(Bash::new(tool)?))
}

