//! `bash`'s allow and deny rules against a hostile model, on the agent `eve init` writes:
//! the scaffold's allow list never lets a command reach outside the workspace without a
//! person, and its deny list holds against spelling tricks.

use std::path::{Path, PathBuf};

use crate::common::eve;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

struct Scaffold {
    _tmp: tempfile::TempDir,
    agent: PathBuf,
    workspace: PathBuf,
}

/// `eve init` in a temporary folder, a workspace beside it, and a scripted model making
/// `calls` in its first reply.
fn scaffold(calls: Value) -> Scaffold {
    let tmp = tempfile::tempdir().unwrap();
    let base = tmp.path().canonicalize().unwrap();
    let agent = base.join("agent");
    let workspace = base.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let init = eve().arg("init").arg(&agent).output().unwrap();
    assert_eq!(
        init.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let script = json!([{ "tool_calls": calls }, { "text": "done" }]);
    std::fs::write(agent.join("replies.yaml"), script.to_string()).unwrap();
    Scaffold {
        _tmp: tmp,
        agent,
        workspace,
    }
}

fn model_arg(s: &Scaffold) -> String {
    format!("scripted:{}", s.agent.join("replies.yaml").display())
}

fn run_scripted(s: &Scaffold) -> (std::process::Output, PathBuf) {
    let log = s.agent.join("log.jsonl");
    let output = eve()
        .env("EVE_SCRIPTED_LOG", &log)
        .arg("run")
        .arg(&s.agent)
        .args(["--model", &model_arg(s)])
        .args(["--workspace", s.workspace.to_str().unwrap(), "go"])
        .output()
        .unwrap();
    (output, log)
}

#[test]
fn the_scaffolds_allow_list_asks_before_commands_that_reach_outside() {
    let outside = tempfile::tempdir().unwrap();
    let written = outside.path().join("written.txt");
    for command in [
        "git diff --no-index /etc/hostname /etc/passwd".to_string(),
        format!("git log --output={}", written.display()),
        format!(
            "git diff --no-index --output={} /etc/hostname /etc/passwd",
            written.display()
        ),
        "ls -la /root".to_string(),
        "ls /".to_string(),
        "git status; touch pwned".to_string(),
        "pwd > pwned".to_string(),
    ] {
        let s = scaffold(json!([{ "name": "bash", "input": { "command": command } }]));
        let (output, _) = run_scripted(&s);
        let stderr = String::from_utf8_lossy(&output.stderr);
        // The turn parks, waiting for a person: nothing ran.
        assert_eq!(output.status.code(), Some(3), "{command}: {stderr}");
        assert!(
            stderr.contains("allow it?") || stderr.contains("approve"),
            "{command}: {stderr}"
        );
        assert!(!written.exists(), "{command}");
        assert!(!s.workspace.join("pwned").exists(), "{command}");
    }
}

#[test]
fn the_scaffolds_allow_list_runs_its_own_commands_without_asking() {
    let s = scaffold(json!([
        { "name": "bash", "input": { "command": "pwd && ls" } },
    ]));
    std::fs::write(s.workspace.join("file.txt"), "").unwrap();
    let (output, log) = run_scripted(&s);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = results(&log);
    assert_eq!(
        results[0]["content"],
        format!(
            "exit code: 0\n<stdout>\n{}\nfile.txt\n</stdout>",
            s.workspace.display()
        )
    );
}

#[test]
fn the_scaffolds_deny_list_holds_against_spelling_tricks() {
    let tricks = [
        "sudo\tid",
        "command sudo id",
        "/usr/bin/sudo id",
        "echo x | sudo id",
        "s''udo id",
        "\\sudo id",
        "env A=1 sudo id",
        "bash -c 'sudo id'",
        "echo $(sudo id)",
        "rm -fr ~/eve-deny-test",
        "rm -r -f /eve-deny-test",
        "$(echo sudo) id",
        "{sudo,x} id",
        "echo 'sudo id' | bash",
    ];
    let calls: Vec<Value> = tricks
        .iter()
        .map(|c| json!({ "name": "bash", "input": { "command": c } }))
        .collect();
    let s = scaffold(Value::Array(calls));
    let (output, log) = run_scripted(&s);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = results(&log);
    assert_eq!(results.len(), tricks.len());
    for (trick, result) in tricks.iter().zip(&results) {
        let content = result["content"].as_str().unwrap();
        assert!(
            content.starts_with("Refused by the agent's configuration"),
            "{trick}: {content}"
        );
        assert_eq!(result["is_error"], true, "{trick}");
    }
}

fn results(log: &Path) -> Vec<Value> {
    let requests: Vec<Value> = std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    requests[1]["messages"].as_array().unwrap().last().unwrap()["results"]
        .as_array()
        .unwrap()
        .clone()
}
