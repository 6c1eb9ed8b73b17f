//! Decoding of the OpenAI Chat Completions stream (and compatible servers) into provider-neutral events.

use serde::Deserialize;
use serde_json::{Value, json};

use super::event::{DecodeError, FinishReason, MAX_REPLY_PARTS, StreamEvent, Usage};
use super::request::{EMPTY_REPLY, Message, ModelRequest};

/// Turns the SSE `data:` payloads of one streamed Chat Completions call into [`StreamEvent`]s.
#[derive(Debug, Default)]
pub struct OpenAiDecoder {
    /// Tool calls in the order they started; the position is the dense index.
    calls: Vec<Call>,
    /// A `finish_reason` came: every call is closed and only usage may follow.
    finished: bool,
    /// `[DONE]` came.
    done: bool,
}

#[derive(Debug)]
struct Call {
    /// The provider's `index`, when it sent one.
    key: Option<u64>,
    id: String,
}

impl OpenAiDecoder {
    /// A decoder for a new stream.
    pub fn new() -> Self {
        Self::default()
    }

    /// Decodes one `data:` payload; `[DONE]` marks the end of the stream.
    pub fn on_data(&mut self, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(Vec::new());
        }
        if data.is_empty() {
            return Ok(Vec::new());
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|source| DecodeError::invalid_json("chat.completion.chunk", &source))?;
        if let Some(error) = chunk.error {
            return Err(error.into_decode_error());
        }
        let mut out = Vec::new();
        // Only the first choice is eve's: it never asks for `n > 1`.
        let choice = chunk
            .choices
            .unwrap_or_default()
            .into_iter()
            .find(|choice| choice.index == 0);
        if let Some(choice) = choice.filter(|_| !self.finished) {
            if let Some(delta) = choice.delta {
                self.on_delta(delta, &mut out)?;
            }
            if let Some(reason) = choice.finish_reason {
                out.extend(self.close_calls());
                self.finished = true;
                out.push(StreamEvent::Finish(finish_reason(reason)));
            }
        }
        if let Some(usage) = chunk.usage {
            out.push(StreamEvent::Usage(usage.usage()));
        }
        Ok(out)
    }

    /// Ends the stream: closes tool calls left open, or fails if it was cut short.
    pub fn finish(self) -> Result<Vec<StreamEvent>, DecodeError> {
        if !self.done && !self.finished {
            return Err(DecodeError::Truncated { expected: "[DONE]" });
        }
        Ok(self.close_calls())
    }

    fn on_delta(&mut self, delta: Delta, out: &mut Vec<StreamEvent>) -> Result<(), DecodeError> {
        // DeepSeek and vLLM say `reasoning_content`, OpenRouter and Ollama `reasoning`.
        let reasoning = [delta.reasoning_content, delta.reasoning]
            .into_iter()
            .flatten()
            .find(|text| !text.is_empty());
        if let Some(text) = reasoning {
            out.push(StreamEvent::ReasoningDelta(text));
        }
        if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
            out.push(StreamEvent::TextDelta(text));
        }
        for fragment in delta.tool_calls.unwrap_or_default() {
            self.on_tool_call(fragment, out)?;
        }
        Ok(())
    }

    fn on_tool_call(
        &mut self,
        fragment: ToolCallFragment,
        out: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        let id = fragment.id.filter(|id| !id.is_empty());
        let (name, arguments) = match fragment.function {
            Some(function) => (function.name.filter(|n| !n.is_empty()), function.arguments),
            None => (None, None),
        };
        let existing = match (fragment.index, &id) {
            // A new id at a used index is a new call: Ollama sends every call at `index: 0`.
            (Some(key), _) => self
                .calls
                .iter()
                .rposition(|call| call.key == Some(key))
                .filter(|&at| id.as_ref().is_none_or(|id| &self.calls[at].id == id)),
            (None, Some(id)) => self.calls.iter().rposition(|call| &call.id == id),
            // Without index, id or name, a fragment can only continue the latest call.
            (None, None) if name.is_none() => self.calls.len().checked_sub(1),
            (None, None) => None,
        };
        let index = match existing {
            Some(index) => index,
            None => {
                // Bounded, so that finding a call's place above stays cheap.
                if self.calls.len() >= MAX_REPLY_PARTS {
                    return Err(DecodeError::TooMany {
                        what: "tool calls",
                        limit: MAX_REPLY_PARTS,
                    });
                }
                // The dense index is the call's position, so no two calls ever share one.
                // A missing id stays empty: the harness gives such calls ids of its own.
                let index = self.calls.len();
                let id = id.unwrap_or_default();
                out.push(StreamEvent::ToolCallStart {
                    index,
                    id: id.clone(),
                    name: name.unwrap_or_default(),
                });
                self.calls.push(Call {
                    key: fragment.index,
                    id,
                });
                index
            }
        };
        let delta = match arguments {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(text)) => text,
            // A few servers send the arguments as a JSON object rather than a string.
            Some(other) => other.to_string(),
        };
        if !delta.is_empty() {
            out.push(StreamEvent::ToolCallArgsDelta { index, delta });
        }
        Ok(())
    }

    fn close_calls(&self) -> Vec<StreamEvent> {
        if self.finished {
            return Vec::new();
        }
        (0..self.calls.len())
            .map(|index| StreamEvent::ToolCallEnd { index })
            .collect()
    }
}

