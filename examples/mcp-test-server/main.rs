//! An MCP server for eve's tests, on rmcp's server side: `mcp-test-server` speaks stdio,
//! `--http PORT_FILE` streamable HTTP on 127.0.0.1 (the port written to PORT_FILE).
//! `MCP_TEST_MODE` picks a hostile behaviour instead (raw JSON-RPC, no SDK):
//! `silent` never answers, `exit` dies at once, `hostile` lists broken tools, `flood`
//! sends ten thousand `list_changed` notifications, `--sse PORT_FILE` serves the older
//! HTTP+SSE transport. `MCP_TEST_LOG` names a file where it appends what happened
//! (starts, calls, cancellations, listings), one line each, for tests to read;
//! `MCP_TEST_DELAY_MS` delays its start (for the benchmark); `MCP_TEST_PROBE` adds the
//! tools `write` and `connect`, which try what a sandbox refuses.
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod raw;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// A 1×1 transparent PNG.
pub const PNG: &str = include_str!("png.txt");

/// Appends a line to `MCP_TEST_LOG`.
pub fn note(line: &str) {
    use std::io::Write;
    if let Ok(path) = std::env::var("MCP_TEST_LOG")
        && let Ok(mut file) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
    {
        // One write: calls handled side by side must not interleave their lines.
        let _ = file.write_all(format!("{line}\n").as_bytes());
    }
}

#[derive(Clone, Default)]
struct TestServer {
    late: Arc<AtomicBool>,
    meeting: Arc<AtomicUsize>,
}

fn tool(name: &str, description: &str, schema: Value, read_only: bool) -> Tool {
    let Value::Object(schema) = schema else {
        unreachable!()
    };
    let tool = Tool::new(name.to_string(), description.to_string(), Arc::new(schema));
    if read_only {
        tool.with_annotations(ToolAnnotations::new().read_only(true))
    } else {
        tool
    }
}

fn text_schema() -> Value {
    json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
}

impl TestServer {
    fn tools(&self) -> Vec<Tool> {
        let mut tools = vec![
            tool("echo", "Echoes the text back", text_schema(), true),
            tool(
                "add",
                "Adds two integers",
                json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}),
                false,
            ),
            tool("fail", "Always fails", json!({"type": "object"}), true),
            tool(
                "picture",
                "Returns an image and structured content",
                json!({"type": "object"}),
                true,
            ),
            tool(
                "sleep",
                "Sleeps for secs seconds",
                json!({"type": "object", "properties": {"secs": {"type": "integer"}}, "required": ["secs"]}),
                true,
            ),
            tool(
                "change_list",
                "Adds the tool `late` and says the list changed",
                json!({"type": "object"}),
                false,
            ),
            tool(
                "crash",
                "Makes the server exit",
                json!({"type": "object"}),
                false,
            ),
            tool(
                "env",
                "Returns the server's environment",
                json!({"type": "object"}),
                true,
            ),
            tool(
                "big",
                "Returns a megabyte of text",
                json!({"type": "object"}),
                true,
            ),
            tool(
                "meet",
                "Waits until a second call of meet runs beside it",
                json!({"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}),
                true,
            ),
            tool(
                "mark",
                "Notes a label in the log",
                json!({"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]}),
                false,
            ),
            tool(
                "flood",
                "Sends count list_changed notifications",
                json!({"type": "object", "properties": {"count": {"type": "integer"}}, "required": ["count"]}),
                false,
            ),
        ];
        if self.late.load(Ordering::SeqCst) {
            tools.push(tool(
                "late",
                "Appeared after change_list",
                text_schema(),
                true,
            ));
        }
        // Probes of what the server may do, for the sandbox tests.
        if std::env::var_os("MCP_TEST_PROBE").is_some() {
            tools.push(tool(
                "write",
                "Writes text to a file (relative to the server's folder; a leading `$NAME` is the variable)",
                json!({"type": "object", "properties": {"path": {"type": "string"}, "text": {"type": "string"}}, "required": ["path"]}),
                false,
            ));
            tools.push(tool(
                "connect",
                "Opens a TCP connection to 127.0.0.1:port",
                json!({"type": "object", "properties": {"port": {"type": "integer"}}, "required": ["port"]}),
                true,
            ));
        }
        if let Ok(extra) = std::env::var("MCP_TEST_EXTRA") {
            for name in extra.split(',').filter(|n| !n.is_empty()) {
                tools.push(tool(
                    name,
                    &format!("Extra tool {name}"),
                    json!({"type": "object"}),
                    true,
                ));
            }
        }
        if let Ok(only) = std::env::var("MCP_TEST_ONLY") {
            let only: Vec<&str> = only.split(',').collect();
            tools.retain(|t| only.contains(&t.name.as_ref()));
        }
        tools
    }

    async fn run(
        &self,
        name: &str,
        args: &serde_json::Map<String, Value>,
        context: &RequestContext<RoleServer>,
    ) -> CallToolResult {
        let text = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let int = |key: &str| args.get(key).and_then(Value::as_i64).unwrap_or_default();
        match name {
            "echo" | "late" => {
                CallToolResult::success(vec![ContentBlock::text(format!("echo: {}", text("text")))])
            }
            "add" => {
                CallToolResult::success(vec![ContentBlock::text((int("a") + int("b")).to_string())])
            }
            "fail" => CallToolResult::error(vec![ContentBlock::text("the tool failed on purpose")]),
            "picture" => {
                let mut result = CallToolResult::success(vec![
                    ContentBlock::text("a 1x1 PNG"),
                    ContentBlock::image(PNG, "image/png"),
                ]);
                result.structured_content = Some(json!({"width": 1, "height": 1}));
                result
            }
            "sleep" => {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(int("secs").max(0) as u64)) => {
                        CallToolResult::success(vec![ContentBlock::text("slept")])
                    }
                    () = context.ct.cancelled() => {
                        note("cancelled sleep");
                        CallToolResult::error(vec![ContentBlock::text("cancelled")])
                    }
                }
            }
            "change_list" => {
                self.late.store(true, Ordering::SeqCst);
                let _ = context.peer.notify_tool_list_changed().await;
                CallToolResult::success(vec![ContentBlock::text("added late")])
            }
            "crash" => {
                eprintln!("crashing on purpose");
                std::process::exit(3);
            }
            "env" => {
                let env: serde_json::Map<String, Value> = std::env::vars()
                    .map(|(k, v)| (k, Value::String(v)))
                    .collect();
                CallToolResult::success(vec![ContentBlock::text(Value::Object(env).to_string())])
            }
            "big" => {
                let mb = usize::try_from(int("mb")).unwrap_or(0).max(1);
                CallToolResult::success(vec![ContentBlock::text("x".repeat(mb * 1024 * 1024))])
            }
            "meet" => {
                let label = text("label");
                note(&format!("meet-start {label}"));
                self.meeting.fetch_add(1, Ordering::SeqCst);
                let mut met = false;
                for _ in 0..500 {
                    if self.meeting.load(Ordering::SeqCst) >= 2 {
                        met = true;
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                note(&format!("meet-end {label}"));
                CallToolResult::success(vec![ContentBlock::text(if met { "met" } else { "alone" })])
            }
            "write" => match std::fs::write(expand(&text("path")), text("text")) {
                Ok(()) => CallToolResult::success(vec![ContentBlock::text("wrote")]),
                Err(e) => CallToolResult::error(vec![ContentBlock::text(format!(
                    "cannot write {}: {e}",
                    text("path")
                ))]),
            },
            "connect" => match std::net::TcpStream::connect(("127.0.0.1", int("port") as u16)) {
                Ok(_) => CallToolResult::success(vec![ContentBlock::text("connected")]),
                Err(e) => {
                    CallToolResult::error(vec![ContentBlock::text(format!("cannot connect: {e}"))])
                }
            },
            "mark" => {
                note(&format!("mark {}", text("label")));
                CallToolResult::success(vec![ContentBlock::text("marked")])
            }
            "flood" => {
                for _ in 0..int("count") {
                    let _ = context.peer.notify_tool_list_changed().await;
                }
                CallToolResult::success(vec![ContentBlock::text(format!("sent {}", int("count")))])
            }
            other => CallToolResult::error(vec![ContentBlock::text(format!("no tool {other}"))]),
        }
    }
}

impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("eve-test-server", "1.0.0"))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        note("list");
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        note(&format!("call {}", request.name));
        let args = request.arguments.clone().unwrap_or_default();
        Ok(self.run(&request.name, &args, &context).await.into())
    }
}

