//! Provider-neutral stream events and the errors of decoding a provider's stream.

use serde::{Deserialize, Serialize};

pub use crate::protocol::Usage;

use super::redact::Secrets;

/// One piece of a model's streamed reply, the same for every provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEvent {
    /// A piece of the assistant's visible text.
    TextDelta(String),
    /// A piece of the model's reasoning (thinking) text.
    ReasoningDelta(String),
    /// A tool call begins; `index` is its dense 0-based position within the step.
    ToolCallStart {
        index: usize,
        id: String,
        name: String,
    },
    /// A piece of a tool call's JSON arguments; the pieces concatenate to one JSON value.
    ToolCallArgsDelta { index: usize, delta: String },
    /// A tool call's arguments are complete.
    ToolCallEnd { index: usize },
    /// Token counts for the whole call; a later `Usage` supersedes an earlier one.
    Usage(Usage),
    /// Why the model stopped.
    Finish(FinishReason),
    /// A tool the provider ran itself within the reply (a hosted web search).
    ServerToolCall {
        id: String,
        name: String,
        input: serde_json::Value,
    },
    /// What a hosted tool returned, summarised for people.
    ServerToolResult {
        call_id: String,
        output: String,
        is_error: bool,
    },
    /// The whole reply in the provider's wire format, opaque to eve, when the provider
    /// needs it back unchanged in the next request (a reply that holds hosted-tool blocks).
    OpaqueReply(Vec<serde_json::Value>),
}

/// Gives the calls of a reply kept in its provider's format (an
/// [`StreamEvent::OpaqueReply`]) the ids eve gave them: `renamed` holds each renamed
/// call's position among the reply's calls and its new id. The n-th call block
/// (Anthropic's `tool_use`, the Responses API's `function_call`) is the n-th call.
pub fn rename_kept_calls(blocks: &mut [serde_json::Value], renamed: &[(usize, String)]) {
    let mut calls: Vec<(&mut serde_json::Value, &str)> = blocks
        .iter_mut()
        .filter_map(|block| {
            let key = match block["type"].as_str() {
                Some("tool_use") => "id",
                Some("function_call") => "call_id",
                _ => return None,
            };
            Some((block, key))
        })
        .collect();
    for (position, id) in renamed {
        if let Some((block, key)) = calls.get_mut(*position) {
            block[*key] = serde_json::Value::String(id.clone());
        }
    }
}

/// Why the model stopped generating.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// The model finished its answer (or hit a stop sequence).
    Stop,
    /// The model wants its tool calls executed.
    ToolUse,
    /// The output token limit cut the reply short.
    MaxTokens,
    /// The provider paused a long turn of hosted tools: send the reply back as it is to go on.
    Pause,
    /// A reason eve does not know, as the provider spelled it.
    Other(String),
}

impl FinishReason {
    /// The name used in `step.completed` events.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::ToolUse => "tool_use",
            FinishReason::MaxTokens => "max_tokens",
            FinishReason::Pause => "pause_turn",
            FinishReason::Other(other) => other,
        }
    }
}