fn finish_reason(reason: String) -> FinishReason {
    match reason.as_str() {
        "stop" => FinishReason::Stop,
        "tool_calls" | "function_call" => FinishReason::ToolUse,
        "length" => FinishReason::MaxTokens,
        _ => FinishReason::Other(reason),
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<Choice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<WireError>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    index: u64,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallFragment>>,
}

#[derive(Deserialize)]
struct ToolCallFragment {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionFragment>,
}

#[derive(Deserialize)]
struct FunctionFragment {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Value>,
}

/// OpenAI's token counts: `prompt_tokens` already includes the cached tokens.
#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    /// `reasoning_tokens`, the part of `completion_tokens` spent reasoning.
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
    /// DeepSeek's name for the cached part, sent alongside or instead of `prompt_tokens_details`.
    #[serde(default)]
    prompt_cache_hit_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(self) -> Usage {
        let cached = self
            .prompt_tokens_details
            .and_then(|details| details.cached_tokens)
            .or(self.prompt_cache_hit_tokens);
        Usage {
            input_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.completion_tokens.unwrap_or(0),
            cache_read_tokens: cached.unwrap_or(0),
            cache_write_tokens: 0,
            reasoning_tokens: self
                .completion_tokens_details
                .and_then(|details| details.reasoning_tokens)
                .unwrap_or(0),
        }
    }
}

#[derive(Deserialize)]
struct WireError {
    #[serde(default)]
    message: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    code: Option<Value>,
}

impl WireError {
    fn into_decode_error(self) -> DecodeError {
        // OpenAI names the error in `type`; OpenRouter and others only give a `code`, often the HTTP status.
        let kind = match (self.kind, self.code) {
            (Some(kind), _) if !kind.is_empty() => kind,
            (_, Some(Value::String(code))) => code,
            (_, Some(Value::Number(code))) => code.to_string(),
            _ => "error".to_string(),
        };
        DecodeError::Provider {
            kind,
            message: self.message.unwrap_or_default(),
        }
    }
}

/// Which spelling of the output limit a Chat Completions server understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// OpenAI itself: `max_completion_tokens` (reasoning models refuse `max_tokens`).
    OpenAi,
    /// Compatible servers (Ollama, vLLM, llama.cpp, LM Studio, …): `max_tokens`, which all of them read.
    Compatible,
}

impl Flavour {
    /// OpenAI's own host speaks [`Flavour::OpenAi`]; every other server is compatible.
    pub fn of_base_url(base_url: &str) -> Flavour {
        let rest = base_url
            .strip_prefix("https://")
            .unwrap_or_default()
            .to_ascii_lowercase();
        let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if host == "api.openai.com" || host == "api.openai.com:443" {
            Flavour::OpenAi
        } else {
            Flavour::Compatible
        }
    }
}

