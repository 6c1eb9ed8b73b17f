//! A model provider on 127.0.0.1 for end-to-end tests: it serves scripted HTTP
//! responses (real SSE bodies of the Anthropic and OpenAI APIs, or error statuses)
//! in order, one per request, and records every request so tests can assert on what
//! eve sent.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use serde_json::Value;

/// One response the server gives.
#[derive(Debug, Clone)]
pub enum Reply {
    /// `200 text/event-stream`, written chunk by chunk; the connection closes after the last.
    Sse(Vec<String>),
    /// Like `Sse`, then the connection stays open and silent for a minute (a stream a
    /// test kills eve in the middle of).
    Stall(Vec<String>),
    /// Like `Sse`, then `tick` (a ping or an empty chunk) every 20 ms until the client
    /// hangs up, for at most a minute: a stream that is alive but never says anything.
    KeepAlive { head: Vec<String>, tick: String },
    /// Any status with headers and a body.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
}

/// A request eve sent.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub struct MockServer {
    port: u16,
    requests: Arc<Mutex<Vec<Recorded>>>,
}

impl MockServer {
    /// Starts serving `replies` in order; a request past the end gets a 500 saying so.
    pub fn start(replies: Vec<Reply>) -> MockServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let replies = Arc::new(Mutex::new(replies.into_iter()));
        let recorded = requests.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let recorded = recorded.clone();
                let replies = replies.clone();
                thread::spawn(move || serve(stream, &recorded, &replies));
            }
        });
        MockServer { port, requests }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }
}

fn serve(
    stream: TcpStream,
    recorded: &Mutex<Vec<Recorded>>,
    replies: &Mutex<std::vec::IntoIter<Reply>>,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() || request_line.is_empty() {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let path = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_string(), v.trim().to_string()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    // Record before answering, so a test that sees the reply also sees the request.
    let reply = {
        let mut recorded = recorded.lock().unwrap();
        recorded.push(Recorded {
            method,
            path,
            headers,
            body,
        });
        replies.lock().unwrap().next()
    };
    let mut stream = stream;
    match reply {
        Some(Reply::Sse(chunks)) => {
            let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).is_err() {
                return;
            }
            for chunk in chunks {
                if stream.write_all(chunk.as_bytes()).is_err() || stream.flush().is_err() {
                    return;
                }
                thread::sleep(Duration::from_millis(2));
            }
        }
        Some(Reply::Stall(chunks)) => {
            let head =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            if stream.write_all(head.as_bytes()).is_err() {
                return;
            }
            for chunk in chunks {
                if stream.write_all(chunk.as_bytes()).is_err() || stream.flush().is_err() {
                    return;
                }
            }
            thread::sleep(Duration::from_secs(60));
        }
        Some(Reply::KeepAlive { head, tick }) => {
            let start =
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
            if stream.write_all(start.as_bytes()).is_err() {
                return;
            }
            let ticks = std::iter::repeat_n(tick, 3000);
            for chunk in head.into_iter().chain(ticks) {
                if stream.write_all(chunk.as_bytes()).is_err() || stream.flush().is_err() {
                    return;
                }
                thread::sleep(Duration::from_millis(20));
            }
        }
        Some(Reply::Status {
            status,
            headers,
            body,
        }) => {
            let mut head = format!(
                "HTTP/1.1 {status} Status\r\ncontent-length: {}\r\nconnection: close\r\n",
                body.len()
            );
            for (k, v) in headers {
                head.push_str(&format!("{k}: {v}\r\n"));
            }
            head.push_str("\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
        None => {
            let body = r#"{"error":{"type":"test_error","message":"the mock server has no more replies"}}"#;
            let _ = write!(
                stream,
                "HTTP/1.1 500 Internal Server Error\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    }
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Both);
}

/// One Anthropic SSE event.
pub fn anthropic_event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// The events of a Messages API reply: `text` (if any) in pieces, then each tool call
/// with its JSON input split into `fragments` pieces, then the stop reason.
pub fn anthropic_reply(text: &str, calls: &[(&str, &str, Value)], fragments: usize) -> Vec<String> {
    use serde_json::json;
    let mut events = vec![anthropic_event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "stop_reason": null, "usage": {"input_tokens": 100, "cache_read_input_tokens": 50, "cache_creation_input_tokens": 10, "output_tokens": 1}}}),
    )];
    let mut index = 0;
    if !text.is_empty() {
        events.push(anthropic_event("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})));
        events.push(anthropic_event("ping", json!({"type": "ping"})));
        for piece in text.split_inclusive(' ') {
            events.push(anthropic_event("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}})));
        }
        events.push(anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    for (id, name, input) in calls {
        events.push(anthropic_event("content_block_start", json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})));
        let json = input.to_string();
        let chars: Vec<char> = json.chars().collect();
        let size = chars.len().div_ceil(fragments.max(1)).max(1);
        events.push(anthropic_event("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": ""}})));
        for piece in chars.chunks(size) {
            let piece: String = piece.iter().collect();
            events.push(anthropic_event("content_block_delta", json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": piece}})));
        }
        events.push(anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": index}),
        ));
        index += 1;
    }
    let stop = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    events.push(anthropic_event("message_delta", json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 25}})));
    events.push(anthropic_event(
        "message_stop",
        json!({"type": "message_stop"}),
    ));
    events
}