/// `path` with a leading `$NAME` replaced by that variable's value.
fn expand(path: &str) -> String {
    let Some(rest) = path.strip_prefix('$') else {
        return path.to_string();
    };
    let (name, tail) = rest.split_once('/').unwrap_or((rest, ""));
    format!("{}/{tail}", std::env::var(name).unwrap_or_default())
}

fn port_file(args: &[String], flag: &str) -> Option<String> {
    let at = args.iter().position(|a| a == flag)?;
    args.get(at + 1).cloned()
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // The pid as /proc shows it to the tests: eve starts the server in a PID namespace of
    // its own, where `std::process::id()` is its number there.
    let pid = std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| stat.split(' ').next().map(str::to_string))
        .unwrap_or_else(|| std::process::id().to_string());
    note(&format!("started {pid}"));
    // A slow server, for measuring that servers start side by side.
    if let Some(ms) = std::env::var("MCP_TEST_DELAY_MS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    let args: Vec<String> = std::env::args().collect();
    let mode = std::env::var("MCP_TEST_MODE").unwrap_or_default();
    eprintln!("mcp-test-server starting (mode `{mode}`)");
    if let Some(file) = port_file(&args, "--sse") {
        raw::serve_sse(&file);
        return;
    }
    match mode.as_str() {
        "exit" => {
            eprintln!("exiting at once, as asked");
            std::process::exit(7);
        }
        "ansi" => {
            eprintln!("\u{1b}[2J\u{1b}]52;c;cm0gLXJm\u{7}cleared your screen");
            std::process::exit(1);
        }
        "silent" | "hostile" | "flood" => {
            raw::serve_stdio(&mode);
            return;
        }
        _ => {}
    }
    if let Some(file) = port_file(&args, "--http") {
        serve_http(&file).await;
        return;
    }
    let service = TestServer::default()
        .serve(rmcp::transport::stdio())
        .await
        .expect("the client initialises the session");
    let _ = service.waiting().await;
}

async fn serve_http(port_file: &str) {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    use hyper_util::server::conn::auto::Builder;
    use hyper_util::service::TowerToHyperService;
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::streamable_http_server::{
        StreamableHttpServerConfig, StreamableHttpService,
    };

    let service = TowerToHyperService::new(StreamableHttpService::new(
        || Ok(TestServer::default()),
        LocalSessionManager::default().into(),
        StreamableHttpServerConfig::default(),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    std::fs::write(format!("{port_file}.tmp"), port.to_string()).unwrap();
    std::fs::rename(format!("{port_file}.tmp"), port_file).unwrap();
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let service = service.clone();
        tokio::spawn(async move {
            let _ = Builder::new(TokioExecutor::default())
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