/// The JSON body of a streamed Chat Completions call, asking for usage in the last chunk.
pub fn request_body(request: &ModelRequest, flavour: Flavour) -> Value {
    let mut messages = Vec::new();
    if !request.system.is_empty() {
        messages.push(json!({"role": "system", "content": request.system}));
    }
    for message in &request.messages {
        match message {
            Message::User { text } => messages.push(json!({"role": "user", "content": text})),
            Message::Assistant {
                text, tool_calls, ..
            } => {
                let mut m = json!({"role": "assistant"});
                m["content"] = if text.is_empty() && !tool_calls.is_empty() {
                    Value::Null
                } else if text.is_empty() {
                    json!(EMPTY_REPLY)
                } else {
                    json!(text)
                };
                if !tool_calls.is_empty() {
                    m["tool_calls"] = tool_calls
                        .iter()
                        .map(|call| {
                            let arguments = match &call.input {
                                Value::Object(_) => call.input.to_string(),
                                _ => "{}".to_string(),
                            };
                            json!({
                                "id": call.id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": arguments},
                            })
                        })
                        .collect();
                }
                messages.push(m);
            }
            Message::Tool { results } => {
                for r in results {
                    let mut content = if r.is_error {
                        format!("Error: {}", r.content)
                    } else if r.content.is_empty() {
                        "(no output)".to_string()
                    } else {
                        r.content.clone()
                    };
                    // Chat Completions takes no images in tool messages: say so.
                    if !r.images.is_empty() {
                        content.push_str(&format!(
                            "\n({} image(s) not shown: this API takes no images in tool results)",
                            r.images.len()
                        ));
                    }
                    messages.push(
                        json!({"role": "tool", "tool_call_id": r.call_id, "content": content}),
                    );
                }
            }
        }
    }
    let mut body = json!({
        "model": request.model,
        "stream": true,
        "stream_options": {"include_usage": true},
        "messages": messages,
    });
    let limit = match flavour {
        Flavour::OpenAi => "max_completion_tokens",
        Flavour::Compatible => "max_tokens",
    };
    body[limit] = json!(request.max_output_tokens);
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
                })
            })
            .collect();
    }
    if let Some(temperature) = request.temperature {
        body["temperature"] = json!(temperature);
    }
    // `reasoning_effort`, as OpenAI's reasoning models and the servers that follow them
    // (vLLM, OpenRouter) take it; their reasoning text is shown, never sent back.
    if let Some(reasoning) = &request.reasoning {
        body["reasoning_effort"] = json!(reasoning.effort.name());
    }
    body
}

/// Ollama's stream of two parallel calls: each arrives whole, both at `index: 0`, told apart only by id.
#[cfg(test)]
pub(crate) const OLLAMA_SHARED_INDEX: &str = r#"data: {"id":"chatcmpl-529","object":"chat.completion.chunk","created":1736600000,"model":"llama3.1:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_k2x8n1qa","index":0,"type":"function","function":{"name":"deploy","arguments":"{\"target\":\"staging\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-529","object":"chat.completion.chunk","created":1736600000,"model":"llama3.1:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_7vz3m0pd","index":0,"type":"function","function":{"name":"deploy","arguments":"{\"target\":\"production\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-529","object":"chat.completion.chunk","created":1736600000,"model":"llama3.1:8b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"tool_calls"}]}

data: {"id":"chatcmpl-529","object":"chat.completion.chunk","created":1736600000,"model":"llama3.1:8b","system_fingerprint":"fp_ollama","choices":[],"usage":{"prompt_tokens":210,"completion_tokens":38,"total_tokens":248}}

data: [DONE]

