//! Times `eve build` and `eve run` (the binary of this profile, process start included):
//! a generated agent with 500 skills, 200 tool files and a 100 KB template, and a 3-file
//! agent, cold and with unchanged inputs; then a generated skill library of 1,000
//! skills and about 8,500 files (~100 MB): cold, unchanged, one skill edited, an
//! unchanged one-turn `eve run` next to the small agents', and `eve dev`'s save → new
//! manifest; then a library of 20,000 small skills with `[skills] defer = true` (listed,
//! they would not fit in the window), cold and unchanged; medians, with the peak memory
//! of the processes.
//!
//! Run with `cargo bench --bench build`. `cargo bench --bench build -- --generate DIR`
//! only writes the 1,000-skill library to DIR and says how large it is; `-- --smoke`
//! takes every measurement of the libraries once, on 50 skills, to check that the
//! benchmark works (its figures mean nothing).
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Skills of the generated library (each holds 7 or 8 resource files).
const LIBRARY_SKILLS: usize = 1000;
/// Skills of the large deferred library (a `SKILL.md` each).
const DEFERRED_SKILLS: usize = 20_000;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--generate") {
        let dir = Path::new(args.get(at + 1).expect("--generate DIR"));
        let (files, bytes) = generate_library(dir, LIBRARY_SKILLS);
        println!(
            "wrote {} skills, {files} files, {:.1} MB to {}",
            LIBRARY_SKILLS,
            bytes as f64 / 1e6,
            dir.display()
        );
        return;
    }
    let tmp = std::env::temp_dir().join(format!("eve-bench-{}", std::process::id()));
    let big = tmp.join("big");
    let small = tmp.join("small");
    generate_small(&small);
    if args.iter().any(|a| a == "--smoke") {
        library(&tmp, &small, 50, 1);
        deferred_library(&tmp, 50, 1);
        let _ = std::fs::remove_dir_all(&tmp);
        return;
    }
    generate_big(&big);

    println!("eve build (the release binary, process start included), median of 15 runs:");
    report("big agent, cold", &big, true);
    report("big agent, unchanged inputs", &big, false);
    report("3-file agent, cold", &small, true);
    report("3-file agent, unchanged inputs", &small, false);

    println!("\ncompiler only (in process), median of 15 runs:");
    for (name, dir) in [("big agent", &big), ("3-file agent", &small)] {
        let times: Vec<Duration> = (0..15)
            .map(|_| {
                let start = Instant::now();
                let build = eve::compiler::compile(dir, &eve::tools::builtin::CATALOG);
                assert!(build.manifest.is_some(), "the generated agent must build");
                start.elapsed()
            })
            .collect();
        println!(
            "  {name:<32} {:>8.2} ms",
            median(times).as_secs_f64() * 1000.0
        );
    }
    let times: Vec<Duration> = (0..15)
        .map(|_| {
            let start = Instant::now();
            let files = eve::compiler::inputs::AgentFiles::load(&big);
            assert!(!files.hash.is_empty());
            start.elapsed()
        })
        .collect();
    println!(
        "  {:<32} {:>8.2} ms",
        "big agent, reading + hashing only",
        median(times).as_secs_f64() * 1000.0
    );

    library(&tmp, &small, LIBRARY_SKILLS, 11);
    deferred_library(&tmp, DEFERRED_SKILLS, 5);
    let _ = std::fs::remove_dir_all(&tmp);
}

/// A library of `skills` small packaged skills, all deferred with `[skills] defer = true`,
/// as collections of tens of thousands are used: `eve build` cold and unchanged.
fn deferred_library(tmp: &Path, skills: usize, rounds: usize) {
    let dir = tmp.join("deferred-library");
    write(
        &dir.join("agent.toml"),
        "model = \"anthropic/claude-sonnet-4-5\"\n\n[skills]\ndefer = true\n",
    );
    write(
        &dir.join("instructions.md"),
        "You are {{ agent.name }}. Find the skill that fits the task.\n",
    );
    for n in 0..skills {
        write(
            &dir.join(format!("skills/skill-{n:05}/SKILL.md")),
            &format!(
                "---\nname: skill-{n:05}\ndescription: Use when the task is of kind {n}, for the steps and checks of it.\nlicense: MIT\n---\n# Skill {n}\n\nDo the work of kind {n}, then check it.\n"
            ),
        );
    }
    println!("\n{skills}-skill library, every skill deferred, median of {rounds} runs:");
    settle();
    let cold = (0..rounds)
        .map(|_| {
            let _ = std::fs::remove_dir_all(dir.join(".eve"));
            sample(&mut eve_build(&dir))
        })
        .collect();
    print_samples("eve build, cold (no .eve/)", cold);
    settle();
    sample(&mut eve_build(&dir));
    let unchanged = (0..rounds).map(|_| sample(&mut eve_build(&dir))).collect();
    print_samples("eve build, unchanged", unchanged);
}

