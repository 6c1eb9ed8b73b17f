//! FIFOs and sockets where a file is expected: `eve build` reports them, the file tools
//! refuse them at once (end to end, with the real binary). A hang fails the test through
//! the command's timeout instead of stalling the suite.
#![cfg(unix)]

use std::path::Path;
use std::time::Duration;

use crate::common::eve;
use serde_json::Value;

fn fifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
}

#[test]
fn eve_build_names_a_fifo_instead_of_hanging_on_it() {
    for planted in ["instructions.md", "tools/x.toml", "skills/s.md"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("agent");
        std::fs::create_dir_all(dir.join("tools")).unwrap();
        std::fs::create_dir_all(dir.join("skills")).unwrap();
        std::fs::write(dir.join("agent.toml"), "model = \"openai/gpt-4o\"\n").unwrap();
        if planted != "instructions.md" {
            std::fs::write(dir.join("instructions.md"), "Hi.\n").unwrap();
        }
        fifo(&dir.join(planted));
        let output = eve()
            .arg("build")
            .arg(&dir)
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        // A skill that cannot be read costs that skill (W0413), not the agent; the
        // author's own files stay errors, and so does the skill under --strict.
        let skill = planted.starts_with("skills/");
        assert_eq!(
            output.status.code(),
            Some(if skill { 0 } else { 1 }),
            "{planted}: {stderr}"
        );
        assert!(stderr.contains(planted), "{planted}: {stderr}");
        assert!(
            stderr.contains("expected a regular file, found a FIFO (named pipe)"),
            "{planted}: {stderr}"
        );
        if skill {
            assert!(stderr.contains("warning[W0413]"), "{stderr}");
            let strict = eve()
                .args(["build", "--strict"])
                .arg(&dir)
                .timeout(Duration::from_secs(60))
                .output()
                .unwrap();
            let stderr = String::from_utf8_lossy(&strict.stderr);
            assert_eq!(strict.status.code(), Some(1), "--strict: {stderr}");
            assert!(
                stderr.contains("expected a regular file, found a FIFO (named pipe)"),
                "--strict: {stderr}"
            );
        }
    }
}

#[test]
fn file_tools_refuse_a_fifo_in_the_workspace_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let agent = base.join("agent");
    let workspace = base.join("workspace");
    std::fs::create_dir_all(&agent).unwrap();
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(
        agent.join("agent.toml"),
        "name = \"fifo\"\nmodel = \"scripted:replies.yaml\"\n",
    )
    .unwrap();
    std::fs::write(agent.join("instructions.md"), "Work.\n").unwrap();
    std::fs::write(
        agent.join("replies.yaml"),
        r#"
- tool_calls:
    - {name: read_file, input: {path: pipe}}
    - {name: write_file, input: {path: pipe, content: "x"}}
    - {name: edit_file, input: {path: pipe, old_string: "a", new_string: "b"}}
    - {name: grep, input: {pattern: "x"}}
    - {name: glob, input: {pattern: "*"}}
- text: Done.
"#,
    )
    .unwrap();
    std::fs::write(workspace.join("a.txt"), "x\n").unwrap();
    fifo(&workspace.join("pipe"));
    let log = base.join("requests.jsonl");
    let output = eve()
        .env("EVE_SCRIPTED_LOG", &log)
        .arg("run")
        .arg(&agent)
        .arg("--workspace")
        .arg(&workspace)
        .arg("go")
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let messages = requests[1]["messages"].as_array().unwrap();
    let results: Vec<&str> = messages.last().unwrap()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["content"].as_str().unwrap())
        .collect();
    let refused = "`pipe` is a FIFO (named pipe), not a regular file: file tools only read and write regular files";
    assert_eq!(results[..3], [refused, refused, refused]);
    assert_eq!(results[3], "a.txt");
    assert_eq!(results[4], "a.txt");
}