"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::event::tool_arguments;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// Decodes an SSE body of `data:` lines, then `finish`; the error, if any, is the first one met.
    fn decode(body: &str) -> (Vec<StreamEvent>, Result<(), DecodeError>) {
        let mut decoder = OpenAiDecoder::new();
        let mut events = Vec::new();
        for line in body.lines() {
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            match decoder.on_data(data) {
                Ok(more) => events.extend(more),
                Err(e) => return (events, Err(e)),
            }
        }
        match decoder.finish() {
            Ok(more) => {
                events.extend(more);
                (events, Ok(()))
            }
            Err(e) => (events, Err(e)),
        }
    }

    fn start(index: usize, id: &str, name: &str) -> StreamEvent {
        StreamEvent::ToolCallStart {
            index,
            id: id.to_string(),
            name: name.to_string(),
        }
    }

    fn args(index: usize, s: &str) -> StreamEvent {
        StreamEvent::ToolCallArgsDelta {
            index,
            delta: s.to_string(),
        }
    }

    fn text(s: &str) -> StreamEvent {
        StreamEvent::TextDelta(s.to_string())
    }

    const PARALLEL_CALLS: &str = r#"data: {"id":"chatcmpl-AcQ1","object":"chat.completion.chunk","created":1733900000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_9d50cd990b","choices":[{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":{"name":"get_weather","arguments":""}}],"refusal":null},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-AcQ1","object":"chat.completion.chunk","created":1733900000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_9d50cd990b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"lo"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-AcQ1","object":"chat.completion.chunk","created":1733900000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_9d50cd990b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"cation\": \"P"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-AcQ1","object":"chat.completion.chunk","created":1733900000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_9d50cd990b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"aris, Fr"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-AcQ1","object":"chat.completion.chunk","created":1733900000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_9d50cd990b","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"ance\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-AcQ1","object":"chat.completion.chunk","created":1733900000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_9d50cd990b","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_wXbHR1mZqGB7CDaRNTpD6C1n","type":"function","function":{"name":"get_weather","arguments":""}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-AcQ1","object":"chat.completion.chunk","created":1733900000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_9d50cd990b","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"lo"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-AcQ1","object":"chat.completion.chunk","created":1733900000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_9d50cd990b","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"cation\": \"Bo"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-AcQ1","object":"chat.completion.chunk","created":1733900000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_9d50cd990b","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"gotá, Colombia\"}"}}]},"logprobs":null,"finish_reason":null}],"usage":null}

