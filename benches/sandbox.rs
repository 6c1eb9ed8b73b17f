//! What the sandbox adds to a tool's process: `bash -c true` run 200 times through the
//! process runner (supervisor included), with the default workspace-write sandbox
//! (Landlock, a read-only `.eve/` in a private mount namespace) and without, interleaved;
//! medians.
//! Run with `cargo bench --bench sandbox`.
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use eve::manifest::SandboxMode;
use eve::sandbox::{Policy, Sandbox, Support};
use eve::tools::ToolContext;

const RUNS: usize = 200;

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let ws = tmp.path().canonicalize().unwrap().join("ws");
    let eve_dir = ws.join("agent/.eve");
    std::fs::create_dir_all(&eve_dir).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let support = Support::detect();
    println!("this machine: {}", support.describe().join(", "));
    let plain = ToolContext::new(ws.clone(), ws.join("agent"));
    for (label, network) in [
        ("workspace-write", true),
        ("workspace-write, network off", false),
    ] {
        let temp_path = eve::sandbox::temp_folder();
        let policy = Policy::new(
            SandboxMode::WorkspaceWrite,
            network,
            &ws,
            &temp_path,
            &[],
            std::slice::from_ref(&eve_dir),
        );
        let started = Instant::now();
        let sandbox = Sandbox::prepare(&policy, temp_path, false, &support);
        let prepare = started.elapsed();
        let mut boxed = plain.clone();
        boxed.sandbox = Some(Arc::new(sandbox));
        // Interleaved, so a busy machine slows both alike.
        let (without, with) = medians(&runtime, &plain, &boxed);
        println!(
            "bash -c true, median of {RUNS}: {:.3} ms without, {:.3} ms with {label} ({:+.3} ms); preparing the sandbox once: {:.3} ms",
            ms(without),
            ms(with),
            ms(with) - ms(without),
            ms(prepare)
        );
    }
}

fn medians(
    runtime: &tokio::runtime::Runtime,
    a: &ToolContext,
    b: &ToolContext,
) -> (Duration, Duration) {
    let (mut first, mut second) = (Vec::new(), Vec::new());
    for _ in 0..RUNS {
        first.push(once(runtime, a));
        second.push(once(runtime, b));
    }
    first.sort();
    second.sort();
    (first[RUNS / 2], second[RUNS / 2])
}

fn once(runtime: &tokio::runtime::Runtime, ctx: &ToolContext) -> Duration {
    let start = Instant::now();
    let finished = runtime
        .block_on(eve::tools::process::run(
            "bash",
            &["-c", "true"],
            None,
            ctx,
            Duration::from_secs(30),
            1024,
        ))
        .unwrap();
    let took = start.elapsed();
    assert!(matches!(finished.end, eve::tools::process::End::Exited(Ok(s)) if s.success()));
    took
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
