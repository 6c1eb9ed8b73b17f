//! A turn as a short loop over [`Harness::step`]: begin, step until the decision says
//! otherwise, close with the events that say how it ended.

use tokio_util::sync::CancellationToken;

use super::decide::{self, Limits, Next, Standing, StepEnd};
use super::error::HarnessError;
use super::hooks::Decision;
use super::reply::CallFailure;
use super::{Harness, calls::CallsEnd, compaction};
use crate::manifest::hook::HookEvent;
use crate::protocol::{
    EndReason, EventKind, InputKind, Message, Parked, Resolution, TurnOutcome, Usage,
};
use crate::providers::FinishReason;

/// The state a turn carries from step to step.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    pub id: String,
    /// Model calls made so far.
    pub steps: u64,
    /// The tokens of this turn's model calls.
    pub usage: Usage,
    /// Whether every model call reported its token counts.
    pub usage_reported: bool,
    /// Whether a step hit the output token limit (sticky).
    pub hit_max_tokens: bool,
    /// The latest assistant text: the turn's result when it ends.
    pub result: String,
    /// A `stop` hook kept the turn from ending once: it may not again.
    pub stop_refused: bool,
}

impl Turn {
    fn new(id: String) -> Turn {
        Turn {
            id,
            steps: 0,
            usage: Usage::default(),
            usage_reported: true,
            hit_max_tokens: false,
            result: String::new(),
            stop_refused: false,
        }
    }
}

impl Harness {
    /// Runs one turn answering `input`. Cancelling `cancel` aborts it cleanly: running
    /// tools are killed and every tool call still gets a result.
    pub async fn run_turn(&mut self, input: String, cancel: CancellationToken) -> TurnOutcome {
        let mut turn = self.begin_turn();
        let next = match self.user_prompt(&turn.id, &input, &cancel).await {
            Ok(text) => {
                self.received(&turn.id, input);
                self.push(Message::User { text });
                self.decide(&turn, None, &cancel)
            }
            Err(reason) => {
                // What a hook refused (a secret pasted, say) is kept nowhere.
                self.received(&turn.id, "(refused by a hook)".into());
                turn.result = reason;
                Next::End(EndReason::Refused)
            }
        };
        let next = self.drive(&mut turn, next, &cancel).await;
        self.close_turn(turn, next)
    }

    /// Starts a turn: `turn.started` (`message.received` and the message in the history
    /// come once its hooks let it).
    fn begin_turn(&mut self) -> Turn {
        let turn = Turn::new(crate::ids::new_id("turn"));
        self.forget_answers();
        self.early.clear();
        self.hook_runs
            .store(0, std::sync::atomic::Ordering::Relaxed);
        self.parked = None;
        self.emitter.emit(EventKind::TurnStarted {
            session_id: self.session_id.clone(),
            turn_id: turn.id.clone(),
        });
        turn
    }

    /// `message.received`: the turn's message, as the log and the stream keep it.
    fn received(&self, turn_id: &str, text: String) {
        self.emitter.emit(EventKind::MessageReceived {
            turn_id: turn_id.to_string(),
            text,
        });
    }