data: {"id":"chatcmpl-AcQ1","object":"chat.completion.chunk","created":1733900000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_9d50cd990b","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"}],"usage":null}

data: {"id":"chatcmpl-AcQ1","object":"chat.completion.chunk","created":1733900000,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_9d50cd990b","choices":[],"usage":{"prompt_tokens":2150,"completion_tokens":51,"total_tokens":2201,"prompt_tokens_details":{"cached_tokens":1920,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}

data: [DONE]

"#;

    #[test]
    fn two_parallel_tool_calls_with_split_arguments_and_a_usage_chunk() {
        let (events, end) = decode(PARALLEL_CALLS);
        end.unwrap();
        assert_eq!(
            events,
            vec![
                start(0, "call_DdmO9pD3xa9XTPNJ32zg2hcA", "get_weather"),
                args(0, "{\"lo"),
                args(0, "cation\": \"P"),
                args(0, "aris, Fr"),
                args(0, "ance\"}"),
                start(1, "call_wXbHR1mZqGB7CDaRNTpD6C1n", "get_weather"),
                args(1, "{\"lo"),
                args(1, "cation\": \"Bo"),
                args(1, "gotá, Colombia\"}"),
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::ToolCallEnd { index: 1 },
                StreamEvent::Finish(FinishReason::ToolUse),
                StreamEvent::Usage(Usage {
                    input_tokens: 2150,
                    output_tokens: 51,
                    cache_read_tokens: 1920,
                    cache_write_tokens: 0,
                    reasoning_tokens: 0,
                }),
            ]
        );
        assert_eq!(
            tool_arguments(&events),
            [
                (0, json!({"location": "Paris, France"})),
                (1, json!({"location": "Bogotá, Colombia"}))
            ]
            .into()
        );
    }

    #[test]
    fn text_then_a_tool_call_then_stop() {
        let body = r#"data: {"id":"chatcmpl-B1","object":"chat.completion.chunk","created":1733900001,"model":"gpt-4.1","choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"finish_reason":null}]}

data: {"id":"chatcmpl-B1","object":"chat.completion.chunk","created":1733900001,"model":"gpt-4.1","choices":[{"index":0,"delta":{"content":"Let me"},"finish_reason":null}]}

data: {"id":"chatcmpl-B1","object":"chat.completion.chunk","created":1733900001,"model":"gpt-4.1","choices":[{"index":0,"delta":{"content":" look."},"finish_reason":null}]}

data: {"id":"chatcmpl-B1","object":"chat.completion.chunk","created":1733900001,"model":"gpt-4.1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"grep","arguments":""}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-B1","object":"chat.completion.chunk","created":1733900001,"model":"gpt-4.1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"pattern\":\"fn main\","}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-B1","object":"chat.completion.chunk","created":1733900001,"model":"gpt-4.1","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"path\":\"src\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-B1","object":"chat.completion.chunk","created":1733900001,"model":"gpt-4.1","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}

data: [DONE]
"#;
        let (events, end) = decode(body);
        end.unwrap();
        assert_eq!(
            events,
            vec![
                text("Let me"),
                text(" look."),
                start(0, "call_1", "grep"),
                args(0, "{\"pattern\":\"fn main\","),
                args(0, "\"path\":\"src\"}"),
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::Finish(FinishReason::MaxTokens),
            ]
        );
        assert_eq!(
            tool_arguments(&events),
            [(0, json!({"pattern": "fn main", "path": "src"}))].into()
        );
    }

    #[test]
    fn an_ollama_style_whole_tool_call_in_one_chunk_without_usage() {
        let body = r#"data: {"id":"chatcmpl-312","object":"chat.completion.chunk","created":1736500000,"model":"qwen2.5:7b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"id":"call_u3b8lz1k","index":0,"type":"function","function":{"name":"read_file","arguments":"{\"path\":\"README.md\"}"}}]},"finish_reason":null}]}

data: {"id":"chatcmpl-312","object":"chat.completion.chunk","created":1736500000,"model":"qwen2.5:7b","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"tool_calls"}]}

data: [DONE]
"#;
        let (events, end) = decode(body);
        end.unwrap();
        assert_eq!(
            events,
            vec![
                start(0, "call_u3b8lz1k", "read_file"),
                args(0, "{\"path\":\"README.md\"}"),
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::Finish(FinishReason::ToolUse),
            ]
        );
        assert_eq!(
            tool_arguments(&events),
            [(0, json!({"path": "README.md"}))].into()
        );
    }

    #[test]
    fn a_new_id_at_a_used_index_starts_a_new_call() {
        let (events, end) = decode(OLLAMA_SHARED_INDEX);
        end.unwrap();
        assert_eq!(
            events,
            vec![
                start(0, "call_k2x8n1qa", "deploy"),
                args(0, "{\"target\":\"staging\"}"),
                start(1, "call_7vz3m0pd", "deploy"),
                args(1, "{\"target\":\"production\"}"),
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::ToolCallEnd { index: 1 },
                StreamEvent::Finish(FinishReason::ToolUse),
                StreamEvent::Usage(Usage {
                    input_tokens: 210,
                    output_tokens: 38,
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                    reasoning_tokens: 0,
                }),
            ]
        );
        assert_eq!(
            tool_arguments(&events),
            [
                (0, json!({"target": "staging"})),
                (1, json!({"target": "production"}))
            ]
            .into()
        );
    }

    #[test]
    fn fragments_without_an_id_or_with_the_same_id_continue_the_latest_call_at_their_index() {
        let mut decoder = OpenAiDecoder::new();
        let mut events = Vec::new();
        for chunk in [
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"name": "grep", "arguments": "{\"pattern\""}}]}}]}),
            // Some servers repeat the id in every fragment.
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "a", "function": {"arguments": ":"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "", "function": {"arguments": "\"x\"}"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "b", "function": {"name": "glob", "arguments": "{\"pattern\":"}}]}}]}),
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "\"*\"}"}}]}}]}),
        ] {
            events.extend(decoder.on_data(&chunk.to_string()).unwrap());
        }
        events.extend(decoder.on_data("[DONE]").unwrap());
        events.extend(decoder.finish().unwrap());
        assert_eq!(
            tool_arguments(&events),
            [(0, json!({"pattern": "x"})), (1, json!({"pattern": "*"}))].into()
        );
        let starts: Vec<_> = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallStart { .. }))
            .cloned()
            .collect();
        assert_eq!(starts, vec![start(0, "a", "grep"), start(1, "b", "glob")]);
    }

    #[test]
    fn empty_and_repeated_ids_pass_through_with_distinct_dense_indexes() {
        let mut decoder = OpenAiDecoder::new();
        let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "dup", "function": {"name": "deploy", "arguments": "{}"}},
            {"index": 1, "id": "dup", "function": {"name": "deploy", "arguments": "{}"}},
            {"index": 2, "id": "", "function": {"name": "deploy", "arguments": "{}"}},
            {"index": 3, "function": {"name": "deploy", "arguments": "{}"}},
        ]}, "finish_reason": "tool_calls"}]});
        let events = decoder.on_data(&chunk.to_string()).unwrap();
        let starts: Vec<_> = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallStart { .. }))
            .cloned()
            .collect();
        // The decoder reports what the wire said; the harness makes the ids unique.
        assert_eq!(
            starts,
            vec![
                start(0, "dup", "deploy"),
                start(1, "dup", "deploy"),
                start(2, "", "deploy"),
                start(3, "", "deploy"),
            ]
        );
    }

    #[test]
    fn calls_without_index_or_id_each_start_a_new_call() {
        let body = r#"data: {"choices":[{"delta":{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"glob","arguments":{"pattern":"*.rs"}}},{"type":"function","function":{"name":"grep","arguments":"{\"pattern\":"}}]},"finish_reason":null}]}

data: {"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"\"todo\"}"}}]},"finish_reason":null}]}

