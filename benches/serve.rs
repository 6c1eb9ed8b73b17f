//! A load generator for `eve serve`: the release binary on 127.0.0.1 with a mock
//! Anthropic API (in this process) that answers every request after 200 ms, as a real
//! model would take its time.
//!
//! 1. 20 sessions one after another, each a turn of 5 steps (4 `read_file` calls,
//!    then the answer): what eve adds to a step when nothing else waits for the cores.
//! 2. 1,000 sessions started at once, each the same turn. Every stream must hold every
//!    event in order and end completed.
//! 3. 10,000 sessions of which 9,000 park on a question and 1,000 run the same 5 steps.
//!
//! Reports the total time, the peak resident memory of `eve serve`, and eve's added
//! latency per step: from the moment the mock finished a reply to the moment the next
//! request of the same session arrived (the tool call, the log, the next request), and
//! from `POST /eve/v1/session` to the first request.
//! Run with `cargo bench --bench serve`.
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::response::IntoResponse;
use futures_util::future::join_all;
use serde_json::{Value, json};

const MODEL_LATENCY: Duration = Duration::from_millis(200);
const STEPS: usize = 5;

/// What the mock saw of each request: session, step, when it came, when it was answered.
#[derive(Default)]
struct Seen {
    requests: Vec<(String, usize, Instant, Instant)>,
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// A Messages API reply: a tool call (`read_file` or `ask_question`) or a text.
fn reply(tool: Option<(&str, Value)>, text: &str) -> String {
    let mut out = event(
        "message_start",
        json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "bench", "stop_reason": null, "usage": {"input_tokens": 100, "output_tokens": 1}}}),
    );
    out += &event(
        "content_block_start",
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    out += &event(
        "content_block_delta",
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
    );
    out += &event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    let stop = match tool {
        Some((name, input)) => {
            out += &event(
                "content_block_start",
                json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}}}),
            );
            out += &event(
                "content_block_delta",
                json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": input.to_string()}}),
            );
            out += &event(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": 1}),
            );
            "tool_use"
        }
        None => "end_turn",
    };
    out += &event(
        "message_delta",
        json!({"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 20}}),
    );
    out += &event("message_stop", json!({"type": "message_stop"}));
    out
}

async fn messages(State(seen): State<Arc<Mutex<Seen>>>, body: Bytes) -> impl IntoResponse {
    let received = Instant::now();
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let first = messages
        .first()
        .and_then(|m| m["content"][0]["text"].as_str())
        .unwrap_or("")
        .to_string();
    let step = messages.iter().filter(|m| m["role"] == "assistant").count();
    tokio::time::sleep(MODEL_LATENCY).await;
    let body = if first.starts_with("park") {
        reply(
            Some((
                "ask_question",
                json!({"question": "Which one?", "options": ["a", "b"]}),
            )),
            "A question.",
        )
    } else if step + 1 < STEPS {
        reply(
            Some(("read_file", json!({"path": "notes.txt"}))),
            "Reading.",
        )
    } else {
        reply(None, "Done.")
    };
    seen.lock()
        .unwrap()
        .requests
        .push((first, step, received, Instant::now()));
    ([("content-type", "text/event-stream")], body)
}

async fn start_mock() -> (String, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let app = axum::Router::new()
        .route("/v1/messages", axum::routing::post(messages))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), seen)
}

fn agent(root: &Path) -> PathBuf {
    let dir = root.join("bench-agent");
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        "name = \"bench\"\nmodel = \"anthropic/bench\"\ndefault_tools = false\n[workspace]\nroot = \".\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("instructions.md"), "You are a benchmark.").unwrap();
    std::fs::write(dir.join("tools/read_file.toml"), "").unwrap();
    std::fs::write(dir.join("tools/ask_question.toml"), "").unwrap();
    std::fs::write(dir.join("notes.txt"), "one\ntwo\nthree\n".repeat(20)).unwrap();
    dir
}

/// The token the server is started with and the load generator sends.
const TOKEN: &str = "bench-not-a-secret";

struct Server {
    child: Child,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_server(dir: &Path, mock: &str, max_turns: usize) -> Server {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_eve"))
        .current_dir(dir)
        .args([
            "serve",
            ".",
            "--addr",
            "127.0.0.1:0",
            "--max-readers",
            "20000",
        ])
        .args(["--max-turns", &max_turns.to_string()])
        .env("ANTHROPIC_API_KEY", "sk-bench")
        .env("ANTHROPIC_BASE_URL", mock)
        // eve serve asks every caller for its token, on loopback too.
        .env("EVE_SERVE_TOKEN", TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Read every line so the request log never blocks the server.
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let _ = tx.send(rest.split('/').next().unwrap_or_default().to_string());
            }
        }
    });
    let addr = rx.recv_timeout(Duration::from_secs(120)).unwrap();
    Server {
        child,
        url: format!("http://{addr}"),
    }
}

