//! Hooks at the harness's step boundaries (docs/hooks.md): the author's programs, run
//! through the same door as command tools (`tools::process::run`: the sandbox, the
//! environment without provider keys, the supervisor that kills what they leave), each
//! given the event as JSON on stdin in the field names Claude Code's hook scripts read,
//! and answering with its exit code (0 go on, 2 refuse with stderr as the reason) or a
//! JSON object on stdout. Several hooks of one event run in file-name order; the first
//! that refuses wins. An agent without hooks pays nothing: no hook, no work.

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Bound;
use super::Harness;
pub use super::verdict::{Decision, Judged};
use crate::manifest::hook::{Hook, HookEvent, OnError};
use crate::protocol::{EventKind, InputKind, InputRequest};
use crate::tools::ToolContext;
use crate::tools::process::{self, End};

/// Bytes of a hook's stdout (and of its stderr) eve reads at most.
const OUTPUT_LIMIT: usize = 64 * 1024;
/// The longest reason or note from a hook that reaches the model or a person.
const TEXT_LIMIT: usize = 4 * 1024;

/// What the hooks of one event said, together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fired {
    pub decision: Decision,
    /// Why, for a refusal (the first refusing hook's words).
    pub reason: Option<String>,
    /// Notes for the model, in hook order.
    pub context: Vec<String>,
    /// `before_tool`: the input the call runs with instead of the model's.
    pub updated_input: Option<Value>,
}

/// One hook's answer (as a durable engine journals it).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Answer {
    decision: Decision,
    reason: Option<String>,
    context: Option<String>,
    updated_input: Option<Value>,
    /// Why the hook failed, when it did (its `on_error` then decided).
    failed: Option<String>,
}

/// A hook's JSON answer, in eve's field names and Claude Code's.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Wire {
    decision: Option<String>,
    reason: Option<String>,
    #[serde(alias = "additionalContext")]
    additional_context: Option<String>,
    #[serde(alias = "updatedInput")]
    updated_input: Option<Value>,
    #[serde(rename = "hookSpecificOutput")]
    specific: Option<Specific>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct Specific {
    permission_decision: Option<String>,
    permission_decision_reason: Option<String>,
    updated_input: Option<Value>,
    additional_context: Option<String>,
}

impl Harness {
    /// Whether any hook runs at `event` (for `tool`, on tool events).
    pub(super) fn has_hooks(&self, event: HookEvent, tool: Option<&str>) -> bool {
        self.setup.hooks.iter().any(|b| applies(b, event, tool))
    }

    /// Runs the hooks of `event` that apply (to `tool`), in order, each with the event's
    /// fields and `fields`; stops at the first that refuses. On `before_tool` a hook's
    /// new input is what the next hook sees.
    pub(super) async fn fire(
        &self,
        event: HookEvent,
        at: (&str, u64),
        tool: Option<(&str, &str)>,
        mut fields: Value,
        cancel: &CancellationToken,
    ) -> Fired {
        let mut fired = Fired::default();
        if !self.has_hooks(event, tool.map(|(name, _)| name)) {
            return fired;
        }
        let ctx = self.tool_context(cancel);
        let (turn_id, step) = at;
        let hooks: Vec<Bound> = self
            .setup
            .hooks
            .iter()
            .filter(|b| applies(b, event, tool.map(|(name, _)| name)))
            .cloned()
            .collect();
        for Bound {
            hook, agent_dir, ..
        } in &hooks
        {
            let started = Instant::now();
            let ctx = ToolContext {
                agent_dir: agent_dir.clone(),
                ..ctx.clone()
            };
            let answer = self.ask(hook, event, &fields, ctx, (turn_id, step)).await;
            let decision = answer.decision;
            self.emitter.emit(EventKind::HookCompleted {
                turn_id: turn_id.to_string(),
                step,
                hook: hook.name.clone(),
                event: event.name().to_string(),
                call_id: tool.map(|(_, id)| id.to_string()),
                decision: decision.name(event).to_string(),
                reason: answer.reason.clone().or(answer.failed.clone()),
                updated_input: answer.updated_input.clone(),
                failed: answer.failed.is_some(),
                duration_ms: started.elapsed().as_millis() as u64,
            });
            if let Some(context) = answer.context {
                fired.context.push(context);
            }
            if let Some(input) = answer
                .updated_input
                .filter(|_| event == HookEvent::BeforeTool)
            {
                fields["tool_input"] = input.clone();
                fired.updated_input = Some(input);
            }
            match decision {
                Decision::Deny => {
                    fired.decision = Decision::Deny;
                    fired.reason = Some(
                        answer
                            .reason
                            .or(answer.failed)
                            .unwrap_or_else(|| format!("the hook `{}` refused it", hook.name)),
                    );
                    return fired;
                }
                // Asking the person wins over allowing without asking.
                Decision::Ask => fired.decision = Decision::Ask,
                Decision::Allow if fired.decision == Decision::Continue => {
                    fired.decision = Decision::Allow;
                }
                _ => {}
            }
        }
        fired
    }