/// One Chat Completions SSE chunk.
pub fn openai_chunk(data: Value) -> String {
    format!("data: {data}\n\n")
}

pub const OPENAI_DONE: &str = "data: [DONE]\n\n";

/// One Responses API SSE event, named as its `type`.
pub fn responses_event(data: Value) -> String {
    let name = data["type"].as_str().unwrap_or("message").to_string();
    format!("event: {name}\ndata: {data}\n\n")
}

/// The events of a Responses API reply: a reasoning item (its summary streamed, then
/// done with `encrypted`) when `reasoning` is given, `text` (if any), then each call
/// with its arguments in two pieces; usage with `reasoning_tokens` and 64 cached tokens.
pub fn responses_reply(
    reasoning: Option<(&str, &str)>,
    text: &str,
    calls: &[(&str, &str, Value)],
    reasoning_tokens: u64,
) -> Vec<String> {
    use serde_json::json;
    let mut events = vec![responses_event(
        json!({"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "object": "response", "status": "in_progress", "model": "gpt-5-test", "output": []}}),
    )];
    let mut output = Vec::new();
    if let Some((summary, encrypted)) = reasoning {
        let at = output.len();
        events.push(responses_event(json!({"type": "response.output_item.added", "output_index": at, "item": {"id": format!("rs_{at}"), "type": "reasoning", "summary": []}})));
        events.push(responses_event(json!({"type": "response.reasoning_summary_text.delta", "item_id": format!("rs_{at}"), "output_index": at, "summary_index": 0, "delta": summary})));
        let item = json!({"id": format!("rs_{at}"), "type": "reasoning", "encrypted_content": encrypted, "summary": [{"type": "summary_text", "text": summary}]});
        events.push(responses_event(
            json!({"type": "response.output_item.done", "output_index": at, "item": item}),
        ));
        output.push(item);
    }
    if !text.is_empty() {
        let at = output.len();
        events.push(responses_event(json!({"type": "response.output_item.added", "output_index": at, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}})));
        for piece in text.split_inclusive(' ') {
            events.push(responses_event(json!({"type": "response.output_text.delta", "item_id": "msg_1", "output_index": at, "content_index": 0, "delta": piece})));
        }
        let item = json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [{"type": "output_text", "annotations": [], "text": text}]});
        events.push(responses_event(
            json!({"type": "response.output_item.done", "output_index": at, "item": item}),
        ));
        output.push(item);
    }
    for (call_id, name, input) in calls {
        let at = output.len();
        let arguments = input.to_string();
        let (a, b) = arguments.split_at(arguments.len() / 2);
        events.push(responses_event(json!({"type": "response.output_item.added", "output_index": at, "item": {"id": format!("fc_{at}"), "type": "function_call", "status": "in_progress", "call_id": call_id, "name": name, "arguments": ""}})));
        for piece in [a, b] {
            events.push(responses_event(json!({"type": "response.function_call_arguments.delta", "item_id": format!("fc_{at}"), "output_index": at, "delta": piece})));
        }
        let item = json!({"id": format!("fc_{at}"), "type": "function_call", "status": "completed", "call_id": call_id, "name": name, "arguments": arguments});
        events.push(responses_event(
            json!({"type": "response.output_item.done", "output_index": at, "item": item}),
        ));
        output.push(item);
    }
    events.push(responses_event(json!({"type": "response.completed", "response": {"id": "resp_1", "object": "response", "status": "completed", "model": "gpt-5-test", "output": output, "usage": {"input_tokens": 200, "input_tokens_details": {"cached_tokens": 64}, "output_tokens": 50, "output_tokens_details": {"reasoning_tokens": reasoning_tokens}, "total_tokens": 250}}})));
    events
}
