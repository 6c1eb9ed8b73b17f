//! Measures the harness's own cost per step: a 200-step turn with the scripted
//! provider, once calling a tool that does not exist (no process: pure harness) and
//! once calling a no-op command tool (`true`), in process, with every event
//! serialised as `--output stream-json` would. Reports eve's own CPU time per step
//! (user + system of this process, the spawning of tool processes included), the
//! CPU of the tool processes, and the peak resident memory. Then the time from opening
//! a 10,000-event session log to its first provider request.
//!
//! First, what a step and a start cost beside their floors, measured in the same run:
//! a 50-step `eve run` (each step one `bash` call running `true`) against spawning
//! `bash -c true` from this program, a one-reply turn (with a provider key in the
//! environment) against `eve --version`, the disk syncs of the 50-step run (counted
//! with `strace -f -c` when it is installed) and its peak memory.
//! Run with `cargo bench --bench harness`.
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

const STEPS: usize = 200;

fn main() {
    let tmp = std::env::temp_dir().join(format!("eve-bench-harness-{}", std::process::id()));
    let pure = tmp.join("pure");
    let noop = tmp.join("noop");
    generate(&pure, "missing_tool");
    generate(&noop, "noop");

    floor_benchmark(&tmp.join("floor"));
    println!("\n{STEPS}-step turn, scripted provider, events serialised to JSON (in process):");
    for round in 1..=3 {
        report(
            &format!("harness only (unknown tool, no process), run {round}"),
            &pure,
        );
    }
    for round in 1..=3 {
        report(&format!("no-op command tool (`true`), run {round}"), &noop);
    }
    println!(
        "\nthe eve binary (`eve run DIR --output stream-json > /dev/null`), process start included:"
    );
    for round in 1..=3 {
        binary(round, &noop);
    }
    resume_benchmark(&tmp.join("resume"));
    let _ = std::fs::remove_dir_all(&tmp);
}

fn generate(dir: &Path, tool: &str) {
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        format!("name = \"bench\"\nmodel = \"scripted:replies.yaml\"\ndefault_tools = false\n[limits]\nmax_steps = {}\n", STEPS + 1),
    )
    .unwrap();
    std::fs::write(
        dir.join("instructions.md"),
        "You are {{ agent.name }}. Call the tool until told otherwise.\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tools/noop.toml"),
        "description = \"Does nothing\"\ncommand = [\"true\"]\n[input_schema]\ntype = \"object\"\nproperties.n = { type = \"integer\" }\n",
    )
    .unwrap();
    let mut replies = String::new();
    for n in 1..STEPS {
        replies.push_str(&format!(
            "- text: Step {n}, calling the tool again.\n  tool_calls: [{{name: {tool}, input: {{n: {n}}}}}]\n  usage: {{input_tokens: {}, output_tokens: 20}}\n",
            1000 + n * 50
        ));
    }
    replies.push_str("- text: Done.\n");
    std::fs::write(dir.join("replies.yaml"), replies).unwrap();
}

/// Steps of the loop compared with the floor.
const LOOP: usize = 50;
/// Runs of each measure (the median is reported).
const RUNS: usize = 11;

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// An agent whose scripted model calls `bash` with `true` `steps` times, then answers.
/// `hooked`: with one `before_tool` hook on `bash` that runs `true`.
fn bash_loop(dir: &Path, steps: usize, hooked: bool) {
    std::fs::create_dir_all(dir.join("tools")).unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        format!("name = \"floor\"\nmodel = \"scripted:replies.yaml\"\ndefault_tools = false\n[limits]\nmax_steps = {}\n", steps + 1),
    )
    .unwrap();
    std::fs::write(dir.join("instructions.md"), "Run the tool.\n").unwrap();
    std::fs::write(dir.join("tools/bash.toml"), "approval = \"never\"\n").unwrap();
    if hooked {
        std::fs::create_dir_all(dir.join("hooks")).unwrap();
        std::fs::write(
            dir.join("hooks/guard.toml"),
            "event = \"before_tool\"\ntools = [\"bash\"]\ncommand = [\"true\"]\n",
        )
        .unwrap();
    }
    let mut replies = String::new();
    for _ in 0..steps {
        replies.push_str("- tool_calls: [{name: bash, input: {command: \"true\"}}]\n");
    }
    replies.push_str("- text: Done.\n");
    std::fs::write(dir.join("replies.yaml"), replies).unwrap();
}

