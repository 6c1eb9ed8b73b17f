//! Measures the harness's own cost per step: a 200-step turn with the scripted
//! provider, once calling a tool that does not exist (no process: pure harness) and
//! once calling a no-op command tool (`true`), in process, with every event
//! serialised as `--output stream-json` would. Reports eve's own CPU time per step
//! (user + system of this process, the spawning of tool processes included), the
//! CPU of the tool processes, and the peak resident memory.
//! Run with `cargo bench --bench harness`.
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

    println!("{STEPS}-step turn, scripted provider, events serialised to JSON (in process):");
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
    let build = eve::compiler::compile(dir);
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
    assert_eq!(
        outcome.end_reason,
        eve::harness::events::EndReason::Completed
    );
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
