//! A step's tool calls: each gets a plan (a result already known, or a run), the
//! scheduler runs them, and every call gets exactly one result, in call order.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use serde_json::json;

use super::hooks::Decision;
use super::{Harness, durable, scheduler};
use crate::manifest::hook::HookEvent;
use crate::protocol::{Action, EventKind, InputRequest, Message, Resolution, ToolCall, ToolResult};
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
        let refused = match self.settle_inputs((turn_id, step), &calls).await {
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
                matches!(plan, Plan::Run | Plan::RunApproved) && !registry.runs_in_parallel(call)
            },
            |_, (call, plan)| {
                let registry = registry.clone();
                let ctx = ctx.clone();
                let durable = durable.clone();
                let name = durable::call_name(turn_id, step, &call.id);
                async move {
                    let started = Instant::now();
                    let cancel = ctx.cancel.clone();
                    let ran = matches!(plan, Plan::Run | Plan::RunApproved);
                    let mut output = execute(plan, &call, &registry, ctx, durable, name).await;
                    if ran {
                        this.after_tool(turn_id, step, &call, &mut output, &cancel)
                            .await;
                    }
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
        self.resolutions.clear();
        self.hook_verdicts.clear();
        CallsEnd::Done
    }

    /// Runs the `before_tool` hooks of each call that is to run: a refusal becomes the
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
        for call in calls.iter_mut() {
            let settled = matches!(
                self.resolutions.get(&call.id),
                Some(Resolution::Denied { .. } | Resolution::Answer { .. })
            );
            // A deferred tool reached through `call_tool` is hooked as itself.
            let (name, input) = self.target(call);
            if self.early.contains_key(&call.id)
                || settled
                || !self.has_hooks(HookEvent::BeforeTool, Some(&name))
            {
                continue;
            }
            let fields = json!({
                "tool_name": name,
                "tool_input": input,
                "tool_use_id": call.id,
            });
            let fired = self
                .fire(
                    HookEvent::BeforeTool,
                    (turn_id, step),
                    Some((&name, &call.id)),
                    fields,
                    cancel,
                )
                .await;
            if let Some(input) = fired.updated_input {
                if name == call.name {
                    call.input = input;
                } else {
                    call.input = json!({"name": name, "input": input});
                }
            }
            match fired.decision {
                Decision::Deny => {
                    let reason = fired.reason.unwrap_or_default();
                    self.early.insert(
                        call.id.clone(),
                        ToolOutput::error(format!("A hook refused this call: {reason}")),
                    );
                }
                Decision::Allow => {
                    self.hook_verdicts
                        .insert(call.id.clone(), super::HookVerdict::Allow);
                }
                Decision::Ask => {
                    self.hook_verdicts
                        .insert(call.id.clone(), super::HookVerdict::Ask);
                }
                Decision::Continue => {}
            }
        }
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
            Some(Resolution::Approved { .. }) => Plan::RunApproved,
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