    /// `hook`'s answer to `event` with `fields`, given and read back in the names it
    /// reads (eve's, or Claude Code's).
    async fn ask(
        &self,
        hook: &Hook,
        event: HookEvent,
        fields: &Value,
        ctx: ToolContext,
        at: (&str, u64),
    ) -> Answer {
        let payload = self.payload(event, at.0, &ctx.agent_dir, &in_names(hook, fields, true));
        let mut answer = self.answer(hook, payload, ctx, at).await;
        if hook.claude_names
            && let Some(input) = answer.updated_input.take()
        {
            let given = json!({"tool_name": fields["tool_name"], "tool_input": input});
            answer.updated_input = Some(in_names(hook, &given, false)["tool_input"].clone());
        }
        answer
    }

    /// One hook's answer: run, or given back by the durable engine's journal when the
    /// turn runs on one (a replay after a crash gets the answer of the first run).
    async fn answer(
        &self,
        hook: &Hook,
        payload: Vec<u8>,
        ctx: ToolContext,
        (turn_id, step): (&str, u64),
    ) -> Answer {
        if let Some(stub) = self.setup.hook_stubs.iter().find(|s| s.hook == hook.name) {
            return stubbed(hook, stub);
        }
        let Some(durable) = &self.durable else {
            return run(hook, &payload, &ctx).await;
        };
        let n = self
            .hook_runs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let name = super::durable::hook_name(turn_id, step, &hook.name, n);
        let owned = hook.clone();
        let work = async move { run(&owned, &payload, &ctx).await };
        match super::durable::journaled(durable.as_ref(), name, work).await {
            Ok(answer) => answer,
            Err(why) => failed(hook, why),
        }
    }

    /// The `before_tool` hooks' judgement of a call of `name` with `input`: what they
    /// decided and the input it runs with (`None` when they refused it, with why).
    pub(super) async fn judge(
        &self,
        (turn_id, step): (&str, u64),
        (name, call_id): (&str, &str),
        input: &Value,
        cancel: &CancellationToken,
    ) -> Result<Judged, String> {
        let fields = json!({
            "tool_name": name,
            "tool_input": input,
            "tool_use_id": call_id,
        });
        let fired = self
            .fire(
                HookEvent::BeforeTool,
                (turn_id, step),
                Some((name, call_id)),
                fields,
                cancel,
            )
            .await;
        if fired.decision == Decision::Deny {
            return Err(fired.reason.unwrap_or_default());
        }
        Ok(Judged {
            decision: fired.decision,
            model_input: input.clone(),
            input: fired.updated_input.unwrap_or_else(|| input.clone()),
            notes: fired.context,
        })
    }

    /// The message the model reads for the person's `input`: followed by the notes of
    /// the session's `session_start` hooks (the first message after them) and of the
    /// `user_prompt` hooks; or why a `user_prompt` hook refused it (then the model
    /// never sees it).
    pub(super) async fn user_prompt(
        &mut self,
        turn_id: &str,
        input: &str,
        cancel: &CancellationToken,
    ) -> Result<String, String> {
        let mut notes = std::mem::take(&mut self.pending_context);
        if self.has_hooks(HookEvent::UserPrompt, None) {
            let fields = json!({ "prompt": input });
            let fired = self
                .fire(HookEvent::UserPrompt, (turn_id, 0), None, fields, cancel)
                .await;
            if fired.decision == Decision::Deny {
                self.pending_context = notes;
                return Err(fired.reason.unwrap_or_default());
            }
            notes.extend(fired.context);
        }
        if notes.is_empty() {
            return Ok(input.to_string());
        }
        // Marked as the hooks' words, not the person's: what they print may come from
        // the workspace the model writes.
        Ok(format!(
            "{input}\n\n<hook-context>\nNotes from the agent's hooks, not from the person:\n\n{}\n</hook-context>",
            notes.join("\n\n")
        ))
    }

