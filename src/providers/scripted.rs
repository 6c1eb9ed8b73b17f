//! `scripted:<file.yaml>`: a provider that replays replies from a file, for tests, evals and demos.
//!
//! The format is documented for authors in `docs/scripted-provider.md`.

use crate::sync::lock;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;

use super::Provider;
use super::error::ProviderError;
use super::event::{FinishReason, StreamEvent, Usage};
use super::request::{Message, ModelRequest};
use super::stream::EventStream;
pub use crate::manifest::script::{Reply, ScriptedCall, ScriptedError, ScriptedUsage};

/// The scripted provider: each model call consumes the next reply.
#[derive(Debug)]
pub struct ScriptedProvider {
    path: PathBuf,
    replies: Vec<Reply>,
    next: Mutex<usize>,
    /// `EVE_SCRIPTED_LOG`: every request is appended to this file as one JSON line.
    log: Option<PathBuf>,
    /// Where the position in the script is kept for a logged session:
    /// `.eve/sessions/<id>.scripted`, held open and overwritten in place at each reply
    /// (a rename a reply cost more than the rest of a step's bookkeeping).
    cursor_file: Mutex<Option<std::fs::File>>,
}

impl ScriptedProvider {
    /// Reads and checks a script; the error names the file and the problem.
    pub fn load(path: &Path) -> Result<ScriptedProvider, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read the scripted replies `{}`: {e}", path.display()))?;
        let replies = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(ScriptedProvider {
            path: path.to_path_buf(),
            replies,
            next: Mutex::new(0),
            log: std::env::var_os("EVE_SCRIPTED_LOG").map(PathBuf::from),
            cursor_file: Mutex::new(None),
        })
    }

    /// A script already read and checked (an eval case's `[[reply]]` entries); `path`
    /// names it in messages. Its requests are not logged and its place is not kept.
    pub fn from_replies(path: &Path, replies: Vec<Reply>) -> ScriptedProvider {
        ScriptedProvider {
            path: path.to_path_buf(),
            replies,
            next: Mutex::new(0),
            log: None,
            cursor_file: Mutex::new(None),
        }
    }

    /// How many replies the script has left.
    pub fn remaining(&self) -> usize {
        self.replies.len().saturating_sub(*lock(&self.next))
    }

    fn next_reply(&self, request: &ModelRequest) -> Result<Reply, ProviderError> {
        if let Some(log) = &self.log {
            let line = serde_json::to_string(request).unwrap_or_default();
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .and_then(|mut f| writeln!(f, "{line}"));
            if let Err(e) = written {
                return Err(ProviderError::Script(format!(
                    "cannot write EVE_SCRIPTED_LOG `{}`: {e}",
                    log.display()
                )));
            }
        }
        let mut next = lock(&self.next);
        let Some(reply) = self.replies.get(*next) else {
            return Err(ProviderError::Script(format!(
                "the scripted replies in `{}` ran out: model call {} but the file has {} {}",
                self.path.display(),
                *next + 1,
                self.replies.len(),
                if self.replies.len() == 1 {
                    "reply"
                } else {
                    "replies"
                },
            )));
        };
        *next += 1;
        if let Some(file) = lock(&self.cursor_file).as_ref() {
            // Best effort: losing the place only replays a reply in a later process. One
            // width, so the file never changes size: no truncation, no rename.
            use std::os::unix::fs::FileExt;
            let _ = file.write_all_at(place_record(*next).as_bytes(), 0);
        }
        Ok(reply.clone())
    }
}

/// The place file's contents: the number of replies used, left-aligned in a fixed
/// width (any place fits), so each write covers the last one whole.
fn place_record(next: usize) -> String {
    format!("{next:<20}\n")
}

/// Parses a script: a YAML list of replies.
pub fn parse(text: &str) -> Result<Vec<Reply>, String> {
    let replies: Vec<Reply> = serde_yaml::from_str(text).map_err(|e| e.to_string())?;
    for (n, reply) in replies.iter().enumerate() {
        reply.check().map_err(|e| format!("reply {}: {e}", n + 1))?;
    }
    Ok(replies)
}

