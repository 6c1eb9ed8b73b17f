//! OpenAI's Responses API (`POST /responses`, streamed): the request body, and a decoder
//! of its named stream events into provider-neutral events.
//!
//! eve asks for `store: false`, so nothing of the conversation is kept by OpenAI; a
//! reasoning model's reasoning then comes back encrypted (`include:
//! ["reasoning.encrypted_content"]`) as `reasoning` items of the reply, which eve keeps
//! in the session log with the rest of the reply's items and sends back on every later
//! step and turn: without them the model starts its chain of thought afresh at each
//! tool result.

use serde::Deserialize;
use serde_json::{Value, json};

use super::event::{DecodeError, FinishReason, MAX_REPLY_PARTS, StreamEvent, Usage};
use super::request::{EMPTY_REPLY, Message, ModelRequest, ToolCall, ToolKind, ToolResult};

/// The item types of a Responses reply eve keeps and sends back; a reply kept in any
/// other provider's format is rebuilt from its text and tool calls instead.
const ITEM_TYPES: &[&str] = &["reasoning", "message", "function_call", "web_search_call"];

/// Turns the SSE events of one streamed Responses call into [`StreamEvent`]s.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    /// Function calls in the order they started; the position is the dense index.
    calls: Vec<Call>,
    /// The reply's output items as `response.output_item.done` gave them, in order.
    items: Vec<Value>,
    /// The reasoning item and summary part the last summary delta belonged to, so that
    /// a new part begins on a new paragraph.
    summary_part: Option<(u64, u64)>,
    /// `response.completed` or `.incomplete` came.
    finished: bool,
}

#[derive(Debug)]
struct Call {
    /// The output item's position in the reply, which the argument deltas name.
    output_index: u64,
    /// Whether any argument piece was passed on (a server that sends the arguments only
    /// in `.done` still gets them through).
    streamed: bool,
    closed: bool,
}

/// The fields of every stream event eve reads; each event has a few of them.
#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(default)]
    summary_index: Option<u64>,
    #[serde(default)]
    delta: Option<Value>,
    #[serde(default)]
    arguments: Option<String>,
    #[serde(default)]
    item: Option<Value>,
    #[serde(default)]
    response: Option<WireResponse>,
    /// The `error` event: `code` and `message` at the top, or (some servers) nested.
    #[serde(default)]
    code: Option<Value>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    output: Option<Vec<Value>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    incomplete_details: Option<IncompleteDetails>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct IncompleteDetails {
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    code: Option<Value>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    message: Option<String>,
}

