//! Built-in tools end to end: `eve run` with the scripted provider on a temporary
//! workspace, asserting what lands on disk and what the model was told.

use crate::common::Agent;
use pretty_assertions::assert_eq;
use serde_json::Value;

/// An agent with every built-in tool, its scripted replies, and a separate workspace.
fn setup(agent_toml_extra: &str, script: &str) -> Agent {
    let agent = Agent::builder()
        .name("tool-user")
        .toml(agent_toml_extra)
        .instructions("Work in {{ workspace }}.\n")
        .replies(script)
        .no_tools_dir()
        .workspace("workspace")
        .requests_log("agent/log.jsonl")
        .build();
    std::fs::write(agent.base.join("outside.txt"), "outside, untouched\n").unwrap();
    agent
}

fn run(setup: &Agent, args: &[&str]) -> std::process::Output {
    setup.run_cmd().args(args).output().unwrap()
}

/// The tool results the model saw in request `n` (after step `n`).
fn results(requests: &[Value], n: usize) -> Vec<Value> {
    let messages = requests[n]["messages"].as_array().unwrap();
    messages.last().unwrap()["results"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn read_then_edit_lands_while_an_unread_write_and_an_escape_are_refused() {
    let s = setup(
        "",
        r#"
- text: Let me change the greeting.
  tool_calls:
    - {name: write_file, input: {path: hello.txt, content: "overwritten blindly\n"}}
    - {name: write_file, input: {path: ../outside.txt, content: "escaped\n"}}
    - {name: read_file, input: {path: ../outside.txt}}
- tool_calls:
    - {name: read_file, input: {path: hello.txt}}
- tool_calls:
    - {name: edit_file, input: {path: hello.txt, old_string: "Hello", new_string: "Goodbye"}}
- text: Done.
"#,
    );
    std::fs::write(s.workspace.join("hello.txt"), "Hello, world\n").unwrap();
    let output = run(&s, &["change the greeting"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(s.workspace.join("hello.txt")).unwrap(),
        "Goodbye, world\n"
    );
    assert_eq!(
        std::fs::read_to_string(s.base.join("outside.txt")).unwrap(),
        "outside, untouched\n"
    );

    let requests = s.requests();
    assert_eq!(requests.len(), 4);
    let first = results(&requests, 1);
    assert_eq!(first[0]["is_error"], true);
    assert_eq!(
        first[0]["content"],
        "`hello.txt` already exists and has not been read in this session: read it with read_file first, then change it"
    );
    assert!(
        first[1]["content"]
            .as_str()
            .unwrap()
            .contains("`../outside.txt` is outside the workspace")
    );
    assert!(
        first[2]["content"]
            .as_str()
            .unwrap()
            .contains("outside the workspace")
    );
    assert_eq!(results(&requests, 2)[0]["content"], "     1\tHello, world");
    let edited = results(&requests, 3)[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        edited.contains("-Hello, world\n+Goodbye, world"),
        "{edited}"
    );
    // Every built-in that can run is offered.
    let offered: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tool in [
        "bash",
        "read_file",
        "write_file",
        "edit_file",
        "todo",
        "agent",
    ] {
        assert!(offered.contains(&tool), "{tool} not offered: {offered:?}");
    }
}

#[test]
fn a_subagent_runs_with_a_fresh_history_and_its_answer_is_the_result() {
    let s = setup(
        "",
        r#"
- tool_calls:
    - {name: reader, input: {task: "Say what notes.txt contains."}}
- tool_calls:
    - {name: read_file, input: {path: notes.txt}}
- text: notes.txt says remember the milk.
- text: "The reader says: remember the milk."
"#,
    );
    let sub = s.dir.join("subagents/reader");
    std::fs::create_dir_all(sub.join("tools")).unwrap();
    std::fs::write(
        sub.join("agent.toml"),
        "description = \"Reads files and reports what they say\"\ndefault_tools = false\n",
    )
    .unwrap();
    std::fs::write(sub.join("instructions.md"), "You read files.\n").unwrap();
    std::fs::write(sub.join("tools/read_file.toml"), "").unwrap();
    std::fs::write(s.workspace.join("notes.txt"), "remember the milk\n").unwrap();
    let output = run(&s, &["what do my notes say?", "--output", "stream-json"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let parent = events[0]["data"]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let child_start = events
        .iter()
        .find(|e| e["type"] == "session.started" && e["meta"]["session_id"].is_string())
        .expect("the child's session.started is forwarded");
    let child = child_start["meta"]["session_id"].as_str().unwrap();
    assert_ne!(child, parent);
    assert_eq!(child_start["data"]["session_id"], child);
    assert_eq!(
        child_start["data"]["tools"],
        serde_json::json!(["read_file"])
    );
    let parent_result = events
        .iter()
        .find(|e| e["type"] == "action.result" && e["meta"].get("session_id").is_none())
        .unwrap();
    assert_eq!(parent_result["data"]["name"], "reader");
    assert_eq!(
        parent_result["data"]["output"],
        "notes.txt says remember the milk."
    );
    let last = events.last().unwrap();
    assert_eq!(last["type"], "session.completed");
    assert!(last["meta"].get("session_id").is_none());

    // The child started with a fresh history: only its task, and its own system prompt.
    let requests = s.requests();
    assert_eq!(requests[1]["system"], "You read files.");
    assert_eq!(
        requests[1]["messages"],
        serde_json::json!([{"role": "user", "text": "Say what notes.txt contains."}])
    );
}

#[test]
fn agents_nest_only_as_deep_as_max_depth() {
    let s = setup(
        "",
        r#"
- tool_calls: [{name: agent, input: {task: "Go one level down."}}]
- tool_calls: [{name: agent, input: {task: "And one more."}}]
- text: I could not go deeper.
- text: Done.
"#,
    );
    std::fs::create_dir_all(s.dir.join("tools")).unwrap();
    std::fs::write(
        s.dir.join("tools/agent.toml"),
        "[settings]\nmax_depth = 1\n",
    )
    .unwrap();
    let output = run(&s, &["nest", "-o", "json"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = s.requests();
    let refused = &results(&requests, 2)[0];
    assert_eq!(refused["is_error"], true);
    assert!(
        refused["content"]
            .as_str()
            .unwrap()
            .starts_with("Refused: agents may nest at most 1 levels deep"),
        "{refused}"
    );
    assert_eq!(
        results(&requests, 3)[0]["content"],
        "I could not go deeper."
    );
}

#[test]
fn bash_with_approval_always_runs_allowed_commands_and_refuses_the_rest() {
    let s = setup(
        "",
        r#"
- tool_calls:
    - {name: bash, input: {command: "echo allowed > proof.txt; cat proof.txt"}}
    - {name: bash, input: {command: "ls"}}
    - {name: bash, input: {command: "git push origin main"}}
    - {name: bash, input: {command: "touch needs-approval.txt"}}
- text: ok
"#,
    );
    std::fs::create_dir_all(s.dir.join("tools")).unwrap();
    std::fs::write(
        s.dir.join("tools/bash.toml"),
        "approval = \"always\"\n[settings]\nallow = [\"ls\", \"echo *\"]\ndeny = [\"*git push*\"]\n",
    )
    .unwrap();
    std::fs::write(s.workspace.join("file.txt"), "").unwrap();
    // The chained echo is not covered by `echo *` and `touch` by nothing: the run parks
    // on the first, then on the second; `ls` and the denied push need no person.
    let output = run(&s, &["go"]);
    assert_eq!(
        output.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("\"command\": \"echo allowed > proof.txt; cat proof.txt\"")
    );
    let output = run(&s, &["--continue", "--deny"]);
    assert_eq!(
        output.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        String::from_utf8_lossy(&output.stderr)
            .contains("\"command\": \"touch needs-approval.txt\"")
    );
    let output = run(&s, &["--continue", "--approve"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let results = results(&s.requests(), 1);
    assert_eq!(results[0]["content"], "The user denied this call.");
    assert_eq!(
        results[1]["content"],
        "exit code: 0\n<stdout>\nfile.txt\n</stdout>"
    );
    assert_eq!(
        results[2]["content"],
        "Refused by the agent's configuration: the command matches the deny pattern `*git push*`."
    );
    assert_eq!(results[3]["content"], "exit code: 0");
    assert!(!s.workspace.join("proof.txt").exists());
    assert!(s.workspace.join("needs-approval.txt").exists());
}

#[test]
fn todo_and_load_skill_work_through_the_harness() {
    let s = setup(
        "",
        r#"
- tool_calls:
    - {name: todo, input: {todos: [{content: Plan, status: in_progress}, {content: Ship, status: pending}]}}
    - {name: load_skill, input: {name: checklist}}
- text: ok
"#,
    );
    std::fs::create_dir_all(s.dir.join("skills")).unwrap();
    std::fs::write(
        s.dir.join("skills/checklist.md"),
        "---\ndescription: A release checklist\n---\n1. Tag.\n2. Publish.\n",
    )
    .unwrap();
    let output = run(&s, &["go"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = s.requests();
    let results = results(&requests, 1);
    assert_eq!(
        results[0]["content"],
        "Todo list (0 of 2 completed):\n[>] Plan\n[ ] Ship"
    );
    assert_eq!(
        results[1]["content"],
        "<skill name=\"checklist\">\n1. Tag.\n2. Publish.\n</skill>"
    );
    // The skills list is in the system prompt now that load_skill can run.
    let system = requests[0]["system"].as_str().unwrap();
    assert!(
        system.contains("\n- `checklist`: A release checklist"),
        "{system}"
    );
}
