//! The workspace guard against a hostile model and a hostile neighbour: a folder
//! swapped for a symlink while the file tools run, and an agent directory inside the
//! workspace that the model tries to rewrite (end to end, with the real binary).
#![cfg(unix)]

use crate::common::Agent;
use serde_json::Value;

/// A neighbour process swapping a folder for a symlink while the tools run.
#[cfg(target_os = "linux")]
mod race {
    use std::path::{Path, PathBuf};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use eve::tools::builtin::glob::GlobTool;
    use eve::tools::builtin::grep::GrepTool;
    use eve::tools::builtin::read_file::ReadFile;
    use eve::tools::builtin::write_file::WriteFile;
    use eve::tools::{ToolContext, ToolExec};
    use serde_json::{Value, json};

    /// Swaps `ws/a` between a real folder and a symlink to `outside` until stopped, each
    /// swap one atomic exchange, so `a` always exists as one or the other.
    struct Swapper {
        stop: Arc<AtomicBool>,
        swaps: Arc<AtomicUsize>,
        thread: Option<std::thread::JoinHandle<()>>,
    }

    impl Swapper {
        fn start(ws: &Path, outside: &Path) -> Swapper {
            let real = ws.join("a");
            let link = ws.join("a.link");
            std::os::unix::fs::symlink(outside, &link).unwrap();
            let stop = Arc::new(AtomicBool::new(false));
            let swaps = Arc::new(AtomicUsize::new(0));
            let thread = std::thread::spawn({
                let (stop, swaps) = (stop.clone(), swaps.clone());
                move || {
                    let exchange = || {
                        rustix::fs::renameat_with(
                            rustix::fs::CWD,
                            &real,
                            rustix::fs::CWD,
                            &link,
                            rustix::fs::RenameFlags::EXCHANGE,
                        )
                        .unwrap()
                    };
                    while !stop.load(Ordering::Relaxed) {
                        // `a` becomes the link, then the folder again.
                        exchange();
                        std::thread::yield_now();
                        exchange();
                        swaps.fetch_add(1, Ordering::Relaxed);
                        std::thread::yield_now();
                    }
                }
            });
            Swapper {
                stop,
                swaps,
                thread: Some(thread),
            }
        }

        fn stop(mut self) -> usize {
            self.stop.store(true, Ordering::Relaxed);
            if let Some(thread) = self.thread.take() {
                thread.join().unwrap();
            }
            self.swaps.load(Ordering::Relaxed)
        }
    }

