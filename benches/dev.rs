//! `eve dev`'s reload latency: from saving a file in the agent directory to the new
//! manifest written (watcher, debounce, rebuild, diff and write), with the default 50 ms
//! debounce, on the example agent. Run with `cargo bench --bench dev`.
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::mpsc;
use std::time::{Duration, Instant};

fn copy_dir(src: &std::path::Path, dst: &std::path::Path) {
    std::fs::create_dir_all(dst).unwrap();
    for entry in std::fs::read_dir(src).unwrap() {
        let entry = entry.unwrap();
        let target = dst.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            if entry.file_name() != ".eve" {
                copy_dir(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn main() {
    let tmp = std::env::temp_dir().join(format!("eve-bench-dev-{}", std::process::id()));
    let dir = tmp.join("agent");
    copy_dir(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("example-agent"),
        &dir,
    );
    let mut active = eve::compiler::compile(&dir, &eve::tools::builtin::CATALOG)
        .manifest
        .expect("the example agent builds");
    let debounce = Duration::from_millis(50);
    let (tx, rx) = mpsc::channel();
    let _watcher = eve::dev::watch::start(&dir, debounce, tx).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let mut times = Vec::new();
    for round in 0..15 {
        let start = Instant::now();
        std::fs::write(
            dir.join("tools/bench_tool.toml"),
            format!("description = \"Round {round}\"\ncommand = [\"true\"]\n[input_schema]\ntype = \"object\"\n"),
        )
        .unwrap();
        let paths = loop {
            match rx
                .recv_timeout(Duration::from_secs(5))
                .expect("a change notification")
            {
                eve::dev::Input::Changed(paths) => break paths,
                _ => continue,
            }
        };
        // What `eve dev` does with a change: the cached build of what the watcher saw.
        let build = eve::connections::build_after(&dir, false, &paths);
        match eve::dev::reload::decide(&active, build) {
            eve::dev::reload::Reload::Apply { manifest, .. } => {
                eve::compiler::write_manifest(&dir, &manifest).unwrap();
                active = *manifest;
            }
            other => panic!("expected a reload, got {other:?}"),
        }
        times.push(start.elapsed());
        // Let late notifications of this save arrive and drop them before the next one.
        std::thread::sleep(Duration::from_millis(300));
        while rx.try_recv().is_ok() {}
    }
    times.sort();
    println!(
        "save → new manifest ready (debounce {} ms), 15 saves: median {:.1} ms, min {:.1} ms, max {:.1} ms",
        debounce.as_millis(),
        times[times.len() / 2].as_secs_f64() * 1000.0,
        times[0].as_secs_f64() * 1000.0,
        times[times.len() - 1].as_secs_f64() * 1000.0
    );
    let _ = std::fs::remove_dir_all(&tmp);
}
