//! Hooks at the harness's step boundaries (docs/hooks.md): the author's programs, run
//! through the same door as command tools (`tools::process::run`: the sandbox, the
//! environment without provider keys, the supervisor that kills what they leave), each
//! given the event as JSON on stdin in the field names Claude Code's hook scripts read,
//! and answering with its exit code (0 go on, 2 refuse with stderr as the reason) or a
//! JSON object on stdout. Several hooks of one event run in file-name order; the first
//! that refuses wins. An agent without hooks pays nothing: no hook, no work.

use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::Harness;
use crate::manifest::hook::{Hook, HookEvent, OnError};
use crate::protocol::{EventKind, InputKind, InputRequest};
use crate::tools::ToolContext;
use crate::tools::process::{self, End};

/// Bytes of a hook's stdout (and of its stderr) eve reads at most.
const OUTPUT_LIMIT: usize = 64 * 1024;
/// The longest reason or note from a hook that reaches the model or a person.
const TEXT_LIMIT: usize = 4 * 1024;

/// What a hook (or the hooks of an event) decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Decision {
    /// Nothing: go on as without it.
    #[default]
    Continue,
    /// `before_tool`: run the call without asking the person.
    Allow,
    /// `before_tool`: ask the person first, whatever the approval policy says.
    Ask,
    /// Refuse: the call does not run, the message is not sent, the turn does not end.
    Deny,
}

impl Decision {
    fn name(self, event: HookEvent) -> &'static str {
        match self {
            Decision::Continue => "continue",
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny if event == HookEvent::BeforeTool => "deny",
            Decision::Deny => "block",
        }
    }
}

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

/// One hook's answer.
#[derive(Debug, Default)]
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
        self.setup
            .hooks
            .iter()
            .any(|(h, _)| applies(h, event, tool))
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
        let hooks: Vec<(Hook, std::path::PathBuf)> = self
            .setup
            .hooks
            .iter()
            .filter(|(h, _)| applies(h, event, tool.map(|(name, _)| name)))
            .cloned()
            .collect();
        for (hook, agent_dir) in &hooks {
            let payload = self.payload(event, turn_id, agent_dir, &fields);
            let started = Instant::now();
            let ctx = ToolContext {
                agent_dir: agent_dir.clone(),
                ..ctx.clone()
            };
            let answer = run(hook, &payload, &ctx).await;
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

    /// Runs the `input_requested` hooks: a question or an approval waits for the person
    /// (to notify someone). What they answer changes nothing.
    pub(super) async fn input_requested(&self, at: (&str, u64), request: &InputRequest) {
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
        // Bounded by each hook's timeout; a turn that is cancelled meanwhile still
        // notifies.
        let _ = self
            .fire(
                HookEvent::InputRequested,
                at,
                None,
                fields,
                &CancellationToken::new(),
            )
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

/// Whether `hook` runs at `event` for a call of `tool`.
fn applies(hook: &Hook, event: HookEvent, tool: Option<&str>) -> bool {
    hook.event == event
        && match tool {
            Some(tool) => crate::compiler::hooks::applies_to(hook, tool),
            None => true,
        }
}

/// Runs one hook to its answer; a hook that fails answers with its `on_error`.
async fn run(hook: &Hook, payload: &[u8], ctx: &ToolContext) -> Answer {
    let mut answer = match spawn(hook, payload, ctx).await {
        Ok(answer) => answer,
        Err(why) => Answer {
            failed: Some(why),
            ..Answer::default()
        },
    };
    if let Some(why) = &answer.failed {
        answer.decision = match hook.on_error {
            OnError::Allow => Decision::Continue,
            OnError::Deny => Decision::Deny,
        };
        answer.reason = Some(format!("the hook `{}` failed: {why}", hook.name));
        answer.context = None;
        answer.updated_input = None;
    }
    answer
}

async fn spawn(hook: &Hook, payload: &[u8], ctx: &ToolContext) -> Result<Answer, String> {
    let agent_dir = ctx.agent_dir.to_string_lossy();
    let workspace = ctx.workspace.to_string_lossy();
    let argv: Vec<String> = hook
        .command
        .iter()
        .map(|a| {
            a.replace("{{ agent_dir }}", &agent_dir)
                .replace("{{ workspace }}", &workspace)
        })
        .collect();
    let Some((program, args)) = argv.split_first() else {
        return Err("its command is empty".into());
    };
    let found = process::find(program, ctx)?;
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let timeout = Duration::from_secs(hook.timeout_secs.max(1));
    let finished = process::run(
        &found,
        &args,
        Some(payload.to_vec()),
        ctx,
        timeout,
        OUTPUT_LIMIT,
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