/// Why a provider's stream could not be decoded.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    /// An event's payload was not JSON of the expected shape (`detail` is serde's
    /// message, which may quote a value from the payload).
    #[error("invalid `{event}` event from the provider: {detail}")]
    InvalidJson { event: String, detail: String },
    /// The provider reported an error inside the stream.
    #[error("provider error ({kind}): {message}")]
    Provider { kind: String, message: String },
    /// The stream ended before its terminal event.
    #[error("the provider's stream ended before `{expected}`")]
    Truncated { expected: &'static str },
    /// More content blocks or tool calls in one reply than any model sends: a hostile or
    /// broken provider, stopped before it costs unbounded time and memory.
    #[error("the provider's reply has more than {limit} {what}; eve stopped reading it")]
    TooMany { what: &'static str, limit: usize },
}

/// The most content blocks (Anthropic) or tool calls (OpenAI) one reply may have. Models
/// send a handful; each one costs the decoders a look-up, so a reply of a million would
/// cost minutes and gigabytes.
pub const MAX_REPLY_PARTS: usize = 1024;

impl DecodeError {
    /// A payload serde could not read as the event it claims to be.
    pub fn invalid_json(event: &str, source: &serde_json::Error) -> DecodeError {
        DecodeError::InvalidJson {
            event: event.to_string(),
            detail: source.to_string(),
        }
    }

    /// The same error with every secret in its text masked.
    pub fn redacted(self, secrets: &Secrets) -> DecodeError {
        match self {
            DecodeError::InvalidJson { event, detail } => DecodeError::InvalidJson {
                event: secrets.redact(&event),
                detail: secrets.redact(&detail),
            },
            DecodeError::Provider { kind, message } => DecodeError::Provider {
                kind: secrets.redact(&kind),
                message: secrets.redact(&message),
            },
            DecodeError::Truncated { expected } => DecodeError::Truncated { expected },
            DecodeError::TooMany { what, limit } => DecodeError::TooMany { what, limit },
        }
    }

    /// Whether repeating the whole model call may succeed: overload, rate limit, server fault, cut stream.
    pub fn is_retryable(&self) -> bool {
        match self {
            DecodeError::InvalidJson { .. } | DecodeError::TooMany { .. } => false,
            DecodeError::Truncated { .. } => true,
            DecodeError::Provider { kind, .. } => {
                // OpenAI-compatible servers sometimes put the HTTP status in `code` instead of a type.
                if let Ok(status) = kind.parse::<u16>() {
                    return matches!(status, 408 | 409 | 429) || status >= 500;
                }
                matches!(
                    kind.as_str(),
                    "overloaded_error"
                        | "api_error"
                        | "rate_limit_error"
                        | "timeout_error"
                        | "server_error"
                        | "rate_limit_exceeded"
                        | "overloaded"
                )
            }
        }
    }
}

/// Each tool call's argument deltas concatenated and parsed as JSON, by call index.
#[cfg(test)]
pub(crate) fn tool_arguments(
    events: &[StreamEvent],
) -> std::collections::BTreeMap<usize, serde_json::Value> {
    let mut raw = std::collections::BTreeMap::<usize, String>::new();
    for event in events {
        match event {
            StreamEvent::ToolCallStart { index, .. } => {
                raw.entry(*index).or_default();
            }
            StreamEvent::ToolCallArgsDelta { index, delta } => {
                raw.entry(*index).or_default().push_str(delta);
            }
            _ => {}
        }
    }
    raw.into_iter()
        .map(|(index, json)| (index, serde_json::from_str(&json).unwrap()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn provider(kind: &str) -> DecodeError {
        DecodeError::Provider {
            kind: kind.to_string(),
            message: "m".to_string(),
        }
    }

    #[test]
    fn overload_rate_limit_and_server_faults_are_retryable() {
        let verdicts: Vec<(&str, bool)> = [
            "overloaded_error",
            "api_error",
            "rate_limit_error",
            "server_error",
            "529",
            "502",
            "429",
            "invalid_request_error",
            "authentication_error",
            "400",
        ]
        .into_iter()
        .map(|k| (k, provider(k).is_retryable()))
        .collect();
        assert_eq!(
            verdicts,
            vec![
                ("overloaded_error", true),
                ("api_error", true),
                ("rate_limit_error", true),
                ("server_error", true),
                ("529", true),
                ("502", true),
                ("429", true),
                ("invalid_request_error", false),
                ("authentication_error", false),
                ("400", false),
            ]
        );
        assert!(DecodeError::Truncated { expected: "[DONE]" }.is_retryable());
    }

    #[test]
    fn usage_and_finish_reason_serialize_in_snake_case() {
        let usage = Usage {
            input_tokens: 10,
            output_tokens: 2,
            cache_read_tokens: 8,
            cache_write_tokens: 0,
            reasoning_tokens: 0,
        };
        assert_eq!(
            serde_json::to_value(&usage).unwrap(),
            serde_json::json!({"input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 8, "cache_write_tokens": 0})
        );
        assert_eq!(
            serde_json::to_value(FinishReason::ToolUse).unwrap(),
            serde_json::json!("tool_use")
        );
        assert_eq!(
            serde_json::to_value(FinishReason::Other("refusal".into())).unwrap(),
            serde_json::json!({"other": "refusal"})
        );
    }
}