fn estimate_tokens(chars: usize) -> u64 {
    chars.div_ceil(4) as u64
}

fn request_chars(request: &ModelRequest) -> usize {
    let messages: usize = request.messages.iter().map(Message::chars).sum();
    let tools: usize = request
        .tools
        .iter()
        .map(|t| t.name.len() + t.description.len() + t.input_schema.to_string().len())
        .sum();
    request.system.len() + messages + tools
}

/// The stream events of one reply, as a real provider would send them.
pub fn events(reply: &Reply, request: &ModelRequest, call_number: usize) -> Vec<StreamEvent> {
    let mut out = Vec::new();
    if !reply.reasoning.is_empty() {
        out.push(StreamEvent::ReasoningDelta(reply.reasoning.clone()));
    }
    // Word by word, as text streams from a real model.
    let mut rest = reply.text.as_str();
    while !rest.is_empty() {
        let end = rest
            .char_indices()
            .skip_while(|(_, c)| c.is_whitespace())
            .find(|(_, c)| c.is_whitespace())
            .map_or(rest.len(), |(i, _)| i);
        out.push(StreamEvent::TextDelta(rest[..end].to_string()));
        rest = &rest[end..];
    }
    let mut output_chars = reply.text.len() + reply.reasoning.len();
    for (index, call) in reply.tool_calls.iter().enumerate() {
        let id = call
            .id
            .clone()
            .unwrap_or_else(|| format!("call_{call_number}_{}", index + 1));
        let args = call.input.to_string();
        output_chars += call.name.len() + args.len();
        out.push(StreamEvent::ToolCallStart {
            index,
            id,
            name: call.name.clone(),
        });
        out.push(StreamEvent::ToolCallArgsDelta { index, delta: args });
        out.push(StreamEvent::ToolCallEnd { index });
    }
    let usage = reply.usage.clone().unwrap_or_default();
    out.push(StreamEvent::Usage(Usage {
        input_tokens: usage
            .input_tokens
            .unwrap_or_else(|| estimate_tokens(request_chars(request))),
        output_tokens: usage
            .output_tokens
            .unwrap_or_else(|| estimate_tokens(output_chars)),
        cache_read_tokens: usage.cache_read_tokens,
        cache_write_tokens: usage.cache_write_tokens,
        reasoning_tokens: usage.reasoning_tokens,
    }));
    let finish = match reply.finish.as_deref() {
        Some("max_tokens") => FinishReason::MaxTokens,
        Some("tool_use") => FinishReason::ToolUse,
        Some(_) => FinishReason::Stop,
        None if reply.tool_calls.is_empty() => FinishReason::Stop,
        None => FinishReason::ToolUse,
    };
    out.push(StreamEvent::Finish(finish));
    out
}

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        "scripted"
    }

    fn bind_session(&self, agent_dir: &Path, session_id: &str) {
        // `.eve/sessions/<id>.scripted`, beneath the agent directory as every file of
        // eve's state is: a link there is not followed, a FIFO not waited on.
        let Ok(sessions) = crate::statedir::create(agent_dir, &["sessions"]) else {
            return;
        };
        let name = format!("{session_id}.scripted");
        if let Some(place) = sessions
            .read(&name, 64)
            .ok()
            .flatten()
            .and_then(|bytes| String::from_utf8(bytes).ok())
            .and_then(|t| t.trim().parse::<usize>().ok())
        {
            *lock(&self.next) = place;
        }
        // A link planted at the name is replaced, never written through (`rewrite`).
        *lock(&self.cursor_file) = sessions.rewrite(&name).ok();
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<EventStream, ProviderError>> {
        async move {
            let call_number = {
                let next = lock(&self.next);
                *next + 1
            };
            let reply = self.next_reply(request)?;
            if let Some(error) = &reply.error {
                return Err(ProviderError::Status {
                    provider: "scripted".into(),
                    status: error.status,
                    message: super::error::error_message(&error.body),
                    retry_after: error
                        .retry_after
                        .filter(|s| s.is_finite() && *s >= 0.0)
                        .map(Duration::from_secs_f64),
                });
            }
            let events = events(&reply, request, call_number);
            let stream: EventStream =
                Box::pin(futures_util::stream::iter(events.into_iter().map(Ok)));
            Ok(stream)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> ModelRequest {
        ModelRequest {
            model: "demo".into(),
            system: "x".repeat(400),
            messages: vec![Message::User { text: "hi".into() }],
            tools: vec![],
            max_output_tokens: 100,
            temperature: None,
            reasoning: None,
            cache_key: None,
        }
    }

    #[test]
    fn a_reply_streams_text_word_by_word_then_tool_calls_usage_and_finish() {
        let replies = parse(
            "- text: Let me look.\n  tool_calls:\n    - name: grep\n      input: {pattern: fn}\n  usage: {input_tokens: 50}\n",
        )
        .unwrap();
        let events = events(&replies[0], &request(), 1);
        assert_eq!(
            events,
            vec![
                StreamEvent::TextDelta("Let".into()),
                StreamEvent::TextDelta(" me".into()),
                StreamEvent::TextDelta(" look.".into()),
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "call_1_1".into(),
                    name: "grep".into()
                },
                StreamEvent::ToolCallArgsDelta {
                    index: 0,
                    delta: r#"{"pattern":"fn"}"#.into()
                },
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::Usage(Usage {
                    input_tokens: 50,
                    output_tokens: 8,
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                    reasoning_tokens: 0,
                }),
                StreamEvent::Finish(FinishReason::ToolUse),
            ]
        );
    }

    #[test]
    fn missing_usage_is_estimated_from_the_request() {
        let replies = parse("- text: ok\n").unwrap();
        let events = events(&replies[0], &request(), 1);
        let Some(StreamEvent::Usage(usage)) =
            events.iter().find(|e| matches!(e, StreamEvent::Usage(_)))
        else {
            panic!("no usage: {events:?}");
        };
        assert_eq!(usage.input_tokens, 101);
        assert_eq!(usage.output_tokens, 1);
    }

    #[test]
    fn bad_scripts_are_refused_with_the_reply_number() {
        assert!(
            parse("- text: a\n- error: {status: 200}\n")
                .unwrap_err()
                .starts_with("reply 2:")
        );
        assert!(
            parse("- txt: a\n")
                .unwrap_err()
                .contains("unknown field `txt`")
        );
        assert!(
            parse("- finish: done\n")
                .unwrap_err()
                .contains("finish `done`")
        );
        assert!(
            parse("- tool_calls: [{name: x, input: [1]}]\n")
                .unwrap_err()
                .contains("mapping")
        );
        assert!(parse("text: a\n").is_err());
    }

    #[tokio::test]
    async fn running_past_the_end_is_an_error_and_errors_are_injected() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.yaml");
        std::fs::write(&path, "- error: {status: 529, body: '{\"error\":{\"message\":\"Overloaded\",\"type\":\"overloaded_error\"}}', retry_after: 0}\n").unwrap();
        let provider = ScriptedProvider::load(&path).unwrap();
        let req = request();
        let Err(first) = provider.stream(&req).await else {
            panic!("expected the injected error")
        };
        assert!(first.is_retryable());
        assert_eq!(first.retry_after(), Some(Duration::ZERO));
        assert!(first.to_string().contains("Overloaded"), "{first}");
        let Err(second) = provider.stream(&req).await else {
            panic!("expected running out")
        };
        assert!(!second.is_retryable());
        assert!(
            second
                .to_string()
                .contains("ran out: model call 2 but the file has 1 reply"),
            "{second}"
        );
    }
}
