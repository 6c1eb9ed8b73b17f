//! One model call: the request, the stream folded into a [`Reply`] (deltas emitted as
//! they arrive), retries of the whole call; and the reply committed to the history.

use std::sync::Arc;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use super::reply::{CallFailure, Reply};
use super::{Emitter, Harness, durable};
use crate::protocol::{Action, EventKind, Message, ToolCall};
use crate::providers::retry::RetryPolicy;
use crate::providers::{FinishReason, ModelRequest, Provider, ProviderError, StreamEvent};
use crate::tools::ToolOutput;
use crate::tools::registry::parse_arguments;

enum Attempt {
    Aborted(String),
    Failed(ProviderError),
}

/// One model call with everything it needs, owned, so that a durable engine can run it
/// as a journaled effect apart from the harness.
struct ModelCall {
    provider: Arc<dyn Provider>,
    request: ModelRequest,
    emitter: Emitter,
    retry: RetryPolicy,
    turn_id: String,
    step: u64,
    cancel: CancellationToken,
}

impl Harness {
    /// One model call, retried as a whole while the error is retryable; through the
    /// durable engine's journal when there is one.
    pub(super) async fn call_model(
        &self,
        turn_id: &str,
        step: u64,
        cancel: &CancellationToken,
    ) -> Result<Reply, CallFailure> {
        let call = ModelCall {
            provider: self.setup.provider.clone(),
            request: ModelRequest {
                model: self.setup.model_id.clone(),
                system: self.system.clone(),
                messages: self.history.clone(),
                tools: self.registry.specs(),
                max_output_tokens: self.setup.manifest.agent.limits.max_output_tokens,
                temperature: None,
                reasoning: self.setup.manifest.agent.reasoning,
                cache_key: Some(self.session_id().to_string()),
            },
            emitter: self.emitter.clone(),
            retry: self.setup.retry,
            turn_id: turn_id.to_string(),
            step,
            cancel: cancel.clone(),
        };
        match &self.durable {
            Some(durable) => {
                durable::model_call(
                    durable.as_ref(),
                    durable::model_name(turn_id, step),
                    call.run(),
                )
                .await
            }
            None => call.run().await,
        }
    }
}

impl ModelCall {
    async fn run(self) -> Result<Reply, CallFailure> {
        let (turn_id, step, cancel) = (self.turn_id.as_str(), self.step, &self.cancel);
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let error = match self.stream_once().await {
                Ok(reply) => return Ok(reply),
                Err(Attempt::Aborted(partial)) => return Err(CallFailure::Aborted { partial }),
                Err(Attempt::Failed(error)) => error,
            };
            let retries_used = attempt - 1;
            let retry = error.is_retryable() && retries_used < self.retry.max_retries;
            let delay = retry.then(|| self.retry.delay(retries_used, error.retry_after()));
            self.emitter.emit(EventKind::StepFailed {
                turn_id: turn_id.to_string(),
                step,
                attempt,
                error: error.to_string(),
                retry_in_ms: delay.map(|d| d.as_millis() as u64),
            });
            let Some(delay) = delay else {
                let mut message = error.to_string();
                if error.is_retryable() && attempt > 1 {
                    message.push_str(&format!(" (gave up after {attempt} attempts)"));
                }
                return Err(CallFailure::Failed(message));
            };
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = cancel.cancelled() => return Err(CallFailure::Aborted { partial: String::new() }),
            }
        }
    }

    async fn stream_once(&self) -> Result<Reply, Attempt> {
        let (turn_id, step, cancel) = (self.turn_id.as_str(), self.step, &self.cancel);
        let opened = tokio::select! {
            opened = self.provider.stream(&self.request) => opened,
            () = cancel.cancelled() => return Err(Attempt::Aborted(String::new())),
        };
        let mut stream = opened.map_err(Attempt::Failed)?;
        let mut reply = Reply::default();
        loop {
            let next = tokio::select! {
                next = stream.next() => next,
                () = cancel.cancelled() => return Err(Attempt::Aborted(reply.text)),
            };
            let Some(event) = next else {
                return Ok(reply);
            };
            let event = event.map_err(Attempt::Failed)?;
            match &event {
                StreamEvent::TextDelta(text) => self.emitter.emit(EventKind::MessageAppended {
                    turn_id: turn_id.to_string(),
                    step,
                    text: text.clone(),
                }),
                StreamEvent::ReasoningDelta(text) => {
                    self.emitter.emit(EventKind::ReasoningAppended {
                        turn_id: turn_id.to_string(),
                        step,
                        text: text.clone(),
                    })
                }
                _ => {}
            }
            reply.apply(event);
        }
    }
}

impl Harness {
    /// Appends the model's reply to the history and returns its tool calls; arguments
    /// that are not a JSON object become an error result kept for the call. Hosted tool
    /// calls the provider already ran are reported as actions and results.
    pub(super) fn commit_reply(
        &mut self,
        turn_id: &str,
        step: u64,
        reply: Reply,
        finish: &FinishReason,
    ) -> Vec<ToolCall> {
        let mut calls = Vec::with_capacity(reply.calls.len());
        for pending in reply.calls {
            let input = match parse_arguments(&pending.arguments) {
                Ok(input) => input,
                Err(e) => {
                    let cut = if *finish == FinishReason::MaxTokens {
                        " The reply was cut off at the output token limit: make smaller calls."
                    } else {
                        ""
                    };
                    self.early.insert(
                        pending.id.clone(),
                        ToolOutput::error(format!("Could not call `{}`: {e}.{cut}", pending.name)),
                    );
                    serde_json::Value::Object(Default::default())
                }
            };
            calls.push(ToolCall {
                id: pending.id,
                name: pending.name,
                input,
            });
        }
        if !reply.server_calls.is_empty() {
            self.emitter.emit(EventKind::ActionsRequested {
                turn_id: turn_id.to_string(),
                step,
                actions: reply
                    .server_calls
                    .iter()
                    .map(|c| Action {
                        call_id: c.id.clone(),
                        name: c.name.clone(),
                        input: c.input.clone(),
                    })
                    .collect(),
            });
            for call in &reply.server_calls {
                if let Some((output, is_error)) = &call.result {
                    self.emitter.emit(EventKind::ActionResult {
                        turn_id: turn_id.to_string(),
                        step,
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        output: output.clone(),
                        is_error: *is_error,
                        duration_ms: 0,
                        connection: None,
                    });
                }
            }
        }
        self.push(Message::Assistant {
            text: reply.text,
            tool_calls: calls.clone(),
            provider_blocks: reply.opaque,
            reasoning: reply.reasoning,
        });
        calls
    }
}