fn peak_rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// CPU seconds (user + system) `pid` has used so far, from `/proc/PID/stat`.
fn cpu_secs(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line; the words after `)` start at 3.
    let ticks: f64 = [11, 12]
        .iter()
        .filter_map(|&i| fields.get(i).and_then(|t| t.parse::<f64>().ok()))
        .sum();
    // SAFETY: sysconf only reads a configuration value.
    let per_sec = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks / per_sec.max(1.0)
}

fn rss_mb(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Starts a session with `message` and reads its stream to the end; checks it.
async fn session(
    client: reqwest::Client,
    url: String,
    message: String,
    parks: bool,
) -> Result<(Instant, String), String> {
    let started = Instant::now();
    let created = client
        .post(format!("{url}/eve/v1/session"))
        .header("content-type", "application/json")
        .body(json!({ "message": message }).to_string())
        .send()
        .await
        .map_err(|e| format!("create: {e}"))?;
    if created.status() != 202 {
        return Err(format!("create: HTTP {}", created.status()));
    }
    let created: Value = serde_json::from_slice(&created.bytes().await.map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let id = created["sessionId"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let text = client
        .get(format!("{url}/eve/v1/session/{id}/stream"))
        .send()
        .await
        .map_err(|e| format!("stream: {e}"))?
        .text()
        .await
        .map_err(|e| format!("stream: {e}"))?;
    let mut expected = 0;
    let mut last = String::new();
    for line in text.lines() {
        let line: Value =
            serde_json::from_str(line).map_err(|e| format!("a line is not JSON: {e}"))?;
        if let Some(index) = line["index"].as_u64() {
            if index != expected {
                return Err(format!("index {index} where {expected} was due"));
            }
            expected += 1;
            last = line["type"].as_str().unwrap_or_default().to_string();
        }
    }
    let wanted = if parks {
        "session.waiting"
    } else {
        "session.completed"
    };
    if last != wanted {
        return Err(format!("the stream ended with {last}, not {wanted}"));
    }
    Ok((started, message))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The gaps between a reply and the session's next request, and from the start to the first.
fn latencies(seen: &Seen, starts: &HashMap<String, Instant>) -> (Vec<f64>, Vec<f64>) {
    let mut by_session: HashMap<&str, Vec<(usize, Instant, Instant)>> = HashMap::new();
    for (session, step, received, answered) in &seen.requests {
        by_session
            .entry(session)
            .or_default()
            .push((*step, *received, *answered));
    }
    let mut between = Vec::new();
    let mut first = Vec::new();
    for (session, mut requests) in by_session {
        requests.sort_by_key(|r| r.0);
        if let (Some(start), Some(r)) = (starts.get(session), requests.first()) {
            first.push(r.1.duration_since(*start).as_secs_f64() * 1000.0);
        }
        for pair in requests.windows(2) {
            between.push(pair[1].1.duration_since(pair[0].2).as_secs_f64() * 1000.0);
        }
    }
    between.sort_by(f64::total_cmp);
    first.sort_by(f64::total_cmp);
    (between, first)
}

/// A session's task, finished: when it started and its message, or what went wrong.
type Joined = Result<Result<(Instant, String), String>, tokio::task::JoinError>;

async fn run(label: &str, work: usize, parked: usize, at_once: bool) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = agent(tmp.path());
    let (mock, seen) = start_mock().await;
    let server = start_server(&dir, &mock, work + parked);
    let pid = server.child.id();
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert(
        reqwest::header::AUTHORIZATION,
        reqwest::header::HeaderValue::from_static(concat!("Bearer ", "bench-not-a-secret")),
    );
    let client = reqwest::Client::builder()
        .default_headers(headers)
        .pool_max_idle_per_host(20_000)
        .build()
        .unwrap();
    let idle_rss = rss_mb(pid);
    let mut errors = Vec::new();
    let mut starts = HashMap::new();
    let mut collect = |results: Vec<Joined>| {
        for result in results {
            match result {
                Ok(Ok((at, message))) => {
                    starts.insert(message, at);
                }
                Ok(Err(e)) => errors.push(e),
                Err(e) => errors.push(e.to_string()),
            }
        }
    };
    // The parked sessions come in waves of 1,000, so sockets stay within the limits.
    for wave in 0..parked.div_ceil(1000) {
        let tasks: Vec<_> = (wave * 1000..((wave + 1) * 1000).min(parked))
            .map(|i| {
                tokio::spawn(session(
                    client.clone(),
                    server.url.clone(),
                    format!("park {i}"),
                    true,
                ))
            })
            .collect();
        collect(join_all(tasks).await);
    }
    let parked_rss = rss_mb(pid);
    let eve_cpu_before = cpu_secs(pid);
    let own_cpu_before = cpu_secs(std::process::id());
    let started = Instant::now();
    if at_once {
        let tasks: Vec<_> = (0..work)
            .map(|i| {
                tokio::spawn(session(
                    client.clone(),
                    server.url.clone(),
                    format!("work {i}"),
                    false,
                ))
            })
            .collect();
        collect(join_all(tasks).await);
    } else {
        // One after another: what a step costs when nothing else waits for the cores.
        for i in 0..work {
            let task = tokio::spawn(session(
                client.clone(),
                server.url.clone(),
                format!("work {i}"),
                false,
            ));
            collect(vec![task.await]);
        }
    }
    let total = started.elapsed();
    let eve_cpu = cpu_secs(pid) - eve_cpu_before;
    let own_cpu = cpu_secs(std::process::id()) - own_cpu_before;
    let settled_rss = rss_mb(pid);
    let peak = peak_rss_mb(pid);
    let seen = seen.lock().unwrap();
    let (between, first) = latencies(&seen, &starts);
    println!(
        "\n{label}: {work} sessions of {STEPS} steps (a read_file call each but the last){}",
        if parked > 0 {
            format!(" and {parked} that park on a question")
        } else {
            String::new()
        }
    );
    // Sessions one after another wait for each other's model calls too.
    let in_turn = if at_once { 1 } else { work as u128 };
    println!(
        "  all done in {:.2} s (floor: {in_turn} × {STEPS} × {} ms = {} ms)",
        total.as_secs_f64(),
        MODEL_LATENCY.as_millis(),
        in_turn * STEPS as u128 * MODEL_LATENCY.as_millis()
    );
    println!(
        "  model requests: {}, errors: {}",
        seen.requests.len(),
        errors.len()
    );
    for error in errors.iter().take(5) {
        println!("    {error}");
    }
    println!(
        "  eve's added latency between steps: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} gaps)",
        percentile(&between, 0.5),
        percentile(&between, 0.99),
        between.last().copied().unwrap_or(0.0),
        between.len()
    );
    let steps = (work * STEPS) as f64;
    println!(
        "  CPU: eve serve {:.2} s ({:.0} µs a step), this load generator and mock {:.2} s, on {} cores",
        eve_cpu,
        eve_cpu / steps.max(1.0) * 1e6,
        own_cpu,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    println!(
        "  POST /eve/v1/session to the first model request: p50 {:.2} ms, p99 {:.2} ms",
        percentile(&first, 0.5),
        percentile(&first, 0.99)
    );
    if parked > 0 {
        println!(
            "  eve serve memory: {idle_rss:.1} MB at start, {parked_rss:.1} MB with {parked} parked, {settled_rss:.1} MB when all settled, peak {peak:.1} MB"
        );
    } else {
        println!(
            "  eve serve memory: {idle_rss:.1} MB at start, {settled_rss:.1} MB when all settled, peak {peak:.1} MB"
        );
    }
}

fn main() {
    // Each session holds a few descriptors at once (client, server, provider sockets).
    // SAFETY: setrlimit only changes this process's own limit, from a valid struct.
    unsafe {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            let wanted = libc::rlimit {
                rlim_cur: 65536,
                rlim_max: limit.rlim_max.max(65536),
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) != 0 {
                limit.rlim_cur = limit.rlim_max;
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
        }
    }
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // `-- --quick`: a hundredth of the load, to check the generator itself.
    let scale = if std::env::args().any(|a| a == "--quick") {
        100
    } else {
        1
    };
    runtime.block_on(async {
        run("one at a time", 20 / scale.min(10), 0, false).await;
        run("1,000 at once", 1000 / scale, 0, true).await;
        run(
            "10,000 sessions, 9,000 of them parked",
            1000 / scale,
            9000 / scale,
            true,
        )
        .await;
    });
}
