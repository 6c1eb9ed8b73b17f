//! A step's tool calls: each gets a plan (a result already known, or a run), the
//! scheduler runs them, and every call gets exactly one result, in call order.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use serde_json::json;

use std::sync::atomic::{AtomicBool, Ordering};

use super::hooks::{Decision, Judged};
use super::{Harness, durable, scheduler};
use crate::manifest::hook::HookEvent;
use crate::protocol::{
    Action, EventKind, InputKind, InputRequest, Message, Resolution, ToolCall, ToolResult,
};
use crate::tools::{Registry, ToolContext, ToolOutput};

/// How a step's tool calls ended.
pub enum CallsEnd {
    Done,
    Parked(InputRequest),
}

/// What becomes of one call.
enum Plan {
    Result(ToolOutput),
    Run,
    RunApproved,
}

impl Plan {
    /// Whether the call's tool runs.
    fn runs(&self) -> bool {
        matches!(self, Plan::Run | Plan::RunApproved)
    }
}

/// Gives `call` `input` for the tool `name` it runs (for `call_tool`, the deferred
/// tool's input inside its own).
fn set_input(call: &mut ToolCall, name: &str, input: serde_json::Value) {
    if name == call.name {
        call.input = input;
    } else {
        call.input = json!({"name": name, "input": input});
    }
}

impl Harness {
    /// Runs a step's tool calls through the scheduler and appends their results: every
    /// call gets one, in call order. Parks instead when a call needs a person nobody
    /// here can ask. `announce`: emit `actions.requested` (not again for a resumed step).
    pub(super) async fn run_calls(
        &mut self,
        turn_id: &str,
        step: u64,
        mut calls: Vec<ToolCall>,
        cancel: &CancellationToken,
        announce: bool,
    ) -> CallsEnd {
        if announce {
            self.announce_actions(turn_id, step, &calls);
        }
        self.before_tool(turn_id, step, &mut calls, cancel).await;
        let refused = match self.settle_inputs((turn_id, step), &calls, cancel).await {
            Ok(refused) => refused,
            Err(request) => return CallsEnd::Parked(request),
        };
        let items: Vec<(ToolCall, Plan)> = calls
            .into_iter()
            .map(|call| {
                let plan = self.plan(&call, refused.get(&call.id));
                (call, plan)
            })
            .collect();
        let ctx = self.tool_context(cancel);
        let registry = self.registry.clone();
        let emitter = self.emitter.clone();
        let durable = self.durable.clone();
        let this = &*self;
        // Whether a call of this step has started: a hooked call after it is judged
        // again before it runs, and runs alone.
        let started_one = AtomicBool::new(false);
        let started_one = &started_one;
        // A journaled step runs its calls one at a time, so the journal's order is the
        // calls' order, the same when a crash makes the engine replay it.
        let max_parallel = match durable {
            Some(_) => 1,
            None => self.setup.manifest.agent.limits.max_parallel_tools as usize,
        };
        let results = scheduler::run(
            items,
            max_parallel,
            |(call, plan)| {
                plan.runs()
                    && (!registry.runs_in_parallel(call) || this.judged.contains_key(&call.id))
            },
            |_, (call, plan)| {
                let registry = registry.clone();
                let ctx = ctx.clone();
                let durable = durable.clone();
                let name = durable::call_name(turn_id, step, &call.id);
                async move {
                    let started = Instant::now();
                    let later = plan.runs() && started_one.swap(true, Ordering::SeqCst);
                    let output = this
                        .run_one((turn_id, step), &call, plan, later, (ctx, durable, name))
                        .await;
                    let connection = registry.connection_of(&call);
                    (call, output, started.elapsed(), connection)
                }
            },
            |_, (call, output, elapsed, connection)| {
                emitter.emit(EventKind::ActionResult {
                    turn_id: turn_id.to_string(),
                    step,
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    output: output.content.clone(),
                    is_error: output.is_error,
                    duration_ms: elapsed.as_millis() as u64,
                    connection: connection.clone(),
                });
            },
        )
        .await;
        self.push(tool_message(results));
        // Answers belong to the calls of this step only.
        self.forget_answers();
        CallsEnd::Done
    }

