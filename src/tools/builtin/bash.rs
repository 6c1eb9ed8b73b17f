//! `bash`: `bash -c` in the workspace under `process::run` (a timeout, capped output,
//! nothing outliving the call), and the agent's `allow` / `deny` rules.

use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use crate::catalog::{Availability, BuiltinTool, Setting, SettingKind};
use crate::manifest;
use crate::shell::line as command_line;
use crate::shell::pattern::{CommandPattern, DenyMatch};
use crate::tools::process;
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};

/// What the model is told about `bash`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "bash",
    description: "Runs a shell command with `bash -c` in the workspace root and returns its exit \
        code, stdout and stderr. The command is killed when it exceeds timeout_secs (default \
        120, at most 600), and whatever it leaves running in the background (`&`, nohup, \
        setsid) is killed when it exits: nothing outlives the call, so do not start servers \
        or daemons with it. Each call starts a fresh shell: \
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
            kind: SettingKind::CommandPatterns,
            description: "command patterns that run without asking, even when approval = \
                \"always\", when every command of the line matches one word for word",
        },
        Setting {
            name: "deny",
            kind: SettingKind::CommandPatterns,
            description: "command patterns that are refused wherever they appear in the line",
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

/// The `bash` tool with its settings.
#[derive(Debug, Clone)]
pub struct Bash {
    allow: Vec<CommandPattern>,
    deny: Vec<CommandPattern>,
    max_timeout: Duration,
}

fn patterns(tool: &manifest::Tool, key: &str) -> Result<Vec<CommandPattern>, String> {
    let Some(list) = tool.settings.get(key).and_then(Value::as_array) else {
        return Ok(Vec::new());
    };
    list.iter()
        .filter_map(Value::as_str)
        .map(|text| {
            CommandPattern::parse(text)
                .map_err(|e| format!("settings.{key}: `{text}` is not a valid pattern: {e}"))
        })
        .collect()
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

    /// Why the deny rules refuse this command line, if they do: a command of the line
    /// matches a pattern, may match one, or the line cannot be analysed at all.
    fn refusal(&self, line: &str) -> Option<String> {
        if self.deny.is_empty() {
            return None;
        }
        let analysis = command_line::analyse(line);
        let mut maybe = None;
        for command in &analysis.commands {
            for pattern in &self.deny {
                match pattern.denies(command) {
                    DenyMatch::Yes => {
                        return Some(format!(
                            "Refused by the agent's configuration: the command matches the deny pattern `{}`.",
                            pattern.text()
                        ));
                    }
                    DenyMatch::Maybe(part) if maybe.is_none() => {
                        maybe = Some(format!(
                            "Refused by the agent's configuration: the command may match the deny pattern `{}`, depending on `{part}`, which is only known when it runs. Write the value out.",
                            pattern.text()
                        ));
                    }
                    DenyMatch::Maybe(_) | DenyMatch::No => {}
                }
            }
        }
        if let Some(why) = analysis.opaque {
            return Some(format!(
                "Refused by the agent's configuration: its deny rules cannot be checked on this command line, because {why}. Write it as plain commands, joined by `|`, `&&`, `||` or `;`, with their names written out."
            ));
        }
        maybe
    }

    /// Whether allow rules let this command line run without approval: every command of
    /// it is a plain command that a pattern covers, word for word.
    fn allowed(&self, line: &str) -> bool {
        if self.allow.is_empty() {
            return false;
        }
        let analysis = command_line::analyse(line);
        analysis.not_plain.is_none()
            && !analysis.plain.is_empty()
            && analysis
                .plain
                .iter()
                .all(|command| self.allow.iter().any(|p| p.covers(command)))
    }

    async fn run(&self, input: Input, ctx: &ToolContext) -> ToolOutput {
        let timeout =
            Duration::from_secs(input.timeout_secs.unwrap_or(DEFAULT_TIMEOUT_SECS).max(1))
                .min(self.max_timeout);
        let args = ["-c", input.command.as_str()];
        let finished = match process::run("bash", &args, None, ctx, timeout, OUTPUT_LIMIT).await {
            Ok(finished) => finished,
            Err(e) => return ToolOutput::error(format!("cannot start bash: {e}")),
        };
        let cleanup = finished.cleanup.note(&finished.end);
        let sandbox_note = finished.sandbox_note;
        let (end, out, err) = (finished.end, finished.stdout, finished.stderr);
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
                    "timed_out: the command ran longer than {} s; eve killed it",
                    timeout.as_secs()
                ),
            ),
            process::End::Aborted => (
                true,
                "aborted: the turn was interrupted; eve killed the command".into(),
            ),
        };
        text.push_str(&status_line);
        if let Some(note) = cleanup {
            text.push('\n');
            text.push_str(&note);
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
        // After the command's own error, so the model reads the refusal, then why.
        if let Some(note) = sandbox_note {
            text.push('\n');
            text.push_str(&note);
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
            if let Some(refusal) = self.refusal(&input.command) {
                return ToolOutput::error(refusal);
            }
            self.run(input, ctx).await
        }
        .boxed()
    }

    fn precheck(&self, input: &Value) -> Option<ToolOutput> {
        let command = input.get("command")?.as_str()?;
        self.refusal(command).map(ToolOutput::error)
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
                // The sleeper's pid as the test sees it (`$!` is its pid in the call's
                // own PID namespace).
                &json!({"command": "sh -c 'read -r p _ < /proc/self/stat; echo $p; exec sleep 100' & wait", "timeout_secs": 1}),
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
            .call(&json!({"command": "sh -c 'read -r p _ < /proc/self/stat; echo $p; exec sleep 100' & sleep 0.2"}), &ctx)
            .await;
        assert!(!out.is_error, "{}", out.content);
        assert!(
            out.content.contains(
                "note: 1 background process started by the command was still running when it exited and still held its output open; eve killed it"
            ),
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
    fn deny_refuses_and_allow_approves_only_plain_commands() {
        let tool = bash(
            &["git status", "git status --short", "ls"],
            &["*git push*", "*rm -rf /*", "sudo"],
            600,
        );
        let refusal = |line: &str| {
            tool.precheck(&json!({ "command": line }))
                .map(|o| o.content)
        };
        for line in [
            "git push origin main",
            "make && git push",
            "echo hi\ngit push",
            "git -C . push",
            "sudo\tid",
            "command sudo id",
            "/usr/bin/sudo id",
            "echo x | sudo tee /x",
            "s''udo id",
            "rm -fr /",
        ] {
            assert!(refusal(line).is_some(), "{line}");
        }
        assert_eq!(
            refusal("rm -rf / --no-preserve-root").unwrap(),
            "Refused by the agent's configuration: the command matches the deny pattern `*rm -rf /*`."
        );
        assert_eq!(
            refusal("rm $FLAGS /").unwrap(),
            "Refused by the agent's configuration: the command may match the deny pattern `*rm -rf /*`, depending on `$FLAGS`, which is only known when it runs. Write the value out."
        );
        assert_eq!(
            refusal("$CMD x").unwrap(),
            "Refused by the agent's configuration: its deny rules cannot be checked on this command line, because its command name `$CMD` is only known when the line runs. Write it as plain commands, joined by `|`, `&&`, `||` or `;`, with their names written out."
        );
        assert_eq!(
            refusal("cat <(ls)").unwrap(),
            "Refused by the agent's configuration: its deny rules cannot be checked on this command line, because it has shell syntax eve cannot parse (unsupported syntax). Write it as plain commands, joined by `|`, `&&`, `||` or `;`, with their names written out."
        );
        assert_eq!(refusal("git status"), None);
        let allowed = |line: &str| tool.approved_by_policy(&json!({ "command": line }));
        assert!(allowed("git status --short"));
        assert!(allowed("ls"));
        assert!(allowed("git status && ls"));
        for line in [
            "ls -la",
            "ls -la /root",
            "git status; rm -rf ~",
            "git status && curl evil",
            "git status $(touch x)",
            "git status > /etc/x",
            "/bin/ls",
            "./ls",
            "ls &",
            "",
        ] {
            assert!(!allowed(line), "{line}");
        }
    }
}

/// `bash` for an agent, configured by its manifest entry.
pub fn build(
    tool: &crate::manifest::Tool,
    _manifest: &std::sync::Arc<crate::manifest::Manifest>,
) -> Result<std::sync::Arc<dyn ToolExec>, String> {
    Ok(std::sync::Arc::new(Bash::new(tool)?))
}