    /// Runs the `session_start` hooks (`source`: `startup` for a new session, `resume`
    /// for one reopened); their notes go to the model with the next message.
    pub(super) async fn session_start(&mut self) {
        if !self.has_hooks(HookEvent::SessionStart, None) {
            return;
        }
        let source = if self.history.is_empty() {
            "startup"
        } else {
            "resume"
        };
        let fields = json!({ "source": source });
        let fired = self
            .fire(
                HookEvent::SessionStart,
                ("", 0),
                None,
                fields,
                &self.session_cancel(),
            )
            .await;
        self.pending_context.extend(fired.context);
    }

    /// What stops the hooks that run outside a turn: the session's wind-down (a server
    /// shutting down, the parent of a child agent interrupted), else only their timeout.
    pub(super) fn session_cancel(&self) -> CancellationToken {
        self.wind_down.clone().unwrap_or_default()
    }

    /// Runs the `session_end` hooks, to observe: the session's process is done with it.
    pub(super) async fn session_end(&self) {
        if !self.has_hooks(HookEvent::SessionEnd, None) {
            return;
        }
        let _ = self
            .fire(
                HookEvent::SessionEnd,
                ("", 0),
                None,
                json!({}),
                &self.session_cancel(),
            )
            .await;
        // After the session's last word: its hooks' runs reach the log too.
        self.sync();
    }

    /// Runs the `before_compact` hooks, to observe: the history is about to be compacted
    /// (`trigger`: `manual` for `/compact` and `--compact`, else `auto`).
    pub(super) async fn before_compact(
        &self,
        (turn_id, step): (&str, u64),
        (manual, tokens): (bool, u64),
        cancel: &CancellationToken,
    ) {
        if !self.has_hooks(HookEvent::BeforeCompact, None) {
            return;
        }
        let fields = json!({
            "trigger": if manual { "manual" } else { "auto" },
            "tokens_before": tokens,
        });
        let _ = self
            .fire(
                HookEvent::BeforeCompact,
                (turn_id, step),
                None,
                fields,
                cancel,
            )
            .await;
    }

    /// Runs the `input_requested` hooks: a question or an approval waits for the person
    /// (to notify someone). What they answer changes nothing.
    pub(super) async fn input_requested(
        &self,
        at: (&str, u64),
        request: &InputRequest,
        cancel: &CancellationToken,
    ) {
        if !self.has_hooks(HookEvent::InputRequested, None) {
            return;
        }
        let (kind, message) = match &request.kind {
            InputKind::Question { question, .. } => ("question", question.clone()),
            InputKind::Approval => (
                "approval",
                format!("eve needs your approval to run `{}`", request.tool),
            ),
        };
        let fields = json!({
            "notification_type": kind,
            "message": message,
            "request_id": request.request_id,
            "tool_name": request.tool,
            "tool_input": request.input,
        });
        // Bounded by each hook's timeout, and by the turn: interrupting it stops them.
        let _ = self
            .fire(HookEvent::InputRequested, at, None, fields, cancel)
            .await;
    }

    /// The JSON a hook reads: the session's and turn's ids, the event (in eve's name and
    /// Claude Code's), the workspace as `cwd`, and the event's own `fields`.
    fn payload(
        &self,
        event: HookEvent,
        turn_id: &str,
        agent_dir: &std::path::Path,
        fields: &Value,
    ) -> Vec<u8> {
        let mut payload = json!({
            "session_id": self.session_id,
            "turn_id": turn_id,
            "hook_event_name": event.claude_name(),
            "event": event.name(),
            "cwd": self.setup.workspace,
            "agent_dir": agent_dir,
        });
        if let (Some(payload), Some(fields)) = (payload.as_object_mut(), fields.as_object()) {
            payload.extend(fields.clone());
        }
        serde_json::to_vec(&payload).unwrap_or_default()
    }
}

/// `fields` in the names `hook` reads: for a script written for Claude Code
/// (`names = "claude"`), the tool's name and input as Claude Code's (`Bash`, `Write`
/// with `file_path`), or (`to_claude` false) an input it gave back as eve's.
fn in_names<'a>(hook: &Hook, fields: &'a Value, to_claude: bool) -> std::borrow::Cow<'a, Value> {
    use crate::manifest::hook::{claude_tool_input, claude_tool_name};
    use std::borrow::Cow;
    let Some(tool) = fields.get("tool_name").and_then(Value::as_str) else {
        return Cow::Borrowed(fields);
    };
    if !hook.claude_names {
        return Cow::Borrowed(fields);
    }
    let mut out = fields.clone();
    if to_claude {
        out["tool_name"] = Value::String(claude_tool_name(tool));
    }
    if let Some(input) = fields.get("tool_input") {
        out["tool_input"] = claude_tool_input(tool, input.clone(), to_claude);
    }
    Cow::Owned(out)
}