    /// One call's result as planned, with its hooks: judged again first when calls of
    /// its step ran before it (`later`), the `before_tool` notes and the `after_tool`
    /// hooks after it ran.
    async fn run_one(
        &self,
        (turn_id, step): (&str, u64),
        call: &ToolCall,
        plan: Plan,
        later: bool,
        (ctx, durable, name): (ToolContext, Option<Arc<dyn durable::Durable>>, String),
    ) -> ToolOutput {
        let cancel = ctx.cancel.clone();
        let plan = if later {
            self.judge_again((turn_id, step), call, plan, &cancel).await
        } else {
            plan
        };
        let ran = plan.runs();
        let ctx = ToolContext {
            traceparent: self.emitter.traceparent(&call.id),
            ..ctx
        };
        let mut output = execute(plan, call, &self.registry, ctx, durable, name).await;
        if ran {
            if let Some(judged) = self.judged.get(&call.id) {
                for note in &judged.notes {
                    output.content = format!("{}\n\n{note}", output.content);
                }
            }
            self.after_tool(turn_id, step, call, &mut output, &cancel)
                .await;
        }
        output
    }

    /// Readies a step's calls to run: an approved call takes the input the person was
    /// shown (whatever the model sent, whatever a hook would answer now), and the
    /// `before_tool` hooks judge each other call that is to run — a refusal becomes the
    /// call's result (the model reads why), a new input replaces the model's (before
    /// the approval shows it and the tool checks it against its schema), and allow or
    /// ask is kept for the approval.
    async fn before_tool(
        &mut self,
        turn_id: &str,
        step: u64,
        calls: &mut [ToolCall],
        cancel: &CancellationToken,
    ) {
        self.judged.clear();
        for call in calls.iter_mut() {
            let shown = self.approved_inputs.get(&call.id).cloned();
            if self.setup.hooks.is_empty() {
                if let Some(shown) = shown {
                    call.input = shown;
                }
                continue;
            }
            let settled = matches!(
                self.resolutions.get(&call.id),
                Some(Resolution::Denied { .. } | Resolution::Answer { .. })
            );
            // A deferred tool reached through `call_tool` is hooked as itself.
            let (name, input) = self.target(call);
            let hooked = !self.early.contains_key(&call.id)
                && !settled
                && self.has_hooks(HookEvent::BeforeTool, Some(&name));
            if let Some(shown) = shown {
                call.input = shown;
                if hooked {
                    // Judged when it was shown; judged again only if calls before it in
                    // the step run first.
                    let (_, now) = self.target(call);
                    self.judged.insert(
                        call.id.clone(),
                        Judged {
                            decision: Decision::Ask,
                            model_input: input,
                            input: now,
                            notes: Vec::new(),
                        },
                    );
                }
                continue;
            }
            if !hooked {
                continue;
            }
            match self
                .judge((turn_id, step), (&name, &call.id), &input, cancel)
                .await
            {
                Err(reason) => {
                    self.early.insert(
                        call.id.clone(),
                        ToolOutput::error(format!("A hook refused this call: {reason}")),
                    );
                }
                Ok(judged) => {
                    if judged.input != input {
                        set_input(call, &name, judged.input.clone());
                    }
                    self.judged.insert(call.id.clone(), judged);
                }
            }
        }
    }

    /// Judges a hooked call again just before it runs when calls before it in its step
    /// ran since it was judged (what they did may change the answer: a branch switched,
    /// a file made). A refusal, another input, or an approval now wanted that it does
    /// not have keeps it from running.
    async fn judge_again(
        &self,
        at: (&str, u64),
        call: &ToolCall,
        plan: Plan,
        cancel: &CancellationToken,
    ) -> Plan {
        let Some(first) = self.judged.get(&call.id) else {
            return plan;
        };
        let (name, _) = self.target(call);
        let why = match self
            .judge(at, (&name, &call.id), &first.model_input, cancel)
            .await
        {
            Err(reason) => format!("A hook refused this call: {reason}"),
            Ok(again) if again.input != first.input => "A hook answered otherwise once the calls before this one in the step had run (it rewrote the input differently), so this call did not run. Call it again to have it judged anew.".to_string(),
            Ok(again) => {
                let wants_approval = match again.decision {
                    Decision::Ask => true,
                    Decision::Allow => false,
                    _ => self.registry.needs_input(call) == Some(InputKind::Approval),
                };
                if !wants_approval || matches!(plan, Plan::RunApproved) {
                    return plan;
                }
                "A hook asks for the person's approval of this call now that the calls before it in the step ran, so it did not run. Call it again to ask.".to_string()
            }
        };
        Plan::Result(ToolOutput::error(why))
    }