/// A process's wall time and peak resident memory.
struct Sample {
    time: Duration,
    max_rss_kb: i64,
}

/// Runs `command` to its end (its output dropped); panics unless it succeeds.
// The child is reaped by `wait4`, which also gives its peak memory.
#[allow(clippy::zombie_processes)]
fn sample(command: &mut Command) -> Sample {
    let start = Instant::now();
    let child = command
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("eve starts");
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: `rusage` is plain data, filled in by `wait4` for the child just spawned.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    let time = start.elapsed();
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "{command:?} failed"
    );
    Sample {
        time,
        max_rss_kb: usage.ru_maxrss,
    }
}

/// Prints the median time and the highest peak memory of `samples`.
fn print_samples(name: &str, samples: Vec<Sample>) {
    let peak = samples.iter().map(|s| s.max_rss_kb).max().unwrap_or(0);
    let times = samples.into_iter().map(|s| s.time).collect();
    println!(
        "  {name:<44} {:>8.2} ms   peak {:>6.1} MB",
        median(times).as_secs_f64() * 1000.0,
        peak as f64 / 1024.0
    );
}

fn eve_build(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_eve"));
    command.arg("build").arg(dir);
    command
}

/// One turn of `eve run` on `dir` with a scripted model that answers at once: start-up,
/// the build check, the first (only) request, and the session written.
fn eve_run(dir: &Path, replies: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_eve"));
    command
        .arg("run")
        .arg(dir)
        .arg("hello")
        .arg("--model")
        .arg(format!("scripted:{}", replies.display()))
        .env_remove("EVE_MODEL");
    command
}

/// Waits until every file written so far is safely older than the next build's start,
/// as after an edit made a while ago: the cache does not trust an entry changed within a
/// second of the build that recorded it.
fn settle() {
    std::thread::sleep(Duration::from_millis(1100));
}

/// The figures of issue 19 on a library of `skills` skills, medians of `rounds` runs.
fn library(tmp: &Path, small: &Path, skills: usize, rounds: usize) {
    let dir = tmp.join("library");
    let (files, bytes) = generate_library(&dir, skills);
    let replies = tmp.join("replies.yaml");
    std::fs::write(&replies, "- text: Done.\n").unwrap();
    let example = tmp.join("example-agent");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("example-agent"),
        &example,
    );
    println!(
        "\n{skills}-skill library ({files} files, {:.1} MB), median of {rounds} runs:",
        bytes as f64 / 1e6
    );
    settle();
    let cold = (0..rounds)
        .map(|_| {
            let _ = std::fs::remove_dir_all(dir.join(".eve"));
            sample(&mut eve_build(&dir))
        })
        .collect();
    print_samples("eve build, cold (no .eve/)", cold);
    settle();
    sample(&mut eve_build(&dir));
    let unchanged = (0..rounds).map(|_| sample(&mut eve_build(&dir))).collect();
    print_samples("eve build, unchanged", unchanged);

    let edited = dir.join(format!("skills/skill-{:04}/SKILL.md", skills / 2));
    let edits = (0..rounds)
        .map(|round| {
            append(&edited, &format!("\nStep {round} added since.\n"));
            sample(&mut eve_build(&dir))
        })
        .collect();
    print_samples("eve build, one SKILL.md edited", edits);

    for (name, agent) in [
        ("eve run, unchanged library, one turn", &dir),
        ("eve run, unchanged example-agent, one turn", &example),
        (
            "eve run, unchanged 3-file agent, one turn",
            &small.to_path_buf(),
        ),
    ] {
        sample(&mut eve_run(agent, &replies));
        settle();
        sample(&mut eve_run(agent, &replies));
        let runs = (0..rounds)
            .map(|_| sample(&mut eve_run(agent, &replies)))
            .collect();
        print_samples(name, runs);
    }

    dev_reload(&dir, &edited, rounds);
}

