//! Decoding of the Anthropic Messages API stream into provider-neutral events.

use std::collections::HashMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use serde_json::{Value, json};

use super::event::{DecodeError, FinishReason, MAX_REPLY_PARTS, StreamEvent, Usage};
use super::request::{EMPTY_REPLY, Message, ModelRequest, ToolCall, ToolKind, ToolResult};

/// The version of Anthropic's web search tool eve declares.
pub const WEB_SEARCH_TOOL_TYPE: &str = "web_search_20250305";
/// Searches one reply may run.
pub const WEB_SEARCH_MAX_USES: u32 = 5;

/// Turns the SSE events of one streamed Messages API call into [`StreamEvent`]s.
#[derive(Debug, Default)]
pub struct AnthropicDecoder {
    counts: WireUsage,
    /// Anthropic's block index (which counts text and thinking blocks too) → dense tool-call index.
    tool_blocks: HashMap<u64, usize>,
    stopped: bool,
    /// Every content block rebuilt from the stream (with its tool input JSON so far), by
    /// block index: the reply as the API wants it back when it holds server-tool blocks.
    raw: std::collections::BTreeMap<u64, (Value, String)>,
    /// A server tool (web search) ran in this reply.
    server_blocks: bool,
}

impl AnthropicDecoder {
    /// A decoder for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one SSE event: `event` is its `event:` name, `data` its `data:` payload.
    pub fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        let mut out = Vec::new();
        match event {
            "message_start" => {
                let start: MessageStart = parse(event, data)?;
                self.counts.merge(start.message.usage);
            }
            "content_block_start" => {
                self.raw_start(event, data)?;
                let start: BlockStart = parse(event, data)?;
                match start.content_block {
                    Block::Text { text } => push_text(&mut out, StreamEvent::TextDelta, text),
                    Block::Thinking { thinking } => {
                        push_text(&mut out, StreamEvent::ReasoningDelta, thinking)
                    }
                    Block::ToolUse { id, name } => {
                        if !self.tool_blocks.contains_key(&start.index) {
                            let index = self.tool_blocks.len();
                            self.tool_blocks.insert(start.index, index);
                            out.push(StreamEvent::ToolCallStart { index, id, name });
                        }
                    }
                    // Redacted thinking and server-side tools (web search) are the API's business.
                    Block::Other => {}
                }
            }
            "content_block_delta" => {
                self.raw_delta(event, data)?;
                let delta: BlockDelta = parse(event, data)?;
                match delta.delta {
                    Delta::Text { text } => push_text(&mut out, StreamEvent::TextDelta, text),
                    Delta::Thinking { thinking } => {
                        push_text(&mut out, StreamEvent::ReasoningDelta, thinking)
                    }
                    Delta::InputJson { partial_json } => {
                        // Server tool blocks stream their input too; only client tool calls count.
                        match self.tool_blocks.get(&delta.index) {
                            Some(&index) if !partial_json.is_empty() => {
                                out.push(StreamEvent::ToolCallArgsDelta {
                                    index,
                                    delta: partial_json,
                                });
                            }
                            _ => {}
                        }
                    }
                    Delta::Other => {}
                }
            }
            "content_block_stop" => {
                let stop: BlockStop = parse(event, data)?;
                self.raw_stop(stop.index);
                if let Some(&index) = self.tool_blocks.get(&stop.index) {
                    out.push(StreamEvent::ToolCallEnd { index });
                }
            }
            "message_delta" => {
                let delta: MessageDelta = parse(event, data)?;
                // The counts in `message_delta` are cumulative, so they replace `message_start`'s.
                self.counts.merge(delta.usage);
                out.push(StreamEvent::Usage(self.counts.usage()));
                if let Some(reason) = delta.delta.stop_reason {
                    out.push(StreamEvent::Finish(finish_reason(reason)));
                }
            }
            "message_stop" => {
                self.stopped = true;
                // Signed thinking must go back exactly as it came while the model uses
                // tools (the API refuses it changed, and the model loses its chain of
                // thought without it); server tools' blocks too. The reply is then kept
                // as the API sent it.
                let thought = self.raw.values().any(|(b, _)| signed_thinking(b));
                if self.server_blocks || thought {
                    let blocks: Vec<Value> = std::mem::take(&mut self.raw)
                        .into_values()
                        .map(|(block, _)| block)
                        .filter(|b| {
                            !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking"))
                                || signed_thinking(b)
                        })
                        .collect();
                    out.extend(server_tool_events(&blocks));
                    out.push(StreamEvent::OpaqueReply(blocks));
                }
            }
            "error" => {
                let error: ErrorEvent = parse(event, data)?;
                return Err(DecodeError::Provider {
                    kind: error.error.kind,
                    message: error.error.message,
                });
            }
            // `ping`, and event names newer than eve.
            _ => {}
        }
        Ok(out)
    }

    fn raw_start(&mut self, event: &str, data: &str) -> Result<(), DecodeError> {
        let start: Value = parse(event, data)?;
        let Some(index) = start["index"].as_u64() else {
            return Ok(());
        };
        let block = start["content_block"].clone();
        if let Some(kind) = block["type"].as_str()
            && (kind == "server_tool_use" || kind.ends_with("_tool_result"))
        {
            self.server_blocks = true;
        }
        if !self.raw.contains_key(&index) && self.raw.len() >= MAX_REPLY_PARTS {
            return Err(DecodeError::TooMany {
                what: "content blocks",
                limit: MAX_REPLY_PARTS,
            });
        }
        self.raw.insert(index, (block, String::new()));
        Ok(())
    }

    fn raw_delta(&mut self, event: &str, data: &str) -> Result<(), DecodeError> {
        let delta: Value = parse(event, data)?;
        let Some((block, json)) = delta["index"].as_u64().and_then(|i| self.raw.get_mut(&i)) else {
            return Ok(());
        };
        let delta = &delta["delta"];
        match delta["type"].as_str() {
            Some("text_delta") => append(block, "text", &delta["text"]),
            Some("input_json_delta") => {
                json.push_str(delta["partial_json"].as_str().unwrap_or_default())
            }
            Some("thinking_delta") => append(block, "thinking", &delta["thinking"]),
            Some("signature_delta") => {
                block["signature"] = delta["signature"].clone();
            }
            Some("citations_delta") => {
                if !block["citations"].is_array() {
                    block["citations"] = Value::Array(Vec::new());
                }
                if let Some(citations) = block["citations"].as_array_mut() {
                    citations.push(delta["citation"].clone());
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn raw_stop(&mut self, index: u64) {
        if let Some((block, json)) = self.raw.get_mut(&index)
            && !json.trim().is_empty()
        {
            block["input"] = serde_json::from_str(json).unwrap_or_else(|_| json!({}));
        }
    }

    /// Checks that the stream ended with `message_stop`.
    pub fn finish(self) -> Result<(), DecodeError> {
        if self.stopped {
            Ok(())
        } else {
            Err(DecodeError::Truncated {
                expected: "message_stop",
            })
        }
    }
}

/// Appends the text `piece` to the string field `key` of a rebuilt block, in place:
/// rebuilding the text at each delta was quadratic.
fn append(block: &mut Value, key: &str, piece: &Value) {
    let piece = piece.as_str().unwrap_or_default();
    if let Some(fields) = block.as_object_mut() {
        match fields.get_mut(key) {
            Some(Value::String(text)) => text.push_str(piece),
            _ => {
                fields.insert(key.into(), Value::String(piece.to_string()));
            }
        }
    }
}

/// A thinking block the API signed (so it wants it back), or a redacted one.
fn signed_thinking(block: &Value) -> bool {
    match block["type"].as_str() {
        Some("thinking") => block["signature"].as_str().is_some_and(|s| !s.is_empty()),
        Some("redacted_thinking") => block["data"].is_string(),
        _ => false,
    }
}

/// The hosted tool calls of a reply and their results, as neutral events.
fn server_tool_events(blocks: &[Value]) -> Vec<StreamEvent> {
    let mut out: Vec<StreamEvent> = blocks
        .iter()
        .filter(|b| b["type"] == "server_tool_use")
        .map(|b| StreamEvent::ServerToolCall {
            id: b["id"].as_str().unwrap_or_default().to_string(),
            name: b["name"].as_str().unwrap_or("server_tool").to_string(),
            input: b["input"].clone(),
        })
        .collect();
    for block in blocks.iter().filter(|b| {
        b["type"]
            .as_str()
            .is_some_and(|t| t.ends_with("_tool_result"))
    }) {
        let (output, is_error) = server_result_summary(&block["content"]);
        out.push(StreamEvent::ServerToolResult {
            call_id: block["tool_use_id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            output,
            is_error,
        });
    }
    out
}

/// A web search result block as a short text: one `title — url` line per page, or the error.
fn server_result_summary(content: &Value) -> (String, bool) {
    match content {
        Value::Array(results) => {
            let lines: Vec<String> = results
                .iter()
                .map(|r| {
                    format!(
                        "{} — {}",
                        r["title"].as_str().unwrap_or("(untitled)"),
                        r["url"].as_str().unwrap_or_default()
                    )
                })
                .collect();
            (lines.join("\n"), false)
        }
        other => (
            format!(
                "search failed: {}",
                other["error_code"].as_str().unwrap_or("unknown error")
            ),
            true,
        ),
    }
}

fn parse<T: DeserializeOwned>(event: &str, data: &str) -> Result<T, DecodeError> {
    serde_json::from_str(data).map_err(|source| DecodeError::invalid_json(event, &source))
}

fn push_text(out: &mut Vec<StreamEvent>, make: fn(String) -> StreamEvent, text: String) {
    if !text.is_empty() {
        out.push(make(text));
    }
}

fn finish_reason(reason: String) -> FinishReason {
    match reason.as_str() {
        "end_turn" | "stop_sequence" => FinishReason::Stop,
        "tool_use" => FinishReason::ToolUse,
        "max_tokens" => FinishReason::MaxTokens,
        "pause_turn" => FinishReason::Pause,
        _ => FinishReason::Other(reason),
    }
}

/// Anthropic's token counts: `input_tokens` excludes the cached parts, unlike [`Usage`].
#[derive(Debug, Default, Deserialize)]
struct WireUsage {
    input_tokens: Option<u64>,
    output_tokens: Option<u64>,
    cache_read_input_tokens: Option<u64>,
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    fn merge(&mut self, newer: WireUsage) {
        self.input_tokens = newer.input_tokens.or(self.input_tokens);
        self.output_tokens = newer.output_tokens.or(self.output_tokens);
        self.cache_read_input_tokens = newer
            .cache_read_input_tokens
            .or(self.cache_read_input_tokens);
        self.cache_creation_input_tokens = newer
            .cache_creation_input_tokens
            .or(self.cache_creation_input_tokens);
    }

    fn usage(&self) -> Usage {
        let cache_read_tokens = self.cache_read_input_tokens.unwrap_or(0);
        let cache_write_tokens = self.cache_creation_input_tokens.unwrap_or(0);
        Usage {
            input_tokens: self
                .input_tokens
                .unwrap_or(0)
                .saturating_add(cache_read_tokens)
                .saturating_add(cache_write_tokens),
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens,
            cache_write_tokens,
            reasoning_tokens: 0,
        }
    }
}

#[derive(Deserialize)]
struct MessageStart {
    message: StartedMessage,
}

#[derive(Deserialize)]
struct StartedMessage {
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
struct BlockStart {
    index: u64,
    content_block: Block,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Block {
    Text {
        #[serde(default)]
        text: String,
    },
    Thinking {
        #[serde(default)]
        thinking: String,
    },
    ToolUse {
        id: String,
        name: String,
    },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct BlockDelta {
    index: u64,
    delta: Delta,
}

#[derive(Deserialize)]
#[serde(tag = "type")]
enum Delta {
    #[serde(rename = "text_delta")]
    Text { text: String },
    #[serde(rename = "input_json_delta")]
    InputJson { partial_json: String },
    #[serde(rename = "thinking_delta")]
    Thinking { thinking: String },
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct BlockStop {
    index: u64,
}

#[derive(Deserialize)]
struct MessageDelta {
    delta: MessageDeltaBody,
    #[serde(default)]
    usage: WireUsage,
}

#[derive(Deserialize)]
struct MessageDeltaBody {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct ErrorEvent {
    error: ErrorBody,
}

#[derive(Deserialize)]
struct ErrorBody {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    message: String,
}

/// The JSON body of a streamed Messages API call. The system prompt and the last
/// content block of the conversation carry `cache_control`, so each step reads the
/// whole previous prefix from the prompt cache and writes the new one.
pub fn request_body(request: &ModelRequest) -> Value {
    let thinking = thinks(request);
    let mut messages: Vec<Value> = Vec::new();
    for message in &request.messages {
        let (role, blocks) = match message {
            Message::User { text } => ("user", vec![json!({"type": "text", "text": text})]),
            Message::Assistant {
                provider_blocks: Some(blocks),
                text,
                tool_calls,
                ..
            } if is_own(blocks) => {
                let kept = kept_blocks(blocks, thinking);
                if kept.is_empty() {
                    ("assistant", assistant_blocks(text, tool_calls))
                } else {
                    ("assistant", kept)
                }
            }
            Message::Assistant {
                text, tool_calls, ..
            } => ("assistant", assistant_blocks(text, tool_calls)),
            Message::Tool { results } => ("user", tool_result_blocks(results)),
        };
        // The API wants alternating roles: tool results followed by a user message share one turn.
        match messages.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => messages.push(json!({"role": role, "content": blocks})),
        }
    }
    // The cache breakpoint goes on the last block that accepts one (not a server tool's).
    if let Some(block) = messages
        .last_mut()
        .and_then(|m| m["content"].as_array_mut())
        .and_then(|c| {
            c.iter_mut().rev().find(|b| {
                matches!(
                    b["type"].as_str(),
                    Some("text" | "tool_use" | "tool_result")
                )
            })
        })
    {
        block["cache_control"] = json!({"type": "ephemeral"});
    }
    let mut body = json!({
        "model": request.model,
        "max_tokens": request.max_output_tokens,
        "stream": true,
        "messages": messages,
    });
    if let Some(reasoning) = request.reasoning.as_ref().filter(|_| thinking) {
        // The budget comes out of `max_tokens`: raised by it, the reply keeps its room.
        let budget = reasoning.budget();
        body["thinking"] = json!({"type": "enabled", "budget_tokens": budget});
        body["max_tokens"] = json!(request.max_output_tokens.saturating_add(budget));
    }
    if !request.system.is_empty() {
        body["system"] = json!([{
            "type": "text",
            "text": request.system,
            "cache_control": {"type": "ephemeral"},
        }]);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| match t.kind {
                ToolKind::Function => json!({"name": t.name, "description": t.description, "input_schema": t.input_schema}),
                ToolKind::HostedWebSearch => json!({"type": WEB_SEARCH_TOOL_TYPE, "name": t.name, "max_uses": WEB_SEARCH_MAX_USES}),
            })
            .collect();
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    body
}

/// Whether this request thinks: `[reasoning]` asks for it, and the assistant turn it
/// continues allows it. The API wants one thinking mode for a whole assistant turn,
/// tool loop included: a reply to tool results whose call came without thinking (a
/// session parked at an approval, resumed after `[reasoning]` was added) must not
/// think, or the API refuses it (a final assistant message must start with a thinking
/// block). The next turn thinks again.
fn thinks(request: &ModelRequest) -> bool {
    if request.reasoning.is_none() {
        return false;
    }
    let Some(Message::Tool { .. }) = request.messages.last() else {
        return true;
    };
    let last_reply = request
        .messages
        .iter()
        .rev()
        .find(|m| matches!(m, Message::Assistant { .. }));
    match last_reply {
        Some(Message::Assistant {
            provider_blocks: Some(blocks),
            ..
        }) if is_own(blocks) => matches!(
            blocks[0]["type"].as_str(),
            Some("thinking" | "redacted_thinking")
        ),
        Some(_) => false,
        None => true,
    }
}

/// Whether a kept reply is in this API's blocks (not another provider's items: a
/// session may change its model between turns).
fn is_own(blocks: &[Value]) -> bool {
    !blocks.is_empty()
        && blocks.iter().all(|b| {
            b["type"].as_str().is_some_and(|t| {
                matches!(
                    t,
                    "text" | "tool_use" | "thinking" | "redacted_thinking" | "server_tool_use"
                ) || t.ends_with("_tool_result")
            })
        })
}

/// The blocks of a reply kept as the API sent it, for a request with extended thinking
/// on (`thinking`) or off: without it, its thinking blocks are left out (the API only
/// takes them back from a model that is thinking).
fn kept_blocks(blocks: &[Value], thinking: bool) -> Vec<Value> {
    blocks
        .iter()
        .filter(|b| {
            thinking || !matches!(b["type"].as_str(), Some("thinking" | "redacted_thinking"))
        })
        .cloned()
        .collect()
}

/// The beta header a request needs: thinking between tool calls (interleaved thinking)
/// when the model thinks and may call tools.
pub fn beta_header(request: &ModelRequest) -> Option<&'static str> {
    (thinks(request) && !request.tools.is_empty()).then_some("interleaved-thinking-2025-05-14")
}

/// The blocks of an assistant message eve built (no provider blocks kept): its text and
/// its tool calls; a placeholder text when it has neither.
fn assistant_blocks(text: &str, tool_calls: &[ToolCall]) -> Vec<Value> {
    let mut blocks = Vec::new();
    if !text.is_empty() {
        blocks.push(json!({"type": "text", "text": text}));
    }
    for call in tool_calls {
        let input = match &call.input {
            Value::Object(_) => call.input.clone(),
            _ => json!({}),
        };
        blocks.push(json!({
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": input,
        }));
    }
    if blocks.is_empty() {
        blocks.push(json!({"type": "text", "text": EMPTY_REPLY}));
    }
    blocks
}

/// One `tool_result` block per result.
fn tool_result_blocks(results: &[ToolResult]) -> Vec<Value> {
    results
        .iter()
        .map(|r| {
            let text = if r.content.is_empty() {
                "(no output)"
            } else {
                r.content.as_str()
            };
            // Images go as image blocks beside the text (an MCP server's).
            let content =
                if r.images.is_empty() {
                    json!(text)
                } else {
                    let mut parts = vec![json!({"type": "text", "text": text})];
                    parts.extend(r.images.iter().map(|i| json!({
                    "type": "image",
                    "source": {"type": "base64", "media_type": i.media_type, "data": i.data},
                })));
                    json!(parts)
                };
            let mut block = json!({
                "type": "tool_result",
                "tool_use_id": r.call_id,
                "content": content,
            });
            if r.is_error {
                block["is_error"] = json!(true);
            }
            block
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::event::tool_arguments;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// Splits an SSE body into (event, data) pairs; enough for these well-formed fixtures.
    fn sse(body: &str) -> Vec<(String, String)> {
        body.split("\n\n")
            .filter(|block| !block.trim().is_empty())
            .map(|block| {
                let mut event = String::new();
                let mut data = String::new();
                for line in block.lines() {
                    if let Some(name) = line.strip_prefix("event: ") {
                        event = name.to_string();
                    } else if let Some(payload) = line.strip_prefix("data: ") {
                        data = payload.to_string();
                    }
                }
                (event, data)
            })
            .collect()
    }

    /// Decodes a whole body; the error, if any, is the first one met.
    fn decode(body: &str) -> (Vec<StreamEvent>, Result<(), DecodeError>) {
        let mut decoder = AnthropicDecoder::new();
        let mut events = Vec::new();
        for (event, data) in sse(body) {
            match decoder.on_event(&event, &data) {
                Ok(more) => events.extend(more),
                Err(e) => return (events, Err(e)),
            }
        }
        (events, decoder.finish())
    }

    fn text(s: &str) -> StreamEvent {
        StreamEvent::TextDelta(s.to_string())
    }

    fn args(index: usize, s: &str) -> StreamEvent {
        StreamEvent::ToolCallArgsDelta {
            index,
            delta: s.to_string(),
        }
    }

    const TEXT_THEN_TOOL: &str = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":1200,"cache_read_input_tokens":8000,"output_tokens":2},"content":[],"stop_reason":null}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: ping
data: {"type": "ping"}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Okay"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", let's check the weather for San Francisco, CA:"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\":"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" \"San"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" Francisc"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"o,"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":" CA\""}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":", "}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"unit\": \"fah"}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"renheit\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}

event: message_stop
data: {"type":"message_stop"}

"#;

    #[test]
    fn text_then_a_tool_call_with_fragmented_input() {
        let (events, end) = decode(TEXT_THEN_TOOL);
        end.unwrap();
        assert_eq!(
            events,
            vec![
                text("Okay"),
                text(", let's check the weather for San Francisco, CA:"),
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "toolu_01T1x1fJ34qAmk2tNTrN7Up6".to_string(),
                    name: "get_weather".to_string(),
                },
                args(0, "{\"location\":"),
                args(0, " \"San"),
                args(0, " Francisc"),
                args(0, "o,"),
                args(0, " CA\""),
                args(0, ", "),
                args(0, "\"unit\": \"fah"),
                args(0, "renheit\"}"),
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::Usage(Usage {
                    input_tokens: 472 + 1200 + 8000,
                    output_tokens: 89,
                    cache_read_tokens: 8000,
                    cache_write_tokens: 1200,
                    reasoning_tokens: 0,
                }),
                StreamEvent::Finish(FinishReason::ToolUse),
            ]
        );
        assert_eq!(
            tool_arguments(&events),
            [(
                0,
                json!({"location": "San Francisco, CA", "unit": "fahrenheit"})
            )]
            .into()
        );
    }

    #[test]
    fn thinking_then_text_then_two_tool_calls() {
        let body = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-opus-4-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"I need to read both files"}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":" before answering."}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"Reading both."}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_A","name":"read_file","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"Cargo"}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"input_json_delta","partial_json":".toml\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: content_block_start
data: {"type":"content_block_start","index":4,"content_block":{"type":"tool_use","id":"toolu_B","name":"read_file","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"src/"}}

event: content_block_delta
data: {"type":"content_block_delta","index":4,"delta":{"type":"input_json_delta","partial_json":"lib.rs\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":4}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":210}}

event: message_stop
data: {"type":"message_stop"}

"#;
        let (events, end) = decode(body);
        end.unwrap();
        assert_eq!(
            events,
            vec![
                StreamEvent::ReasoningDelta("I need to read both files".to_string()),
                StreamEvent::ReasoningDelta(" before answering.".to_string()),
                text("Reading both."),
                StreamEvent::ToolCallStart {
                    index: 0,
                    id: "toolu_A".to_string(),
                    name: "read_file".to_string(),
                },
                args(0, "{\"path\": \"Cargo"),
                args(0, ".toml\"}"),
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::ToolCallStart {
                    index: 1,
                    id: "toolu_B".to_string(),
                    name: "read_file".to_string(),
                },
                args(1, "{\"path\": \"src/"),
                args(1, "lib.rs\"}"),
                StreamEvent::ToolCallEnd { index: 1 },
                StreamEvent::Usage(Usage {
                    input_tokens: 120,
                    output_tokens: 210,
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                    reasoning_tokens: 0,
                }),
                StreamEvent::Finish(FinishReason::ToolUse),
                // Signed and redacted thinking go back exactly as they came.
                StreamEvent::OpaqueReply(vec![
                    json!({"type": "thinking", "thinking": "I need to read both files before answering.", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"}),
                    json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"}),
                    json!({"type": "text", "text": "Reading both."}),
                    json!({"type": "tool_use", "id": "toolu_A", "name": "read_file", "input": {"path": "Cargo.toml"}}),
                    json!({"type": "tool_use", "id": "toolu_B", "name": "read_file", "input": {"path": "src/lib.rs"}}),
                ]),
            ]
        );
        assert_eq!(
            tool_arguments(&events),
            [
                (0, json!({"path": "Cargo.toml"})),
                (1, json!({"path": "src/lib.rs"}))
            ]
            .into()
        );
    }

    fn thinking_request(reasoning: Option<crate::manifest::Reasoning>) -> ModelRequest {
        let thought = vec![
            json!({"type": "thinking", "thinking": "Read it first.", "signature": "sig-1"}),
            json!({"type": "redacted_thinking", "data": "opaque"}),
            json!({"type": "tool_use", "id": "toolu_A", "name": "read_file", "input": {"path": "a"}}),
        ];
        ModelRequest {
            model: "claude-sonnet-4-5".into(),
            system: String::new(),
            messages: vec![
                Message::User { text: "go".into() },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![ToolCall {
                        id: "toolu_A".into(),
                        name: "read_file".into(),
                        input: json!({"path": "a"}),
                    }],
                    provider_blocks: Some(thought),
                    reasoning: String::new(),
                },
                Message::Tool {
                    results: vec![ToolResult {
                        call_id: "toolu_A".into(),
                        name: "read_file".into(),
                        content: "text".into(),
                        is_error: false,
                        images: Vec::new(),
                    }],
                },
            ],
            tools: vec![crate::providers::request::ToolSpec {
                name: "read_file".into(),
                description: "Reads".into(),
                input_schema: json!({"type": "object"}),
                kind: ToolKind::Function,
            }],
            max_output_tokens: 8192,
            temperature: None,
            reasoning,
            cache_key: None,
        }
    }

    #[test]
    fn extended_thinking_asks_for_its_budget_and_sends_signed_thinking_back() {
        let reasoning = crate::manifest::Reasoning {
            effort: crate::manifest::Effort::High,
            budget_tokens: None,
        };
        let request = thinking_request(Some(reasoning));
        let body = request_body(&request);
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 32000})
        );
        assert_eq!(body["max_tokens"], 8192 + 32000);
        assert_eq!(
            body["messages"][1]["content"],
            json!([
                {"type": "thinking", "thinking": "Read it first.", "signature": "sig-1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "tool_use", "id": "toolu_A", "name": "read_file", "input": {"path": "a"}},
            ])
        );
        assert_eq!(
            beta_header(&request),
            Some("interleaved-thinking-2025-05-14")
        );
        // Without `[reasoning]` nothing of thinking is asked for or sent back.
        let plain = thinking_request(None);
        let body = request_body(&plain);
        assert!(body.get("thinking").is_none());
        assert_eq!(body["max_tokens"], 8192);
        assert_eq!(
            body["messages"][1]["content"],
            json!([{"type": "tool_use", "id": "toolu_A", "name": "read_file", "input": {"path": "a"}}])
        );
        assert_eq!(beta_header(&plain), None);
    }

    #[test]
    fn a_tool_loop_begun_without_thinking_ends_without_it() {
        let reasoning = crate::manifest::Reasoning {
            effort: crate::manifest::Effort::Low,
            budget_tokens: None,
        };
        // The call came from a reply without thinking (no blocks kept): the reply to
        // its result must not think, or the API refuses the request.
        let mut request = thinking_request(Some(reasoning));
        if let Message::Assistant {
            provider_blocks, ..
        } = &mut request.messages[1]
        {
            *provider_blocks = None;
        }
        let body = request_body(&request);
        assert!(body.get("thinking").is_none(), "{body}");
        assert_eq!(body["max_tokens"], 8192);
        assert_eq!(beta_header(&request), None);
        // A new user message begins a new assistant turn, which thinks again.
        request.messages.push(Message::User {
            text: "next".into(),
        });
        assert!(request_body(&request).get("thinking").is_some());
    }

    #[test]
    fn unsigned_thinking_alone_keeps_no_reply_blocks() {
        let body = r#"event: message_start
data: {"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"claude-test","content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hm"}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: message_stop
data: {"type":"message_stop"}

"#;
        let (events, end) = decode(body);
        end.unwrap();
        assert!(
            !events
                .iter()
                .any(|e| matches!(e, StreamEvent::OpaqueReply(_))),
            "{events:?}"
        );
    }

    #[test]
    fn server_side_web_search_blocks_come_back_whole_at_the_end() {
        let body = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":2679,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":3}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":"I'll check."}}

event: content_block_stop
data: {"type":"content_block_stop","index":0}

event: content_block_start
data: {"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","name":"web_search","input":{}}}

event: content_block_delta
data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"weather NYC today\"}"}}

event: content_block_stop
data: {"type":"content_block_stop","index":1}

event: content_block_start
data: {"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_014hJH82Qum7Td6UV8gDXThB","content":[{"type":"web_search_result","title":"Weather","url":"https://example.com","encrypted_content":"Ev0DCioIAxgC","page_age":null}]}}

event: content_block_stop
data: {"type":"content_block_stop","index":2}

event: content_block_start
data: {"type":"content_block_start","index":3,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"citations_delta","citation":{"type":"web_search_result_location","url":"https://example.com","title":"Weather","encrypted_index":"Eo8BCioIAhgB","cited_text":"Sunny"}}}

event: content_block_delta
data: {"type":"content_block_delta","index":3,"delta":{"type":"text_delta","text":"It is sunny."}}

event: content_block_stop
data: {"type":"content_block_stop","index":3}

event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"input_tokens":10682,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":510,"server_tool_use":{"web_search_requests":1}}}

event: message_stop
data: {"type":"message_stop"}

"#;
        let (events, end) = decode(body);
        end.unwrap();
        assert_eq!(
            events,
            vec![
                text("I'll check."),
                text("It is sunny."),
                StreamEvent::Usage(Usage {
                    input_tokens: 10682,
                    output_tokens: 510,
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                    reasoning_tokens: 0,
                }),
                StreamEvent::Finish(FinishReason::Stop),
                StreamEvent::ServerToolCall {
                    id: "srvtoolu_014hJH82Qum7Td6UV8gDXThB".into(),
                    name: "web_search".into(),
                    input: serde_json::json!({"query": "weather NYC today"}),
                },
                StreamEvent::ServerToolResult {
                    call_id: "srvtoolu_014hJH82Qum7Td6UV8gDXThB".into(),
                    output: "Weather — https://example.com".into(),
                    is_error: false,
                },
                StreamEvent::OpaqueReply(vec![
                    serde_json::json!({"type": "text", "text": "I'll check."}),
                    serde_json::json!({"type": "server_tool_use", "id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB", "name": "web_search", "input": {"query": "weather NYC today"}}),
                    serde_json::json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_014hJH82Qum7Td6UV8gDXThB", "content": [{"type": "web_search_result", "title": "Weather", "url": "https://example.com", "encrypted_content": "Ev0DCioIAxgC", "page_age": null}]}),
                    serde_json::json!({"type": "text", "text": "It is sunny.", "citations": [{"type": "web_search_result_location", "url": "https://example.com", "title": "Weather", "encrypted_index": "Eo8BCioIAhgB", "cited_text": "Sunny"}]}),
                ]),
            ]
        );
    }

    #[test]
    fn an_error_event_mid_stream_is_a_retryable_provider_error() {
        let body = r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_03","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}

event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}

event: content_block_delta
data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}

event: error
data: {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}

"#;
        let (events, end) = decode(body);
        assert_eq!(events, vec![text("Hel")]);
        let error = end.unwrap_err();
        assert!(error.is_retryable());
        assert_eq!(
            error.to_string(),
            "provider error (overloaded_error): Overloaded"
        );
    }

    #[test]
    fn a_stream_without_message_stop_is_truncated() {
        let cut = TEXT_THEN_TOOL.split("event: message_delta").next().unwrap();
        let (events, end) = decode(cut);
        assert_eq!(events.last(), Some(&StreamEvent::ToolCallEnd { index: 0 }));
        assert_eq!(
            end.unwrap_err().to_string(),
            "the provider's stream ended before `message_stop`"
        );
    }

    #[test]
    fn max_tokens_and_unknown_stop_reasons() {
        let reasons: Vec<FinishReason> = ["max_tokens", "stop_sequence", "refusal"]
            .into_iter()
            .map(|reason| {
                let data = json!({"type": "message_delta", "delta": {"stop_reason": reason}, "usage": {"output_tokens": 5}});
                let events = AnthropicDecoder::new()
                    .on_event("message_delta", &data.to_string())
                    .unwrap();
                match events.last() {
                    Some(StreamEvent::Finish(reason)) => reason.clone(),
                    other => panic!("no finish: {other:?}"),
                }
            })
            .collect();
        assert_eq!(
            reasons,
            vec![
                FinishReason::MaxTokens,
                FinishReason::Stop,
                FinishReason::Other("refusal".to_string())
            ]
        );
    }

    #[test]
    fn empty_and_repeated_ids_pass_through_and_a_reused_block_index_is_one_call() {
        let mut decoder = AnthropicDecoder::new();
        let mut events = Vec::new();
        for (index, id) in [
            (1, ""),
            (2, ""),
            (2, "toolu_again"),
            (3, "toolu_x"),
            (4, "toolu_x"),
        ] {
            let start = json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": "deploy", "input": {}}});
            events.extend(
                decoder
                    .on_event("content_block_start", &start.to_string())
                    .unwrap(),
            );
        }
        let starts: Vec<(usize, String)> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolCallStart { index, id, .. } => Some((*index, id.clone())),
                _ => None,
            })
            .collect();
        // The decoder reports the wire's ids as they are (the harness makes them unique);
        // each block is one call with its own dense index.
        assert_eq!(
            starts,
            vec![
                (0, String::new()),
                (1, String::new()),
                (2, "toolu_x".to_string()),
                (3, "toolu_x".to_string()),
            ]
        );
    }

    #[test]
    fn malformed_payloads_are_errors_and_unknown_events_are_ignored() {
        let mut decoder = AnthropicDecoder::new();
        assert_eq!(decoder.on_event("ping", "").unwrap(), vec![]);
        assert_eq!(
            decoder.on_event("future_event", "{not json").unwrap(),
            vec![]
        );
        let error = decoder
            .on_event("content_block_delta", "{\"index\":")
            .unwrap_err();
        assert!(
            matches!(error, DecodeError::InvalidJson { ref event, .. } if event == "content_block_delta")
        );
        assert!(!error.is_retryable());
        assert!(
            decoder
                .on_event(
                    "content_block_start",
                    r#"{"index":-1,"content_block":{"type":"text"}}"#
                )
                .is_err()
        );
        assert!(decoder.on_event("error", r#"{"type":"error"}"#).is_err());
    }
}