    /// Resumes a parked turn with the person's answer to the request it waits for: the
    /// parked step's calls run, then the turn goes on.
    pub async fn resume_turn(
        &mut self,
        resolution: Resolution,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, HarnessError> {
        let Some(parked) = self.parked.take() else {
            return Err(HarnessError::NotWaiting);
        };
        let fits = matches!(
            (&parked.request.kind, &resolution),
            (InputKind::Question { .. }, Resolution::Answer { .. })
                | (
                    InputKind::Approval,
                    Resolution::Approved { .. } | Resolution::Denied { .. }
                )
        );
        if !fits {
            let wanted = match parked.request.kind {
                InputKind::Question { .. } => "an answer (--answer \"…\")",
                InputKind::Approval => "an approval (--approve, or --deny)",
            };
            self.parked = Some(parked);
            return Err(HarnessError::WrongAnswer { wanted });
        }
        self.resolve(&parked.turn_id, &parked.request, true, resolution);
        let mut turn = Turn::new(parked.turn_id);
        turn.steps = parked.steps;
        turn.usage = parked.usage;
        let end = self.finish_parked_step(&mut turn, &cancel).await;
        let next = self.decide(&turn, Some(&end), &cancel);
        let next = self.drive(&mut turn, next, &cancel).await;
        Ok(self.close_turn(turn, next))
    }

    /// Ends a parked turn as aborted without running the calls it waited on: each gets
    /// an error result saying so, then `turn.cancelled` and `turn.completed`.
    pub fn cancel_parked(&mut self) -> Result<TurnOutcome, HarnessError> {
        let Some(parked) = self.parked.take() else {
            return Err(HarnessError::NotWaiting);
        };
        let mut turn = Turn::new(parked.turn_id);
        turn.steps = parked.steps;
        turn.usage = parked.usage;
        let unanswered = crate::protocol::message::unanswered_calls(&self.history);
        if !unanswered.is_empty() {
            let mut results = Vec::new();
            for call in unanswered {
                let content = format!(
                    "`{}` was not run: the turn was cancelled while it waited for a person",
                    call.name
                );
                self.emitter.emit(EventKind::ActionResult {
                    turn_id: turn.id.clone(),
                    step: turn.steps,
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    output: content.clone(),
                    is_error: true,
                    duration_ms: 0,
                    connection: None,
                });
                results.push(crate::protocol::ToolResult {
                    call_id: call.id,
                    name: call.name,
                    content,
                    is_error: true,
                    images: Vec::new(),
                });
            }
            self.push(Message::Tool { results });
        }
        Ok(self.close_turn(turn, Next::End(EndReason::Aborted)))
    }

    /// Steps while the decision says so; parks the turn when it says so.
    async fn drive(&mut self, turn: &mut Turn, mut next: Next, cancel: &CancellationToken) -> Next {
        while next == Next::Continue {
            if self.wind_down.as_ref().is_some_and(|t| t.is_cancelled()) {
                next = Next::End(EndReason::Aborted);
                break;
            }
            next = self.step(turn, cancel).await;
        }
        if let Next::Park(request) = &next {
            self.emitter.emit(EventKind::TurnWaiting {
                turn_id: turn.id.clone(),
                request_id: request.request_id.clone(),
            });
            self.parked = Some(Parked {
                turn_id: turn.id.clone(),
                request: request.clone(),
                steps: turn.steps,
                usage: turn.usage.clone(),
            });
            self.flush();
        }
        next
    }

    /// The decision for `turn` after `step` (see [`decide::decide`]).
    fn decide(&self, turn: &Turn, step: Option<&StepEnd>, cancel: &CancellationToken) -> Next {
        let standing = Standing {
            steps: turn.steps,
            hit_max_tokens: turn.hit_max_tokens,
            session_input_tokens: self.usage.input_tokens,
            cancelled: cancel.is_cancelled(),
        };
        let limits = Limits {
            max_steps: self.setup.max_steps,
            max_input_tokens_per_session: self
                .setup
                .manifest
                .agent
                .limits
                .max_input_tokens_per_session,
        };
        decide::decide(step, &standing, &limits)
    }

    /// One step: compaction if needed, one model call, its tool calls; then the decision.
    pub async fn step(&mut self, turn: &mut Turn, cancel: &CancellationToken) -> Next {
        self.refresh_tools(&turn.id).await;
        if let Err(error) = self
            .maybe_compact((&turn.id, turn.steps + 1), false, cancel)
            .await
        {
            return Next::Fail(error);
        }
        turn.steps += 1;
        self.emitter.emit(EventKind::StepStarted {
            turn_id: turn.id.clone(),
            step: turn.steps,
        });
        // A step boundary: the steps before this one are on disk (one sync a step);
        // the first step's input is only written out, put on disk with the turn's end.
        if turn.steps > 1 {
            self.sync();
        } else {
            self.flush();
        }
        let end = match self.call_model(&turn.id, turn.steps, cancel).await {
            Ok(reply) => self.commit_and_run(turn, reply, cancel).await,
            Err(CallFailure::Aborted { partial }) => {
                if !partial.is_empty() {
                    turn.result = partial.clone();
                    self.push(Message::Assistant {
                        text: partial,
                        tool_calls: Vec::new(),
                        provider_blocks: None,
                        reasoning: String::new(),
                    });
                }
                StepEnd::Aborted
            }
            Err(CallFailure::Failed(error)) => StepEnd::Failed(error),
        };
        let next = self.decide(turn, Some(&end), cancel);
        if next == Next::End(EndReason::Completed) && !turn.stop_refused {
            return self.stop_hooks(turn, next, cancel).await;
        }
        next
    }

    /// The model ends the turn: its `stop` hooks may refuse, once a turn, with a reason
    /// the model reads as the next message, so that it goes on (within the turn's
    /// limits).
    async fn stop_hooks(
        &mut self,
        turn: &mut Turn,
        next: Next,
        cancel: &CancellationToken,
    ) -> Next {
        // A turn with no step left ends whatever its hooks say.
        if turn.steps >= self.setup.max_steps {
            return next;
        }
        let fields = serde_json::json!({
            "stop_hook_active": false,
            "last_assistant_message": turn.result,
            "agent_name": self.setup.manifest.agent.name,
        });
        // The agent's own `stop` hooks, then (in a subagent) its parents'
        // `subagent_stop` hooks; the first refusal wins.
        let mut refused = None;
        for event in [HookEvent::Stop, HookEvent::SubagentStop] {
            if refused.is_some() || !self.has_hooks(event, None) {
                continue;
            }
            let at = (turn.id.as_str(), turn.steps);
            let fired = self.fire(event, at, None, fields.clone(), cancel).await;
            if fired.decision == Decision::Deny {
                refused = Some(fired.reason.unwrap_or_default());
            }
        }
        let Some(reason) = refused else {
            return next;
        };
        turn.stop_refused = true;
        self.push(Message::User {
            text: format!("Stop hook feedback: {reason}"),
        });
        self.decide(turn, None, cancel)
    }

    /// Commits a complete reply to the history and runs its calls.
    async fn commit_and_run(
        &mut self,
        turn: &mut Turn,
        mut reply: super::reply::Reply,
        cancel: &CancellationToken,
    ) -> StepEnd {
        let usage = reply.usage.clone().unwrap_or_default();
        let reply_reported = reply.usage.is_some();
        turn.usage_reported &= reply.usage.is_some();
        turn.usage.add(&usage);
        self.usage.add(&usage);
        match &reply.usage {
            Some(usage) => self.estimate.reported(usage.input_tokens),
            None => {
                let sent = self.system.len()
                    + serde_json::to_string(&self.registry.specs()).map_or(0, |t| t.len())
                    + compaction::history_chars(&self.history);
                self.estimate.unreported(sent);
            }
        }
        let finish = reply.finish_reason();
        turn.hit_max_tokens |= finish == FinishReason::MaxTokens;
        turn.result = reply.text.clone();
        let paused = finish == FinishReason::Pause;
        reply.make_ids_unique(&mut self.call_ids, || crate::ids::new_id("call"));
        let calls = self.commit_reply(&turn.id, turn.steps, reply, &finish);
        let completed = EventKind::StepCompleted {
            turn_id: turn.id.clone(),
            step: turn.steps,
            finish_reason: finish.as_str().to_string(),
            usage,
            usage_reported: reply_reported,
        };
        let wants_more = !calls.is_empty() || paused;
        if !calls.is_empty() {
            // The reply is written out before any of its tools runs.
            self.flush();
            let ended = self
                .run_calls(&turn.id, turn.steps, calls, cancel, true)
                .await;
            self.emitter.emit(completed);
            if let CallsEnd::Parked(request) = ended {
                return StepEnd::Parked(request);
            }
        } else {
            self.emitter.emit(completed);
        }
        self.save_tool_state();
        self.flush();
        match self.journal_error() {
            Some(error) => StepEnd::Failed(error),
            None => StepEnd::Replied { wants_more },
        }
    }

    /// Runs the calls a parked step left unanswered, now that the person answered.
    async fn finish_parked_step(&mut self, turn: &mut Turn, cancel: &CancellationToken) -> StepEnd {
        let unanswered = crate::protocol::message::unanswered_calls(&self.history);
        if unanswered.is_empty() {
            return StepEnd::Replied { wants_more: true };
        }
        if let CallsEnd::Parked(request) = self
            .run_calls(&turn.id, turn.steps, unanswered, cancel, false)
            .await
        {
            return StepEnd::Parked(request);
        }
        self.save_tool_state();
        self.flush();
        match self.journal_error() {
            Some(error) => StepEnd::Failed(error),
            None => StepEnd::Replied { wants_more: true },
        }
    }

    /// Emits how the turn ended and builds its outcome.
    fn close_turn(&mut self, turn: Turn, next: Next) -> TurnOutcome {
        let (end_reason, error) = match next {
            Next::End(reason) => (reason, None),
            Next::Park(_) => (EndReason::Waiting, None),
            Next::Fail(error) => (EndReason::Error, Some(error)),
            Next::Continue => (EndReason::Completed, None),
        };
        let mut result = turn.result;
        if end_reason == EndReason::MaxInputTokens
            && let Some(limit) = self
                .setup
                .manifest
                .agent
                .limits
                .max_input_tokens_per_session
        {
            result = format!(
                "The session used {} input tokens, reaching max_input_tokens_per_session ({limit}).",
                self.usage.input_tokens
            );
        }
        let outcome = TurnOutcome {
            turn_id: turn.id.clone(),
            end_reason,
            result,
            pending: if error.is_none() {
                self.pending().cloned()
            } else {
                None
            },
            error,
            steps: turn.steps,
            usage: turn.usage,
            usage_reported: turn.usage_reported,
        };
        if outcome.end_reason == EndReason::Aborted {
            self.emitter.emit(EventKind::TurnCancelled {
                turn_id: turn.id.clone(),
            });
        }
        match (&outcome.error, outcome.end_reason) {
            (None, EndReason::Waiting) => {}
            (None, end_reason) => self.emitter.emit(EventKind::TurnCompleted {
                turn_id: turn.id,
                end_reason,
                result: outcome.result.clone(),
                steps: outcome.steps,
                usage: outcome.usage.clone(),
            }),
            (Some(error), _) => self.emitter.emit(EventKind::TurnFailed {
                turn_id: turn.id,
                end_reason: EndReason::Error,
                error: error.clone(),
                steps: outcome.steps,
                usage: outcome.usage.clone(),
            }),
        }
        if outcome.end_reason != EndReason::Waiting {
            self.forget_answers();
            self.early.clear();
        }
        // Written out; on disk with `finish`, the session's word on the turn.
        self.flush();
        outcome
    }
}