/// Whether `bound` runs at `event` for a call of `tool`. A `subagent_stop` hook runs
/// where it was inherited (in the subagent), every other where it is its own or a tool
/// hook.
fn applies(bound: &Bound, event: HookEvent, tool: Option<&str>) -> bool {
    let hook = &bound.hook;
    hook.event == event
        && (bound.inherited == (event == HookEvent::SubagentStop) || event.is_tool_event())
        && match tool {
            Some(tool) => crate::compiler::hooks::applies_to(hook, tool),
            None => true,
        }
}

/// Runs one hook to its answer; a hook that fails answers with its `on_error`.
async fn run(hook: &Hook, payload: &[u8], ctx: &ToolContext) -> Answer {
    match spawn(hook, payload, ctx).await {
        Ok(answer) => answer,
        Err(why) => failed(hook, why),
    }
}

/// A stubbed hook's answer, read as its JSON would be (an answer eve cannot read is
/// the hook's failure, as it would be from the hook).
fn stubbed(hook: &Hook, stub: &crate::manifest::eval::HookStub) -> Answer {
    let wire = json!({
        "decision": stub.decision,
        "reason": stub.reason,
        "additional_context": stub.additional_context,
        "updated_input": stub.updated_input,
    });
    match read_answer(&wire.to_string()) {
        Ok(answer) => answer,
        Err(why) => failed(hook, why),
    }
}

/// The answer of a hook that failed (`why`): its `on_error`'s, and nothing else.
fn failed(hook: &Hook, why: String) -> Answer {
    Answer {
        decision: match hook.on_error {
            OnError::Allow => Decision::Continue,
            OnError::Deny => Decision::Deny,
        },
        reason: Some(format!("the hook `{}` failed: {why}", hook.name)),
        failed: Some(why),
        ..Answer::default()
    }
}

/// `template` (a hook's argument or `cwd`) with `{{ agent_dir }}` and `{{ workspace }}`
/// rendered; the build checked that it uses nothing else.
fn render(template: &str, ctx: &ToolContext) -> Result<String, String> {
    if !template.contains("{{") && !template.contains("{%") {
        return Ok(template.to_string());
    }
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    let context = minijinja::context! {
        agent_dir => ctx.agent_dir.display().to_string(),
        workspace => ctx.workspace.display().to_string(),
    };
    env.render_str(template, &context)
        .map_err(|e| format!("cannot render `{template}`: {e}"))
}

async fn spawn(hook: &Hook, payload: &[u8], ctx: &ToolContext) -> Result<Answer, String> {
    let argv = hook
        .command
        .iter()
        .map(|arg| render(arg, ctx))
        .collect::<Result<Vec<String>, String>>()?;
    let Some((program, args)) = argv.split_first() else {
        return Err("its command is empty".into());
    };
    refuse_workspace_program(program, ctx)?;
    let found = process::find(program, ctx)?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let timeout = Duration::from_secs(hook.timeout_secs.max(1));
    // What Claude Code's hook scripts read of their environment.
    let env = [
        ("CLAUDE_PROJECT_DIR", ctx.workspace.as_os_str()),
        ("CLAUDE_PLUGIN_ROOT", ctx.agent_dir.as_os_str()),
    ];
    let cwd = cwd(hook, ctx)?;
    let launch = process::Launch {
        env: &env,
        cwd: &cwd,
    };
    let finished = process::run_with(
        &found,
        &args,
        launch,
        Some(payload.to_vec()),
        ctx,
        (timeout, OUTPUT_LIMIT),
    )
    .await
    .map_err(|e| format!("cannot start `{program}`: {e}"))?;
    let status = match finished.end {
        End::TimedOut => return Err(format!("it timed out after {} s", timeout.as_secs())),
        End::Aborted => return Err("the turn was interrupted".into()),
        End::Exited(Err(e)) => return Err(format!("cannot wait for it: {e}")),
        End::Exited(Ok(status)) => status,
    };
    let stdout = finished.stdout.text();
    let stderr = finished.stderr.text();
    match status.code() {
        Some(0) => read_answer(stdout.trim()),
        // Claude Code's convention: exit code 2 refuses, with stderr as the reason.
        Some(2) => Ok(Answer {
            decision: Decision::Deny,
            reason: Some(limited(stderr.trim()))
                .filter(|r| !r.is_empty())
                .or_else(|| Some(format!("the hook `{}` refused it", hook.name))),
            ..Answer::default()
        }),
        Some(code) => Err(format!(
            "it exited with code {code}{}",
            if stderr.trim().is_empty() {
                String::new()
            } else {
                format!(": {}", limited(stderr.trim()))
            }
        )),
        None => Err("it was killed by a signal".into()),
    }
}

