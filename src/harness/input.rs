//! What a step's calls need from a person: answers to questions and approvals, settled
//! by earlier answers, `--yes`, a person at the terminal, or by parking the turn.

use std::collections::HashMap;

use tokio_util::sync::CancellationToken;

use super::Harness;
use super::hooks::Decision;
use crate::protocol::{EventKind, InputKind, InputRequest, Resolution, ToolCall};
use crate::tools::ToolOutput;

impl Harness {
    /// What `call` needs from a person: its tool's policy, unless a `before_tool` hook
    /// asked the person where the policy would not, or let a call run that the policy
    /// would ask about (never a question).
    fn needs_input(&self, call: &ToolCall) -> Option<InputKind> {
        match (
            self.registry.needs_input(call),
            self.judged.get(&call.id).map(|j| j.decision),
        ) {
            (None, Some(Decision::Ask)) => Some(InputKind::Approval),
            (Some(InputKind::Approval), Some(Decision::Allow)) => None,
            (kind, _) => kind,
        }
    }

    /// Settles `request` with `resolution` (the person's answer, or `--yes`'s): the
    /// event, and what the call's plan reads. An approval binds the call to the
    /// request's input: that is what runs, whatever the model sent or a hook would
    /// answer later. A request nobody was `shown` (`--yes`) has its input in the event,
    /// so that a reopened session binds the same.
    pub(super) fn resolve(
        &mut self,
        turn_id: &str,
        request: &InputRequest,
        shown: bool,
        resolution: Resolution,
    ) {
        let approved = matches!(resolution, Resolution::Approved { .. });
        self.emitter.emit(EventKind::InputResolved {
            turn_id: turn_id.to_string(),
            request_id: request.request_id.clone(),
            call_id: request.call_id.clone(),
            resolution: resolution.clone(),
            input: (approved && !shown).then(|| request.input.clone()),
        });
        if approved {
            self.approved_inputs
                .insert(request.call_id.clone(), request.input.clone());
        }
        self.resolutions.insert(request.call_id.clone(), resolution);
    }

    /// Forgets the answers and judgements of a step once its calls have their results.
    pub(super) fn forget_answers(&mut self) {
        self.resolutions.clear();
        self.approved_inputs.clear();
        self.judged.clear();
    }

    /// Settles what the calls need from a person. Returns the calls nobody can settle
    /// here, with the result they get instead, or the request to park the turn on.
    /// Each decision is keyed by its call's id, which is unique in the session, so no
    /// decision can apply to a call the person was not shown.
    pub(super) async fn settle_inputs(
        &mut self,
        (turn_id, step): (&str, u64),
        calls: &[ToolCall],
        cancel: &CancellationToken,
    ) -> Result<HashMap<String, ToolOutput>, InputRequest> {
        let mut refused = HashMap::new();
        for call in calls {
            if self.early.contains_key(&call.id) || self.resolutions.contains_key(&call.id) {
                continue;
            }
            let Some(kind) = self.needs_input(call) else {
                continue;
            };
            if kind == InputKind::Approval && self.setup.approve_all {
                let resolution = Resolution::Approved {
                    by: Some("--yes".into()),
                };
                // What `--yes` approves is the call as it is now.
                let request = InputRequest {
                    request_id: crate::ids::new_id("req"),
                    call_id: call.id.clone(),
                    tool: call.name.clone(),
                    input: call.input.clone(),
                    kind: InputKind::Approval,
                };
                self.resolve(turn_id, &request, false, resolution);
                continue;
            }
            let request = InputRequest {
                request_id: crate::ids::new_id("req"),
                call_id: call.id.clone(),
                tool: call.name.clone(),
                input: call.input.clone(),
                kind: kind.clone(),
            };
            if let Some(asker) = self.setup.asker.clone() {
                self.emitter.emit(EventKind::InputRequested {
                    turn_id: turn_id.to_string(),
                    request: request.clone(),
                });
                self.input_requested((turn_id, step), &request, cancel)
                    .await;
                // Let the console show the request before the question is asked.
                tokio::task::yield_now().await;
                if let Some(resolution) = asker.ask(&request).await {
                    self.resolve(turn_id, &request, true, resolution);
                    continue;
                }
                if self.can_park() {
                    return Err(request);
                }
            } else if self.can_park() {
                self.emitter.emit(EventKind::InputRequested {
                    turn_id: turn_id.to_string(),
                    request: request.clone(),
                });
                self.input_requested((turn_id, step), &request, cancel)
                    .await;
                return Err(request);
            }
            let text = match kind {
                InputKind::Question { .. } => "Nobody can answer questions in this run; decide yourself and say what you assumed.".to_string(),
                InputKind::Approval => format!(
                    "Refused: `{}` needs a person's approval for every call (approval = \"always\"), and nobody can approve calls in this run. Do the task without it, or say what you would run.",
                    call.name
                ),
            };
            refused.insert(call.id.clone(), ToolOutput::error(text));
        }
        Ok(refused)
    }
}
