//! The provider-neutral conversation: messages, tool calls and results, the tools offered, token counts.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of the conversation history, as every provider's request builder reads it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// What the person (or a parent agent) said.
    User { text: String },
    /// The model's reply: its text and the tool calls it made.
    Assistant {
        text: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ToolCall>,
        /// The reply in the provider's own wire format, opaque to eve, when the provider
        /// needs it back unchanged (a reply that holds a hosted tool's blocks); other
        /// providers ignore it.
        #[serde(
            default,
            alias = "anthropic_blocks",
            skip_serializing_if = "Option::is_none"
        )]
        provider_blocks: Option<Vec<Value>>,
        /// What the model reasoned before this reply, as it streamed (Anthropic's
        /// thinking, a Responses reasoning summary, `reasoning_content`), for people
        /// reading the session: no request builder sends it (what a provider wants
        /// back is in `provider_blocks`). At most [`REASONING_KEPT`] bytes.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        reasoning: String,
    },
    /// The results of the previous assistant message's tool calls, in call order.
    Tool { results: Vec<ToolResult> },
}

impl Message {
    /// Its size in characters (bytes of text), for token estimates at 4 a token.
    pub fn chars(&self) -> usize {
        match self {
            Message::User { text } => text.len(),
            Message::Assistant {
                text, tool_calls, ..
            } => {
                text.len()
                    + tool_calls
                        .iter()
                        .map(|c| c.name.len() + c.input.to_string().len())
                        .sum::<usize>()
            }
            Message::Tool { results } => results
                .iter()
                .map(|r| {
                    r.content.len() + 16 + r.images.iter().map(|i| i.data.len()).sum::<usize>()
                })
                .sum(),
        }
    }
}

/// A tool call the model made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    /// The arguments; `Value::Null` when the model sent no arguments at all.
    pub input: Value,
}

/// The result of one tool call, sent back to the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolResult {
    pub call_id: String,
    pub name: String,
    pub content: String,
    #[serde(default)]
    pub is_error: bool,
    /// Images the tool returned (an MCP server's image content), for providers that take
    /// them in tool results; the others get a line about each in `content`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
}

/// An image in a tool result: base64 data of a PNG, JPEG, GIF or WebP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Image {
    pub media_type: String,
    /// Standard base64, as MCP and the provider APIs carry it.
    pub data: String,
}

/// A tool offered to the model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub input_schema: Value,
    /// A function eve runs, or a tool the provider runs itself.
    #[serde(skip_serializing_if = "ToolKind::is_function")]
    pub kind: ToolKind,
}

/// Who runs a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    /// eve runs it and sends the result back.
    #[default]
    Function,
    /// A web search the provider hosts: the API runs it within the reply.
    HostedWebSearch,
}

impl ToolKind {
    fn is_function(&self) -> bool {
        *self == ToolKind::Function
    }
}

/// The most bytes of one reply's reasoning the session log keeps.
pub const REASONING_KEPT: usize = 64 * 1024;

/// A stand-in for an assistant message with neither text nor tool calls: both APIs reject empty content.
pub const EMPTY_REPLY: &str = "(empty reply)";

/// Token counts of one model call.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub struct Usage {
    /// Every prompt token, cached or not: the size of the context that was sent.
    pub input_tokens: u64,
    /// Tokens generated, reasoning included.
    pub output_tokens: u64,
    /// The part of `input_tokens` read from the prompt cache.
    pub cache_read_tokens: u64,
    /// The part of `input_tokens` written to the prompt cache.
    pub cache_write_tokens: u64,
    /// The part of `output_tokens` the model spent reasoning, where the provider
    /// reports it (OpenAI's APIs; Anthropic counts thinking in `output_tokens` only).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_tokens: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Usage {
    /// Adds another call's counts to these. A provider reports its own counts, so a
    /// hostile one can send `u64::MAX`: the sums stop there instead of wrapping to small
    /// numbers that would slip under a token budget.
    pub fn add(&mut self, other: &Usage) {
        // Saturating: a hostile or broken provider must not wrap a counter round.
        self.input_tokens = self.input_tokens.saturating_add(other.input_tokens);
        self.output_tokens = self.output_tokens.saturating_add(other.output_tokens);
        self.cache_read_tokens = self
            .cache_read_tokens
            .saturating_add(other.cache_read_tokens);
        self.cache_write_tokens = self
            .cache_write_tokens
            .saturating_add(other.cache_write_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(other.reasoning_tokens);
    }
}

/// The tool calls of the last assistant message that have no results yet.
pub fn unanswered_calls(history: &[Message]) -> Vec<ToolCall> {
    match history.last() {
        Some(Message::Assistant { tool_calls, .. }) => tool_calls.clone(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn usage_sums_saturate_instead_of_wrapping() {
        let huge = Usage {
            input_tokens: u64::MAX,
            output_tokens: u64::MAX - 1,
            cache_read_tokens: u64::MAX,
            cache_write_tokens: 1,
            reasoning_tokens: 0,
        };
        let mut total = Usage {
            input_tokens: 10,
            output_tokens: 2,
            cache_read_tokens: 5,
            cache_write_tokens: 3,
            reasoning_tokens: 0,
        };
        total.add(&huge);
        total.add(&huge);
        assert_eq!(
            total,
            Usage {
                input_tokens: u64::MAX,
                output_tokens: u64::MAX,
                cache_read_tokens: u64::MAX,
                cache_write_tokens: 5,
                reasoning_tokens: 0,
            }
        );
    }
}