/// Where the hook runs: its `cwd` rendered (relative to the workspace), which must be
/// inside the workspace or the agent directory; else the workspace.
fn cwd(hook: &Hook, ctx: &ToolContext) -> Result<std::path::PathBuf, String> {
    let Some(template) = &hook.cwd else {
        return Ok(ctx.workspace.clone());
    };
    let rendered = render(template, ctx)?;
    let real = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let dir = ctx
        .workspace
        .join(&rendered)
        .canonicalize()
        .map_err(|e| format!("its `cwd` `{rendered}` is not a folder: {e}"))?;
    if !dir.is_dir()
        || !(dir.starts_with(real(&ctx.workspace)) || dir.starts_with(real(&ctx.agent_dir)))
    {
        return Err(format!(
            "its `cwd` `{rendered}` is not a folder inside the workspace or the agent directory"
        ));
    }
    Ok(dir)
}

/// A program named by its path must not be one the model can write: under the
/// workspace but not in the agent directory (whose files are the definition, kept
/// read-only). The build refuses such commands; this holds whatever the build saw.
fn refuse_workspace_program(program: &str, ctx: &ToolContext) -> Result<(), String> {
    if !program.contains('/') {
        return Ok(());
    }
    let real = |path: &std::path::Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let path = real(&ctx.workspace.join(program));
    if path.starts_with(real(&ctx.workspace)) && !path.starts_with(real(&ctx.agent_dir)) {
        return Err(format!(
            "its program `{program}` is in the workspace, which the model can write"
        ));
    }
    Ok(())
}

/// A hook's stdout after exit code 0: nothing, a JSON answer, or plain text (a note for
/// the model).
fn read_answer(stdout: &str) -> Result<Answer, String> {
    if stdout.is_empty() {
        return Ok(Answer::default());
    }
    if !stdout.starts_with('{') {
        return Ok(Answer {
            context: Some(limited(stdout)),
            ..Answer::default()
        });
    }
    let wire: Wire = serde_json::from_str(stdout)
        .map_err(|e| format!("its answer is not a JSON object eve can read: {e}"))?;
    let specific = wire.specific.unwrap_or_default();
    let word = specific.permission_decision.or(wire.decision);
    let decision = match word.as_deref() {
        None | Some("" | "continue") => Decision::Continue,
        Some("allow" | "approve") => Decision::Allow,
        Some("ask") => Decision::Ask,
        Some("deny" | "block") => Decision::Deny,
        Some(other) => {
            return Err(format!(
                "its `decision` is `{other}`, not `allow`, `deny`, `ask` or `block`"
            ));
        }
    };
    let updated_input = specific.updated_input.or(wire.updated_input);
    if updated_input.as_ref().is_some_and(|v| !v.is_object()) {
        return Err("its `updated_input` is not a JSON object".into());
    }
    Ok(Answer {
        decision,
        reason: specific
            .permission_decision_reason
            .or(wire.reason)
            .map(|r| limited(&r)),
        context: specific
            .additional_context
            .or(wire.additional_context)
            .map(|c| limited(&c))
            .filter(|c| !c.is_empty()),
        updated_input,
        failed: None,
    })
}

/// `text` cut to [`TEXT_LIMIT`] bytes on a character boundary.
fn limited(text: &str) -> String {
    let mut end = text.len().min(TEXT_LIMIT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    if end < text.len() {
        format!("{}…", &text[..end])
    } else {
        text.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn answers_in_eves_words_and_claude_codes() {
        let answer = read_answer(r#"{"decision": "block", "reason": "no"}"#).unwrap();
        assert_eq!(
            (answer.decision, answer.reason.as_deref()),
            (Decision::Deny, Some("no"))
        );
        let answer = read_answer(
            r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask", "permissionDecisionReason": "check it", "updatedInput": {"command": "ls"}}}"#,
        )
        .unwrap();
        assert_eq!(answer.decision, Decision::Ask);
        assert_eq!(answer.updated_input, Some(json!({"command": "ls"})));
        let answer = read_answer("branch: main").unwrap();
        assert_eq!(answer.context.as_deref(), Some("branch: main"));
        assert_eq!(read_answer("").unwrap().decision, Decision::Continue);
        assert!(read_answer("{not json").is_err());
        assert!(read_answer(r#"{"decision": "maybe"}"#).is_err());
        assert!(read_answer(r#"{"updated_input": "rm -rf /"}"#).is_err());
        let long = "é".repeat(TEXT_LIMIT);
        assert!(limited(&long).len() <= TEXT_LIMIT + "…".len());
    }
}
