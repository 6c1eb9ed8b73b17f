//! Durable sessions end to end: parking and resuming, crashes and repair, compaction,
//! conversation mode, limits, and `eve sessions`.

use std::path::Path;
use std::time::Duration;

use crate::common::mock::{MockServer, Reply, anthropic_reply};
use crate::common::{Agent, eve};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn json_out(output: &std::process::Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&output.stdout)))
}

/// The tool results of the last message of a logged request.
fn last_results(request: &Value) -> Value {
    request["messages"].as_array().unwrap().last().unwrap()["results"].clone()
}

#[test]
fn a_question_parks_the_run_with_exit_3_and_answer_resumes_the_same_turn() {
    let agent = Agent::builder()
        .replies("- text: One question first.\n  tool_calls:\n    - {name: ask_question, input: {question: Which database?, options: [postgres, sqlite]}}\n- text: Using sqlite.\n")
        .build();
    let parked = agent.run(&["set up storage", "-o", "json"]);
    assert_eq!(parked.status.code(), Some(3), "{}", stderr(&parked));
    let result = json_out(&parked);
    assert_eq!(result["end_reason"], "waiting");
    let session = result["session_id"].as_str().unwrap().to_string();
    assert_eq!(result["pending"]["kind"], "question");
    assert_eq!(result["pending"]["question"], "Which database?");
    assert_eq!(result["pending"]["options"], json!(["postgres", "sqlite"]));
    let call_id = result["pending"]["call_id"].as_str().unwrap().to_string();

    // A new message cannot skip the question.
    let refused = agent.run(&["--session", &session, "something else"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("is waiting for a person"),
        "{}",
        stderr(&refused)
    );

    let answered = agent.run(&["--session", &session, "--answer", "sqlite", "-o", "json"]);
    assert_eq!(answered.status.code(), Some(0), "{}", stderr(&answered));
    let result = json_out(&answered);
    assert_eq!(result["result"], "Using sqlite.");
    assert_eq!(result["session_id"], session.as_str());
    // The resumed request carries the answer as the result of the question's call.
    let requests = agent.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        last_results(&requests[1]),
        json!([{"call_id": call_id, "name": "ask_question", "content": "sqlite", "is_error": false}])
    );

    // The session log tells the whole exchange.
    let show = eve()
        .args(["sessions", "show", &session, agent.dir.to_str().unwrap()])
        .output()
        .unwrap();
    let transcript = String::from_utf8_lossy(&show.stdout);
    for part in [
        "> set up storage",
        "? Which database?",
        "    2. sqlite",
        "  answer: sqlite",
        "Using sqlite.",
        "status: completed",
    ] {
        assert!(
            transcript.contains(part),
            "missing {part:?} in:\n{transcript}"
        );
    }
    let list = eve()
        .args(["sessions", "list", agent.dir.to_str().unwrap()])
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    assert!(
        list.contains(&session) && list.contains("completed") && list.contains("set up storage"),
        "{list}"
    );
    let replay = eve()
        .args([
            "sessions",
            "show",
            &session,
            agent.dir.to_str().unwrap(),
            "-o",
            "stream-json",
        ])
        .output()
        .unwrap();
    let types: Vec<String> = String::from_utf8_lossy(&replay.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    for t in [
        "input.requested",
        "turn.waiting",
        "input.resolved",
        "turn.completed",
    ] {
        assert!(types.iter().any(|x| x == t), "{t} not in {types:?}");
    }
    let rm = eve()
        .args(["sessions", "rm", &session, agent.dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(rm.status.success());
    assert!(agent.sessions().is_empty());
}

#[test]
fn approvals_park_and_deny_tells_the_model_why_while_yes_approves_everything() {
    let script = "- tool_calls: [{name: deploy, input: {target: prod}}]\n- text: Not deployed.\n";
    let tool = "description = \"Deploys\"\napproval = \"always\"\ncommand = [\"sh\", \"-c\", \"touch deployed\"]\n[input_schema]\ntype = \"object\"\nproperties.target = { type = \"string\" }\n";
    let agent = Agent::builder().replies(script).build();
    std::fs::write(agent.dir.join("tools/deploy.toml"), tool).unwrap();
    let parked = agent.run(&["ship it"]);
    assert_eq!(parked.status.code(), Some(3));
    assert!(
        stderr(&parked).contains("\"target\": \"prod\""),
        "{}",
        stderr(&parked)
    );
    let denied = agent.run(&["--continue", "--deny", "--reason", "not on a Friday"]);
    assert_eq!(denied.status.code(), Some(0), "{}", stderr(&denied));
    assert!(!agent.workspace.join("deployed").exists());
    let results = last_results(&agent.requests()[1]);
    assert_eq!(
        results[0]["content"],
        "The user denied this call: not on a Friday"
    );
    assert_eq!(results[0]["is_error"], true);

    let unattended = Agent::builder().replies(script).build();
    std::fs::write(unattended.dir.join("tools/deploy.toml"), tool).unwrap();
    let out = unattended.run(&["ship it", "--yes"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(unattended.workspace.join("deployed").exists());
    assert!(
        stderr(&out).contains("approved (--yes)"),
        "{}",
        stderr(&out)
    );
}

#[cfg(unix)]
fn kill_when(mut child: std::process::Child, ready: impl Fn() -> bool) {
    for _ in 0..500 {
        if ready() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(ready(), "eve never reached the point to kill it at");
    child.kill().unwrap();
    child.wait().unwrap();
}

#[cfg(unix)]
#[test]
fn sigkill_while_a_tool_runs_then_continue_repairs_the_log_and_the_next_request_is_valid() {
    let agent = Agent::builder()
        .replies("- text: Running the long job.\n  tool_calls: [{name: bash, input: {command: \"touch started; sleep 60\"}}]\n- text: I will check what happened to the job.\n")
        .build();
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("eve"))
        .env("EVE_SCRIPTED_LOG", agent.dir.join("requests.jsonl"))
        .args([
            "run",
            agent.dir.to_str().unwrap(),
            "run the job",
            "--workspace",
            agent.workspace.to_str().unwrap(),
            "-q",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = agent.workspace.join("started");
    kill_when(child, || started.exists());

    let out = agent.run(&["--continue", "did it finish?"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("note: closed the turn that was interrupted"),
        "{}",
        stderr(&out)
    );
    let requests = agent.requests();
    let next = &requests[1]["messages"];
    // Nothing earlier is lost, the unanswered call has a result, then the new message.
    assert_eq!(next[0], json!({"role": "user", "text": "run the job"}));
    assert_eq!(next[1]["tool_calls"][0]["name"], "bash");
    let results = &next[2]["results"];
    assert_eq!(results[0]["call_id"], next[1]["tool_calls"][0]["id"]);
    assert_eq!(results[0]["is_error"], true);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("eve stopped before this call finished")
    );
    assert_eq!(next[3], json!({"role": "user", "text": "did it finish?"}));
    let list = eve()
        .args(["sessions", "show", "ses_", agent.dir.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&list.stdout)
            .contains("· turn interrupted: eve stopped before this turn ended")
    );
}

#[cfg(unix)]
#[test]
fn sigkill_while_the_model_streams_then_continue_sends_a_valid_request() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("agent");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("agent.toml"),
        "name = \"s\"\nmodel = \"anthropic/claude-test\"\ndefault_tools = false\n",
    )
    .unwrap();
    std::fs::write(dir.join("instructions.md"), "Help.\n").unwrap();
    let mut partial = anthropic_reply("This answer never ends", &[], 1);
    partial.truncate(4);
    let stalled = MockServer::start(vec![Reply::Stall(partial)]);
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("eve"))
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", stalled.url())
        .env("NO_COLOR", "1")
        .args(["run", dir.to_str().unwrap(), "first question", "-q"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    kill_when(child, || !stalled.requests().is_empty());
    std::thread::sleep(Duration::from_millis(100));

    let server = MockServer::start(vec![Reply::Sse(anthropic_reply("Both answered.", &[], 1))]);
    let out = eve()
        .env("ANTHROPIC_API_KEY", "k")
        .env("ANTHROPIC_BASE_URL", server.url())
        .args([
            "run",
            dir.to_str().unwrap(),
            "--continue",
            "second question",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let messages = &server.requests()[0].body["messages"];
    // The two questions form one valid user turn; the cut reply left nothing behind.
    assert_eq!(
        *messages,
        json!([{"role": "user", "content": [
            {"type": "text", "text": "first question"},
            {"type": "text", "text": "second question", "cache_control": {"type": "ephemeral"}},
        ]}])
    );
}

#[test]
fn a_torn_last_line_is_dropped_and_the_session_continues() {
    let agent = Agent::builder()
        .toml("mode = \"conversation\"\n")
        .replies("- text: First.\n- text: Second.\n")
        .build();
    let first = agent.run(&["one"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let log = &agent.sessions()[0];
    let mut text = std::fs::read_to_string(log).unwrap();
    let lines = text.lines().count();
    text.push_str("{\"record\":\"event\",\"event\":{\"type\":\"turn.sta");
    std::fs::write(log, text).unwrap();
    let second = agent.run(&["--continue", "two"]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    assert!(
        stderr(&second).contains("note: dropped a torn last line"),
        "{}",
        stderr(&second)
    );
    let after = std::fs::read_to_string(log).unwrap();
    assert!(after.lines().count() > lines);
    assert!(
        after
            .lines()
            .all(|l| serde_json::from_str::<Value>(l).is_ok()),
        "every line is JSON again"
    );
    // Conversation mode: the second turn sees the first.
    let requests = agent.requests();
    assert_eq!(requests[1]["messages"].as_array().unwrap().len(), 3);
    assert_eq!(
        requests[1]["messages"][1],
        json!({"role": "assistant", "text": "First."})
    );
}

#[test]
fn compaction_summarises_older_history_keeps_the_todo_list_and_clears_read_stamps() {
    let big = format!("{}\n", "x".repeat(79)).repeat(200);
    let agent = Agent::builder()
        .toml("default_tools = false\n[limits]\ncontext_window = 8000\nmax_output_tokens = 500\n[compaction]\nthreshold_percent = 0.5\n")
        .replies("- tool_calls:\n    - {name: todo, input: {todos: [{content: Rewrite big.txt, status: in_progress}]}}\n    - {name: read_file, input: {path: big.txt}}\n  usage: {input_tokens: 300}\n- text: \"Summary: the user wants big.txt rewritten; it holds 8000 x characters.\"\n- tool_calls: [{name: write_file, input: {path: big.txt, content: short}}]\n- text: Done.\n")
        .build();
    std::fs::write(agent.workspace.join("big.txt"), &big).unwrap();
    for tool in ["todo", "read_file", "write_file"] {
        std::fs::write(agent.dir.join(format!("tools/{tool}.toml")), "").unwrap();
    }
    let out = agent.run(&["rewrite big.txt", "-o", "stream-json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let events: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let completed = events
        .iter()
        .find(|e| e["type"] == "compaction.completed")
        .expect("compaction ran");
    assert_eq!(completed["data"]["summarised"], true);
    assert!(
        completed["data"]["tokens_after"].as_u64().unwrap()
            < completed["data"]["tokens_before"].as_u64().unwrap()
    );

    let requests = agent.requests();
    assert_eq!(requests.len(), 4);
    // The summariser's request holds the old history.
    let summariser = &requests[1];
    assert!(
        summariser["system"]
            .as_str()
            .unwrap()
            .starts_with("You compact the history")
    );
    assert_eq!(summariser["temperature"], 0.0);
    let transcript = summariser["messages"][0]["text"].as_str().unwrap();
    assert!(
        transcript.contains("[user]\nrewrite big.txt")
            && transcript.contains("[tool result] read_file"),
        "{transcript}"
    );
    // The next request: summary (with the todo list) and the recent window, no tool messages,
    // ending with a user message.
    let next = requests[2]["messages"].as_array().unwrap();
    let summary = next[0]["text"].as_str().unwrap();
    assert!(
        summary.starts_with("This conversation was compacted"),
        "{summary}"
    );
    assert!(summary.contains("Summary: the user wants big.txt rewritten"));
    assert!(summary.contains("[>] Rewrite big.txt"), "{summary}");
    assert!(
        next.iter()
            .all(|m| m["role"] != "tool" && m.get("tool_calls").is_none()),
        "{next:?}"
    );
    assert_eq!(next.last().unwrap()["role"], "user");
    // The file was read before compaction: writing it now needs a fresh read.
    let write = &last_results(&requests[3])[0];
    assert!(
        write["content"]
            .as_str()
            .unwrap()
            .contains("has not been read in this session"),
        "{write}"
    );
    assert_eq!(
        std::fs::read_to_string(agent.workspace.join("big.txt")).unwrap(),
        big
    );
}

#[test]
fn max_input_tokens_per_session_stops_cleanly_with_exit_4() {
    let agent = Agent::builder()
        .toml("[limits]\nmax_input_tokens_per_session = 1000\n")
        .replies("- tool_calls: [{name: todo, input: {todos: []}}]\n  usage: {input_tokens: 1500}\n- text: never\n")
        .build();
    let out = agent.run(&["go", "-o", "json"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let result = json_out(&out);
    assert_eq!(result["end_reason"], "max_input_tokens");
    assert_eq!(result["steps"], 1);
    assert_eq!(agent.requests().len(), 1);
}

#[test]
fn a_resumed_session_counts_the_long_reply_it_ended_on_and_compacts_first() {
    // The first turn ends on a long reply (about 2,000 tokens) after a call that
    // counted only 100: resumed, the session is over the 900-token threshold.
    let long = "word ".repeat(1_600);
    let agent = Agent::builder()
        .toml("default_tools = false\nmode = \"conversation\"\n[limits]\ncontext_window = 2000\nmax_output_tokens = 200\n[compaction]\nthreshold_percent = 0.45\n")
        .replies(&format!(
            "- text: \"{long}\"\n  usage: {{input_tokens: 100, output_tokens: 2000}}\n- text: \"The person asked for a long text.\"\n- text: short answer\n"
        ))
        .build();
    let first = agent.run(&["write a lot"]);
    assert_eq!(first.status.code(), Some(0), "{}", stderr(&first));
    let second = agent.run(&["--continue", "and now?"]);
    assert_eq!(second.status.code(), Some(0), "{}", stderr(&second));
    let requests = agent.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1]["system"]
            .as_str()
            .unwrap()
            .starts_with("You compact the history"),
        "the second turn's first request is the summary: {}",
        requests[1]["system"]
    );
    let sent = requests[2]["messages"].to_string();
    assert!(sent.contains("This conversation was compacted"), "{sent}");
    assert!(!sent.contains(&long), "the long reply was summarised");
}

#[test]
fn compact_by_hand_on_an_existing_session() {
    let agent = Agent::builder()
        .toml("mode = \"conversation\"\n")
        .replies("- text: A long answer about the design.\n- text: \"Summary: we discussed the design.\"\n- text: Next.\n")
        .build();
    assert_eq!(agent.run(&["explain the design"]).status.code(), Some(0));
    let out = agent.run(&["--continue", "--compact"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("compacted: summarised older history"),
        "{}",
        stderr(&out)
    );
    let next = agent.run(&["--continue", "and now?"]);
    assert_eq!(next.status.code(), Some(0), "{}", stderr(&next));
    let last = agent.requests().pop().unwrap();
    assert!(
        last["messages"][0]["text"]
            .as_str()
            .unwrap()
            .contains("Summary: we discussed the design.")
    );
    let _ = Path::new("");
}

#[test]
fn read_stamps_survive_parking_and_a_mismatched_answer_is_a_usage_error() {
    let agent = Agent::builder()
        .replies("- tool_calls:\n    - {name: read_file, input: {path: notes.txt}}\n- tool_calls:\n    - {name: deploy, input: {}}\n- tool_calls:\n    - {name: edit_file, input: {path: notes.txt, old_string: draft, new_string: final}}\n- text: Done.\n")
        .build();
    std::fs::write(
        agent.dir.join("tools/deploy.toml"),
        "description = \"Deploys\"\napproval = \"always\"\ncommand = [\"true\"]\n[input_schema]\ntype = \"object\"\n",
    )
    .unwrap();
    std::fs::write(agent.workspace.join("notes.txt"), "draft\n").unwrap();
    let parked = agent.run(&["finish the notes"]);
    assert_eq!(parked.status.code(), Some(3), "{}", stderr(&parked));
    let wrong = agent.run(&["--continue", "--answer", "yes"]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        stderr(&wrong).contains("waits for an approval: use --approve or --deny"),
        "{}",
        stderr(&wrong)
    );
    let with_message = agent.run(&["--continue", "--approve", "and also this"]);
    assert_eq!(with_message.status.code(), Some(2));
    // The read happened in the first process; the edit in this one still counts it.
    let done = agent.run(&["--continue", "--approve"]);
    assert_eq!(done.status.code(), Some(0), "{}", stderr(&done));
    assert_eq!(
        std::fs::read_to_string(agent.workspace.join("notes.txt")).unwrap(),
        "final\n"
    );
}

#[cfg(unix)]
#[test]
fn a_session_in_use_by_another_process_is_refused() {
    let agent = Agent::builder()
        .replies("- tool_calls: [{name: bash, input: {command: \"touch started; sleep 30\"}}]\n- text: done\n")
        .build();
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("eve"))
        .args([
            "run",
            agent.dir.to_str().unwrap(),
            "long job",
            "--workspace",
            agent.workspace.to_str().unwrap(),
            "-q",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = agent.workspace.join("started");
    for _ in 0..500 {
        if started.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let second = agent.run(&["--continue", "me too"]);
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(second.status.code(), Some(1));
    assert!(
        stderr(&second).contains("another eve process is using this session"),
        "{}",
        stderr(&second)
    );
}

/// `eve sessions list` is newest first, as `eve serve` lists them, and `show` and `rm`
/// take the agent directory first too, the order of every other command.
#[test]
fn sessions_list_newest_first_and_show_and_rm_take_either_order() {
    let agent = Agent::builder()
        .replies("- text: one\n- text: two\n")
        .build();
    let first = json_out(&agent.run(&["-o", "json", "first"]))["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let second = json_out(&agent.run(&["-o", "json", "second"]))["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = agent.dir.to_str().unwrap();
    let list = eve().args(["sessions", "list", dir]).output().unwrap();
    let list = String::from_utf8_lossy(&list.stdout).into_owned();
    let ids: Vec<&str> = list
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(ids, [second.as_str(), first.as_str()], "{list}");
    let id_first = eve()
        .args(["sessions", "show", &first, dir])
        .output()
        .unwrap();
    let dir_first = eve()
        .args(["sessions", "show", dir, &first])
        .output()
        .unwrap();
    assert_eq!(dir_first.status.code(), Some(0), "{}", stderr(&dir_first));
    assert_eq!(
        String::from_utf8_lossy(&dir_first.stdout),
        String::from_utf8_lossy(&id_first.stdout)
    );
    assert!(String::from_utf8_lossy(&dir_first.stdout).contains("> first"));
    let removed = eve()
        .args(["sessions", "rm", dir, &first])
        .output()
        .unwrap();
    assert_eq!(removed.status.code(), Some(0), "{}", stderr(&removed));
    assert!(
        !agent
            .dir
            .join(format!(".eve/sessions/{first}.jsonl"))
            .exists()
    );
}

#[test]
fn show_timeline_draws_each_turn_as_a_waterfall_of_its_calls_hooks_and_waits() {
    let agent = Agent::builder()
        .tool("bash", "approval = \"always\"\n")
        .file(
            "hooks/audit.toml",
            "event = \"before_tool\"\ncommand = [\"true\"]\n",
        )
        .replies("- tool_calls: [{name: bash, input: {command: \"sleep 0.2\"}}]\n- text: \"done \\e[31mred\"\n")
        .build();
    let parked = agent.run(&["wait \u{1b}[2J for it"]);
    assert_eq!(parked.status.code(), Some(3), "{}", stderr(&parked));
    let id = agent
        .session_log()
        .file_stem()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let approved = agent.run(&["--session", &id, "--approve"]);
    assert_eq!(approved.status.code(), Some(0), "{}", stderr(&approved));
    let out = eve()
        .args([
            "sessions",
            "show",
            &id,
            agent.dir.to_str().unwrap(),
            "--timeline",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(text.starts_with("turn 1 · "), "{text}");
    assert!(text.contains("· completed ·"), "{text}");
    for row in [
        "model, step 1",
        "model, step 2",
        "hook audit (before_tool)",
        "waiting for approval of bash",
        "bash",
    ] {
        assert!(text.contains(row), "{row}: {text}");
    }
    // What the log holds is shown, never sent to the terminal as control codes.
    assert!(!text.contains('\u{1b}'), "{text:?}");
    // The bash call slept 0.2 s: its row says so.
    let bash = text.lines().find(|l| l.contains(" bash ")).unwrap();
    assert!(bash.contains(" ms") || bash.contains(" s"), "{bash}");
}
