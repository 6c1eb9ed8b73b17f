//! Compaction, before a model call: shorten oversized old tool results, and if that is
//! not enough, summarise the whole history and keep a recent window. The rules are
//! functions over a history; [`Harness::maybe_compact`] applies them.

use futures_util::StreamExt;

use super::Harness;
use super::error::HarnessError;
pub use super::estimate::Estimate;
use super::estimate::tokens;
use crate::protocol::{EventKind, Message, Record, Todo, Usage};
use crate::providers::{ModelRequest, StreamEvent};

/// The summariser's instructions (fixed).
pub const SUMMARY_PROMPT: &str = "You compact the history of a conversation between a person and an AI agent that works with tools, so the agent can continue the task with the summary instead of the full history. Write a summary that keeps: the person's goals and requests, decisions taken and why, findings (facts, file paths, names, numbers, errors and their causes), what has been done, the open work, and any data the agent still needs. Leave out pleasantries and tool output nobody needs again. If the transcript starts with an earlier summary, carry everything in it that still matters forward. The last messages of the transcript are kept verbatim after your summary, so focus on what comes before them. Write in the same language as the conversation. Answer with the summary only.";

/// Tool results longer than this (characters) are shortened first.
const LONG_RESULT: usize = 2_000;
/// What is kept of a shortened result.
const KEPT_OF_RESULT: usize = 500;
/// The most recent messages whose tool results are never shortened.
const RECENT_MESSAGES: usize = 4;

/// The characters of a history.
pub fn history_chars(history: &[Message]) -> usize {
    history.iter().map(Message::chars).sum()
}

/// Cuts long tool results outside the most recent messages; returns the characters removed.
pub fn shorten_tool_results(history: &mut [Message]) -> usize {
    let recent_from = history.len().saturating_sub(RECENT_MESSAGES);
    let mut removed = 0usize;
    for message in &mut history[..recent_from] {
        let Message::Tool { results } = message else {
            continue;
        };
        for r in results.iter_mut() {
            if r.content.len() > LONG_RESULT {
                let kept = crate::text::shorten(&r.content, KEPT_OF_RESULT);
                let cut = r.content.len().saturating_sub(kept.len());
                r.content = format!(
                    "{kept}\n[older tool output shortened by compaction: {cut} characters removed]"
                );
                removed += cut;
            }
        }
    }
    removed
}

/// The recent window kept verbatim after a summary: the last text messages (tool calls
/// and results dropped) that fit in `budget` tokens; by hand (`force`), only the last two.
pub fn recent_window(history: &[Message], budget: u64, force: bool) -> Vec<Message> {
    let mut window: Vec<Message> = Vec::new();
    let mut used = 0u64;
    for message in history.iter().rev() {
        let kept = match message {
            Message::Tool { .. } => None,
            Message::User { text } => Some(Message::User { text: text.clone() }),
            Message::Assistant { text, .. } if !text.is_empty() => Some(Message::Assistant {
                text: text.clone(),
                tool_calls: Vec::new(),
                provider_blocks: None,
                reasoning: String::new(),
            }),
            Message::Assistant { .. } => None,
        };
        if let Some(kept) = kept {
            let cost = tokens(kept.chars());
            if used + cost > budget || (force && window.len() >= 2) {
                break;
            }
            used += cost;
            window.push(kept);
        }
    }
    window.reverse();
    window
}

/// The history after compaction: the summary (with the todo list) as the first user
/// message, the recent window, and `Continue.` when the window would end on the assistant.
pub fn rebuild(summary: &str, todos: &[Todo], window: Vec<Message>) -> Vec<Message> {
    let mut text = format!(
        "This conversation was compacted to fit the context window. Summary of the earlier part:\n\n{}",
        summary.trim()
    );
    if !todos.is_empty() {
        text.push_str(&format!(
            "\n\nCurrent {}",
            crate::tools::builtin::todo::render(todos).replacen("Todo list", "todo list", 1)
        ));
    }
    let mut history = vec![Message::User { text }];
    history.extend(window);
    if matches!(history.last(), Some(Message::Assistant { .. })) {
        history.push(Message::User {
            text: "Continue.".into(),
        });
    }
    history
}

/// The older history as plain text for the summariser.
fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for message in messages {
        match message {
            Message::User { text } => out.push_str(&format!("[user]\n{text}\n\n")),
            Message::Assistant {
                text, tool_calls, ..
            } => {
                if !text.is_empty() {
                    out.push_str(&format!("[assistant]\n{text}\n\n"));
                }
                for call in tool_calls {
                    out.push_str(&format!("[tool call] {} {}\n\n", call.name, call.input));
                }
            }
            Message::Tool { results } => {
                for r in results {
                    let content = crate::text::shorten(&r.content, LONG_RESULT);
                    let error = if r.is_error { " (error)" } else { "" };
                    out.push_str(&format!("[tool result{error}] {}\n{content}\n\n", r.name));
                }
            }
        }
    }
    out
}

impl Harness {
    /// The token estimate of the next request.
    pub fn estimate(&self) -> u64 {
        self.estimate.tokens()
    }

    fn threshold(&self) -> u64 {
        let agent = &self.setup.manifest.agent;
        (agent.compaction.threshold_percent * agent.limits.context_window as f64) as u64
    }