/// `eve dev`'s reload, in process as `eve dev` does it: from a save of one SKILL.md to
/// the new manifest written (watcher, 50 ms debounce, the rebuild of what the watcher
/// reported, the comparison, the write), and the rebuild alone.
fn dev_reload(dir: &Path, edited: &Path, rounds: usize) {
    let build = eve::connections::build(dir, false);
    let mut active = build.manifest.expect("the library builds");
    let debounce = Duration::from_millis(50);
    let (tx, rx) = std::sync::mpsc::channel();
    let _watcher = eve::dev::watch::start(dir, debounce, tx).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let mut saves = Vec::new();
    let mut rebuilds = Vec::new();
    for round in 0..rounds {
        let start = Instant::now();
        append(edited, &format!("\nSaved in dev, round {round}.\n"));
        let paths = loop {
            match rx
                .recv_timeout(Duration::from_secs(10))
                .expect("a change notification")
            {
                eve::dev::Input::Changed(paths) => break paths,
                _ => continue,
            }
        };
        let rebuild = Instant::now();
        let build = eve::connections::build_after(dir, false, &paths);
        match eve::dev::reload::decide(&active, build) {
            eve::dev::reload::Reload::Apply { manifest, .. } => {
                eve::compiler::write_manifest(dir, &manifest).unwrap();
                active = *manifest;
            }
            other => panic!("expected a reload, got {other:?}"),
        }
        rebuilds.push(rebuild.elapsed());
        saves.push(start.elapsed());
        // Late notifications of this save are dropped before the next one.
        std::thread::sleep(Duration::from_millis(300));
        while rx.try_recv().is_ok() {}
    }
    println!(
        "  {:<44} {:>8.2} ms",
        format!(
            "eve dev, save → new manifest ({} ms debounce)",
            debounce.as_millis()
        ),
        median(saves).as_secs_f64() * 1000.0
    );
    println!(
        "  {:<44} {:>8.2} ms",
        "eve dev, the rebuild of that save alone",
        median(rebuilds).as_secs_f64() * 1000.0
    );
}

fn append(file: &Path, text: &str) {
    let mut old = std::fs::read_to_string(file).unwrap();
    old.push_str(text);
    std::fs::write(file, old).unwrap();
}