    /// Runs the `after_tool` hooks of a call that ran: a refusal marks its result
    /// failed with the hook's reason, and each hook's note is added for the model.
    async fn after_tool(
        &self,
        turn_id: &str,
        step: u64,
        call: &ToolCall,
        output: &mut ToolOutput,
        cancel: &CancellationToken,
    ) {
        if self.setup.hooks.is_empty() {
            return;
        }
        let (name, input) = self.target(call);
        if !self.has_hooks(HookEvent::AfterTool, Some(&name)) {
            return;
        }
        let fields = json!({
            "tool_name": name,
            "tool_input": input,
            "tool_use_id": call.id,
            "tool_response": {"content": output.content, "is_error": output.is_error},
        });
        let fired = self
            .fire(
                HookEvent::AfterTool,
                (turn_id, step),
                Some((&name, &call.id)),
                fields,
                cancel,
            )
            .await;
        if fired.decision == Decision::Deny {
            output.is_error = true;
            let reason = fired.reason.unwrap_or_default();
            output.content = format!("{}\n\nA hook marked this failed: {reason}", output.content);
        }
        for note in fired.context {
            output.content = format!("{}\n\n{note}", output.content);
        }
    }

    /// The name and input of the tool a call runs: for `call_tool`, the deferred tool
    /// it names; a call that names no tool, as it is.
    fn target(&self, call: &ToolCall) -> (String, serde_json::Value) {
        self.registry
            .target(call)
            .unwrap_or_else(|| (call.name.clone(), call.input.clone()))
    }

    /// Emits `actions.requested`: the calls the model asked for.
    fn announce_actions(&self, turn_id: &str, step: u64, calls: &[ToolCall]) {
        self.emitter.emit(EventKind::ActionsRequested {
            turn_id: turn_id.to_string(),
            step,
            actions: calls
                .iter()
                .map(|c| Action {
                    call_id: c.id.clone(),
                    name: c.name.clone(),
                    input: c.input.clone(),
                })
                .collect(),
        });
    }

    /// The plan for one call: an error found early, a refusal, an answer or a denial
    /// the person gave, or a run (approved or not).
    fn plan(&mut self, call: &ToolCall, refused: Option<&ToolOutput>) -> Plan {
        if let Some(output) = self.early.remove(&call.id) {
            return Plan::Result(output);
        }
        if let Some(output) = refused {
            return Plan::Result(output.clone());
        }
        match self.resolutions.get(&call.id) {
            Some(Resolution::Answer { text }) => Plan::Result(ToolOutput::ok(text.clone())),
            Some(Resolution::Denied { reason }) => Plan::Result(ToolOutput::error(match reason {
                Some(reason) => format!("The user denied this call: {reason}"),
                None => "The user denied this call.".to_string(),
            })),
            // An approval is of the input it showed: without one bound, it approves
            // nothing (every approval is bound when it is given or replayed).
            Some(Resolution::Approved { .. }) if self.approved_inputs.contains_key(&call.id) => {
                Plan::RunApproved
            }
            Some(Resolution::Approved { .. }) => Plan::Result(ToolOutput::error(
                "This call's approval is not bound to what the person was shown, so it did not run. Call it again to ask.",
            )),
            None => Plan::Run,
        }
    }
}

/// What one call returns as planned: the result already known, or the tool's, run
/// through the durable engine's journal (as `name`) when there is one.
async fn execute(
    plan: Plan,
    call: &ToolCall,
    registry: &Arc<Registry>,
    ctx: ToolContext,
    durable: Option<Arc<dyn durable::Durable>>,
    name: String,
) -> ToolOutput {
    match plan {
        Plan::Result(output) => output,
        Plan::Run | Plan::RunApproved => {
            let approved = matches!(plan, Plan::RunApproved);
            let work = {
                let registry = registry.clone();
                let call = call.clone();
                async move {
                    if approved {
                        registry.call_approved(&call, &ctx).await
                    } else {
                        registry.call(&call, &ctx).await
                    }
                }
            };
            match &durable {
                Some(durable) => durable::tool_call(durable.as_ref(), name, work).await,
                None => work.await,
            }
        }
    }
}

/// The message of a step's tool results, in call order.
fn tool_message(results: Vec<(ToolCall, ToolOutput, Duration, Option<String>)>) -> Message {
    Message::Tool {
        results: results
            .into_iter()
            .map(|(call, output, _, _)| ToolResult {
                call_id: call.id,
                name: call.name,
                content: output.content,
                is_error: output.is_error,
                images: output.images,
            })
            .collect(),
    }
}