    /// Compacts when the estimate is above the threshold, or always with `force`;
    /// `step` is the step it comes before (0: outside a turn), for the journal's name.
    pub(crate) async fn maybe_compact(
        &mut self,
        (turn_id, step): (&str, u64),
        force: bool,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<(), String> {
        let before = self.estimate();
        let threshold = self.threshold();
        if !force && before <= threshold {
            return Ok(());
        }
        // A summary and one message, or a history far smaller than the threshold:
        // what is big is the prompt and the tools, which compaction cannot shrink.
        let history_tokens = tokens(history_chars(&self.history));
        if self.history.len() < 2
            || (!force && (self.history.len() <= 2 || history_tokens < threshold / 4))
        {
            return Ok(());
        }
        self.emitter.emit(EventKind::CompactionRequested {
            turn_id: turn_id.to_string(),
            tokens_before: before,
            threshold,
        });
        self.before_compact((turn_id, step), (force, before), cancel)
            .await;
        if !force {
            let removed = shorten_tool_results(&mut self.history);
            // Judged from the provider's count minus what was removed, never from a
            // fresh character estimate of the whole history.
            let after = self
                .estimate
                .last_input_tokens
                .saturating_sub(tokens(removed))
                + tokens(self.estimate.appended_chars);
            if removed > 0 && after <= threshold {
                self.finish_compaction(turn_id, before, after, false);
                return Ok(());
            }
        }
        let after = self.summarise(force, turn_id, step).await?;
        self.finish_compaction(turn_id, before, after, true);
        Ok(())
    }

    /// Compacts the session now, whatever its size (`/compact`, `eve run --compact`).
    pub async fn compact_now(&mut self) -> Result<(), HarnessError> {
        let turn_id = crate::ids::new_id("turn");
        let cancel = self.session_cancel();
        self.maybe_compact((&turn_id, 0), true, &cancel)
            .await
            .map_err(HarnessError::Compaction)
    }

    fn finish_compaction(&mut self, turn_id: &str, before: u64, after: u64, summarised: bool) {
        self.emitter.record(&Record::Compacted {
            messages: self.history.clone(),
        });
        self.emitter.emit(EventKind::CompactionCompleted {
            turn_id: turn_id.to_string(),
            tokens_before: before,
            tokens_after: after,
            summarised,
        });
        // The model no longer holds the files it read: writes need a fresh read.
        self.state.clear_stamps();
        self.save_tool_state();
        self.estimate = Estimate {
            last_input_tokens: after,
            appended_chars: 0,
        };
        self.flush();
    }

    /// Replaces the history with a summary of all of it and a recent window of text
    /// messages; returns the new estimate.
    async fn summarise(&mut self, force: bool, turn_id: &str, step: u64) -> Result<u64, String> {
        let agent = &self.setup.manifest.agent;
        // The recent window: the last text messages that fit in a tenth of the window.
        let budget = (agent.limits.context_window / 10).max(1);
        let window = recent_window(&self.history, budget, force);
        let (provider, model_id) = match &agent.compaction.model {
            Some(model) if *model != agent.model && *model != self.setup.model => {
                let resolved = crate::providers::resolve(
                    model,
                    &agent.providers,
                    &self.setup.agent_dir,
                    &crate::secrets::var,
                )?;
                (resolved.provider, resolved.model_id)
            }
            _ => (self.setup.provider.clone(), self.setup.model_id.clone()),
        };
        // The whole history is summarised, so nothing is lost: the window repeats only
        // the latest text messages verbatim.
        let request = ModelRequest {
            model: model_id,
            system: SUMMARY_PROMPT.to_string(),
            messages: vec![Message::User {
                text: format!(
                    "Summarise this conversation:\n\n{}",
                    transcript(&self.history)
                ),
            }],
            tools: Vec::new(),
            max_output_tokens: agent.limits.max_output_tokens.min(8192),
            temperature: Some(0.0),
            reasoning: None,
            cache_key: None,
        };
        let retry = self.setup.retry;
        let work = async move { complete(provider.as_ref(), &request, &retry).await };
        let summarised = match &self.durable {
            Some(durable) => {
                let name = super::durable::compaction_name(turn_id, step);
                super::durable::summary_call(durable.as_ref(), name, work).await
            }
            None => work.await,
        };
        let (summary, usage) = summarised.map_err(|e| format!("compaction failed: {e}"))?;
        // The summariser's tokens are the session's too.
        self.usage.add(&usage);
        let overhead = self
            .estimate
            .last_input_tokens
            .saturating_sub(tokens(history_chars(&self.history)));
        self.history = rebuild(&summary, &self.state.todos(), window);
        Ok(overhead + tokens(history_chars(&self.history)))
    }
}

/// One model call collected into its text, retried like a step.
async fn complete(
    provider: &dyn crate::providers::Provider,
    request: &ModelRequest,
    retry: &crate::providers::retry::RetryPolicy,
) -> Result<(String, Usage), String> {
    let mut attempt = 0;
    loop {
        let result = async {
            let mut stream = provider.stream(request).await?;
            let mut text = String::new();
            let mut usage = Usage::default();
            while let Some(event) = stream.next().await {
                match event? {
                    StreamEvent::TextDelta(delta) => text.push_str(&delta),
                    StreamEvent::Usage(u) => usage = u,
                    _ => {}
                }
            }
            Ok::<_, crate::providers::ProviderError>((text, usage))
        }
        .await;
        match result {
            Ok((text, usage)) if !text.trim().is_empty() => return Ok((text, usage)),
            Ok(_) => return Err("the summariser returned no text".into()),
            Err(e) if e.is_retryable() && attempt < retry.max_retries => {
                tokio::time::sleep(retry.delay(attempt, e.retry_after())).await;
                attempt += 1;
            }
            Err(e) => return Err(e.to_string()),
        }
    }
}
