//! Nothing a call starts outlives it: `eve run` with the scripted provider makes `bash` and
//! command tools start processes that leave the process group, hold the output open or kill
//! their supervisor, and the tests check in `/proc` that none of them is left.

use std::path::Path;
use std::time::Duration;

use crate::common::Agent;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// An agent whose scripted model makes `calls` in one reply, then ends the turn.
fn setup(tools: &[(&str, &str)], calls: Value) -> Agent {
    let mut agent = Agent::builder()
        .name("spawner")
        .instructions("Run things.\n")
        .workspace("workspace")
        .requests_log("agent/log.jsonl");
    for (name, text) in tools {
        agent = agent.tool(name, text);
    }
    // JSON is YAML.
    let script = json!([{ "tool_calls": calls }, { "text": "done" }]);
    agent.replies(&script.to_string()).build()
}

/// Runs the turn and returns the tool results the model got back.
fn run(setup: &Agent) -> Vec<Value> {
    let output = setup
        .run_cmd()
        .arg("go")
        // A guard against the hang this file is about, not a measurement.
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    setup.requests()[1]["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()["results"]
        .as_array()
        .unwrap()
        .clone()
}

/// The pid a process wrote to `file` in the workspace: its pid as `/proc` shows it to
/// the test (`read -r p _ < /proc/self/stat`; `$$` would be its pid in the call's own PID
/// namespace).
fn pid_in(setup: &Agent, file: &str) -> i32 {
    std::fs::read_to_string(setup.workspace.join(file))
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Whether `pid` is still a running `sleep` (not gone, not a zombie, not a reused pid).
fn running_sleep(pid: i32) -> bool {
    let proc = Path::new("/proc").join(pid.to_string());
    let stat = std::fs::read_to_string(proc.join("stat")).unwrap_or_default();
    let state = stat
        .rsplit(')')
        .next()
        .and_then(|rest| rest.trim_start().chars().next());
    let cmdline = std::fs::read(proc.join("cmdline")).unwrap_or_default();
    matches!(state, Some(s) if s != 'Z' && s != 'X') && cmdline.starts_with(b"sleep")
}

/// Waits until the file a background process writes its pid to is there.
const WAIT_FOR: &str = "while [ ! -s {f} ]; do sleep 0.02; done";

fn wait_for(file: &str) -> String {
    WAIT_FOR.replace("{f}", file)
}

#[test]
fn a_grandchild_that_leaves_the_group_and_holds_stdout_does_not_hang_the_call() {
    let command = format!(
        "setsid bash -c 'read -r p _ < /proc/self/stat; echo $p > held.pid; exec sleep 600' & {}; echo started",
        wait_for("held.pid")
    );
    let s = setup(
        &[],
        json!([{ "name": "bash", "input": { "command": command, "timeout_secs": 5 } }]),
    );
    let results = run(&s);
    assert_eq!(
        results[0]["content"],
        "exit code: 0\nnote: 1 background process started by the command was still running when it exited and still held its output open; eve killed it (nothing a call starts outlives it)\n<stdout>\nstarted\n</stdout>"
    );
    assert!(!running_sleep(pid_in(&s, "held.pid")));
}

#[test]
fn a_timeout_kills_a_grandchild_outside_the_process_group() {
    let command = format!(
        "setsid bash -c 'read -r p _ < /proc/self/stat; echo $p > held.pid; exec sleep 600' & {}; echo started; sleep 300",
        wait_for("held.pid")
    );
    let s = setup(
        &[],
        json!([{ "name": "bash", "input": { "command": command, "timeout_secs": 2 } }]),
    );
    let results = run(&s);
    assert_eq!(
        results[0]["content"],
        "timed_out: the command ran longer than 2 s; eve killed it\nnote: eve also killed 1 other process the command had started\n<stdout>\nstarted\n</stdout>"
    );
    assert_eq!(results[0]["is_error"], true);
    assert!(!running_sleep(pid_in(&s, "held.pid")));
}

#[test]
fn a_setsid_daemon_does_not_outlive_a_bash_call() {
    let command = format!(
        "setsid sh -c 'read -r p _ < /proc/self/stat; echo $p > daemon.pid; exec sleep 600' < /dev/null > /dev/null 2>&1 & {}; echo started",
        wait_for("daemon.pid")
    );
    let s = setup(
        &[],
        json!([{ "name": "bash", "input": { "command": command } }]),
    );
    let results = run(&s);
    assert_eq!(
        results[0]["content"],
        "exit code: 0\nnote: 1 background process started by the command was still running when it exited; eve killed it (nothing a call starts outlives it)\n<stdout>\nstarted\n</stdout>"
    );
    assert!(!running_sleep(pid_in(&s, "daemon.pid")));
}

#[cfg(target_os = "linux")]
#[test]
fn in_the_sandbox_a_command_cannot_kill_its_supervisor_or_eve() {
    let s = setup(
        &[],
        json!([{ "name": "bash", "input": { "command": "kill -9 $PPID" } }]),
    );
    let results = run(&s);
    let content = results[0]["content"].as_str().unwrap();
    if content.starts_with("cannot wait for bash") {
        eprintln!("skipped: no Landlock signal scoping on this kernel (ABI 6): {content}");
        return;
    }
    assert!(
        content.starts_with("exit code: 1\n") && content.contains("Operation not permitted"),
        "{content}"
    );
}

#[test]
fn a_setsid_daemon_does_not_outlive_a_command_tool() {
    let script = format!(
        "setsid sh -c 'read -r p _ < /proc/self/stat; echo $p > daemon.pid; exec sleep 600' < /dev/null > /dev/null 2>&1 & {}; echo started",
        wait_for("daemon.pid")
    );
    let tool = format!(
        "description = \"Starts a daemon\"\ncommand = [\"sh\", \"-c\", {}]\n[input_schema]\ntype = \"object\"\n",
        toml_string(&script)
    );
    let s = setup(
        &[("daemonize", &tool)],
        json!([{ "name": "daemonize", "input": {} }]),
    );
    let results = run(&s);
    assert_eq!(
        results[0]["content"],
        "started\n\nnote: 1 background process started by the command was still running when it exited; eve killed it (nothing a call starts outlives it)"
    );
    assert!(!running_sleep(pid_in(&s, "daemon.pid")));
}

#[test]
fn a_command_that_kills_its_supervisor_still_leaves_nothing_behind() {
    let command = format!(
        "setsid sh -c 'read -r p _ < /proc/self/stat; echo $p > escaped.pid; exec sleep 600' < /dev/null > /dev/null 2>&1 & {}; kill -9 $PPID; sleep 1",
        wait_for("escaped.pid")
    );
    let s = setup(
        &[],
        json!([{ "name": "bash", "input": { "command": command } }]),
    );
    // In the sandbox a command cannot signal its supervisor at all (Landlock's signal
    // scope); without it, this is the last line of defence.
    let toml = s.dir.join("agent.toml");
    let text = std::fs::read_to_string(&toml).unwrap();
    std::fs::write(&toml, format!("{text}[sandbox]\nmode = \"off\"\n")).unwrap();
    let results = run(&s);
    let content = results[0]["content"].as_str().unwrap();
    if content.starts_with("cannot wait for bash") {
        // No PID namespace here: the supervisor could be killed, and eve hunted the rest.
        assert!(
            content.starts_with(
                "cannot wait for bash: its supervisor was killed, so its exit status is unknown\n"
            ),
            "{content}"
        );
        assert!(
            content
                .contains("warning: a process of the command killed eve's supervisor of the call"),
            "{content}"
        );
    } else {
        // The supervisor is the init of the call's PID namespace: SIGKILL from inside it
        // does not reach it.
        assert!(
            content.starts_with("exit code: 0\nnote: 1 background process started by the command was still running when it exited; eve killed it"),
            "{content}"
        );
    }
    assert!(!running_sleep(pid_in(&s, "escaped.pid")));
}

fn toml_string(text: &str) -> String {
    toml_edit::Value::from(text).to_string()
}
