//! Compaction, before a model call: shorten oversized old tool results, and if that is
//! not enough, summarise the older history and keep a recent window.

use futures_util::StreamExt;

use super::{Harness, message_chars};
use crate::protocol::EventKind;
use crate::protocol::Message;
use crate::providers::{ModelRequest, StreamEvent};

/// The summariser's instructions (fixed).
pub const SUMMARY_PROMPT: &str = "You compact the history of a conversation between a person and an AI agent that works with tools, so the agent can continue the task with the summary instead of the full history. Write a summary that keeps: the person's goals and requests, decisions taken and why, findings (facts, file paths, names, numbers, errors and their causes), what has been done, the open work, and any data the agent still needs. Leave out pleasantries and tool output nobody needs again. If the transcript starts with an earlier summary, carry everything in it that still matters forward. The last messages of the transcript are kept verbatim after your summary, so focus on what comes before them. Write in the same language as the conversation. Answer with the summary only.";

/// Tool results longer than this (characters) are shortened first.
const LONG_RESULT: usize = 2_000;
/// What is kept of a shortened result.
const KEPT_OF_RESULT: usize = 500;
/// The most recent messages whose tool results are never shortened.
const RECENT_MESSAGES: usize = 4;

fn tokens(chars: usize) -> u64 {
    (chars / 4) as u64
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
    /// The token estimate of the next request: the last count the provider reported,
    /// plus 4 characters a token for what was appended since.
    pub fn estimate(&self) -> u64 {
        self.last_input_tokens + tokens(self.appended_chars)
    }

    fn threshold(&self) -> u64 {
        let limits = &self.config.manifest.agent;
        (limits.compaction.threshold_percent * limits.limits.context_window as f64) as u64
    }

    /// Compacts when the estimate is above the threshold, or always with `force`.
    pub(crate) async fn maybe_compact(&mut self, turn_id: &str, force: bool) -> Result<(), String> {
        let before = self.estimate();
        let threshold = self.threshold();
        if !force && before <= threshold {
            return Ok(());
        }
        // A summary and one message, or a history far smaller than the threshold:
        // what is big is the prompt and the tools, which compaction cannot shrink.
        let history_tokens = tokens(self.history.iter().map(message_chars).sum());
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
        if !force && let Some(after) = self.shorten_tool_results() {
            // Judged from the provider's count minus what was removed, never from a
            // fresh character estimate of the whole history.
            if after <= threshold {
                self.finish_compaction(turn_id, before, after, false);
                return Ok(());
            }
        }
        let after = self.summarise(force).await?;
        self.finish_compaction(turn_id, before, after, true);
        Ok(())
    }

    /// Compacts the session now, whatever its size (`/compact`, `eve run --compact`).
    pub async fn compact_now(&mut self) -> Result<(), String> {
        let turn_id = crate::ids::new_id("turn");
        self.maybe_compact(&turn_id, true).await
    }

    fn finish_compaction(&mut self, turn_id: &str, before: u64, after: u64, summarised: bool) {
        self.emitter.record(&crate::protocol::Record::Compacted {
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
        self.save_todos();
        self.last_input_tokens = after;
        self.appended_chars = 0;
        self.sync();
    }

    /// Cuts long tool results outside the recent messages. Returns the new estimate, or
    /// `None` when nothing was long enough to cut.
    fn shorten_tool_results(&mut self) -> Option<u64> {
        let recent_from = self.history.len().saturating_sub(RECENT_MESSAGES);
        let mut removed = 0usize;
        for message in &mut self.history[..recent_from] {
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
        (removed > 0).then(|| {
            self.last_input_tokens.saturating_sub(tokens(removed)) + tokens(self.appended_chars)
        })
    }

    /// Replaces the older history with a summary and keeps a recent window of text
    /// messages; returns the new estimate.
    async fn summarise(&mut self, force: bool) -> Result<u64, String> {
        let agent = &self.config.manifest.agent;
        let context_window = agent.limits.context_window;
        // The recent window: the last text messages that fit in a tenth of the window.
        let budget = (context_window / 10).max(1);
        let mut window: Vec<Message> = Vec::new();
        let mut kept_indices = Vec::new();
        let mut used = 0u64;
        for (i, message) in self.history.iter().enumerate().rev() {
            let kept = match message {
                Message::Tool { .. } => None,
                Message::User { text } => Some(Message::User { text: text.clone() }),
                Message::Assistant { text, .. } if !text.is_empty() => Some(Message::Assistant {
                    text: text.clone(),
                    tool_calls: Vec::new(),
                    anthropic_blocks: None,
                }),
                Message::Assistant { .. } => None,
            };
            if let Some(kept) = kept {
                let cost = tokens(message_chars(&kept));
                // By hand, keep just the last exchange: the person asked for a small history.
                if used + cost > budget || (force && window.len() >= 2) {
                    break;
                }
                used += cost;
                window.push(kept);
                kept_indices.push(i);
            }
        }
        window.reverse();
        // The whole history is summarised, so nothing is lost: the window repeats only
        // the latest text messages verbatim.
        let source = self.history.clone();
        let (provider, model_id) = match &agent.compaction.model {
            Some(model) if *model != agent.model && *model != self.config.model => {
                let resolved = crate::providers::resolve(
                    model,
                    &agent.providers,
                    &self.config.agent_dir,
                    &|name| std::env::var(name).ok(),
                )?;
                (resolved.provider, resolved.model_id)
            }
            _ => (self.config.provider.clone(), self.config.model_id.clone()),
        };
        let request = ModelRequest {
            model: model_id,
            system: SUMMARY_PROMPT.to_string(),
            messages: vec![Message::User {
                text: format!("Summarise this conversation:\n\n{}", transcript(&source)),
            }],
            tools: Vec::new(),
            max_output_tokens: agent.limits.max_output_tokens.min(8192),
            temperature: Some(0.0),
        };
        let (summary, usage) = complete(provider.as_ref(), &request, &self.config.retry)
            .await
            .map_err(|e| format!("compaction failed: {e}"))?;
        // The summariser's tokens are the session's too.
        self.usage.add(&usage);
        let old_chars: usize = self.history.iter().map(message_chars).sum();
        let overhead = self.last_input_tokens.saturating_sub(tokens(old_chars));
        let mut text = format!(
            "This conversation was compacted to fit the context window. Summary of the earlier part:\n\n{}",
            summary.trim()
        );
        let todos = self.state.todos();
        if !todos.is_empty() {
            text.push_str(&format!(
                "\n\nCurrent {}",
                crate::tools::builtin::todo::render(&todos).replacen("Todo list", "todo list", 1)
            ));
        }
        let mut history = vec![Message::User { text }];
        history.extend(window);
        if matches!(history.last(), Some(Message::Assistant { .. })) {
            history.push(Message::User {
                text: "Continue.".into(),
            });
        }
        let new_chars: usize = history.iter().map(message_chars).sum();
        self.history = history;
        Ok(overhead + tokens(new_chars))
    }
}

/// One model call collected into its text, retried like a step.
async fn complete(
    provider: &dyn crate::providers::Provider,
    request: &ModelRequest,
    retry: &crate::providers::retry::RetryPolicy,
) -> Result<(String, crate::protocol::Usage), String> {
    let mut attempt = 0;
    loop {
        let result = async {
            let mut stream = provider.stream(request).await?;
            let mut text = String::new();
            let mut usage = crate::protocol::Usage::default();
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