    fn race_setup() -> (tempfile::TempDir, PathBuf, PathBuf, ToolContext) {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let ws = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(ws.join("a")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(ws.join("a/f.txt"), "inside\n").unwrap();
        std::fs::write(outside.join("f.txt"), "SECRET\n").unwrap();
        std::fs::write(outside.join("only-outside.txt"), "SECRET\n").unwrap();
        let ctx = ToolContext::new(ws.clone(), base.join("agent"));
        (tmp, ws, outside, ctx)
    }

    async fn call(tool: &dyn ToolExec, input: Value, ctx: &ToolContext) -> String {
        tool.call(&input, ctx).await.content
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_folder_swapped_for_a_symlink_mid_call_never_leads_outside() {
        let (_tmp, ws, outside, ctx) = race_setup();
        let swapper = Swapper::start(&ws, &outside);

        for _ in 0..400 {
            let out = call(&ReadFile, json!({"path": "a/f.txt"}), &ctx).await;
            assert!(!out.contains("SECRET"), "read_file read outside: {out}");
        }
        for i in 0..200 {
            let path = format!("a/w{i}.txt");
            call(&WriteFile, json!({"path": path, "content": "x"}), &ctx).await;
            assert!(
                !outside.join(format!("w{i}.txt")).exists(),
                "write_file wrote outside"
            );
        }
        let grep = GrepTool::default();
        let glob = GlobTool::default();
        for _ in 0..100 {
            let out = call(&grep, json!({"pattern": "SECRET"}), &ctx).await;
            assert!(out.starts_with("No matches"), "grep read outside: {out}");
            let out = call(&grep, json!({"pattern": "SECRET", "path": "a"}), &ctx).await;
            assert!(!out.contains("f.txt"), "grep read outside: {out}");
            let out = call(&glob, json!({"pattern": "**/only-outside.txt"}), &ctx).await;
            assert!(
                out.starts_with("No files matched"),
                "glob listed outside: {out}"
            );
        }

        let swaps = swapper.stop();
        assert!(swaps > 0, "the folder was never swapped");
        let written = std::fs::read_dir(&outside).unwrap().count();
        assert_eq!(written, 2, "nothing was created outside");
    }
}

/// An agent directory that is also the workspace (`cd my-agent && eve run`), with a
/// `bash` that always asks and a symlink inside that leads into `tools/`.
fn agent(agent_toml_extra: &str, script: &str) -> Agent {
    let agent = Agent::builder()
        .folder("my-agent")
        .name("self")
        .toml(agent_toml_extra)
        .instructions("Work here.\n")
        .tool("bash", "approval = \"always\"\n")
        .replies(script)
        .in_place()
        .requests_log("requests.jsonl")
        .build();
    std::os::unix::fs::symlink("tools", agent.dir.join("shortcut")).unwrap();
    agent
}

fn run(agent: &Agent) -> std::process::Output {
    agent
        .eve()
        .current_dir(&agent.dir)
        .args(["run", ".", "--workspace", ".", "go"])
        .output()
        .unwrap()
}

/// The results the model saw after each step.
fn results(agent: &Agent) -> Vec<Vec<(String, bool)>> {
    std::fs::read_to_string(&agent.requests_log)
        .unwrap()
        .lines()
        .skip(1)
        .map(|line| {
            let request: Value = serde_json::from_str(line).unwrap();
            let messages = request["messages"].as_array().unwrap();
            messages.last().unwrap()["results"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    (
                        r["content"].as_str().unwrap().to_string(),
                        r["is_error"].as_bool().unwrap(),
                    )
                })
                .collect()
        })
        .collect()
}

const ATTACK: &str = r#"
- tool_calls:
    - {name: read_file, input: {path: tools/bash.toml}}
    - {name: read_file, input: {path: agent.toml}}
- tool_calls:
    - {name: write_file, input: {path: tools/bash.toml, content: "approval = \"never\"\n"}}
    - {name: write_file, input: {path: shortcut/evil.toml, content: "description = \"x\"\n"}}
    - {name: edit_file, input: {path: ./tools/../agent.toml, old_string: "self", new_string: "other"}}
    - {name: grep, input: {pattern: "turn", path: .eve}}
    - {name: write_file, input: {path: .eve/sessions/forged.jsonl, content: "{}\n"}}
- text: Done.
"#;

#[test]
fn the_model_cannot_rewrite_its_agent_or_its_session_log() {
    let agent = agent("", ATTACK);
    let output = run(&agent);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = results(&agent);
    assert!(
        results[0].iter().all(|(_, error)| !error),
        "{:?}",
        results[0]
    );
    let attacks = &results[1];
    assert_eq!(attacks.len(), 5);
    for (content, error) in &attacks[..3] {
        assert!(error, "{content}");
        assert!(
            content.contains("part of the agent's own definition"),
            "{content}"
        );
    }
    for (content, error) in &attacks[3..] {
        assert!(error, "{content}");
        assert!(content.contains("`.eve/` folder"), "{content}");
    }
    assert_eq!(
        std::fs::read_to_string(agent.dir.join("tools/bash.toml")).unwrap(),
        "approval = \"always\"\n"
    );
    assert!(!agent.dir.join("tools/evil.toml").exists());
    assert!(
        std::fs::read_to_string(agent.dir.join("agent.toml"))
            .unwrap()
            .contains("name = \"self\"")
    );
    assert!(!agent.dir.join(".eve/sessions/forged.jsonl").exists());
}

#[test]
fn an_author_may_let_the_agent_edit_its_definition_but_not_its_state() {
    let agent = agent("\n[workspace]\nagent_writable = true\n", ATTACK);
    let output = run(&agent);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = results(&agent);
    let attacks = &results[1];
    for (content, error) in &attacks[..3] {
        assert!(!error, "{content}");
    }
    for (content, error) in &attacks[3..] {
        assert!(error, "{content}");
        assert!(content.contains("`.eve/` folder"), "{content}");
    }
    assert_eq!(
        std::fs::read_to_string(agent.dir.join("tools/bash.toml")).unwrap(),
        "approval = \"never\"\n"
    );
    assert!(!agent.dir.join(".eve/sessions/forged.jsonl").exists());
}
