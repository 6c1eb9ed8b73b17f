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
///
/// A call is known by its item's `id` (and, for servers that send none, its place in
/// the output): each starts once, gets its arguments once — streamed, or whole from an
/// item or a `.done` event, never both — and ends once.
#[derive(Debug, Default)]
pub struct ResponsesDecoder {
    /// Function calls in the order they started; the position is the dense index.
    calls: Vec<Call>,
    /// The reply's output items as `response.output_item.done` gave them, in order,
    /// each once.
    items: Vec<Value>,
    /// Output items announced so far: the place of an item that names none.
    added: u64,
    /// The ids of the items done so far.
    seen: std::collections::HashSet<String>,
    /// Text streamed for the reply: a server that sends it only in the final response
    /// still gets it shown.
    streamed_text: bool,
    /// The reasoning item and summary part the last summary delta belonged to, so that
    /// a new part begins on a new paragraph.
    summary_part: Option<(u64, u64)>,
    /// `response.completed` or `.incomplete` came.
    finished: bool,
}

#[derive(Debug)]
struct Call {
    /// The item's id, when the server gave one.
    item_id: Option<String>,
    /// The output item's position in the reply.
    output_index: u64,
    /// The arguments were passed on whole (from an item or `.done`): later pieces are
    /// not added to them.
    whole: bool,
    /// Some argument piece was passed on: `.done`'s whole arguments are not added.
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
    item_id: Option<String>,
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
                if let Some(index) = self.call_of(parsed.item_id.as_deref(), parsed.output_index)
                    && !delta.is_empty()
                {
                    let call = &mut self.calls[index];
                    if !call.closed && !call.whole {
                        call.streamed = true;
                        out.push(StreamEvent::ToolCallArgsDelta { index, delta });
                    }
                }
            }
            "response.function_call_arguments.done" => {
                if let Some(index) = self.call_of(parsed.item_id.as_deref(), parsed.output_index)
                    && let Some(arguments) = parsed.arguments
                {
                    self.whole_arguments(index, &arguments, &mut out);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let text = text_of(&parsed.delta);
                self.streamed_text |= !text.is_empty();
                push(&mut out, StreamEvent::TextDelta, text);
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

    /// The dense index of the call an event names: by its item id when it gives one,
    /// else by its place in the output.
    fn call_of(&self, item_id: Option<&str>, output_index: Option<u64>) -> Option<usize> {
        match item_id.filter(|id| !id.is_empty()) {
            Some(id) => self
                .calls
                .iter()
                .position(|call| call.item_id.as_deref() == Some(id)),
            None => {
                let output_index = output_index?;
                self.calls
                    .iter()
                    .rposition(|call| call.output_index == output_index)
            }
        }
    }

    /// The call of an output item, by the item's id, else its place.
    fn call_of_item(&self, item: &Value, output_index: u64) -> Option<usize> {
        self.call_of(item["id"].as_str(), Some(output_index))
    }

    /// The call's whole arguments, passed on unless pieces of them were.
    fn whole_arguments(&mut self, index: usize, arguments: &str, out: &mut Vec<StreamEvent>) {
        let call = &mut self.calls[index];
        if call.streamed || call.whole || call.closed {
            return;
        }
        call.whole = true;
        if !arguments.is_empty() {
            out.push(StreamEvent::ToolCallArgsDelta {
                index,
                delta: arguments.to_string(),
            });
        }
    }

    fn on_item_added(
        &mut self,
        output_index: Option<u64>,
        item: &Value,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        let output_index = output_index.unwrap_or(self.added);
        self.added = self.added.saturating_add(1);
        if item["type"] != "function_call" || self.call_of_item(item, output_index).is_some() {
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
        self.calls.push(Call {
            item_id: item["id"]
                .as_str()
                .filter(|id| !id.is_empty())
                .map(String::from),
            output_index,
            whole: false,
            streamed: false,
            closed: false,
        });
        if let Some(arguments) = item["arguments"].as_str().filter(|a| !a.is_empty()) {
            self.whole_arguments(index, arguments, out);
        }
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
        // The same item done twice is kept (and run) once.
        if let Some(id) = item["id"].as_str().filter(|id| !id.is_empty())
            && !self.seen.insert(id.to_string())
        {
            return Ok(());
        }
        let output_index = output_index.unwrap_or(self.items.len() as u64);
        match item["type"].as_str() {
            Some("function_call") => {
                let index = match self.call_of_item(&item, output_index) {
                    Some(index) => index,
                    // A server that sends the call only whole, when it is done.
                    None => self.start_call(output_index, &item, out)?,
                };
                if let Some(arguments) = item["arguments"].as_str() {
                    self.whole_arguments(index, arguments, out);
                }
                let call = &mut self.calls[index];
                if !call.closed {
                    call.closed = true;
                    out.push(StreamEvent::ToolCallEnd { index });
                }
            }
            Some("message") if !self.streamed_text => {
                // A server that streams no text still gives it in the done item.
                let text = message_text(&item);
                self.streamed_text |= !text.is_empty();
                push(out, StreamEvent::TextDelta, text);
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
        if let Some(output) = output.filter(|o| !o.is_empty()) {
            self.take_final_output(output, out)?;
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

impl ResponsesDecoder {
    /// The final response's list of items, which is the reply as the API holds it:
    /// it has items a server never sent as done (a call cut off by the output limit).
    /// When every item has an id it replaces the list streamed (items not seen yet go
    /// through [`Self::on_item_done`], once); without ids, it is used only by a server
    /// that streamed no items at all.
    fn take_final_output(
        &mut self,
        output: Vec<Value>,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        let named = output
            .iter()
            .all(|item| item["id"].as_str().is_some_and(|id| !id.is_empty()));
        if !named && !self.items.is_empty() {
            return Ok(());
        }
        self.items.clear();
        for (at, item) in output.into_iter().enumerate().take(MAX_REPLY_PARTS) {
            let seen = item["id"].as_str().is_some_and(|id| self.seen.contains(id));
            if seen {
                self.items.push(item);
            } else {
                self.on_item_done(Some(at as u64), item, out)?;
            }
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

/// The text of a `message` item: its `output_text` (and `refusal`) parts.
fn message_text(item: &Value) -> String {
    item["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str().or(part["refusal"].as_str()))
        .collect()
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

/// The key under which eve marks the reasoning items it keeps with where they came
/// from ([`origin`]): encrypted reasoning goes back only there.
pub const ORIGIN_KEY: &str = "eve_origin";

/// Where a reply comes from, as the reasoning it keeps is marked: the provider's name,
/// its endpoint and the model, digested (the endpoint may hold credentials). Another
/// provider, endpoint or model could not read the encrypted reasoning, and the API
/// would refuse every later request that carries it.
pub fn origin(provider: &str, endpoint: &str, model: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(format!("{provider}\n{endpoint}\n{model}").as_bytes());
    crate::text::hex(&digest[..8])
}

/// Marks the reasoning items of a kept reply with their `origin`.
pub fn mark_origin(items: &mut [Value], origin: &str) {
    for item in items.iter_mut().filter(|i| i["type"] == "reasoning") {
        if let Some(fields) = item.as_object_mut() {
            fields.insert(ORIGIN_KEY.into(), json!(origin));
        }
    }
}

/// The JSON body of a streamed Responses call to the endpoint of `origin` ([`origin`]).
/// `store: false` keeps nothing at OpenAI; a reasoning model's encrypted reasoning
/// comes back in the reply and goes back in every later request to the same origin.
pub fn request_body(request: &ModelRequest, origin: &str) -> Value {
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
                text,
                tool_calls,
                ..
            } if is_own(items) => {
                let origin = reasoning.then_some(origin);
                input.extend(kept_items(items, text, tool_calls, origin));
            }
            Message::Assistant {
                text, tool_calls, ..
            } => assistant_items(text, tool_calls, &mut input),
            Message::Tool { results } => {
                input.extend(results.iter().map(call_output));
            }
        }
    }
    // `max_output_tokens` counts the reasoning too: raised by the effort's budget, the
    // reply keeps its room, as with Anthropic's thinking.
    let max_output = match &request.reasoning {
        Some(r) => request.max_output_tokens.saturating_add(r.budget()),
        None => request.max_output_tokens,
    };
    let mut body = json!({
        "model": request.model,
        "input": input,
        "stream": true,
        "store": false,
        "max_output_tokens": max_output,
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
    // Reasoning models refuse a temperature.
    if let Some(temperature) = request.temperature.filter(|_| !reasoning) {
        body["temperature"] = json!(temperature);
    }
    body
}

/// The items of a kept reply sent back, with eve's own record of what the model said
/// and what eve ran: reasoning from `origin` (`None`: the request does not reason) with
/// its encrypted content, and hosted searches, as they came; the reply's text where its
/// message was; the n-th call item as eve's n-th call (its id, name and arguments, the
/// ones that ran and that the results answer). A reasoning item must be followed by
/// what it led to, so one left with nothing after it is dropped.
fn kept_items(items: &[Value], text: &str, calls: &[ToolCall], origin: Option<&str>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut calls_left = calls.iter();
    let mut text_left = !text.is_empty();
    for item in items {
        match item["type"].as_str() {
            Some("reasoning") => {
                let encrypted = item["encrypted_content"].as_str().unwrap_or_default();
                if origin.is_some_and(|o| item[ORIGIN_KEY] == o) && !encrypted.is_empty() {
                    out.push(json!({
                        "type": "reasoning",
                        "summary": item.get("summary").cloned().unwrap_or_else(|| json!([])),
                        "encrypted_content": encrypted,
                    }));
                }
            }
            Some("web_search_call") => {
                let mut call = json!({"type": "web_search_call", "status": item["status"]});
                if !item["action"].is_null() {
                    call["action"] = item["action"].clone();
                }
                out.push(call);
            }
            Some("message") if text_left => {
                text_left = false;
                assistant_items(text, &[], &mut out);
            }
            Some("function_call") => {
                if let Some(call) = calls_left.next() {
                    out.push(function_call(call));
                }
            }
            _ => {}
        }
    }
    if text_left {
        assistant_items(text, &[], &mut out);
    }
    out.extend(calls_left.map(function_call));
    // A reasoning item with nothing after it (the last, or before another reasoning item).
    let mut keep = vec![true; out.len()];
    for at in 0..out.len() {
        let followed = out
            .get(at + 1)
            .is_some_and(|next| next["type"] != "reasoning");
        keep[at] = out[at]["type"] != "reasoning" || followed;
    }
    let mut keep = keep.into_iter();
    out.retain(|_| keep.next().unwrap_or(false));
    if !out
        .iter()
        .any(|i| i["type"] == "message" || i["type"] == "function_call")
    {
        assistant_items("", &[], &mut out);
    }
    out
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
    input.extend(calls.iter().map(function_call));
}

/// A call eve made, as a `function_call` item.
fn function_call(call: &ToolCall) -> Value {
    let arguments = match &call.input {
        Value::Object(_) => call.input.to_string(),
        _ => "{}".to_string(),
    };
    json!({
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": arguments,
    })
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
