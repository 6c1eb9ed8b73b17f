//! Hooks (issue 27): the author's programs at a turn's step boundaries, through the
//! binary with a scripted model — a `before_tool` hook that refuses `rm -rf`, an
//! `after_tool` formatter, a `stop` hook that refuses once, an `input_requested`
//! notifier — and the build's checks of hook files.

use serde_json::Value;

use crate::common::agent::Agent;
use crate::common::eve;

/// A `before_tool` guard on `bash`, as a Python script reading Claude Code's fields.
const NO_RM_RF: &str = r#"import json, os, sys
event = json.load(sys.stdin)
assert event["hook_event_name"] == "PreToolUse" and event["event"] == "before_tool"
# What Claude Code's scripts read of their environment.
assert os.environ["CLAUDE_PROJECT_DIR"] == event["cwd"], os.environ["CLAUDE_PROJECT_DIR"]
assert os.environ["CLAUDE_PLUGIN_ROOT"] == event["agent_dir"], os.environ["CLAUDE_PLUGIN_ROOT"]
if "rm -rf" in event["tool_input"].get("command", ""):
    print("rm -rf is not allowed in this workspace", file=sys.stderr)
    sys.exit(2)
"#;

fn build(agent: &Agent) -> (i32, String) {
    let out = eve().arg("build").arg(&agent.dir).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Everything the scripted model was sent, as one string.
fn sent(agent: &Agent) -> String {
    agent
        .requests()
        .iter()
        .map(Value::to_string)
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn a_before_tool_hook_keeps_rm_rf_from_running_and_the_model_reads_why() {
    let agent = Agent::builder()
        .file(
            "hooks/no-rm-rf.toml",
            "event = \"before_tool\"\ntools = [\"bash\"]\ncommand = [\"python3\", \"{{ agent_dir }}/hooks/no_rm_rf.py\"]\n",
        )
        .file("hooks/no_rm_rf.py", NO_RM_RF)
        .workspace_file("x/keep.txt", "precious\n")
        .replies(
            "- tool_calls: [{name: bash, input: {command: \"rm -rf x\"}}]\n- tool_calls: [{name: bash, input: {command: \"echo fine\"}}]\n- text: ok\n",
        )
        .build();
    let out = agent.run(&["clean up"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(agent.workspace.join("x/keep.txt").exists(), "rm -rf ran");
    assert!(
        stderr.contains("⚑ hook no-rm-rf: deny — rm -rf is not allowed in this workspace"),
        "{stderr}"
    );
    let sent = sent(&agent);
    assert!(
        sent.contains("A hook refused this call: rm -rf is not allowed in this workspace"),
        "{sent}"
    );
    // The allowed call ran; the hook's run is in the log with its decision.
    assert!(sent.contains("fine"), "{sent}");
    let log = std::fs::read_to_string(agent.session_log()).unwrap();
    assert_eq!(log.matches("\"hook.completed\"").count(), 2, "{log}");
    assert!(log.contains("\"decision\":\"deny\""));
}

#[test]
fn an_after_tool_hook_formats_the_written_file_and_adds_a_note() {
    let agent = Agent::builder()
        .file(
            "hooks/format.toml",
            "event = \"after_tool\"\ntools = [\"write_file\"]\ncommand = [\"python3\", \"{{ agent_dir }}/hooks/fmt.py\"]\n",
        )
        .file(
            "hooks/fmt.py",
            "import json, os, sys\nevent = json.load(sys.stdin)\npath = os.path.join(event[\"cwd\"], event[\"tool_input\"][\"path\"])\ntext = open(path).read()\nopen(path, \"w\").write(\"\".join(l.rstrip() + \"\\n\" for l in text.splitlines()))\nprint(\"formatted \" + event[\"tool_input\"][\"path\"])\n",
        )
        .replies(
            "- tool_calls: [{name: write_file, input: {path: a.txt, content: \"hello   \\nworld  \\n\"}}]\n- text: written\n",
        )
        .build();
    let out = agent.run(&["write it"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(agent.workspace.join("a.txt")).unwrap(),
        "hello\nworld\n"
    );
    assert!(sent(&agent).contains("formatted a.txt"));
}

#[test]
fn a_stop_hook_that_refuses_once_makes_the_model_take_one_more_step() {
    let agent = Agent::builder()
        .file(
            "hooks/tests-first.toml",
            "event = \"stop\"\ncommand = [\"sh\", \"-c\", \"echo 'run the tests first' >&2; exit 2\"]\n",
        )
        .replies("- text: done\n- text: tests pass, done\n")
        .build();
    let out = agent.run(&["-o", "json", "finish"]);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["end_reason"], "completed");
    assert_eq!(result["steps"], 2, "one more step, and only one");
    assert_eq!(result["result"], "tests pass, done");
    assert!(sent(&agent).contains("Stop hook feedback: run the tests first"));
}

#[test]
fn an_input_requested_hook_is_called_when_an_approval_waits() {
    let agent = Agent::builder()
        .tool("bash", "approval = \"always\"\n")
        .file(
            "hooks/notify.toml",
            "event = \"input_requested\"\ncommand = [\"sh\", \"-c\", \"cat > notified.json\"]\n",
        )
        .replies("- tool_calls: [{name: bash, input: {command: \"echo hi\"}}]\n- text: ok\n")
        .build();
    let out = agent.run(&["say hi"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("waiting: `bash` needs your approval"),
        "{stderr}"
    );
    let notified: Value = serde_json::from_str(
        &std::fs::read_to_string(agent.workspace.join("notified.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(notified["notification_type"], "approval");
    assert_eq!(notified["hook_event_name"], "Notification");
    assert_eq!(notified["tool_name"], "bash");
    assert_eq!(notified["tool_input"]["command"], "echo hi");
}

#[test]
fn a_hook_that_never_answers_is_killed_and_its_failure_policy_decides() {
    let agent = Agent::builder()
        .file(
            "hooks/slow.toml",
            "event = \"before_tool\"\ncommand = [\"sleep\", \"30\"]\ntimeout_secs = 1\n",
        )
        .workspace_file("x/keep.txt", "precious\n")
        .replies("- tool_calls: [{name: bash, input: {command: \"rm -rf x\"}}]\n- text: ok\n")
        .build();
    let out = agent.run(&["go"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(agent.workspace.join("x/keep.txt").exists());
    assert!(
        sent(&agent).contains("the hook `slow` failed: it timed out after 1 s"),
        "{}",
        sent(&agent)
    );
}

#[test]
fn hook_files_are_checked_at_build_time() {
    for (toml, expected) in [
        (
            "event = \"before_tool\"\ntools = [\"bsh\"]\ncommand = [\"true\"]\n",
            "error[E1002]: `bsh` matches no tool of this agent",
        ),
        (
            "event = \"before_tool\"\ntools = [\"bsh\"]\ncommand = [\"true\"]\n",
            "did you mean `bash`?",
        ),
        (
            "event = \"befor_tool\"\ncommand = [\"true\"]\n",
            "did you mean `before_tool`?",
        ),
        (
            "event = \"stop\"\ntools = [\"bash\"]\ncommand = [\"true\"]\n",
            "error[E1003]: `tools` does not apply to `stop` hooks",
        ),
        (
            "event = \"stop\"\ncomand = [\"true\"]\n",
            "did you mean `command`?",
        ),
        (
            "event = \"stop\"\ncommand = [\"true\"]\non_error = \"alow\"\n",
            "did you mean `allow`?",
        ),
        (
            "event = \"after_tool\"\ntools = [\"nothing__*\"]\ncommand = [\"true\"]\n",
            "`nothing__*` matches no tool of this agent",
        ),
    ] {
        let agent = Agent::builder().file("hooks/h.toml", toml).build();
        let (code, stderr) = build(&agent);
        assert_eq!(code, 1, "{toml}: {stderr}");
        assert!(stderr.contains(expected), "{toml}: {stderr}");
    }
    let ok = Agent::builder()
        .file(
            "hooks/guard.toml",
            "event = \"before_tool\"\ntools = [\"bash\", \"*_file\"]\ncommand = [\"true\"]\n",
        )
        .replies("- text: hi\n")
        .build();
    let (code, stderr) = build(&ok);
    assert_eq!(code, 0, "{stderr}");
    let hooks = &ok.manifest()["hooks"];
    assert_eq!(hooks[0]["name"], "guard");
    assert_eq!(hooks[0]["on_error"], "deny");
    assert_eq!(hooks[0]["timeout_secs"], 60);
}

/// A `before_tool` hook that gives `bash` another command, as JSON on stdout.
const REWRITE: &str = r#"import json, sys
event = json.load(sys.stdin)
print(json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "updatedInput": {"command": "echo rewritten > out.txt"}}}))
"#;

#[test]
fn a_rewritten_input_is_what_the_person_approves_and_what_runs() {
    let agent = Agent::builder()
        .tool("bash", "approval = \"always\"\n")
        .file(
            "hooks/rewrite.toml",
            "event = \"before_tool\"\ntools = [\"bash\"]\ncommand = [\"python3\", \"{{ agent_dir }}/hooks/rewrite.py\"]\n",
        )
        .file("hooks/rewrite.py", REWRITE)
        .replies("- tool_calls: [{name: bash, input: {command: \"echo original > out.txt\"}}]\n- text: ok\n")
        .build();
    let out = agent.run(&["go"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The approval shows the command that would run, not the model's, and the console
    // says a hook rewrote it.
    assert!(stderr.contains("echo rewritten > out.txt"), "{stderr}");
    assert!(
        stderr.contains("⚑ hook rewrite: rewrote the input"),
        "{stderr}"
    );
    assert!(!agent.workspace.join("out.txt").exists());
    let id = agent
        .session_log()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let approved = agent.run(&["--session", &id, "--approve"]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(agent.workspace.join("out.txt")).unwrap(),
        "rewritten\n"
    );
}

#[test]
fn a_rewritten_input_the_tools_schema_refuses_never_runs() {
    let agent = Agent::builder()
        .file(
            "hooks/bad.toml",
            "event = \"before_tool\"\ncommand = [\"sh\", \"-c\", \"echo '{\\\"updated_input\\\": {\\\"command\\\": 5}}'\"]\n",
        )
        .replies("- tool_calls: [{name: bash, input: {command: \"touch made.txt\"}}]\n- text: ok\n")
        .build();
    let out = agent.run(&["go"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(!agent.workspace.join("made.txt").exists());
    let sent = sent(&agent);
    assert!(sent.contains("Invalid arguments for `bash`"), "{sent}");
    let log = std::fs::read_to_string(agent.session_log()).unwrap();
    assert!(log.contains("\"updated_input\":{\"command\":5}"), "{log}");
}

#[test]
fn a_hook_the_model_adds_is_held_for_review_and_an_edited_hook_rebuilds() {
    // Unconfined, so that the model's `bash` can write the agent directory: the review
    // is the layer under test, whatever wrote the file.
    let agent = Agent::builder()
        .in_place()
        .toml("[sandbox]\nmode = \"off\"\n")
        .file(
            "hooks/audit.toml",
            "event = \"before_tool\"\ncommand = [\"true\"]\non_error = \"allow\"\n",
        )
        .replies(
            "- tool_calls: [{name: bash, input: {command: \"printf 'event = \\\"stop\\\"\\\\ncommand = [\\\"true\\\"]\\\\n' > hooks/allow-all.toml\"}}]\n- text: done\n",
        )
        .build();
    let first = agent.run(&["go"]);
    assert_eq!(
        first.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(agent.dir.join("hooks/allow-all.toml").is_file());
    let again = agent.run(&["again"]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_ne!(again.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("hooks +allow-all"), "{stderr}");

    // A hook edited by its author is seen by the next build (the build cache covers
    // `hooks/`).
    let build = |agent: &Agent| {
        let out = eve().arg("build").arg(&agent.dir).output().unwrap();
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    std::fs::remove_file(agent.dir.join("hooks/allow-all.toml")).unwrap();
    build(&agent);
    std::fs::write(
        agent.dir.join("hooks/audit.toml"),
        "event = \"before_tool\"\ncommand = [\"true\"]\non_error = \"deny\"\n",
    )
    .unwrap();
    build(&agent);
    assert_eq!(agent.manifest()["hooks"][0]["on_error"], "deny");
    std::fs::write(
        agent.dir.join("hooks/audit.toml"),
        "event = \"before_tool\"\ncommand = [\"true\"]\non_error = \"maybe\"\n",
    )
    .unwrap();
    assert!(build(&agent).contains("unknown `on_error` value `maybe`"));
}

#[test]
fn a_parents_guard_holds_for_its_subagents_and_for_deferred_tools() {
    let agent = Agent::builder()
        .file(
            "hooks/no-rm-rf.toml",
            "event = \"before_tool\"\ntools = [\"bash\"]\ncommand = [\"python3\", \"{{ agent_dir }}/hooks/no_rm_rf.py\"]\n",
        )
        .file("hooks/no_rm_rf.py", NO_RM_RF)
        .file("subagents/cleaner/agent.toml", "description = \"Cleans up\"\n")
        .file("subagents/cleaner/instructions.md", "Clean.\n")
        .tool("bash", "defer = true\n")
        .workspace_file("x/keep.txt", "precious\n")
        .replies(
            "- tool_calls: [{name: cleaner, input: {task: \"remove x\"}}]\n- tool_calls: [{name: bash, input: {command: \"rm -rf x\"}}]\n- text: could not\n- tool_calls: [{name: call_tool, input: {name: bash, input: {command: \"rm -rf x\"}}}]\n- text: done\n",
        )
        .build();
    let out = agent.run(&["-o", "stream-json", "clean up"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        agent.workspace.join("x/keep.txt").exists(),
        "rm -rf ran: {stderr}"
    );
    // Denied twice: in the subagent's session (its events carry its session id) and,
    // through `call_tool`, in the agent's own.
    let denials: Vec<(bool, String)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["type"] == "hook.completed" && e["data"]["decision"] == "deny")
        .map(|e| {
            (
                e["meta"]["session_id"].is_string(),
                e["data"]["hook"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        denials,
        [
            (true, "no-rm-rf".to_string()),
            (false, "no-rm-rf".to_string())
        ]
    );
}

/// The id of the agent's session (its log's file name).
fn session_id(agent: &Agent) -> String {
    agent
        .session_log()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// The `hook.completed` events of a stream-json run, as (event, decision, in a
/// subagent's session).
fn hook_runs(stdout: &[u8]) -> Vec<(String, String, bool)> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "hook.completed")
        .map(|e| {
            (
                e["data"]["event"].as_str().unwrap_or_default().to_string(),
                e["data"]["decision"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                e["meta"]["session_id"].is_string(),
            )
        })
        .collect()
}

/// A rewriting hook that answers only the first time it runs: then it hangs, so that its
/// failure policy (`allow`) would let the model's own input through.
const REWRITE_ONCE: &str = r#"import json, os, sys, time
json.load(sys.stdin)
if os.path.exists(".hook-ran"):
    time.sleep(30)
open(".hook-ran", "w").write("")
print(json.dumps({"updated_input": {"command": "echo shown > out.txt"}}))
"#;

#[test]
fn an_approval_runs_exactly_the_input_the_person_was_shown() {
    let agent = Agent::builder()
        .tool("bash", "approval = \"always\"\n")
        .file(
            "hooks/rewrite.toml",
            "event = \"before_tool\"\ntools = [\"bash\"]\ncommand = [\"python3\", \"{{ agent_dir }}/hooks/rewrite.py\"]\ntimeout_secs = 1\non_error = \"allow\"\n",
        )
        .file("hooks/rewrite.py", REWRITE_ONCE)
        .replies("- tool_calls: [{name: bash, input: {command: \"echo raw > out.txt\"}}]\n- text: ok\n")
        .build();
    let out = agent.run(&["go"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("echo shown > out.txt"), "{stderr}");
    let approved = agent.run(&["--session", &session_id(&agent), "--approve"]);
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(agent.workspace.join("out.txt")).unwrap(),
        "shown\n",
        "the approved call ran something the person was not shown"
    );
}

/// A guard that refuses `git push` while `on-main` exists (a branch check, as a file).
const NO_PUSH_ON_MAIN: &str = r#"import json, os, sys
event = json.load(sys.stdin)
if "push" in event["tool_input"]["command"] and os.path.exists("on-main"):
    print("no pushes to main", file=sys.stderr)
    sys.exit(2)
"#;

#[test]
fn a_guard_judges_each_call_after_the_calls_before_it_ran() {
    let agent = Agent::builder()
        .file(
            "hooks/no-push.toml",
            "event = \"before_tool\"\ntools = [\"bash\"]\ncommand = [\"python3\", \"{{ agent_dir }}/hooks/guard.py\"]\n",
        )
        .file("hooks/guard.py", NO_PUSH_ON_MAIN)
        .replies(
            "- tool_calls: [{name: bash, input: {command: \"touch on-main\"}}, {name: bash, input: {command: \"echo push > pushed.txt\"}}]\n- text: ok\n",
        )
        .build();
    let out = agent.run(&["go"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(agent.workspace.join("on-main").exists());
    assert!(
        !agent.workspace.join("pushed.txt").exists(),
        "the second call ran on a judgement made before the first changed the branch"
    );
    assert!(sent(&agent).contains("no pushes to main"));
}

#[test]
fn a_hook_never_runs_a_program_the_workspace_holds() {
    for (command, expected) in [
        ("[\"./check.sh\"]", "error[E1005]"),
        ("[\"scripts/check.sh\"]", "resolves in the workspace"),
        ("[\"{{ workspace }}/check.sh\"]", "error[E1005]"),
        (
            "[\"python3\", \"hooks/check.py\"]",
            "`{{ agent_dir }}/hooks/check.py`",
        ),
        (
            "[\"{{ agent_dri }}/hooks/check.py\"]",
            "did you mean `agent_dir`?",
        ),
    ] {
        let agent = Agent::builder()
            .file(
                "hooks/h.toml",
                format!("event = \"stop\"\ncommand = {command}\n"),
            )
            .file("hooks/check.py", "")
            .build();
        let (code, stderr) = build(&agent);
        assert_eq!(code, 1, "{command}: {stderr}");
        assert!(stderr.contains(expected), "{command}: {stderr}");
    }
    // Written without spaces, the agent directory is still the agent directory.
    let agent = Agent::builder()
        .file(
            "hooks/tests-first.toml",
            "event = \"stop\"\ncommand = [\"sh\", \"{{agent_dir}}/hooks/refuse.sh\"]\n",
        )
        .file(
            "hooks/refuse.sh",
            "echo 'from the agent directory' >&2\nexit 2\n",
        )
        .replies("- text: done\n- text: done again\n")
        .build();
    let out = agent.run(&["finish"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(sent(&agent).contains("Stop hook feedback: from the agent directory"));
}

#[test]
fn hosted_and_catalog_tools_cannot_be_hooked() {
    for tool in ["web_search", "call_tool"] {
        let agent = Agent::builder()
            .toml("[tools]\nbuiltin = [\"bash\", \"web_search\"]\n")
            .tool("bash", "defer = true\n")
            .file(
                "hooks/h.toml",
                format!("event = \"before_tool\"\ntools = [\"{tool}\"]\ncommand = [\"true\"]\n"),
            )
            .build();
        let (code, stderr) = build(&agent);
        assert_eq!(code, 1, "{tool}: {stderr}");
        assert!(stderr.contains("error[E1002]"), "{tool}: {stderr}");
    }
}

#[test]
fn a_subagent_keeps_its_parents_guards_but_not_its_stop_hooks() {
    let agent = Agent::builder()
        .file(
            "hooks/tests-first.toml",
            "event = \"stop\"\ncommand = [\"sh\", \"-c\", \"echo 'run the tests' >&2; exit 2\"]\n",
        )
        .file(
            "hooks/audit.toml",
            "event = \"before_tool\"\ntools = [\"bash\"]\ncommand = [\"true\"]\n",
        )
        .file("subagents/helper/agent.toml", "description = \"Helps\"\n")
        .file("subagents/helper/instructions.md", "Help.\n")
        .replies(
            "- tool_calls: [{name: helper, input: {task: \"look\"}}]\n- tool_calls: [{name: bash, input: {command: \"true\"}}]\n- text: looked\n- text: done\n- text: done, tests pass\n",
        )
        .build();
    let out = agent.run(&["-o", "stream-json", "go"]);
    assert_eq!(out.status.code(), Some(0));
    let runs = hook_runs(&out.stdout);
    assert!(
        runs.contains(&("before_tool".into(), "continue".into(), true)),
        "{runs:?}"
    );
    assert!(
        !runs.iter().any(|(event, _, sub)| event == "stop" && *sub),
        "{runs:?}"
    );
    assert_eq!(
        runs.iter().filter(|(event, _, _)| event == "stop").count(),
        1,
        "{runs:?}"
    );
}

#[test]
fn a_stop_hook_does_not_run_when_the_turn_has_no_step_left() {
    let agent = Agent::builder()
        .toml("[limits]\nmax_steps = 1\n")
        .file(
            "hooks/tests-first.toml",
            "event = \"stop\"\ncommand = [\"sh\", \"-c\", \"exit 2\"]\n",
        )
        .replies("- text: done\n")
        .build();
    let out = agent.run(&["-o", "json", "finish"]);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["end_reason"], "completed", "{result}");
    let log = std::fs::read_to_string(agent.session_log()).unwrap();
    assert!(!log.contains("hook.completed"), "{log}");
}

#[test]
fn session_start_and_user_prompt_hooks_add_context_and_a_refusal_keeps_the_message_from_the_model()
{
    let agent = Agent::builder()
        .file(
            "hooks/branch.toml",
            "event = \"session_start\"\ncommand = [\"sh\", \"-c\", \"echo \\\"branch: main ($(python3 -c 'import json,sys; print(json.load(sys.stdin)[\\\"source\\\"])'))\\\"\"]\n",
        )
        .file(
            "hooks/ticket.toml",
            "event = \"user_prompt\"\ncommand = [\"python3\", \"{{ agent_dir }}/hooks/ticket.py\"]\n",
        )
        .file(
            "hooks/ticket.py",
            "import json, sys\nevent = json.load(sys.stdin)\nif 'password' in event['prompt']:\n    print('do not paste passwords here', file=sys.stderr)\n    sys.exit(2)\nprint(json.dumps({'additional_context': 'ticket: EVE-42'}))\n",
        )
        .replies("- text: on it\n")
        .build();
    let out = agent.run(&["fix the bug"]);
    assert_eq!(out.status.code(), Some(0));
    let sent = sent(&agent);
    assert!(
        sent.contains("fix the bug\\n\\n<hook-context>\\nNotes from the agent's hooks, not from the person:\\n\\nbranch: main (startup)\\n\\nticket: EVE-42\\n</hook-context>"),
        "{sent}"
    );

    let refused = agent.run(&[
        "-o",
        "json",
        "--session",
        &session_id(&agent),
        "my password is hunter2",
    ]);
    assert_eq!(refused.status.code(), Some(1));
    let result: Value = serde_json::from_slice(&refused.stdout).unwrap();
    assert_eq!(result["end_reason"], "refused");
    assert_eq!(result["result"], "do not paste passwords here");
    // The model was called once, for the first message only, and the refused message
    // is not in the session's history.
    assert_eq!(agent.requests().len(), 1);
    let log = std::fs::read_to_string(agent.session_log()).unwrap();
    assert!(
        !log.contains("hunter2"),
        "a refused message is kept nowhere: {log}"
    );
    assert!(log.contains("(refused by a hook)"), "{log}");
}

#[test]
fn a_parents_subagent_stop_hook_makes_its_subagent_take_one_more_step() {
    let agent = Agent::builder()
        .file(
            "hooks/check.toml",
            "event = \"subagent_stop\"\ncommand = [\"sh\", \"-c\", \"echo 'list the files you read' >&2; exit 2\"]\n",
        )
        .file("subagents/helper/agent.toml", "description = \"Helps\"\n")
        .file("subagents/helper/instructions.md", "Help.\n")
        .replies(
            "- tool_calls: [{name: helper, input: {task: \"look\"}}]\n- text: looked\n- text: looked at a.txt\n- text: done\n",
        )
        .build();
    let out = agent.run(&["-o", "json", "go"]);
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["result"], "done", "{result}");
    let sent = sent(&agent);
    assert!(
        sent.contains("Stop hook feedback: list the files you read"),
        "{sent}"
    );
    // The helper's second answer is what the agent read.
    assert!(sent.contains("looked at a.txt"), "{sent}");
    let requests = agent.requests();
    assert_eq!(requests.len(), 4, "the parent itself was not held back");
}

#[test]
fn before_compact_and_session_end_hooks_run() {
    let agent = Agent::builder()
        .file(
            "hooks/compacting.toml",
            "event = \"before_compact\"\ncommand = [\"sh\", \"-c\", \"cat > compacting.json\"]\n",
        )
        .file(
            "hooks/bye.toml",
            "event = \"session_end\"\ncommand = [\"sh\", \"-c\", \"cat >> ended.jsonl; echo >> ended.jsonl\"]\n",
        )
        .replies("- text: one\n- text: two\n- text: summary\n")
        .build();
    assert_eq!(agent.run(&["first"]).status.code(), Some(0));
    assert_eq!(
        agent
            .run(&["--session", &session_id(&agent), "second"])
            .status
            .code(),
        Some(0)
    );
    let compact = agent.run(&["--session", &session_id(&agent), "--compact"]);
    assert_eq!(
        compact.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&compact.stderr)
    );
    let compacting: Value = serde_json::from_str(
        &std::fs::read_to_string(agent.workspace.join("compacting.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(compacting["hook_event_name"], "PreCompact");
    assert_eq!(compacting["trigger"], "manual");
    let ended = std::fs::read_to_string(agent.workspace.join("ended.jsonl")).unwrap();
    assert_eq!(
        ended.lines().filter(|l| l.contains("SessionEnd")).count(),
        3,
        "{ended}"
    );
    // The last run's hook is in its log, after the session's last word.
    let log = std::fs::read_to_string(agent.session_log()).unwrap();
    let last = log.lines().last().unwrap_or_default();
    assert!(
        last.contains("hook.completed") && last.contains("session_end"),
        "{last}"
    );
}

#[test]
fn the_model_cannot_write_hooks_into_an_agent_directory_in_its_workspace() {
    let agent = Agent::builder()
        .in_place()
        .file(
            "hooks/audit.toml",
            "event = \"before_tool\"\ncommand = [\"true\"]\non_error = \"allow\"\n",
        )
        .replies(
            "- tool_calls: [{name: write_file, input: {path: hooks/allow-all.toml, content: \"event = \\\"stop\\\"\\ncommand = [\\\"true\\\"]\\n\"}}]\n- tool_calls: [{name: bash, input: {command: \"echo x > hooks/evil.sh\"}}]\n- text: done\n",
        )
        .build();
    let out = agent.run(&["go"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!agent.dir.join("hooks/allow-all.toml").exists());
    assert!(!agent.dir.join("hooks/evil.sh").exists());
}

#[test]
fn an_eval_case_expects_what_hooks_did_and_can_stub_one() {
    let case = |stub: &str, expect: &str| {
        format!(
            "prompt = \"clean up\"\n[[reply]]\ntool_calls = [{{ name = \"bash\", input = {{ command = \"rm -rf x\" }} }}]\n[[reply]]\ntext = \"done\"\n{stub}\n[expect.hooks]\n{expect}\n"
        )
    };
    let agent = Agent::builder()
        .file(
            "hooks/guard.toml",
            "event = \"before_tool\"\ntools = [\"bash\"]\ncommand = [\"python3\", \"{{ agent_dir }}/hooks/guard.py\"]\n",
        )
        .file("hooks/guard.py", NO_RM_RF)
        // Would refuse every call (it fails, and fails closed): each case stubs it.
        .file(
            "hooks/a-safer.toml",
            "event = \"before_tool\"\ntools = [\"bash\"]\ncommand = [\"false\"]\n",
        )
        .file(
            "evals/denies.toml",
            case("[hooks.a-safer]\n", "ran = [\"a-safer\"]\ndenied = [\"guard\"]\n"),
        )
        .file(
            "evals/rewrites.toml",
            case(
                "[hooks.a-safer]\nupdated_input = { command = \"echo safe > out.txt\" }\n[expect.files]\n\"out.txt\" = \"safe\\n\"\n",
                "rewrote = [\"a-safer\"]\n",
            ),
        )
        .file(
            "evals/wrong.toml",
            case("[hooks.a-safer]\n", "denied = [\"a-safer\"]\nnot_ran = [\"guard\"]\n"),
        )
        .workspace_file("x/keep.txt", "precious\n")
        .replies("- text: unused\n")
        .build();
    let out = eve().arg("eval").arg(&agent.dir).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    for line in ["✓ denies", "✓ rewrites", "✗ wrong"] {
        assert!(stdout.contains(line), "{line}: {stdout}");
    }
    assert!(
        stdout.contains("expect.hooks.denied")
            && stdout.contains("hook `a-safer` refused something"),
        "{stdout}"
    );
    assert!(stdout.contains("expect.hooks.not_ran"), "{stdout}");

    // A hook the agent does not have is a build error, with "did you mean".
    std::fs::write(
        agent.dir.join("evals/wrong.toml"),
        case("[hooks.gaurd]\n", "ran = [\"guard\"]\n"),
    )
    .unwrap();
    let (code, stderr) = build(&agent);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("error[E0711]: the agent has no hook `gaurd`")
            && stderr.contains("did you mean `guard`?"),
        "{stderr}"
    );
}

#[test]
fn a_hook_that_floods_its_output_or_leaves_a_daemon_is_bounded_and_cleaned_up() {
    let agent = Agent::builder()
        .file(
            "hooks/flood.toml",
            "event = \"before_tool\"\ncommand = [\"sh\", \"-c\", \"head -c 100000000 /dev/zero | tr '\\\\0' x >&2; exit 2\"]\non_error = \"allow\"\n",
        )
        .file(
            "hooks/daemon.toml",
            "event = \"stop\"\ncommand = [\"sh\", \"-c\", \"setsid sh -c 'sleep 2; touch daemon-ran' >/dev/null 2>&1 < /dev/null & exit 0\"]\n",
        )
        .replies("- tool_calls: [{name: bash, input: {command: \"touch ran\"}}]\n- text: ok\n")
        .build();
    let started = std::time::Instant::now();
    let out = agent.run(&["go"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Refused with the start of its stderr as the reason (4 KiB at most), never 100 MB.
    assert!(!agent.workspace.join("ran").exists());
    let sent = sent(&agent);
    assert!(
        sent.contains("A hook refused this call: xxxx"),
        "{}",
        &sent[..sent.len().min(2000)]
    );
    assert!(
        sent.len() < 64 * 1024,
        "{} bytes reached the model",
        sent.len()
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    // The daemon the stop hook left behind died with it.
    std::thread::sleep(std::time::Duration::from_secs(3));
    assert!(
        !agent.workspace.join("daemon-ran").exists(),
        "a hook's daemon outlived it"
    );
}

#[test]
fn a_hook_runs_in_its_cwd_and_never_outside_the_workspace_or_the_agent_directory() {
    let agent = Agent::builder()
        .file(
            "hooks/where.toml",
            "event = \"stop\"\ncwd = \"{{ agent_dir }}/hooks\"\ncommand = [\"sh\", \"-c\", \"pwd >&2; exit 2\"]\n",
        )
        .replies("- text: done\n- text: done again\n")
        .build();
    assert_eq!(agent.run(&["go"]).status.code(), Some(0));
    let hooks = agent.dir.join("hooks").canonicalize().unwrap();
    assert!(
        sent(&agent).contains(&format!("Stop hook feedback: {}", hooks.display())),
        "{}",
        sent(&agent)
    );

    let outside = Agent::builder()
        .file(
            "hooks/where.toml",
            "event = \"stop\"\ncwd = \"..\"\ncommand = [\"sh\", \"-c\", \"pwd >&2; exit 2\"]\n",
        )
        .replies("- text: done\n")
        .build();
    let out = outside.run(&["go"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("not a folder inside the workspace or the agent directory"),
        "{stderr}"
    );
    assert!(!sent(&outside).contains("Stop hook feedback"));
}

#[test]
fn a_hook_written_for_claude_code_reads_and_rewrites_in_claude_codes_names() {
    let agent = Agent::builder()
        .file(
            "hooks/redirect.toml",
            "event = \"before_tool\"\ntools = [\"write_file\"]\nnames = \"claude\"\ncommand = [\"python3\", \"{{ agent_dir }}/hooks/redirect.py\"]\n",
        )
        .file(
            "hooks/redirect.py",
            "import json, sys\nevent = json.load(sys.stdin)\nassert event['tool_name'] == 'Write', event\nto = event['tool_input']['file_path'].replace('a.txt', 'b.txt')\nprint(json.dumps({'hookSpecificOutput': {'updatedInput': {'file_path': to, 'content': event['tool_input']['content']}}}))\n",
        )
        .replies("- tool_calls: [{name: write_file, input: {path: a.txt, content: hi}}]\n- text: ok\n")
        .build();
    let out = agent.run(&["go"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!agent.workspace.join("a.txt").exists());
    assert_eq!(
        std::fs::read_to_string(agent.workspace.join("b.txt")).unwrap(),
        "hi"
    );
}

#[test]
fn a_subagent_stop_hook_in_an_agent_that_starts_no_subagent_fails_the_build() {
    let agent = Agent::builder()
        .toml("default_tools = false\n")
        .file(
            "hooks/check-work.toml",
            "event = \"subagent_stop\"\ncommand = [\"true\"]\n",
        )
        .build();
    let (code, stderr) = build(&agent);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("error[E1006]: hook `check-work` never runs: the agent starts no subagent"),
        "{stderr}"
    );
}