/// One `eve` run of `args` (its output thrown away): wall time and `wait4`'s usage.
#[allow(clippy::zombie_processes)]
fn eve_once(args: &[&str], key: bool) -> (Duration, libc::rusage) {
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_eve"));
    command
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    if key {
        command.env("ANTHROPIC_API_KEY", "sk-ant-bench-not-a-key");
    }
    let start = Instant::now();
    let child = command.spawn().unwrap();
    let mut status = 0;
    // SAFETY: waits for the child this function started and fills the zeroed rusage.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage);
        usage
    };
    let wall = start.elapsed();
    assert_eq!(status, 0, "eve {args:?} failed");
    (wall, usage)
}

/// The step and the start beside their floors (see the module docs).
fn floor_benchmark(dir: &Path) {
    let many = dir.join("loop");
    let one = dir.join("one");
    let hooked = dir.join("hooked");
    bash_loop(&many, LOOP, false);
    bash_loop(&one, 0, false);
    bash_loop(&hooked, LOOP, true);
    let run = |agent: &Path| {
        vec![
            "run".to_string(),
            agent.to_str().unwrap().to_string(),
            "Go.".to_string(),
            "-o".to_string(),
            "stream-json".to_string(),
        ]
    };
    let (many_args, one_args, hooked_args) = (run(&many), run(&one), run(&hooked));
    fn as_str(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    // Warm the build cache and the page cache once.
    eve_once(&as_str(&many_args), false);
    eve_once(&as_str(&one_args), false);
    eve_once(&as_str(&hooked_args), false);
    let (mut floor, mut version, mut reply, mut looped) = (vec![], vec![], vec![], vec![]);
    let mut with_hook = vec![];
    let mut peak = 0i64;
    for _ in 0..RUNS {
        // Interleaved, so a busy machine slows all alike.
        let start = Instant::now();
        for _ in 0..LOOP {
            let status = std::process::Command::new("bash")
                .args(["-c", "true"])
                .status()
                .unwrap();
            assert!(status.success());
        }
        floor.push(start.elapsed() / LOOP as u32);
        version.push(eve_once(&["--version"], false).0);
        reply.push(eve_once(&as_str(&one_args), true).0);
        let (wall, usage) = eve_once(&as_str(&many_args), true);
        looped.push(wall);
        peak = peak.max(usage.ru_maxrss);
        with_hook.push(eve_once(&as_str(&hooked_args), true).0);
    }
    let with_hook = median(with_hook);
    let (floor, version, reply, looped) = (
        median(floor),
        median(version),
        median(reply),
        median(looped),
    );
    let step = looped.saturating_sub(reply) / LOOP as u32;
    println!(
        "what a step and a start cost, beside their floors (medians of {RUNS} runs, this machine, this run):"
    );
    println!(
        "  floor: spawning `bash -c true` from this program: {:.3} ms",
        ms(floor)
    );
    println!(
        "  eve: a tool step (`bash` running `true`), from a {LOOP}-step run less a one-reply run: {:.3} ms = {:.2}x the floor",
        ms(step),
        step.as_secs_f64() / floor.as_secs_f64()
    );
    let hooked_step = with_hook.saturating_sub(reply) / LOOP as u32;
    println!(
        "  eve: the same step with one `before_tool` hook running `true`: {:.3} ms = the step + {:.3} ms ({:.2}x the floor's one spawn)",
        ms(hooked_step),
        ms(hooked_step.saturating_sub(step)),
        hooked_step.saturating_sub(step).as_secs_f64() / floor.as_secs_f64()
    );
    println!(
        "  floor: `eve --version`: {:.3} ms; eve: a one-reply turn with a provider key set: {:.3} ms = {:.2}x",
        ms(version),
        ms(reply),
        reply.as_secs_f64() / version.as_secs_f64()
    );
    println!(
        "  peak resident memory of the {LOOP}-step run: {:.1} MiB",
        peak as f64 / 1024.0
    );
    syncs(&as_str(&many_args));
}

/// Counts the `fsync`/`fdatasync` calls of one run under `strace -f -c`.
fn syncs(args: &[&str]) {
    let out = std::process::Command::new("strace")
        .args([
            "-f",
            "-c",
            "-e",
            "trace=fsync,fdatasync,sync_file_range",
            "-o",
            "/dev/stdout",
        ])
        .arg(env!("CARGO_BIN_EXE_eve"))
        .args(args)
        .env("ANTHROPIC_API_KEY", "sk-ant-bench-not-a-key")
        .stderr(std::process::Stdio::null())
        .output();
    let Ok(out) = out else {
        println!("  disk syncs: not counted (strace is not installed)");
        return;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    // The summary's last line: `100.00 <seconds> <usecs/call> <calls> [errors] total`.
    let calls: u64 = text
        .lines()
        .filter(|l| l.contains("fsync") || l.contains("fdatasync") || l.contains("sync_file_range"))
        .filter_map(|l| l.split_whitespace().nth(3)?.parse::<u64>().ok())
        .sum();
    println!(
        "  disk syncs of the {LOOP}-step run: {calls} ({:.2} a step)",
        calls as f64 / LOOP as f64
    );
}

fn rusage(who: libc::c_int) -> libc::rusage {
    // SAFETY: getrusage writes into the zeroed struct it is given.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    }
}

fn cpu(usage: &libc::rusage) -> Duration {
    let micros = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Duration::from_micros(micros(usage.ru_utime) + micros(usage.ru_stime))
}

fn report(label: &str, dir: &Path) {
    let build = eve::compiler::compile(dir, &eve::tools::builtin::CATALOG);
    let manifest = build.manifest.expect("the generated agent builds");
    let prepared =
        eve::runner::prepare(manifest, dir, &eve::runner::RunOptions::default()).unwrap();
    let (harness, events) = (prepared.harness, prepared.events);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let self_before = cpu(&rusage(libc::RUSAGE_SELF));
    let children_before = cpu(&rusage(libc::RUSAGE_CHILDREN));
    let start = Instant::now();
    let mut bytes = 0usize;
    let mut count = 0usize;
    let outcome = runtime.block_on(eve::runner::run_turn(
        harness,
        events,
        "Go.".into(),
        |event| {
            bytes += serde_json::to_string(event).unwrap().len() + 1;
            count += 1;
        },
    ));
    let wall = start.elapsed();
    let own = cpu(&rusage(libc::RUSAGE_SELF)) - self_before;
    let tools = cpu(&rusage(libc::RUSAGE_CHILDREN)) - children_before;
    assert_eq!(outcome.steps as usize, STEPS, "{outcome:?}");
    assert_eq!(outcome.end_reason, eve::protocol::EndReason::Completed);
    println!(
        "  {label}: {:.3} ms eve CPU/step, {:.3} ms wall/step, {:.3} ms tool-process CPU/step ({count} events, {} KiB of NDJSON)",
        own.as_secs_f64() * 1000.0 / STEPS as f64,
        wall.as_secs_f64() * 1000.0 / STEPS as f64,
        tools.as_secs_f64() * 1000.0 / STEPS as f64,
        bytes / 1024,
    );
}

/// Runs the real binary and reads its peak memory and CPU from `wait4` (which reaps it).
#[allow(clippy::zombie_processes)]
fn binary(round: usize, dir: &Path) {
    let start = Instant::now();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_eve"))
        .args([
            "run",
            dir.to_str().unwrap(),
            "Go.",
            "--output",
            "stream-json",
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: waits for the child this function started and fills the zeroed rusage.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage);
        usage
    };
    let wall = start.elapsed();
    assert_eq!(status, 0, "eve run failed");
    println!(
        "  run {round}: peak resident memory {:.1} MiB, {:.3} ms wall/step, {:.3} ms CPU/step (eve and its tool processes)",
        usage.ru_maxrss as f64 / 1024.0,
        wall.as_secs_f64() * 1000.0 / STEPS as f64,
        cpu(&usage).as_secs_f64() * 1000.0 / STEPS as f64,
    );
}

/// A session log of `turns` turns of 10 events each (plus their messages).
fn write_session(dir: &Path, turns: usize) -> String {
    use eve::protocol::Record;
    use eve::protocol::{Action, EndReason, Event, EventKind, Meta};
    use eve::protocol::{Message, ToolCall, ToolResult, Usage};
    let session_id = eve::ids::new_id("ses");
    let event = |kind| Record::Event {
        event: Event {
            kind,
            meta: Meta {
                id: eve::ids::new_id("evt"),
                at: eve::ids::now_rfc3339(),
                session_id: None,
            },
        },
    };
    let usage = Usage {
        input_tokens: 1200,
        output_tokens: 40,
        cache_read_tokens: 1000,
        cache_write_tokens: 0,
        reasoning_tokens: 0,
    };
    let mut records = vec![event(EventKind::SessionStarted {
        session_id: session_id.clone(),
        agent: "bench".into(),
        model: "scripted:replies.yaml".into(),
        workspace: "/w".into(),
        tools: vec!["noop".into()],
        unavailable_tools: vec![],
        deferred_tools: vec![],
        warnings: vec![],
    })];
    for t in 0..turns {
        let turn_id = eve::ids::new_id("turn");
        let call = ToolCall {
            id: format!("call_{t}"),
            name: "noop".into(),
            input: serde_json::json!({"n": t}),
        };
        records.push(event(EventKind::TurnStarted {
            session_id: session_id.clone(),
            turn_id: turn_id.clone(),
        }));
        records.push(event(EventKind::MessageReceived {
            turn_id: turn_id.clone(),
            text: format!("Question number {t}?"),
        }));
        records.push(Record::Message {
            message: Message::User {
                text: format!("Question number {t}?"),
            },
        });
        records.push(event(EventKind::StepStarted {
            turn_id: turn_id.clone(),
            step: 1,
        }));
        records.push(Record::Message {
            message: Message::Assistant {
                text: "Let me check.".into(),
                tool_calls: vec![call.clone()],
                provider_blocks: None,
                reasoning: String::new(),
            },
        });
        records.push(event(EventKind::ActionsRequested {
            turn_id: turn_id.clone(),
            step: 1,
            actions: vec![Action {
                call_id: call.id.clone(),
                name: call.name.clone(),
                input: call.input.clone(),
            }],
        }));
        records.push(event(EventKind::ActionResult {
            turn_id: turn_id.clone(),
            step: 1,
            call_id: call.id.clone(),
            name: "noop".into(),
            output: "ok".into(),
            is_error: false,
            duration_ms: 1,
            connection: None,
        }));
        records.push(Record::Message {
            message: Message::Tool {
                results: vec![ToolResult {
                    call_id: call.id.clone(),
                    name: "noop".into(),
                    content: "ok".into(),
                    is_error: false,
                    images: vec![],
                }],
            },
        });
        records.push(event(EventKind::StepCompleted {
            turn_id: turn_id.clone(),
            step: 1,
            finish_reason: "tool_use".into(),
            usage: usage.clone(),
            usage_reported: true,
        }));
        records.push(event(EventKind::StepStarted {
            turn_id: turn_id.clone(),
            step: 2,
        }));
        records.push(Record::Message {
            message: Message::Assistant {
                text: format!("The answer is {t}."),
                tool_calls: vec![],
                provider_blocks: None,
                reasoning: String::new(),
            },
        });
        records.push(event(EventKind::StepCompleted {
            turn_id: turn_id.clone(),
            step: 2,
            finish_reason: "stop".into(),
            usage: usage.clone(),
            usage_reported: true,
        }));
        records.push(event(EventKind::TurnCompleted {
            turn_id: turn_id.clone(),
            end_reason: EndReason::Completed,
            result: format!("The answer is {t}."),
            steps: 2,
            usage: usage.clone(),
        }));
        records.push(event(EventKind::SessionWaiting {
            session_id: session_id.clone(),
            usage: usage.clone(),
        }));
    }
    let sessions = eve::session::store::dir(dir);
    std::fs::create_dir_all(&sessions).unwrap();
    let text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).unwrap() + "\n")
        .collect();
    std::fs::write(sessions.join(format!("{session_id}.jsonl")), text).unwrap();
    session_id
}