/// The Responses API's token counts: `input_tokens` already includes the cached ones,
/// `output_tokens` the reasoning ones, as [`Usage`] counts them.
#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<InputDetails>,
    #[serde(default)]
    output_tokens_details: Option<OutputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct OutputDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(self) -> Usage {
        Usage {
            input_tokens: self.input_tokens.unwrap_or(0),
            output_tokens: self.output_tokens.unwrap_or(0),
            cache_read_tokens: self
                .input_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            cache_write_tokens: 0,
            reasoning_tokens: self
                .output_tokens_details
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

impl WireError {
    fn into_decode_error(self) -> DecodeError {
        error_of(self.code, self.kind, self.message)
    }
}

/// A stream error as a [`DecodeError`]: the `code` names it (`rate_limit_exceeded`,
/// `server_error`, `context_length_exceeded`), else the `type`.
fn error_of(code: Option<Value>, kind: Option<String>, message: Option<String>) -> DecodeError {
    let kind = match (code, kind) {
        (Some(Value::String(code)), _) if !code.is_empty() => code,
        (Some(Value::Number(code)), _) => code.to_string(),
        (_, Some(kind)) if !kind.is_empty() => kind,
        _ => "error".to_string(),
    };
    DecodeError::Provider {
        kind,
        message: message.unwrap_or_default(),
    }
}

impl ResponsesDecoder {
    /// A decoder for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one SSE event: `event` is its `event:` name, `data` its `data:` payload
    /// (whose `type` names it too, and wins: some compatible servers send no `event:`).
    pub fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        let data = data.trim();
        if data.is_empty() || data == "[DONE]" {
            return Ok(Vec::new());
        }
        let parsed: Event = serde_json::from_str(data)
            .map_err(|source| DecodeError::invalid_json(event, &source))?;
        let kind = parsed.kind.clone().unwrap_or_else(|| event.to_string());
        let mut out = Vec::new();
        if self.finished {
            return Ok(out);
        }
        match kind.as_str() {
            "response.output_item.added" => {
                if let Some(item) = &parsed.item {
                    self.on_item_added(parsed.output_index, item, &mut out)?;
                }
            }
            "response.function_call_arguments.delta" => {
                let delta = text_of(&parsed.delta);
                if let Some(index) = self.call_at(parsed.output_index)
                    && !delta.is_empty()
                {
                    self.calls[index].streamed = true;
                    out.push(StreamEvent::ToolCallArgsDelta { index, delta });
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(index) = self.call_at(parsed.output_index)
                    && !self.calls[index].streamed
                    && let Some(arguments) = parsed.arguments.filter(|a| !a.is_empty())
                {
                    self.calls[index].streamed = true;
                    out.push(StreamEvent::ToolCallArgsDelta {
                        index,
                        delta: arguments,
                    });
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                push(&mut out, StreamEvent::TextDelta, text_of(&parsed.delta));
            }
            "response.reasoning_summary_text.delta" => {
                let part = (
                    parsed.output_index.unwrap_or(0),
                    parsed.summary_index.unwrap_or(0),
                );
                let mut text = text_of(&parsed.delta);
                if self.summary_part.is_some_and(|last| last != part) && !text.is_empty() {
                    text.insert_str(0, "\n\n");
                }
                if !text.is_empty() {
                    self.summary_part = Some(part);
                }
                push(&mut out, StreamEvent::ReasoningDelta, text);
            }
            // The raw reasoning text open-weight models send (gpt-oss on vLLM, Ollama).
            "response.reasoning_text.delta" => {
                push(
                    &mut out,
                    StreamEvent::ReasoningDelta,
                    text_of(&parsed.delta),
                );
            }
            "response.output_item.done" => {
                if let Some(item) = parsed.item {
                    self.on_item_done(parsed.output_index, item, &mut out)?;
                }
            }
            "response.completed" | "response.incomplete" => {
                self.on_finished(parsed.response, &mut out)?;
            }
            "response.failed" => {
                let error = parsed.response.and_then(|r| r.error);
                return Err(match error {
                    Some(error) => error.into_decode_error(),
                    None => DecodeError::Provider {
                        kind: "response.failed".into(),
                        message: "the response failed".into(),
                    },
                });
            }
            "error" => {
                return Err(match parsed.error {
                    Some(error) if parsed.message.is_none() => error.into_decode_error(),
                    _ => error_of(parsed.code, None, parsed.message),
                });
            }
            _ => {}
        }
        Ok(out)
    }

    /// Checks that the stream ended with `response.completed` or `.incomplete`.
    pub fn finish(self) -> Result<Vec<StreamEvent>, DecodeError> {
        if self.finished {
            Ok(Vec::new())
        } else {
            Err(DecodeError::Truncated {
                expected: "response.completed",
            })
        }
    }

    /// The dense index of the function call at this output position.
    fn call_at(&self, output_index: Option<u64>) -> Option<usize> {
        let output_index = output_index?;
        self.calls
            .iter()
            .rposition(|call| call.output_index == output_index)
    }

    fn on_item_added(
        &mut self,
        output_index: Option<u64>,
        item: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        if item["type"] != "function_call" {
            return Ok(());
        }
        let output_index = output_index.unwrap_or(self.calls.len() as u64);
        if self.call_at(Some(output_index)).is_some() {
            return Ok(());
        }
        self.start_call(output_index, item, out).map(|_| ())
    }

    /// A function call begins: its id and name, and any arguments the item holds already.
    fn start_call(
        &mut self,
        output_index: u64,
        item: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<usize, DecodeError> {
        if self.calls.len() >= MAX_REPLY_PARTS {
            return Err(DecodeError::TooMany {
                what: "tool calls",
                limit: MAX_REPLY_PARTS,
            });
        }
        let index = self.calls.len();
        out.push(StreamEvent::ToolCallStart {
            index,
            // A missing `call_id` stays empty: the harness gives such calls ids of its own.
            id: item["call_id"].as_str().unwrap_or_default().to_string(),
            name: item["name"].as_str().unwrap_or_default().to_string(),
        });
        let arguments = item["arguments"].as_str().unwrap_or_default();
        let streamed = !arguments.is_empty();
        if streamed {
            out.push(StreamEvent::ToolCallArgsDelta {
                index,
                delta: arguments.to_string(),
            });
        }
        self.calls.push(Call {
            output_index,
            streamed,
            closed: false,
        });
        Ok(index)
    }

    fn on_item_done(
        &mut self,
        output_index: Option<u64>,
        item: Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        if self.items.len() >= MAX_REPLY_PARTS {
            return Err(DecodeError::TooMany {
                what: "output items",
                limit: MAX_REPLY_PARTS,
            });
        }
        match item["type"].as_str() {
            Some("function_call") => {
                let output_index = output_index.unwrap_or(self.items.len() as u64);
                let index = match self.call_at(Some(output_index)) {
                    Some(index) => index,
                    // A server that sends the call only whole, when it is done.
                    None => self.start_call(output_index, &item, out)?,
                };
                let call = &mut self.calls[index];
                if !call.streamed
                    && let Some(arguments) = item["arguments"].as_str().filter(|a| !a.is_empty())
                {
                    call.streamed = true;
                    out.push(StreamEvent::ToolCallArgsDelta {
                        index,
                        delta: arguments.to_string(),
                    });
                }
                if !call.closed {
                    call.closed = true;
                    out.push(StreamEvent::ToolCallEnd { index });
                }
            }
            Some("web_search_call") => {
                let id = item["id"].as_str().unwrap_or_default().to_string();
                let action = &item["action"];
                let query = action["query"].as_str().unwrap_or_default();
                out.push(StreamEvent::ServerToolCall {
                    id: id.clone(),
                    name: "web_search".into(),
                    input: if query.is_empty() {
                        action.clone()
                    } else {
                        json!({"query": query})
                    },
                });
                let failed = item["status"] == "failed";
                out.push(StreamEvent::ServerToolResult {
                    call_id: id,
                    output: if failed {
                        "the search failed".into()
                    } else {
                        web_search_summary(action)
                    },
                    is_error: failed,
                });
            }
            _ => {}
        }
        self.items.push(item);
        Ok(())
    }

    fn on_finished(
        &mut self,
        response: Option<WireResponse>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        self.finished = true;
        let (usage, incomplete, output) = match response {
            Some(r) => (r.usage, r.incomplete_details, r.output),
            None => (None, None, None),
        };
        // A server that streams no items still lists them in the final response.
        if self.items.is_empty()
            && let Some(output) = output
        {
            for (at, item) in output.into_iter().enumerate() {
                self.on_item_done(Some(at as u64), item, out)?;
            }
        }
        for (index, call) in self.calls.iter_mut().enumerate() {
            if !call.closed {
                call.closed = true;
                out.push(StreamEvent::ToolCallEnd { index });
            }
        }
        if let Some(usage) = usage {
            out.push(StreamEvent::Usage(usage.usage()));
        }
        let reason = match incomplete.and_then(|d| d.reason) {
            Some(reason) if reason == "max_output_tokens" => FinishReason::MaxTokens,
            Some(reason) => FinishReason::Other(reason),
            None if self.calls.is_empty() => FinishReason::Stop,
            None => FinishReason::ToolUse,
        };
        out.push(StreamEvent::Finish(reason));
        // Reasoning (and a hosted search) must go back as it came, so the reply is kept
        // in the API's own items; a reply of text and calls alone is rebuilt from them.
        let keep = self
            .items
            .iter()
            .any(|item| matches!(item["type"].as_str(), Some("reasoning" | "web_search_call")));
        if keep {
            out.push(StreamEvent::OpaqueReply(std::mem::take(&mut self.items)));
        }
        Ok(())
    }
}

/// What a hosted search found, in a line for people.
fn web_search_summary(action: &Value) -> String {
    let query = action["query"].as_str().unwrap_or_default();
    let sources = action["sources"].as_array().map_or(0, Vec::len);
    match (query.is_empty(), sources) {
        (true, _) => "searched the web".into(),
        (false, 0) => format!("searched the web for `{query}`"),
        (false, n) => format!("searched the web for `{query}`: {n} sources"),
    }
}

fn text_of(delta: &Option<Value>) -> String {
    match delta {
        Some(Value::String(text)) => text.clone(),
        _ => String::new(),
    }
}

fn push(out: &mut Vec<StreamEvent>, make: fn(String) -> StreamEvent, text: String) {
    if !text.is_empty() {
        out.push(make(text));
    }
}

/// Whether a model of this id reasons even when nothing asks it to (OpenAI's o-series
/// and GPT-5 family), so that its encrypted reasoning is asked for and sent back.
pub fn reasons_by_default(model: &str) -> bool {
    let id = model
        .rsplit('/')
        .next()
        .unwrap_or(model)
        .to_ascii_lowercase();
    let reasoning = ["o1", "o3", "o4", "gpt-5", "codex"]
        .iter()
        .any(|p| id.starts_with(p));
    reasoning && !id.starts_with("gpt-5-chat")
}

/// The JSON body of a streamed Responses call. `store: false` keeps nothing at OpenAI;
/// a reasoning model's encrypted reasoning comes back in the reply and goes back in
/// every later request.
pub fn request_body(request: &ModelRequest) -> Value {
    let reasoning = request.reasoning.is_some() || reasons_by_default(&request.model);
    let mut input = Vec::new();
    for message in &request.messages {
        match message {
            Message::User { text } => input.push(json!({
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": text}],
            })),
            Message::Assistant {
                provider_blocks: Some(items),
                ..
            } if is_own(items) => {
                input.extend(items.iter().filter_map(|item| input_item(item, reasoning)));
            }
            Message::Assistant {
                text, tool_calls, ..
            } => assistant_items(text, tool_calls, &mut input),
            Message::Tool { results } => {
                input.extend(results.iter().map(call_output));
            }
        }
    }
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
        "max_output_tokens": request.max_output_tokens,
    });
    if !request.system.is_empty() {
        body["instructions"] = json!(request.system);
    }
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| match t.kind {
                ToolKind::Function => json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.input_schema,
                    "strict": false,
                }),
                ToolKind::HostedWebSearch => json!({"type": "web_search"}),
            })
            .collect();
        body["parallel_tool_calls"] = json!(true);
    }
    if reasoning {
        body["include"] = json!(["reasoning.encrypted_content"]);
    }
    if let Some(r) = &request.reasoning {
        body["reasoning"] = json!({"effort": r.effort.name(), "summary": "auto"});
    }
    if let Some(key) = &request.cache_key {
        body["prompt_cache_key"] = json!(key);
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    body
}