data: [DONE]
"#;
        let (events, end) = decode(body);
        end.unwrap();
        assert_eq!(
            events,
            vec![
                start(0, "", "glob"),
                args(0, "{\"pattern\":\"*.rs\"}"),
                start(1, "", "grep"),
                args(1, "{\"pattern\":"),
                args(1, "\"todo\"}"),
                StreamEvent::ToolCallEnd { index: 0 },
                StreamEvent::ToolCallEnd { index: 1 },
            ]
        );
        assert_eq!(
            tool_arguments(&events),
            [
                (0, json!({"pattern": "*.rs"})),
                (1, json!({"pattern": "todo"}))
            ]
            .into()
        );
    }

    #[test]
    fn a_deepseek_reasoning_content_stream() {
        let body = r#"data: {"id":"5f1a","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_7e73fd9a08","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning_content":""},"logprobs":null,"finish_reason":null}]}

data: {"id":"5f1a","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_7e73fd9a08","choices":[{"index":0,"delta":{"content":null,"reasoning_content":"The user"},"logprobs":null,"finish_reason":null}]}

data: {"id":"5f1a","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_7e73fd9a08","choices":[{"index":0,"delta":{"content":null,"reasoning_content":" says hi."},"logprobs":null,"finish_reason":null}]}

data: {"id":"5f1a","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_7e73fd9a08","choices":[{"index":0,"delta":{"content":"Hello","reasoning_content":null},"logprobs":null,"finish_reason":null}]}

data: {"id":"5f1a","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_7e73fd9a08","choices":[{"index":0,"delta":{"content":"!","reasoning_content":null},"logprobs":null,"finish_reason":null}]}

data: {"id":"5f1a","object":"chat.completion.chunk","created":1737000000,"model":"deepseek-reasoner","system_fingerprint":"fp_7e73fd9a08","choices":[{"index":0,"delta":{"content":"","reasoning_content":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":13,"completion_tokens":110,"total_tokens":123,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":95},"prompt_cache_hit_tokens":0,"prompt_cache_miss_tokens":13}}

data: [DONE]
"#;
        let (events, end) = decode(body);
        end.unwrap();
        assert_eq!(
            events,
            vec![
                StreamEvent::ReasoningDelta("The user".to_string()),
                StreamEvent::ReasoningDelta(" says hi.".to_string()),
                text("Hello"),
                text("!"),
                StreamEvent::Finish(FinishReason::Stop),
                StreamEvent::Usage(Usage {
                    input_tokens: 13,
                    output_tokens: 110,
                    cache_read_tokens: 0,
                    cache_write_tokens: 0,
                    reasoning_tokens: 95,
                }),
            ]
        );
    }

    #[test]
    fn openrouter_reasoning_and_deepseek_cache_hits() {
        let body = r#"data: {"id":"gen-1","provider":"Chutes","model":"qwen/qwen3-32b","object":"chat.completion.chunk","created":1737000001,"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning":"Short."},"finish_reason":null,"native_finish_reason":null,"logprobs":null}]}

data: {"id":"gen-1","provider":"Chutes","model":"qwen/qwen3-32b","object":"chat.completion.chunk","created":1737000001,"choices":[{"index":0,"delta":{"role":"assistant","content":"Yes.","reasoning":null},"finish_reason":"stop","native_finish_reason":"stop","logprobs":null}]}

data: {"id":"gen-1","provider":"Chutes","model":"qwen/qwen3-32b","object":"chat.completion.chunk","created":1737000001,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null,"native_finish_reason":null,"logprobs":null}],"usage":{"prompt_tokens":900,"completion_tokens":9,"total_tokens":909,"prompt_cache_hit_tokens":640,"prompt_cache_miss_tokens":260}}

