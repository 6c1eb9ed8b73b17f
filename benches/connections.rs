//! Connections: eve's own cost per MCP tool call (stdio, the test server), `eve build`
//! with 3 connections and a warm cache against the same agent without them, a cold
//! listing of 3 slow servers against one, and a session with 200 deferred tools (the
//! first request's size, `search_tools`'s speed).
//! Run with `cargo build --release --example mcp-test-server && cargo bench --bench connections`.
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use eve::protocol::ToolCall;
use eve::tools::{Registry, ToolContext};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;

const CALLS: usize = 2000;

fn main() {
    pin_to_one_core();
    let server = test_server();
    let tmp = std::env::temp_dir().join(format!("eve-bench-connections-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();

    println!(
        "an MCP tool call over stdio (the test server's echo), mean of {CALLS} calls, best of 3 rounds:"
    );
    let (sdk, client, registry) = runtime.block_on(calls(&server, &tmp.join("calls")));
    println!(
        "  {:<52} {:>8.1} µs",
        "rmcp's typed call_tool (for reference)",
        micros(sdk)
    );
    println!(
        "  {:<52} {:>8.1} µs",
        "eve's client: the tools/call round trip",
        micros(client)
    );
    println!(
        "  {:<52} {:>8.1} µs",
        "the whole call through eve's registry",
        micros(registry)
    );
    println!(
        "  {:<52} {:>8.1} µs",
        "eve's own overhead per call (registry − round trip)",
        micros(registry.saturating_sub(client))
    );

    println!("\nbuild in process, median of 200, warm caches:");
    let with = agent(&tmp.join("three"), &server, 3, "");
    let without = agent(&tmp.join("none"), &server, 0, "");
    assert!(eve::connections::build(&with, false).manifest.is_some());
    let warm = median((0..200).map(|_| {
        let start = Instant::now();
        assert!(eve::connections::build(&with, false).manifest.is_some());
        start.elapsed()
    }));
    let bare = median((0..200).map(|_| {
        let start = Instant::now();
        assert!(eve::connections::build(&without, false).manifest.is_some());
        start.elapsed()
    }));
    println!(
        "  {:<44} {:>8.3} ms",
        "agent with 3 connections",
        millis(warm)
    );
    println!(
        "  {:<44} {:>8.3} ms",
        "the same agent without connections",
        millis(bare)
    );
    println!(
        "  {:<44} {:>8.3} ms",
        "difference",
        millis(warm.saturating_sub(bare))
    );

    println!(
        "\ncold listing (eve build --refresh), servers that take 300 ms to start, median of 5:"
    );
    let one = agent(
        &tmp.join("slow-one"),
        &server,
        1,
        "MCP_TEST_DELAY_MS = \"300\", ",
    );
    let three = agent(
        &tmp.join("slow-three"),
        &server,
        3,
        "MCP_TEST_DELAY_MS = \"300\", ",
    );
    for (name, dir) in [("1 connection", &one), ("3 connections", &three)] {
        let time = median((0..5).map(|_| {
            let start = Instant::now();
            assert!(eve::connections::build(dir, true).manifest.is_some());
            start.elapsed()
        }));
        println!("  {name:<44} {:>8.1} ms", millis(time));
    }

    println!("\n200 deferred tools, the first request:");
    catalog(&runtime, &tmp.join("catalog"), &server);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// eve and the servers it starts (they inherit it) on one core: a call is a ping-pong
/// between two processes, and on a shared machine which core each lands on otherwise
/// decides more than what either does.
fn pin_to_one_core() {
    #[cfg(target_os = "linux")]
    // SAFETY: sched_setaffinity reads the set it is given and changes only this process.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(0, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

/// The test server of the same build profile.
fn test_server() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let server = exe
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/mcp-test-server");
    assert!(
        server.is_file(),
        "build the test server first: cargo build --release --example mcp-test-server"
    );
    server
}

/// An agent with `n` connections to the test server (scripted model, no built-ins).
fn agent(dir: &Path, server: &Path, n: usize, env: &str) -> PathBuf {
    std::fs::create_dir_all(dir.join("connections")).unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        "name = \"bench\"\nmodel = \"anthropic/claude-sonnet-4-5\"\n",
    )
    .unwrap();
    std::fs::write(dir.join("instructions.md"), "You measure.\n").unwrap();
    for i in 0..n {
        std::fs::write(
            dir.join(format!("connections/s{i}.toml")),
            format!(
                "command = [\"{}\"]\nenv = {{ {env}MCP_TEST_ONLY = \"echo,add,picture\" }}\n",
                server.display()
            ),
        )
        .unwrap();
    }
    dir.to_path_buf()
}

/// Each round measures, on servers of the same binary: rmcp's own typed call, eve's
/// client making the same round trip (what eve sends and reads), and the whole call as
/// the harness makes it (schema check, approval, timeout, the server's state, the
/// result read, redacted and capped). The rounds alternate; the best of each is kept.
async fn calls(server: &Path, dir: &Path) -> (Duration, Duration, Duration) {
    let dir = agent(dir, server, 1, "");
    let manifest = std::sync::Arc::new(eve::connections::build(&dir, false).manifest.unwrap());
    let connections = eve::connections::Connections::new(&manifest, &dir, &dir, None).unwrap();
    let started = connections.start().await;
    assert!(started.error.is_none(), "{:?}", started.error);
    let (external, missing) = connections.external();
    let registry = Registry::with_external(&manifest, false, true, None, external, missing);
    let ctx = ToolContext::new(dir.clone(), dir.clone());
    let call = ToolCall {
        id: "c".into(),
        name: "s0__echo".into(),
        input: serde_json::json!({"text": "hello"}),
    };
    let read = |name: &str| std::env::var(name).ok();
    let place = eve::connections::client::Place {
        agent_dir: &dir,
        workspace: &dir,
        read: &read,
        sandbox: None,
    };
    let client = eve::connections::client::Client::start(&manifest.connections[0], place)
        .await
        .unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    let args = serde_json::json!({"text": "hello"});

    let mut child = tokio::process::Command::new(server)
        .env("MCP_TEST_ONLY", "echo,add,picture")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let transport = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let sdk = ().serve(transport).await.unwrap();
    let typed = || {
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = args.as_object().cloned();
        params
    };

    let mut best = [Duration::MAX; 3];
    for round in 0..4 {
        let start = Instant::now();
        for _ in 0..CALLS {
            sdk.peer().call_tool(typed()).await.unwrap();
        }
        let a = start.elapsed() / CALLS as u32;
        let start = Instant::now();
        for _ in 0..CALLS {
            client
                .call("echo", &args, Duration::from_secs(30), &cancel)
                .await
                .unwrap();
        }
        let b = start.elapsed() / CALLS as u32;
        let start = Instant::now();
        for _ in 0..CALLS {
            assert!(!registry.call(&call, &ctx).await.is_error);
        }
        let c = start.elapsed() / CALLS as u32;
        // The first round warms up.
        if round > 0 {
            for (best, time) in best.iter_mut().zip([a, b, c]) {
                *best = (*best).min(time);
            }
        }
    }
    client.stop().await;
    connections.stop().await;
    (best[0], best[1], best[2])
}

fn catalog(runtime: &tokio::runtime::Runtime, dir: &Path, server: &Path) {
    let names: Vec<String> = (0..197).map(|i| format!("tool_{i:03}_lookup")).collect();
    let extra = names.join(",");
    let write = |dir: &Path, defer: bool| {
        std::fs::create_dir_all(dir.join("connections")).unwrap();
        std::fs::write(
            dir.join("agent.toml"),
            "name = \"bench\"\nmodel = \"anthropic/claude-sonnet-4-5\"\n",
        )
        .unwrap();
        std::fs::write(dir.join("instructions.md"), "You measure.\n").unwrap();
        std::fs::write(
            dir.join("connections/big.toml"),
            format!(
                "description = \"Two hundred tools\"\ncommand = [\"{}\"]\ndefer = {defer}\nenv = {{ MCP_TEST_ONLY = \"echo,add,picture,{extra}\", MCP_TEST_EXTRA = \"{extra}\" }}\n",
                server.display()
            ),
        )
        .unwrap();
    };
    let deferred = dir.join("deferred");
    let listed = dir.join("listed");
    let none = dir.join("none");
    write(&deferred, true);
    write(&listed, false);
    agent(&none, server, 0, "");
    let size = |dir: &Path| -> (
        usize,
        usize,
        Registry,
        std::sync::Arc<eve::manifest::Manifest>,
    ) {
        let manifest = std::sync::Arc::new(eve::connections::build(dir, false).manifest.unwrap());
        let registry = match eve::connections::Connections::new(&manifest, dir, dir, None) {
            Some(connections) => {
                let (external, missing) = connections.external();
                Registry::with_external(&manifest, true, true, None, external, missing)
            }
            None => Registry::for_provider(&manifest, true, true, None),
        };
        let tools = serde_json::to_string(&registry.specs()).unwrap().len();
        let system = eve::harness::prompt::system_prompt(&manifest, &registry, "m", dir, &|_| None)
            .unwrap()
            .len();
        (tools, system, registry, manifest)
    };
    let (d_tools, d_system, registry, _) = size(&deferred);
    let (l_tools, l_system, _, _) = size(&listed);
    let (n_tools, n_system, _, _) = size(&none);
    let catalog_specs: usize = registry
        .specs()
        .iter()
        .filter(|s| s.name == "search_tools" || s.name == "call_tool")
        .map(|s| serde_json::to_string(s).unwrap().len() + 1)
        .sum();
    println!(
        "  {:<44} {:>8} + {:>6} bytes",
        "none of the 200 (tools + system prompt)", n_tools, n_system
    );
    println!(
        "  {:<44} {:>8} + {:>6} bytes",
        "200 in the tool list", l_tools, l_system
    );
    println!(
        "  {:<44} {:>8} + {:>6} bytes",
        "200 deferred", d_tools, d_system
    );
    println!(
        "  {:<44} {:>8} bytes",
        "the two catalog tools' specs", catalog_specs
    );
    println!(
        "  {:<44} {:>8} bytes",
        "deferred − none − catalog specs",
        (d_tools + d_system) as i64 - (n_tools + n_system) as i64 - catalog_specs as i64
    );
    let registry = Arc::new(registry);
    let mut ctx = ToolContext::new(deferred.clone(), deferred.clone());
    ctx.catalog = Some(registry.clone());
    let queries = [
        "tool_150_lookup",
        "lookup",
        "big",
        "echoes the text",
        "tool_1",
        "nothing matches this",
    ];
    let search = median((0..2000).map(|i| {
        let start = Instant::now();
        let found = registry.search(queries[i % queries.len()], 5);
        std::hint::black_box(found);
        start.elapsed()
    }));
    let call = ToolCall {
        id: "s".into(),
        name: "search_tools".into(),
        input: serde_json::json!({"query": "lookup tools", "limit": 5}),
    };
    let through = runtime.block_on(async {
        let mut times = Vec::new();
        for _ in 0..2000 {
            let start = Instant::now();
            let out = registry.call(&call, &ctx).await;
            assert!(!out.is_error);
            times.push(start.elapsed());
        }
        median(times.into_iter())
    });
    println!(
        "  {:<44} {:>8.1} µs",
        "search over 200 deferred tools (ranking)",
        micros(search)
    );
    println!(
        "  {:<44} {:>8.1} µs",
        "search_tools call (checks, ranking, JSON)",
        micros(through)
    );
}

fn median(times: impl Iterator<Item = Duration>) -> Duration {
    let mut times: Vec<Duration> = times.collect();
    times.sort();
    times[times.len() / 2]
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