/// Whether a kept reply is in this API's items (not another provider's blocks).
fn is_own(items: &[Value]) -> bool {
    !items.is_empty()
        && items.iter().all(|item| {
            item["type"]
                .as_str()
                .is_some_and(|t| ITEM_TYPES.contains(&t))
        })
}

/// A kept output item as an input item: the fields the API takes back, without the
/// item's `id` (with `store: false` nothing can be found by id). Reasoning goes back
/// only to a model that reasons.
fn input_item(item: &Value, reasoning: bool) -> Option<Value> {
    let pick = |keys: &[&str]| {
        let mut out = serde_json::Map::new();
        for key in keys {
            if let Some(value) = item.get(*key).filter(|v| !v.is_null()) {
                out.insert(key.to_string(), value.clone());
            }
        }
        Value::Object(out)
    };
    match item["type"].as_str()? {
        "reasoning" if reasoning => Some(pick(&["type", "summary", "encrypted_content"])),
        "reasoning" => None,
        "message" => {
            let content: Vec<Value> = item["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|part| match part["type"].as_str()? {
                    "output_text" => Some(json!({"type": "output_text", "text": part["text"]})),
                    "refusal" => Some(json!({"type": "refusal", "refusal": part["refusal"]})),
                    _ => None,
                })
                .collect();
            (!content.is_empty())
                .then(|| json!({"type": "message", "role": "assistant", "content": content}))
        }
        "function_call" => Some(pick(&["type", "call_id", "name", "arguments"])),
        "web_search_call" => Some(pick(&["type", "status", "action"])),
        _ => None,
    }
}

