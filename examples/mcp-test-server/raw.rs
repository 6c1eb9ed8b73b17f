//! The test server's hostile and legacy modes, as raw JSON-RPC (no SDK): what a broken
//! or old server sends, byte for byte.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

use super::note;

/// The tools of the `hostile` mode: one good, the rest broken in every way a listing can be.
fn hostile_tools() -> Value {
    json!([
        {"name": "ok", "description": "A fine tool", "inputSchema": {"type": "object"}},
        {"name": "bad_schema", "inputSchema": {"type": "object", "properties": {"x": {"type": 12}}}},
        {"name": "not_object", "inputSchema": {"type": "string"}},
        {"name": "has space/and.dots", "description": "Odd name", "inputSchema": {"type": "object"}},
        {"name": "x".repeat(80), "description": "Long name", "inputSchema": {"type": "object"}},
        {"name": "ok", "inputSchema": {"type": "object"}},
        {"description": "no name", "inputSchema": {"type": "object"}},
        {"name": "huge", "description": "d".repeat(100_000), "inputSchema": {"type": "object"}}
    ])
}

/// The JSON-RPC messages that answer `message`.
fn answer(mode: &str, message: &Value) -> Vec<Value> {
    let id = message.get("id").cloned();
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let reply = |result: Value| json!({"jsonrpc": "2.0", "id": id, "result": result});
    match method {
        "initialize" => {
            let version = message["params"]["protocolVersion"].clone();
            vec![reply(json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": true}},
                "serverInfo": {"name": format!("raw-{mode}"), "version": "0.1"}
            }))]
        }
        "notifications/initialized" if mode == "flood" => (0..10_000)
            .map(|_| json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}))
            .collect(),
        "tools/list" => {
            note("list");
            let tools = if mode == "hostile" {
                hostile_tools()
            } else {
                json!([{"name": "echo", "description": "Echoes", "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}])
            };
            vec![reply(json!({ "tools": tools }))]
        }
        "tools/call" => {
            note(&format!(
                "call {}",
                message["params"]["name"].as_str().unwrap_or_default()
            ));
            let text = message["params"]["arguments"]["text"]
                .as_str()
                .unwrap_or("hi")
                .to_string();
            vec![reply(
                json!({"content": [{"type": "text", "text": format!("echo: {text}")}]}),
            )]
        }
        _ if id.is_some() => vec![
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no such method"}}),
        ],
        _ => Vec::new(),
    }
}

/// Raw JSON-RPC on stdin and stdout.
pub fn serve_stdio(mode: &str) {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        if mode == "silent" {
            continue;
        }
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        for reply in answer(mode, &message) {
            if writeln!(out, "{reply}").and_then(|()| out.flush()).is_err() {
                return;
            }
        }
    }
}

/// The HTTP+SSE transport of 2024-11-05 on 127.0.0.1: `GET /sse` opens the stream and
/// names the endpoint (`MCP_TEST_SSE_ENDPOINT`, default `/message?session=1`); a
/// `POST /sse` is refused with 405, as such servers do.
pub fn serve_sse(port_file: &str) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(format!("{port_file}.tmp"), port.to_string()).unwrap();
    std::fs::rename(format!("{port_file}.tmp"), port_file).unwrap();
    let stream_out: Arc<Mutex<Option<TcpStream>>> = Arc::new(Mutex::new(None));
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let out = stream_out.clone();
        std::thread::spawn(move || handle(stream, &out));
    }
}

fn handle(mut stream: TcpStream, out: &Mutex<Option<TcpStream>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let (method, path) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).is_err() || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    match (method, path.split('?').next().unwrap_or_default()) {
        ("GET", "/sse") => {
            let endpoint = std::env::var("MCP_TEST_SSE_ENDPOINT")
                .unwrap_or_else(|_| "/message?session=1".into());
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n\r\nevent: endpoint\ndata: {endpoint}\n\n"
            );
            if stream.write_all(head.as_bytes()).is_ok() {
                *out.lock().unwrap() = Some(stream);
            }
        }
        ("POST", "/message") => {
            let _ = stream.write_all(
                b"HTTP/1.1 202 Accepted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
            let Ok(message) = serde_json::from_slice::<Value>(&body) else {
                return;
            };
            let mut out = out.lock().unwrap();
            if let Some(sse) = out.as_mut() {
                for reply in answer("sse", &message) {
                    let _ = write!(sse, "event: message\ndata: {reply}\n\n");
                    let _ = sse.flush();
                }
            }
        }
        _ => {
            let _ = stream.write_all(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    }
}
