//! A load generator for `eve serve --restate`: the release binary as Restate workers,
//! a real `restate-server` (the one `npm ci --prefix tests/npm` installs), and a mock
//! Anthropic API in this process.
//!
//! 1. Per-step overhead: the same sessions of 5 steps (4 `read_file` calls, then the
//!    answer), one at a time, on plain `eve serve` and on one Restate worker; eve's time
//!    from the end of a model reply to the session's next model request (the tool call,
//!    the log or the journal, the next request), median and p99.
//! 2. 1,000 sessions started at once across 2 workers sharing one deployment address:
//!    the time until all are done (each stream checked: every event, in order, ending
//!    completed) and each worker's peak resident memory.
//!
//! Run with `cargo bench --bench restate` (`-- --quick`: a small load, to check the
//! generator itself).
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)]

#[path = "../tests/it/common/restate.rs"]
mod restate;

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

const STEPS: usize = 5;

/// What the mock saw of each request: session, step, when it came, when it was answered.
#[derive(Default)]
struct Seen {
    requests: Vec<(String, usize, Instant, Instant)>,
    latency: Duration,
}

fn event(name: &str, data: Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// A Messages API reply: a `read_file` call, or the answer.
fn reply(tool: bool) -> String {
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
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": if tool { "Reading." } else { "Done." }}}),
    );
    out += &event(
        "content_block_stop",
        json!({"type": "content_block_stop", "index": 0}),
    );
    let stop = if tool {
        out += &event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}}),
        );
        out += &event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": json!({"path": "notes.txt"}).to_string()}}),
        );
        out += &event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        );
        "tool_use"
    } else {
        "end_turn"
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
    let latency = seen.lock().unwrap().latency;
    tokio::time::sleep(latency).await;
    let body = reply(step + 1 < STEPS);
    seen.lock()
        .unwrap()
        .requests
        .push((first, step, received, Instant::now()));
    ([("content-type", "text/event-stream")], body)
}

async fn start_mock(latency: Duration) -> (String, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen {
        latency,
        ..Seen::default()
    }));
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
    std::fs::write(dir.join("notes.txt"), "one\ntwo\nthree\n".repeat(20)).unwrap();
    dir
}