/// The items of an assistant message eve built: its text, then its calls; a
/// placeholder text when it has neither.
fn assistant_items(text: &str, calls: &[ToolCall], input: &mut Vec<Value>) {
    if !text.is_empty() || calls.is_empty() {
        let text = if text.is_empty() { EMPTY_REPLY } else { text };
        input.push(json!({
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text}],
        }));
    }
    for call in calls {
        let arguments = match &call.input {
            Value::Object(_) => call.input.to_string(),
            _ => "{}".to_string(),
        };
        input.push(json!({
            "type": "function_call",
            "call_id": call.id,
            "name": call.name,
            "arguments": arguments,
        }));
    }
}

/// A tool's result as a `function_call_output`: its text, with its images as
/// `input_image` parts.
fn call_output(result: &ToolResult) -> Value {
    let text = if result.is_error {
        format!("Error: {}", result.content)
    } else if result.content.is_empty() {
        "(no output)".to_string()
    } else {
        result.content.clone()
    };
    let output = if result.images.is_empty() {
        json!(text)
    } else {
        let mut parts = vec![json!({"type": "input_text", "text": text})];
        parts.extend(result.images.iter().map(|image| {
            json!({
                "type": "input_image",
                "image_url": format!("data:{};base64,{}", image.media_type, image.data),
            })
        }));
        Value::Array(parts)
    };
    json!({"type": "function_call_output", "call_id": result.call_id, "output": output})
}

#[cfg(test)]
#[path = "responses_tests.rs"]
mod tests;