data: [DONE]
"#;
        let (events, end) = decode(body);
        end.unwrap();
        assert_eq!(
            events,
            vec![
                StreamEvent::ReasoningDelta("Short.".to_string()),
                text("Yes."),
                StreamEvent::Finish(FinishReason::Stop),
                StreamEvent::Usage(Usage {
                    input_tokens: 900,
                    output_tokens: 9,
                    cache_read_tokens: 640,
                    cache_write_tokens: 0,
                    reasoning_tokens: 0,
                }),
            ]
        );
    }

    #[test]
    fn an_error_payload_is_a_provider_error() {
        let body = r#"data: {"id":"chatcmpl-C","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}

data: {"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}
"#;
        let (events, end) = decode(body);
        assert_eq!(events, vec![text("Hi")]);
        let error = end.unwrap_err();
        assert!(error.is_retryable());
        assert_eq!(
            error.to_string(),
            "provider error (server_error): The server had an error while processing your request. Sorry about that!"
        );

        let openrouter = r#"{"id":"gen-2","object":"chat.completion.chunk","error":{"code":502,"message":"Provider returned error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error"}]}"#;
        let error = OpenAiDecoder::new().on_data(openrouter).unwrap_err();
        assert!(matches!(&error, DecodeError::Provider { kind, .. } if kind == "502"));
        assert!(error.is_retryable());
    }

    #[test]
    fn a_stream_cut_before_finish_reason_and_done_is_truncated() {
        let cut: String = PARALLEL_CALLS
            .lines()
            .take_while(|line| !line.contains("\"finish_reason\":\"tool_calls\""))
            .map(|line| format!("{line}\n"))
            .collect();
        let (events, end) = decode(&cut);
        assert_eq!(events.last(), Some(&args(1, "gotá, Colombia\"}")));
        assert_eq!(
            end.unwrap_err().to_string(),
            "the provider's stream ended before `[DONE]`"
        );
    }

    #[test]
    fn done_without_finish_reason_still_closes_open_calls() {
        let mut decoder = OpenAiDecoder::new();
        let chunk = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_9", "function": {"name": "bash", "arguments": "{}"}}]}}]});
        let mut events = decoder.on_data(&chunk.to_string()).unwrap();
        events.extend(decoder.on_data("[DONE]").unwrap());
        events.extend(decoder.finish().unwrap());
        assert_eq!(
            events,
            vec![
                start(0, "call_9", "bash"),
                args(0, "{}"),
                StreamEvent::ToolCallEnd { index: 0 }
            ]
        );
    }

    #[test]
    fn malformed_payloads_are_errors_not_panics() {
        let mut decoder = OpenAiDecoder::new();
        for data in [
            "{",
            "[1,2]",
            "{\"choices\": 3}",
            "{\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":-1}]}}]}",
            "\"text\"",
        ] {
            let error = decoder.on_data(data).unwrap_err();
            assert!(
                matches!(error, DecodeError::InvalidJson { .. }),
                "{data}: {error}"
            );
        }
        assert_eq!(decoder.on_data("").unwrap(), vec![]);
        assert_eq!(decoder.on_data("{}").unwrap(), vec![]);
    }

    #[test]
    fn reasoning_is_asked_for_as_reasoning_effort() {
        let mut request = ModelRequest {
            model: "o4-mini".into(),
            system: String::new(),
            messages: vec![Message::User { text: "hi".into() }],
            tools: Vec::new(),
            max_output_tokens: 100,
            temperature: None,
            reasoning: None,
            cache_key: None,
        };
        assert!(
            request_body(&request, Flavour::OpenAi)
                .get("reasoning_effort")
                .is_none()
        );
        request.reasoning = Some(crate::manifest::Reasoning {
            effort: crate::manifest::Effort::Low,
            budget_tokens: None,
        });
        let body = request_body(&request, Flavour::OpenAi);
        assert_eq!(body["reasoning_effort"], "low");
        assert_eq!(body["max_completion_tokens"], 100);
    }
}