fn copy_dir(src: &Path, dst: &Path) {
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

/// `len` bytes of text lines that name `what`.
fn filler(what: &str, len: usize) -> String {
    let line = format!("This part of {what} explains one more detail of the procedure.\n");
    let mut text = String::with_capacity(len + line.len());
    while text.len() < len {
        text.push_str(&line);
    }
    text
}

/// A library the way public skill collections are: `skills` packaged skills,
/// each a SKILL.md of about 4 KB linking its references, with 7 or 8 resource files of
/// about 12 KB (one skill in ten also ships a 100 KB asset). Returns the number of files
/// and their bytes.
fn generate_library(dir: &Path, skills: usize) -> (usize, u64) {
    let mut files = 0;
    let mut bytes = 0u64;
    let mut put = |rel: &str, text: &str| {
        write(&dir.join(rel), text);
        files += 1;
        bytes += text.len() as u64;
    };
    put("agent.toml", "model = \"anthropic/claude-sonnet-4-5\"\n");
    put(
        "instructions.md",
        "You are {{ agent.name }}. Use the skill that fits the task.\n",
    );
    for n in 0..skills {
        let skill = format!("skills/skill-{n:04}");
        let resources = 7 + n % 2;
        let mut body = format!(
            "---\nname: skill-{n:04}\ndescription: Use when the task is of kind {n}, for the steps, checks and references of it.\nlicense: MIT\n---\n# Skill {n}\n\nRead [the guide](references/guide.md) first, then [the API notes](references/api-1.md).\nRun `scripts/check.py` before you finish.\n\n"
        );
        body.push_str(&filler(&format!("skill {n}"), 4000));
        put(&format!("{skill}/SKILL.md"), &body);
        put(
            &format!("{skill}/references/guide.md"),
            &filler(&format!("the guide of skill {n}"), 12_000),
        );
        put(
            &format!("{skill}/scripts/check.py"),
            &filler(&format!("# the check of skill {n}"), 12_000),
        );
        for k in 1..resources - 2 {
            put(
                &format!("{skill}/references/api-{k}.md"),
                &filler(&format!("API note {k} of skill {n}"), 12_000),
            );
        }
        if n % 10 == 0 {
            put(
                &format!("{skill}/assets/template.txt"),
                &filler(&format!("the template of skill {n}"), 100_000),
            );
        } else {
            put(
                &format!("{skill}/assets/example.txt"),
                &filler(&format!("the example of skill {n}"), 9_000),
            );
        }
    }
    (files, bytes)
}

fn report(name: &str, dir: &Path, cold: bool) {
    let times: Vec<Duration> = (0..15)
        .map(|_| {
            if cold {
                let _ = std::fs::remove_dir_all(dir.join(".eve"));
            }
            let start = Instant::now();
            let status = Command::new(env!("CARGO_BIN_EXE_eve"))
                .arg("build")
                .arg(dir)
                .stderr(std::process::Stdio::null())
                .status()
                .map(|s| s.success());
            let elapsed = start.elapsed();
            assert_eq!(
                status.ok(),
                Some(true),
                "eve build failed on {}",
                dir.display()
            );
            elapsed
        })
        .collect();
    println!(
        "  {name:<32} {:>8.2} ms",
        median(times).as_secs_f64() * 1000.0
    );
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap_or_else(|e| panic!("{}: {e}", parent.display()));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
}

fn generate_small(dir: &Path) {
    write(
        &dir.join("agent.toml"),
        "model = \"anthropic/claude-sonnet-4-5\"\n",
    );
    write(
        &dir.join("instructions.md"),
        "You are {{ agent.name }}. Today is {{ date }}.\n",
    );
    write(
        &dir.join("skills/plan.md"),
        "---\ndescription: Plan the work\n---\nSteps.\n",
    );
}

fn generate_big(dir: &Path) {
    write(
        &dir.join("agent.toml"),
        "model = \"anthropic/claude-sonnet-4-5\"\n[limits]\nmax_steps = 80\n",
    );
    let mut template = String::from("You are {{ agent.name }}.\n\n");
    let mut i = 0;
    while template.len() < 100 * 1024 {
        template.push_str(&format!(
            "## Rule {i}\nWhen the task touches area {i}, check {{{{ workspace }}}} first and prefer \
             the smallest change; today is {{{{ date }}}}.\n{{% if tools %}}You have {{{{ tools | length }}}} tools.{{% endif %}}\n\n"
        ));
        i += 1;
    }
    write(&dir.join("instructions.md"), &template);
    for n in 0..500 {
        if n % 5 == 0 {
            let d = dir.join(format!("skills/skill-{n:03}"));
            write(
                &d.join("SKILL.md"),
                &format!(
                    "---\nname: skill-{n:03}\ndescription: Procedure number {n}, for tasks of kind {n}.\nlicense: MIT\n---\n# Skill {n}\n\nFollow [the checklist](checklist.md).\n{}",
                    "Step text for the procedure.\n".repeat(20)
                ),
            );
            write(&d.join("checklist.md"), "- [ ] check\n");
        } else {
            write(
                &dir.join(format!("skills/skill-{n:03}.md")),
                &format!(
                    "# Procedure {n}\n\n{}",
                    "Do the next thing carefully.\n".repeat(20)
                ),
            );
        }
    }
    for n in 0..199 {
        write(
            &dir.join(format!("tools/tool_{n:03}.toml")),
            &format!(
                "description = \"Custom tool {n}: looks up record {n}\"\ncommand = [\"lookup\", \"--id\", \"{{{{ input.id }}}}\", \"--dir\", \"{{{{ agent_dir }}}}\"]\ntimeout_secs = 30\n\n[input_schema]\ntype = \"object\"\nrequired = [\"id\"]\nadditionalProperties = false\nproperties.id = {{ type = \"string\", description = \"Record id\", pattern = \"^[a-z0-9-]+$\" }}\nproperties.limit = {{ type = \"integer\", minimum = 1, maximum = 100 }}\n"
            ),
        );
    }
    write(
        &dir.join("tools/bash.toml"),
        "approval = \"always\"\n[settings]\nallow = [\"git status*\"]\n",
    );
}