struct Worker {
    child: Child,
    url: String,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `eve serve .` in `dir` with `args`, once it listens.
fn start_eve(dir: &Path, mock: &str, args: &[String]) -> Worker {
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
        .args(args)
        .env("ANTHROPIC_API_KEY", "sk-bench")
        .env("ANTHROPIC_BASE_URL", mock)
        .env_remove("EVE_SERVE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        // Read every line so the request log never blocks the worker.
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
    Worker {
        child,
        url: format!("http://{addr}"),
    }
}

fn restate_args(server: &restate::RestateServer, endpoint: &str, streams: u32) -> Vec<String> {
    [
        "--restate",
        "--restate-endpoint",
        endpoint,
        "--restate-ingress",
        &server.ingress,
        "--restate-admin",
        &server.admin,
        "--restate-streams",
        &streams.to_string(),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
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

/// Creates a session with `message`; its id.
async fn create(client: &reqwest::Client, url: &str, message: &str) -> Result<String, String> {
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
    Ok(created["sessionId"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

/// Reads a session's stream (`follow`: to the end of its turn) and checks it: every
/// index in order, the last event `session.completed`.
async fn check_stream(
    client: &reqwest::Client,
    url: &str,
    id: &str,
    follow: bool,
) -> Result<(), String> {
    let text = client
        .get(format!("{url}/eve/v1/session/{id}/stream?follow={follow}"))
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
    if last != "session.completed" {
        return Err(format!(
            "the stream ended with {last}, not session.completed"
        ));
    }
    Ok(())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// The gaps between a reply and the same session's next request, in ms, sorted.
fn gaps(seen: &Seen) -> Vec<f64> {
    let mut by_session: HashMap<&str, Vec<(usize, Instant, Instant)>> = HashMap::new();
    for (session, step, received, answered) in &seen.requests {
        by_session
            .entry(session)
            .or_default()
            .push((*step, *received, *answered));
    }
    let mut between = Vec::new();
    for (_, mut requests) in by_session {
        requests.sort_by_key(|r| r.0);
        for pair in requests.windows(2) {
            between.push(pair[1].1.duration_since(pair[0].2).as_secs_f64() * 1000.0);
        }
    }
    between.sort_by(f64::total_cmp);
    between
}

/// Part 1 for one mode: `sessions` sessions one after the other on `worker`.
async fn one_at_a_time(
    label: &str,
    worker: &Worker,
    seen: &Arc<Mutex<Seen>>,
    sessions: usize,
) -> Vec<f64> {
    let client = reqwest::Client::new();
    let mut errors = 0;
    for i in 0..sessions {
        let result = async {
            let id = create(&client, &worker.url, &format!("{label} {i}")).await?;
            check_stream(&client, &worker.url, &id, true).await
        }
        .await;
        if let Err(error) = result {
            errors += 1;
            println!("    {label}: {error}");
        }
    }
    let seen = seen.lock().unwrap();
    let mine = Seen {
        requests: seen
            .requests
            .iter()
            .filter(|r| r.0.starts_with(label))
            .cloned()
            .collect(),
        latency: seen.latency,
    };
    let between = gaps(&mine);
    println!(
        "  {label}: {} gaps, p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; errors: {errors}",
        between.len(),
        percentile(&between, 0.5),
        percentile(&between, 0.99),
        between.last().copied().unwrap_or(0.0),
    );
    between
}

async fn overhead(binary: &Path, sessions: usize) {
    println!("\nper-step overhead: {sessions} sessions of {STEPS} steps, one at a time");
    let tmp = tempfile::tempdir().unwrap();
    let dir = agent(tmp.path());
    let (mock, seen) = start_mock(Duration::from_millis(20)).await;
    let plain = start_eve(&dir, &mock, &[]);
    let plain_gaps = one_at_a_time("plain", &plain, &seen, sessions).await;
    drop(plain);
    let server = restate::RestateServer::start(binary);
    let endpoint = format!("127.0.0.1:{}", restate::free_port());
    let mut args = restate_args(&server, &endpoint, 16);
    args.push("--restate-register".into());
    let worker = start_eve(&dir, &mock, &args);
    let restate_gaps = one_at_a_time("restate", &worker, &seen, sessions).await;
    println!(
        "  Restate mode adds p50 {:.2} ms, p99 {:.2} ms per step",
        percentile(&restate_gaps, 0.5) - percentile(&plain_gaps, 0.5),
        percentile(&restate_gaps, 0.99) - percentile(&plain_gaps, 0.99)
    );
}

async fn at_once(binary: &Path, sessions: usize) {
    println!("\n{sessions} sessions of {STEPS} steps started at once across 2 workers");
    let tmp = tempfile::tempdir().unwrap();
    let dir = agent(tmp.path());
    let (mock, seen) = start_mock(Duration::from_millis(200)).await;
    let server = restate::RestateServer::start(binary);
    // Both workers share one deployment address; each connection from Restate carries
    // at most 16 invocations, so the kernel spreads the connections between them.
    let endpoint = format!("127.0.0.1:{}", restate::free_port());
    let mut first = restate_args(&server, &endpoint, 16);
    first.push("--restate-register".into());
    let workers = [
        start_eve(&dir, &mock, &first),
        start_eve(&dir, &mock, &restate_args(&server, &endpoint, 16)),
    ];
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(20_000)
        .build()
        .unwrap();
    let started = Instant::now();
    let created = join_all((0..sessions).map(|i| {
        let client = client.clone();
        let url = workers[i % 2].url.clone();
        async move { create(&client, &url, &format!("work {i}")).await }
    }))
    .await;
    let mut errors: Vec<String> = Vec::new();
    let ids: Vec<String> = created
        .into_iter()
        .filter_map(|r| r.map_err(|e| errors.push(e)).ok())
        .collect();
    // Done when the session list shows them all idle (one request every 200 ms, rather
    // than a thousand streams asking Restate again and again).
    let deadline = Instant::now() + Duration::from_secs(600);
    loop {
        let listed: Value = client
            .get(format!("{}/eve/v1/sessions?limit=1000", workers[0].url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap_or(Value::Null);
        let idle = listed["sessions"]
            .as_array()
            .map_or(0, |s| s.iter().filter(|s| s["status"] == "idle").count());
        if idle >= ids.len() || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let total = started.elapsed();
    let peaks: Vec<f64> = workers.iter().map(|w| peak_rss_mb(w.child.id())).collect();
    for chunk in ids.chunks(100) {
        let checked = join_all(chunk.iter().enumerate().map(|(i, id)| {
            let client = client.clone();
            let url = workers[i % 2].url.clone();
            async move { check_stream(&client, &url, id, false).await }
        }))
        .await;
        errors.extend(checked.into_iter().filter_map(Result::err));
    }
    let seen = seen.lock().unwrap();
    println!(
        "  all done in {:.2} s (floor: {STEPS} × 200 ms = 1.0 s)",
        total.as_secs_f64()
    );
    println!(
        "  model requests: {} (of {}), errors: {}",
        seen.requests.len(),
        sessions * STEPS,
        errors.len()
    );
    for error in errors.iter().take(5) {
        println!("    {error}");
    }
    let between = gaps(&seen);
    println!(
        "  eve's time between steps: p50 {:.2} ms, p99 {:.2} ms",
        percentile(&between, 0.5),
        percentile(&between, 0.99)
    );
    println!(
        "  peak memory: worker 1 {:.1} MB, worker 2 {:.1} MB",
        peaks[0], peaks[1]
    );
}

fn main() {
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
    let Some(binary) = restate::binary() else {
        eprintln!(
            "restate-server is not installed: run `npm ci --prefix tests/npm` (or set EVE_RESTATE_SERVER)"
        );
        std::process::exit(2);
    };
    let quick = std::env::args().any(|a| a == "--quick");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        overhead(&binary, if quick { 3 } else { 50 }).await;
        at_once(&binary, if quick { 20 } else { 1000 }).await;
    });
}
