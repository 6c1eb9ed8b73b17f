//! What one model call sends: the conversation (protocol types) plus the call's settings.

use serde::Serialize;

pub use crate::protocol::message::{
    EMPTY_REPLY, Message, ToolCall, ToolKind, ToolResult, ToolSpec,
};

/// Everything one model call needs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelRequest {
    /// The provider's model id (`claude-sonnet-4-5`), without the provider prefix.
    pub model: String,
    pub system: String,
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    pub max_output_tokens: u64,
    /// `None` leaves the provider's default.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// `[reasoning]`: Anthropic's extended thinking, OpenAI's `reasoning_effort`; `None`
    /// asks for neither.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning: Option<crate::manifest::Reasoning>,
    /// What routes the calls of one session to the same prompt cache (the Responses
    /// API's `prompt_cache_key`): the session id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_key: Option<String>,
}
