//! Measures `eve eval`: 100 scripted cases of 3 steps each (a real `read_file`, then a
//! real `edit_file`, then the answer), in process and with the real binary (wall time,
//! peak resident memory); and the per-case overhead (temporary workspace, session log,
//! harness, artifacts) from 100 one-step cases run one at a time.
//! Run with `cargo bench --bench evals`.
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::time::{Duration, Instant};

const CASES: usize = 100;

fn main() {
    let tmp = std::env::temp_dir().join(format!("eve-bench-evals-{}", std::process::id()));
    let edits = tmp.join("edits");
    let trivial = tmp.join("trivial");
    generate(&edits, true);
    generate(&trivial, false);
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());

    println!(
        "{CASES} scripted cases of 3 steps (read_file, edit_file, answer), in process, {cpus} jobs:"
    );
    for round in 1..=3 {
        let wall = in_process(&edits, cpus, 3);
        println!("  run {round}: {:.0} ms wall", wall.as_secs_f64() * 1000.0);
    }
    println!("\nper-case overhead: {CASES} one-step cases (no tool), in process, one at a time:");
    for round in 1..=3 {
        let wall = in_process(&trivial, 1, 1);
        println!(
            "  run {round}: {:.2} ms per case ({:.0} ms for {CASES})",
            wall.as_secs_f64() * 1000.0 / CASES as f64,
            wall.as_secs_f64() * 1000.0
        );
    }
    println!("\nthe eve binary (`eve eval DIR > /dev/null`), process start and build included:");
    for round in 1..=3 {
        binary(round, &edits);
    }
    // SAFETY: getrusage writes into the zeroed struct it is given.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    println!(
        "\npeak resident memory of this benchmark process: {:.1} MiB",
        usage.ru_maxrss as f64 / 1024.0
    );
    let _ = std::fs::remove_dir_all(&tmp);
}

fn generate(dir: &Path, edit: bool) {
    std::fs::create_dir_all(dir.join("evals")).unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        "name = \"bench\"\nmodel = \"anthropic/claude-sonnet-4-5\"\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("instructions.md"),
        "You are {{ agent.name }}. You work in {{ workspace }}.\n",
    )
    .unwrap();
    for n in 0..CASES {
        let case = if edit {
            format!(
                r#"prompt = "Fix the typo in notes/{n}.txt"
[workspace.files]
"notes/{n}.txt" = "Helo number {n}\nthe second line\n"
[[reply]]
tool_calls = [{{ name = "read_file", input = {{ path = "notes/{n}.txt" }} }}]
usage = {{ input_tokens = 1000, output_tokens = 10 }}
[[reply]]
tool_calls = [{{ name = "edit_file", input = {{ path = "notes/{n}.txt", old_string = "Helo", new_string = "Hello" }} }}]
usage = {{ input_tokens = 1100, output_tokens = 20 }}
[[reply]]
text = "Fixed."
usage = {{ input_tokens = 1200, output_tokens = 5 }}
[expect]
tools = {{ sequence = ["read_file", "edit_file"], mode = "strict" }}
files = {{ "notes/{n}.txt" = "Hello number {n}\nthe second line\n" }}
reply_contains = "Fixed"
"#
            )
        } else {
            "prompt = \"Hi\"\n[[reply]]\ntext = \"Hello.\"\nusage = { input_tokens = 100, output_tokens = 2 }\n[expect]\nreply_contains = \"Hello\"\n".to_string()
        };
        std::fs::write(dir.join(format!("evals/case-{n:03}.toml")), case).unwrap();
    }
}

fn in_process(dir: &Path, jobs: usize, steps: u64) -> Duration {
    let build = eve::compiler::compile(dir, &eve::tools::builtin::CATALOG);
    let manifest = build.manifest.expect("the generated agent builds");
    assert_eq!(build.evals.len(), CASES);
    let options = eve::evals::Options {
        jobs,
        ..Default::default()
    };
    let start = Instant::now();
    let outcome = eve::evals::run(dir, &manifest, build.evals, &options, |_| {}, &|_| {}).unwrap();
    let wall = start.elapsed();
    assert_eq!(
        outcome.summary.passed,
        CASES,
        "{:#?}",
        outcome.results.first()
    );
    assert!(outcome.results.iter().all(|c| c.steps() == steps));
    let _ = std::fs::remove_dir_all(dir.join(".eve"));
    wall
}

/// Runs the real binary and reads its peak memory and CPU from `wait4` (which reaps it).
#[allow(clippy::zombie_processes)]
fn binary(round: usize, dir: &Path) {
    let start = Instant::now();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_eve"))
        .args(["eval", dir.to_str().unwrap()])
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
    assert_eq!(status, 0, "eve eval failed");
    let cpu = |t: libc::timeval| t.tv_sec as f64 * 1000.0 + t.tv_usec as f64 / 1000.0;
    println!(
        "  run {round}: {:.0} ms wall, {:.0} ms CPU, peak resident memory {:.1} MiB",
        wall.as_secs_f64() * 1000.0,
        cpu(usage.ru_utime) + cpu(usage.ru_stime),
        usage.ru_maxrss as f64 / 1024.0,
    );
    let _ = std::fs::remove_dir_all(dir.join(".eve"));
}