/// Time from opening a 10,000-event session to its first provider request.
fn resume_benchmark(dir: &Path) {
    #[derive(Debug)]
    struct Stopwatch(std::sync::Mutex<Option<Instant>>);
    impl eve::providers::Provider for Stopwatch {
        fn name(&self) -> &str {
            "stopwatch"
        }
        fn stream<'a>(
            &'a self,
            _request: &'a eve::providers::ModelRequest,
        ) -> futures_util::future::BoxFuture<
            'a,
            Result<eve::providers::EventStream, eve::providers::ProviderError>,
        > {
            *self.0.lock().unwrap() = Some(Instant::now());
            Box::pin(async {
                let events = vec![
                    Ok(eve::providers::StreamEvent::TextDelta("ok".into())),
                    Ok(eve::providers::StreamEvent::Finish(
                        eve::providers::FinishReason::Stop,
                    )),
                ];
                let stream: eve::providers::EventStream =
                    Box::pin(futures_util::stream::iter(events));
                Ok(stream)
            })
        }
    }
    generate(dir, "noop");
    std::fs::write(dir.join("agent.toml"), "name = \"bench\"\nmodel = \"scripted:replies.yaml\"\nmode = \"conversation\"\ndefault_tools = false\n").unwrap();
    println!("\nresuming a session of 10,000 events (1,000 turns, 14,001 log lines), in process:");
    let mut times = Vec::new();
    for _ in 0..7 {
        let _ = std::fs::remove_dir_all(eve::session::store::dir(dir));
        let id = write_session(dir, 1000);
        let manifest = eve::compiler::compile(dir, &eve::tools::builtin::CATALOG)
            .manifest
            .expect("builds");
        let watch = std::sync::Arc::new(Stopwatch(std::sync::Mutex::new(None)));
        let start = Instant::now();
        let (log, replayed, _) = eve::runner::open_session(dir, &id).unwrap();
        let model = eve::providers::Resolved {
            provider: watch.clone(),
            model_id: "bench".into(),
            reference: "bench".into(),
        };
        let config = eve::harness::Setup::new(
            std::sync::Arc::new(manifest),
            dir.to_path_buf(),
            dir.to_path_buf(),
            model,
        )
        .with_max_steps(10)
        .with_journal(std::sync::Arc::new(log));
        let (emitter, mut rx) = eve::harness::Emitter::channel();
        let mut harness =
            eve::harness::Harness::resume(config, emitter, replayed.snapshot()).unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            harness.start().await.unwrap();
            let outcome = harness
                .run_turn(
                    "One more question?".into(),
                    tokio_util::sync::CancellationToken::new(),
                )
                .await;
            assert_eq!(outcome.end_reason, eve::protocol::EndReason::Completed);
        });
        while rx.try_recv().is_ok() {}
        let first_request = watch.0.lock().unwrap().expect("the provider was called");
        times.push(first_request - start);
    }
    times.sort();
    println!(
        "  open + replay + first provider request: median {:.1} ms (min {:.1}, max {:.1})",
        times[times.len() / 2].as_secs_f64() * 1000.0,
        times[0].as_secs_f64() * 1000.0,
        times[times.len() - 1].as_secs_f64() * 1000.0
    );
}
