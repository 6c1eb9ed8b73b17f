//! Times `eve build`: a generated agent with 500 skills, 200 tool files and a 100 KB
//! template, and a 3-file agent; cold (no manifest yet) and again with unchanged inputs.
//! Run with `cargo bench --bench build`.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn main() {
    let tmp = std::env::temp_dir().join(format!("eve-bench-{}", std::process::id()));
    let big = tmp.join("big");
    let small = tmp.join("small");
    generate_big(&big);
    generate_small(&small);

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
    let _ = std::fs::remove_dir_all(&tmp);
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
