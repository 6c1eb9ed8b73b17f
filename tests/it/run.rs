//! `eve run` end to end: the real binary against a provider on 127.0.0.1 speaking
//! the real streaming formats, or the scripted provider.

use crate::common;

use crate::common::{Agent, AgentBuilder, eve};

/// `eve run …` with a clean environment.
fn eve_run() -> assert_cmd::Command {
    let mut cmd = eve();
    cmd.arg("run");
    cmd
}
use crate::common::mock::{
    MockServer, OPENAI_DONE, Reply, anthropic_event, anthropic_reply, openai_chunk,
};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// An agent `mock-agent` of `model`, its own workspace, at the path the temporary
/// folder is given.
fn mock_agent(model: &str) -> AgentBuilder {
    Agent::builder()
        .folder("mock-agent")
        .name("mock-agent")
        .model(model)
        .in_place()
        .not_canonical()
}

/// A command tool that prints its JSON input (what eve wrote on stdin).
const ECHO_TOOL: &str = r#"
description = "Echoes its input"
command = ["sh", "-c", "cat"]
[input_schema]
type = "object"
required = ["text"]
properties.text = { type = "string" }
"#;

fn anthropic_agent() -> Agent {
    mock_agent("anthropic/claude-test")
        .toml("default_tools = false\n[limits]\nmax_output_tokens = 1000\n")
        .instructions("You are {{ agent.name }}, running {{ agent.model }}.\n{% for t in tools %}- {{ t.name }}\n{% endfor %}")
        .tool("echo", ECHO_TOOL)
        .build()
}

fn run_json(cmd: &mut assert_cmd::Command) -> (Value, std::process::Output) {
    let output = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "stdout is not one JSON object ({e}):\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (value, output)
}

fn anthropic_cmd(server: &MockServer, agent: &Agent) -> assert_cmd::Command {
    let mut cmd = eve_run();
    cmd.env("ANTHROPIC_API_KEY", "sk-ant-test-secret")
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("EVE_MAX_RETRIES", "3")
        .current_dir(&agent.dir);
    cmd
}

#[test]
fn anthropic_turn_runs_a_command_tool_and_sends_its_result_back() {
    let agent = anthropic_agent();
    let server = MockServer::start(vec![
        Reply::Sse(anthropic_reply(
            "Let me echo that.",
            &[("toolu_01", "echo", json!({"text": "hello, world"}))],
            7,
        )),
        Reply::Sse(anthropic_reply("It said hello, world.", &[], 1)),
    ]);
    let (result, output) =
        run_json(anthropic_cmd(&server, &agent).args([".", "Echo hello", "--output", "json"]));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(result["end_reason"], "completed");
    assert_eq!(result["result"], "It said hello, world.");
    assert_eq!(result["steps"], 2);
    assert!(result["session_id"].as_str().unwrap().starts_with("ses_"));
    // Each call reported 100 uncached + 50 read + 10 written input tokens, 25 output.
    assert_eq!(
        result["usage"],
        json!({"input_tokens": 320, "output_tokens": 50, "cache_read_tokens": 100, "cache_write_tokens": 20})
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for r in &requests {
        assert_eq!(
            (r.method.as_str(), r.path.as_str()),
            ("POST", "/v1/messages")
        );
        assert_eq!(r.header("x-api-key"), Some("sk-ant-test-secret"));
        assert_eq!(r.header("anthropic-version"), Some("2023-06-01"));
        assert_eq!(r.body["stream"], true);
        assert_eq!(r.body["model"], "claude-test");
        assert_eq!(r.body["max_tokens"], 1000);
        // The system prompt is the rendered instructions, marked for the prompt cache.
        assert_eq!(
            r.body["system"],
            json!([{"type": "text", "text": "You are mock-agent, running anthropic/claude-test.\n- echo", "cache_control": {"type": "ephemeral"}}])
        );
        // The tools offered are exactly the manifest's.
        let manifest = agent.manifest();
        let expected: Vec<Value> = manifest["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| json!({"name": t["name"], "description": t["description"], "input_schema": t["input_schema"]}))
            .collect();
        assert_eq!(r.body["tools"], Value::Array(expected));
    }
    let second = &requests[1].body["messages"];
    assert_eq!(
        *second,
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Echo hello"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me echo that."},
                {"type": "tool_use", "id": "toolu_01", "name": "echo", "input": {"text": "hello, world"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "{\"text\":\"hello, world\"}", "cache_control": {"type": "ephemeral"}},
            ]},
        ])
    );
    // The first request's only message carries the cache breakpoint too.
    assert_eq!(
        requests[0].body["messages"][0]["content"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );

    // The key never reaches the output or the manifest.
    let manifest_text = std::fs::read_to_string(agent.dir.join(".eve/manifest.json")).unwrap();
    for text in [
        manifest_text,
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    ] {
        assert!(!text.contains("sk-ant-test-secret"));
    }
}

/// Keys whose names say so leave eve's environment first; a key only the definition
/// names (another provider's `api_key_env`) leaves it in one more re-execution, which
/// keeps the keys moved before: the provider still gets its key (moved first), and a
/// tool the model starts sees none of them.
#[cfg(target_os = "linux")]
#[test]
fn keys_moved_out_in_two_steps_all_reach_the_provider_and_no_tool() {
    let agent = mock_agent("local/m")
        .toml("default_tools = false\n[providers.local]\napi = \"openai\"\nbase_url = \"BASE/v1\"\napi_key_env = \"LOCAL_API_KEY\"\n[providers.other]\napi = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\napi_key_env = \"OTHER_TOKEN\"\n")
        .instructions("Be brief.")
        .tool("bash", "")
        .build();
    let command = common::READ_EVES_ENVIRONMENT;
    let server = MockServer::start(vec![
        Reply::Sse(vec![
            openai_chunk(
                json!({"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant", "tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "bash", "arguments": json!({"command": command}).to_string()}}]}}]}),
            ),
            openai_chunk(
                json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            ),
            OPENAI_DONE.to_string(),
        ]),
        Reply::Sse(vec![
            openai_chunk(
                json!({"id": "c2", "choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": "stop"}]}),
            ),
            OPENAI_DONE.to_string(),
        ]),
    ]);
    let toml = std::fs::read_to_string(agent.dir.join("agent.toml")).unwrap();
    std::fs::write(
        agent.dir.join("agent.toml"),
        toml.replace("BASE", &server.url()),
    )
    .unwrap();
    let (result, output) = run_json(
        eve_run()
            .env("LOCAL_API_KEY", "local-SECRET-1")
            .env("OTHER_TOKEN", "other-SECRET-2")
            .env("ANTHROPIC_API_KEY", "sk-ant-SECRET-3")
            .args([agent.dir.to_str().unwrap(), "Look", "-o", "json"]),
    );
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(result["result"], "Done.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        assert_eq!(
            request.header("authorization"),
            Some("Bearer local-SECRET-1")
        );
    }
    let seen = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .and_then(|m| m["content"].as_str())
        .unwrap()
        .to_string();
    assert!(
        seen.contains("PATH=") && seen.contains("eve=") && !seen.contains("eve=none"),
        "the tool found eve and read the environment: {seen}"
    );
    for secret in ["SECRET-1", "SECRET-2", "SECRET-3"] {
        assert!(!seen.contains(secret), "{secret} reached a tool:\n{seen}");
    }
}

#[test]
fn openai_compatible_provider_with_two_parallel_calls_split_across_chunks() {
    let agent = mock_agent("local/qwen-test")
        .toml("default_tools = false\n[providers.local]\napi = \"openai\"\nbase_url = \"BASE/v1\"\napi_key_env = \"LOCAL_TEST_KEY\"\n")
        .instructions("Be brief.")
        .tool("echo", ECHO_TOOL)
        .build();
    let server = MockServer::start(vec![
        Reply::Sse(vec![
            openai_chunk(
                json!({"id": "c1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Two echoes."}}]}),
            ),
            openai_chunk(
                json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": "call_a", "type": "function", "function": {"name": "echo", "arguments": ""}}]}}]}),
            ),
            openai_chunk(
                json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{\"te"}}]}}]}),
            ),
            openai_chunk(
                json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "id": "call_b", "type": "function", "function": {"name": "echo", "arguments": "{\"text\""}}]}}]}),
            ),
            openai_chunk(
                json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": "xt\": \"first\"}"}}]}}]}),
            ),
            openai_chunk(
                json!({"id": "c1", "choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": ": \"second\"}"}}]}}]}),
            ),
            openai_chunk(
                json!({"id": "c1", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
            ),
            openai_chunk(
                json!({"id": "c1", "choices": [], "usage": {"prompt_tokens": 40, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 32}}}),
            ),
            OPENAI_DONE.to_string(),
        ]),
        Reply::Sse(vec![
            openai_chunk(
                json!({"id": "c2", "choices": [{"index": 0, "delta": {"content": "Done."}, "finish_reason": "stop"}]}),
            ),
            OPENAI_DONE.to_string(),
        ]),
    ]);
    let toml = std::fs::read_to_string(agent.dir.join("agent.toml")).unwrap();
    std::fs::write(
        agent.dir.join("agent.toml"),
        toml.replace("BASE", &server.url()),
    )
    .unwrap();
    let (result, output) = run_json(eve_run().env("LOCAL_TEST_KEY", "local-secret").args([
        agent.dir.to_str().unwrap(),
        "Echo twice",
        "-o",
        "json",
    ]));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(result["result"], "Done.");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(
        requests[0].header("authorization"),
        Some("Bearer local-secret")
    );
    assert_eq!(
        requests[0].body["stream_options"],
        json!({"include_usage": true})
    );
    assert_eq!(requests[0].body["max_tokens"], json!(8192));
    assert_eq!(requests[0].body["tools"][0]["function"]["name"], "echo");
    let messages = &requests[1].body["messages"];
    assert_eq!(
        messages[0],
        json!({"role": "system", "content": "Be brief."})
    );
    assert_eq!(
        messages[1],
        json!({"role": "user", "content": "Echo twice"})
    );
    assert_eq!(
        messages[2],
        json!({"role": "assistant", "content": "Two echoes.", "tool_calls": [
            {"id": "call_a", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"first\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"second\"}"}},
        ]})
    );
    // One tool message per call, paired by id, in the order of the calls.
    assert_eq!(
        messages[3],
        json!({"role": "tool", "tool_call_id": "call_a", "content": "{\"text\":\"first\"}"})
    );
    assert_eq!(
        messages[4],
        json!({"role": "tool", "tool_call_id": "call_b", "content": "{\"text\":\"second\"}"})
    );
    assert_eq!(messages.as_array().unwrap().len(), 5);
}

#[test]
fn ollama_style_whole_tool_call_in_one_chunk_without_usage_or_key() {
    let agent = mock_agent("ollama/qwen3:8b")
        .toml("default_tools = false\n[providers.ollama]\nbase_url = \"BASE/v1\"\n")
        .instructions("Be brief.")
        .tool("echo", ECHO_TOOL)
        .build();
    let server = MockServer::start(vec![
        Reply::Sse(vec![
            openai_chunk(
                json!({"id": "o1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "", "tool_calls": [{"id": "call_x", "function": {"name": "echo", "arguments": "{\"text\":\"ollama\"}"}}]}, "finish_reason": "tool_calls"}]}),
            ),
            OPENAI_DONE.to_string(),
        ]),
        Reply::Sse(vec![
            openai_chunk(
                json!({"id": "o2", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}),
            ),
            OPENAI_DONE.to_string(),
        ]),
    ]);
    let toml = std::fs::read_to_string(agent.dir.join("agent.toml")).unwrap();
    std::fs::write(
        agent.dir.join("agent.toml"),
        toml.replace("BASE", &server.url()),
    )
    .unwrap();
    let (result, output) =
        run_json(eve_run().args([agent.dir.to_str().unwrap(), "go", "-o", "json"]));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(result["end_reason"], "completed");
    // No usage in the stream: said so, not shown as zero tokens.
    assert_eq!(result["usage_reported"], false);
    let requests = server.requests();
    assert_eq!(requests[0].header("authorization"), None);
    assert_eq!(
        requests[1].body["messages"][3],
        json!({"role": "tool", "tool_call_id": "call_x", "content": "{\"text\":\"ollama\"}"})
    );
}

#[test]
fn a_server_that_reports_no_usage_is_said_so_and_compaction_estimates_instead() {
    // llama.cpp's server streams no usage. A 1,000-token window: the 5,000 characters
    // of the first request must be counted from their length, so the next step compacts.
    let agent = mock_agent("local/model")
        .toml("default_tools = false\n[providers.local]\nbase_url = \"BASE/v1\"\n[limits]\ncontext_window = 1000\nmax_output_tokens = 100\n")
        .instructions("Be brief.")
        .tool("echo", ECHO_TOOL)
        .build();
    let long = "x".repeat(5_000);
    let server = MockServer::start(vec![
        Reply::Sse(vec![
            openai_chunk(
                json!({"id": "o1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "", "tool_calls": [{"index": 0, "id": "call_1", "function": {"name": "echo", "arguments": "{\"text\":\"a\"}"}}]}, "finish_reason": "tool_calls"}]}),
            ),
            OPENAI_DONE.to_string(),
        ]),
        Reply::Sse(vec![
            openai_chunk(
                json!({"id": "o2", "choices": [{"index": 0, "delta": {"content": "Summary: a long text, then echo."}, "finish_reason": "stop"}]}),
            ),
            OPENAI_DONE.to_string(),
        ]),
        Reply::Sse(vec![
            openai_chunk(
                json!({"id": "o3", "choices": [{"index": 0, "delta": {"content": "done"}, "finish_reason": "stop"}]}),
            ),
            OPENAI_DONE.to_string(),
        ]),
    ]);
    let toml = std::fs::read_to_string(agent.dir.join("agent.toml")).unwrap();
    std::fs::write(
        agent.dir.join("agent.toml"),
        toml.replace("BASE", &server.url()),
    )
    .unwrap();
    let output = eve_run()
        .args([agent.dir.to_str().unwrap(), &long])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("usage not reported"), "{stderr}");
    assert!(!stderr.contains("0 tokens in"), "{stderr}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(
        requests[1].body["messages"][0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You compact the history"),
        "the second request is the summary: {}",
        requests[1].body["messages"][0]
    );
}

fn overloaded() -> Reply {
    Reply::Status {
        status: 529,
        headers: vec![],
        body: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            .into(),
    }
}

#[test]
fn a_529_then_a_429_with_retry_after_are_retried_and_the_turn_completes() {
    let agent = anthropic_agent();
    let server = MockServer::start(vec![
        overloaded(),
        Reply::Status {
            status: 429,
            headers: vec![("retry-after".into(), "0".into())],
            body: r#"{"type":"error","error":{"type":"rate_limit_error","message":"Slow down"}}"#
                .into(),
        },
        Reply::Sse(anthropic_reply("Fine.", &[], 1)),
    ]);
    let output = anthropic_cmd(&server, &agent)
        .args([".", "hi"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "Fine.\n");
    assert!(
        stderr
            .contains("! anthropic returned HTTP 529: Overloaded (overloaded_error); retrying in"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "! anthropic returned HTTP 429: Slow down (rate_limit_error); retrying in 0 ms"
        ),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 3);
}

#[test]
fn a_400_fails_the_turn_with_the_providers_message_and_no_retry() {
    let agent = anthropic_agent();
    let server = MockServer::start(vec![Reply::Status {
        status: 400,
        headers: vec![],
        body: r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: 1000000 > 64000, which is the maximum allowed"}}"#.into(),
    }]);
    let output = anthropic_cmd(&server, &agent)
        .args([".", "hi"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: anthropic returned HTTP 400: max_tokens: 1000000 > 64000, which is the maximum allowed (invalid_request_error)"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 1);

    let (result, _) = run_json(
        anthropic_cmd(
            &MockServer::start(vec![Reply::Status {
                status: 401,
                headers: vec![],
                body: r#"{"error":{"message":"invalid x-api-key"}}"#.into(),
            }]),
            &agent,
        )
        .args([".", "hi", "-o", "json"]),
    );
    assert_eq!(result["end_reason"], "error");
    assert_eq!(
        result["error"],
        "anthropic returned HTTP 401: invalid x-api-key"
    );
}

#[test]
fn a_stream_error_midway_retries_the_step_without_running_a_tool_twice() {
    // The tool counts its calls in the workspace (the agent's folder here).
    let counting_tool = "description = \"Counts its calls\"\ncommand = [\"sh\", \"-c\", \"echo call >> calls.log; echo counted\"]\n[input_schema]\ntype = \"object\"\n";
    let agent = mock_agent("anthropic/claude-test")
        .toml("default_tools = false\n")
        .instructions("Count.")
        .tool("count", counting_tool)
        .build();
    let log = agent.dir.join("calls.log");
    let mut broken = anthropic_reply("After counting I", &[], 1);
    broken.truncate(5);
    broken.push(anthropic_event(
        "error",
        json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
    ));
    let mut cut = anthropic_reply("Counted, and", &[], 1);
    cut.truncate(4); // the connection closes before message_stop
    let server = MockServer::start(vec![
        Reply::Sse(anthropic_reply("", &[("toolu_c", "count", json!({}))], 1)),
        Reply::Sse(broken),
        Reply::Sse(cut),
        Reply::Sse(anthropic_reply("Counted once.", &[], 1)),
    ]);
    let output = anthropic_cmd(&server, &agent)
        .args([".", "count", "--output", "stream-json"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&log).unwrap(),
        "call\n",
        "the tool ran exactly once"
    );
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let failed: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "step.failed")
        .collect();
    assert_eq!(failed.len(), 2);
    assert!(
        failed[0]["data"]["error"]
            .as_str()
            .unwrap()
            .contains("Overloaded"),
        "{}",
        failed[0]
    );
    assert!(
        failed[1]["data"]["error"]
            .as_str()
            .unwrap()
            .contains("message_stop"),
        "{}",
        failed[1]
    );
    assert!(
        failed
            .iter()
            .all(|e| e["data"]["retry_in_ms"].is_u64() && e["data"]["step"] == 2)
    );
    let done = events
        .iter()
        .find(|e| e["type"] == "turn.completed")
        .unwrap();
    assert_eq!(done["data"]["result"], "Counted once.");
    assert_eq!(done["data"]["steps"], 2);
    // The retried request is the same request: history did not grow with the partial replies.
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[1].body, requests[3].body);
}

#[test]
fn a_missing_api_key_is_one_line_naming_the_variable() {
    let agent = anthropic_agent();
    let output = eve_run()
        .env_remove("ANTHROPIC_API_KEY")
        .current_dir(&agent.dir)
        .args([".", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "error: ANTHROPIC_API_KEY is not set: export it, or choose another model with --model or EVE_MODEL\n"
    );
}

fn scripted_agent(script: &str) -> Agent {
    mock_agent("scripted:replies.yaml")
        .toml("default_tools = false\n")
        .instructions("You are {{ agent.name }}.")
        .tool("echo", ECHO_TOOL)
        .replies(script)
        .build()
}

#[test]
fn stream_json_prints_every_event_in_the_documented_order() {
    let agent = scripted_agent(
        "- text: Echoing.\n  tool_calls:\n    - {name: echo, input: {text: a}}\n    - {name: echo, input: {text: b}}\n- text: Done.\n",
    );
    let output = eve_run()
        .args([agent.dir.to_str().unwrap(), "go", "--output", "stream-json"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        [
            "session.started",
            "turn.started",
            "message.received",
            "step.started",
            "message.appended",
            "actions.requested",
            "action.result",
            "action.result",
            "step.completed",
            "step.started",
            "message.appended",
            "step.completed",
            "turn.completed",
            "session.completed",
        ]
    );
    for event in &events {
        let keys: Vec<&String> = event.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["data", "meta", "type"]);
        assert!(event["meta"]["id"].as_str().unwrap().starts_with("evt_"));
    }
    let ids: Vec<&str> = events
        .iter()
        .map(|e| e["meta"]["id"].as_str().unwrap())
        .collect();
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(ids, sorted, "event ids are unique and time-ordered");
    let results: Vec<&Value> = events
        .iter()
        .filter(|e| e["type"] == "action.result")
        .collect();
    assert_eq!(results[0]["data"]["output"], "{\"text\":\"a\"}");
    assert_eq!(results[1]["data"]["output"], "{\"text\":\"b\"}");
    assert_eq!(events[0]["data"]["tools"], json!(["echo"]));
    assert_eq!(events[8]["data"]["finish_reason"], "tool_use");
    assert_eq!(events[12]["data"]["end_reason"], "completed");
}

#[test]
fn invalid_arguments_and_unknown_tools_become_error_results_for_the_model() {
    let agent = scripted_agent(
        "- tool_calls:\n    - {name: echo, input: {txt: a}}\n    - {name: ecoh, input: {text: a}}\n- text: I will fix that.\n",
    );
    let log = agent.dir.join("requests.jsonl");
    let output = eve_run()
        .env("EVE_SCRIPTED_LOG", &log)
        .args([agent.dir.to_str().unwrap(), "go", "-o", "json"])
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
    assert_eq!(requests.len(), 2);
    let results = &requests[1]["messages"][2]["results"];
    assert_eq!(results[0]["call_id"], "call_1_1");
    assert_eq!(results[0]["is_error"], true);
    let invalid = results[0]["content"].as_str().unwrap();
    assert!(
        invalid.starts_with("Invalid arguments for `echo`:"),
        "{invalid}"
    );
    assert!(
        invalid.contains("\"text\" is a required property"),
        "{invalid}"
    );
    assert_eq!(results[1]["is_error"], true);
    assert_eq!(
        results[1]["content"],
        "There is no tool named `ecoh`. Did you mean `echo`? Available tools: echo."
    );
    assert_eq!(requests[0]["system"], "You are mock-agent.");
}

#[test]
fn max_steps_stops_the_turn_with_exit_code_4() {
    let agent = scripted_agent(
        "- tool_calls: [{name: echo, input: {text: a}}]\n- tool_calls: [{name: echo, input: {text: b}}]\n",
    );
    let (result, output) = run_json(eve_run().args([
        agent.dir.to_str().unwrap(),
        "loop",
        "-o",
        "json",
        "--max-steps",
        "2",
    ]));
    assert_eq!(output.status.code(), Some(4));
    assert_eq!(result["end_reason"], "max_steps");
    assert_eq!(result["steps"], 2);
}

#[test]
fn max_tokens_is_sticky_and_exits_4() {
    let agent = scripted_agent(
        "- text: Part one\n  finish: max_tokens\n  tool_calls: [{name: echo, input: {text: a}}]\n- text: All done.\n",
    );
    let (result, output) =
        run_json(eve_run().args([agent.dir.to_str().unwrap(), "go", "-o", "json"]));
    assert_eq!(output.status.code(), Some(4));
    assert_eq!(result["end_reason"], "max_tokens");
    assert_eq!(result["result"], "All done.");
}

#[test]
fn running_past_the_script_fails_with_exit_1() {
    let agent = scripted_agent("- tool_calls: [{name: echo, input: {text: a}}]\n");
    let output = eve_run()
        .args([agent.dir.to_str().unwrap(), "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error: the scripted replies in"),
        "{stderr}"
    );
    assert!(
        stderr.contains("ran out: model call 2 but the file has 1 reply"),
        "{stderr}"
    );
}

#[test]
fn the_prompt_can_come_from_stdin_and_a_tool_needing_approval_parks_until_approved() {
    let agent = scripted_agent("- tool_calls: [{name: guarded, input: {}}]\n- text: ok\n");
    std::fs::write(
        agent.dir.join("tools/guarded.toml"),
        "description = \"Needs a person\"\napproval = \"always\"\ncommand = [\"touch\", \"ran\"]\n[input_schema]\ntype = \"object\"\n",
    )
    .unwrap();
    let log = agent.dir.join("requests.jsonl");
    let output = eve_run()
        .env("EVE_SCRIPTED_LOG", &log)
        .current_dir(&agent.dir)
        .args([".", "-"])
        .write_stdin("from stdin\n")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(3), "{stderr}");
    let first: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        first["messages"][0],
        json!({"role": "user", "text": "from stdin\n"})
    );
    assert!(
        !agent.dir.join("ran").exists(),
        "the guarded command must not run yet"
    );
    assert!(
        stderr.contains("waiting: `guarded` needs your approval (session ses_"),
        "{stderr}"
    );
    assert!(stderr.contains("eve run . --session ses_"), "{stderr}");
    assert!(stderr.contains(" --approve\n"), "{stderr}");

    let approved = eve_run()
        .env("EVE_SCRIPTED_LOG", &log)
        .current_dir(&agent.dir)
        .args([".", "--continue", "--approve", "-o", "json"])
        .output()
        .unwrap();
    assert_eq!(
        approved.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&approved.stderr)
    );
    assert!(agent.dir.join("ran").exists(), "approved, the command runs");
    let result: Value = serde_json::from_slice(&approved.stdout).unwrap();
    assert_eq!(result["end_reason"], "completed");
    assert_eq!(result["result"], "ok");
}

#[test]
fn build_errors_stop_the_run_before_any_model_call() {
    let agent = scripted_agent("- text: never\n");
    std::fs::write(
        agent.dir.join("tools/raed_file.toml"),
        "description = \"x\"\n",
    )
    .unwrap();
    let output = eve_run()
        .args([agent.dir.to_str().unwrap(), "go"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("error[E0201]: unknown tool `raed_file`"),
        "{stderr}"
    );
    assert!(stderr.contains("could not build `mock-agent`"), "{stderr}");
}

#[test]
fn no_prompt_is_a_usage_error() {
    let agent = scripted_agent("- text: never\n");
    let output = eve_run()
        .args([agent.dir.to_str().unwrap(), ""])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).starts_with("error: no prompt"));
}

#[cfg(unix)]
#[test]
fn ctrl_c_aborts_the_turn_kills_the_running_tool_and_exits_130() {
    let agent = scripted_agent("- tool_calls: [{name: slow, input: {}}]\n- text: never reached\n");
    let marker = agent.dir.join("started");
    std::fs::write(
        agent.dir.join("tools/slow.toml"),
        format!(
            "description = \"Takes long\"\ncommand = [\"sh\", \"-c\", \"sh -c 'read -r p _ < /proc/self/stat; echo $p > {}; exec sleep 60' & wait\"]\ntimeout_secs = 120\n[input_schema]\ntype = \"object\"\n",
            marker.display()
        ),
    )
    .unwrap();
    let bin = assert_cmd::cargo::cargo_bin("eve");
    let child = std::process::Command::new(bin)
        .args(["run", agent.dir.to_str().unwrap(), "go", "-o", "json"])
        .current_dir(&agent.dir)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut waited = 0;
    while std::fs::read_to_string(&marker).map_or(true, |s| !s.ends_with('\n')) {
        std::thread::sleep(std::time::Duration::from_millis(20));
        waited += 1;
        assert!(waited < 500, "the tool never started");
    }
    let sleeper: i32 = std::fs::read_to_string(&marker)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: sends SIGINT to the eve process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(
        output.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(result["end_reason"], "aborted");
    let sessions = agent.dir.join(".eve/sessions");
    let log = std::fs::read_dir(&sessions)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .unwrap();
    let log = std::fs::read_to_string(log).unwrap();
    let cancelled = log
        .find("\"turn.cancelled\"")
        .expect("turn.cancelled is logged");
    let completed = log
        .find("\"end_reason\":\"aborted\"")
        .expect("the turn ends as aborted");
    assert!(cancelled < completed);
    assert_eq!(result["steps"], 1);
    let stat = std::fs::read_to_string(format!("/proc/{sleeper}/stat")).unwrap_or_default();
    // Gone (reaped by the call's supervisor), or a zombie left to a reaper.
    let alive = !stat.is_empty()
        && stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'));
    assert!(!alive, "the tool's child process {sleeper} survived Ctrl-C");
}

#[test]
fn json_output_reports_failures_before_the_turn_as_an_error_object() {
    let agent = anthropic_agent();
    let (result, output) = run_json(eve_run().env_remove("ANTHROPIC_API_KEY").args([
        agent.dir.to_str().unwrap(),
        "hi",
        "-o",
        "json",
    ]));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(result["end_reason"], "error");
    assert_eq!(result["steps"], 0);
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .starts_with("ANTHROPIC_API_KEY is not set")
    );
}

#[test]
fn a_retried_reply_says_its_partial_text_is_discarded_and_quiet_keeps_steps_apart() {
    let agent = anthropic_agent();
    let mut broken = anthropic_reply("Partial answer that breaks", &[], 1);
    broken.truncate(5);
    let server = MockServer::start(vec![
        Reply::Sse(anthropic_reply(
            "First.",
            &[("toolu_1", "echo", json!({"text": "x"}))],
            1,
        )),
        Reply::Sse(broken),
        Reply::Sse(anthropic_reply("Second.", &[], 1)),
    ]);
    let output = anthropic_cmd(&server, &agent)
        .args([".", "hi"])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("(the partial reply above is discarded)"),
        "{stderr}"
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "First.\nPartial answer \nSecond.\n"
    );

    let quiet = scripted_agent(
        "- text: One.\n  tool_calls: [{name: echo, input: {text: a}}]\n- text: Two.\n",
    );
    let output = eve_run()
        .args([quiet.dir.to_str().unwrap(), "go", "--quiet"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&output.stdout), "One.\nTwo.\n");
    assert_eq!(String::from_utf8_lossy(&output.stderr), "");
}

#[test]
fn an_http_tool_sends_its_rendered_request_and_returns_the_body() {
    let server = MockServer::start(vec![Reply::Status {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: r#"{"temp_c": 21}"#.into(),
    }]);
    let agent = scripted_agent(
        "- tool_calls: [{name: weather, input: {city: Paris}}, {name: leak, input: {}}]\n- text: Mild.\n",
    );
    std::fs::write(
        agent.dir.join("tools/weather.toml"),
        "description = \"Weather\"\nread_only = true\n[http]\nallow_private = true\nurl = \"{{ env.MOCK_URL }}/weather?city={{ input.city | urlencode }}\"\nheaders = { Authorization = \"Bearer {{ env.WEATHER_TOKEN }}\" }\n[input_schema]\ntype = \"object\"\nproperties.city = { type = \"string\" }\n",
    )
    .unwrap();
    std::fs::write(
        agent.dir.join("tools/leak.toml"),
        "description = \"Tries to read a provider key\"\n[http]\nallow_private = true\nurl = \"{{ env.MOCK_URL }}/?k={{ env.ANTHROPIC_API_KEY }}\"\n[input_schema]\ntype = \"object\"\n",
    )
    .unwrap();
    let log = agent.dir.join("requests.jsonl");
    let output = eve_run()
        .env("EVE_SCRIPTED_LOG", &log)
        .env("MOCK_URL", server.url())
        .env("WEATHER_TOKEN", "w-token")
        .env("ANTHROPIC_API_KEY", "sk-ant-never-sent")
        // A variable no template can name, which must not break the tool.
        .env(
            "NOT_UTF8",
            <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"\xff\xfe"),
        )
        .args([agent.dir.to_str().unwrap(), "weather?"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "the leaking request is never sent");
    assert_eq!(
        (requests[0].method.as_str(), requests[0].path.as_str()),
        ("GET", "/weather?city=Paris")
    );
    assert_eq!(requests[0].header("authorization"), Some("Bearer w-token"));
    let second: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .nth(1)
            .unwrap(),
    )
    .unwrap();
    let results = &second["messages"][2]["results"];
    assert_eq!(results[0]["content"], r#"{"temp_c": 21}"#);
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(results[1]["is_error"], true);
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("cannot build the request's url"),
        "{}",
        results[1]
    );
}

#[test]
fn anthropic_web_search_is_declared_and_its_blocks_go_back_unchanged() {
    let agent = mock_agent("anthropic/claude-test")
        .toml("default_tools = false\n")
        .instructions("Search.")
        .tool("echo", ECHO_TOOL)
        .tool("web_search", "")
        .build();
    let result_block = json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": [
        {"type": "web_search_result", "title": "Rust 1.95", "url": "https://blog.rust-lang.org/rust-1.95", "encrypted_content": "EqwK", "page_age": null}
    ]});
    let citation = json!({"type": "web_search_result_location", "url": "https://blog.rust-lang.org/rust-1.95", "title": "Rust 1.95", "encrypted_index": "Eo8B", "cited_text": "Rust 1.95 is out"});
    let first = vec![
        anthropic_event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Let me search."}}),
        ),
        anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 1, "content_block": {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {}}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \"rust 1.95"}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": " release\"}"}}),
        ),
        anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 1}),
        ),
        anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 2, "content_block": result_block}),
        ),
        anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 2}),
        ),
        anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 3, "content_block": {"type": "text", "text": ""}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "citations_delta", "citation": citation}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "Rust 1.95 is out."}}),
        ),
        anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 3}),
        ),
        anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 4, "content_block": {"type": "tool_use", "id": "toolu_2", "name": "echo", "input": {}}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 4, "delta": {"type": "input_json_delta", "partial_json": "{\"text\": \"hi\"}"}}),
        ),
        anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 4}),
        ),
        anthropic_event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 30, "server_tool_use": {"web_search_requests": 1}}}),
        ),
        anthropic_event("message_stop", json!({"type": "message_stop"})),
    ];
    let server = MockServer::start(vec![
        Reply::Sse(first),
        Reply::Sse(anthropic_reply("Done.", &[], 1)),
    ]);
    let output = anthropic_cmd(&server, &agent)
        .args([".", "what is new in rust?", "-o", "stream-json"])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let requests = server.requests();
    assert!(
        requests[0].body["tools"]
            .as_array()
            .unwrap()
            .contains(&json!({"type": "web_search_20250305", "name": "web_search", "max_uses": 5})),
        "{}",
        requests[0].body["tools"]
    );
    assert_eq!(
        requests[1].body["messages"][1],
        json!({"role": "assistant", "content": [
            {"type": "text", "text": "Let me search."},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "rust 1.95 release"}},
            result_block,
            {"type": "text", "text": "Rust 1.95 is out.", "citations": [citation]},
            {"type": "tool_use", "id": "toolu_2", "name": "echo", "input": {"text": "hi"}},
        ]})
    );
    assert_eq!(
        requests[1].body["messages"][2]["content"][0]["tool_use_id"],
        "toolu_2"
    );
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let search = events
        .iter()
        .find(|e| e["type"] == "action.result" && e["data"]["name"] == "web_search")
        .unwrap();
    assert_eq!(
        search["data"]["output"],
        "Rust 1.95 — https://blog.rust-lang.org/rust-1.95"
    );

    // With an OpenAI-compatible model the same agent has no web_search to offer.
    let openai = mock_agent("anthropic/claude-test")
        .toml("default_tools = false\n[providers.local]\nbase_url = \"http://127.0.0.1:9/v1\"\n")
        .instructions("Search.")
        .tool("web_search", "")
        .build();
    let script = openai.dir.join("r.yaml");
    std::fs::write(&script, "- text: hi\n").unwrap();
    let log = openai.dir.join("log.jsonl");
    let output = eve_run()
        .env("EVE_SCRIPTED_LOG", &log)
        .args([
            openai.dir.to_str().unwrap(),
            "hi",
            "--model",
            &format!("scripted:{}", script.display()),
        ])
        .output()
        .unwrap();
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let request: Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(request["tools"], json!([]));
    assert!(String::from_utf8_lossy(&output.stderr).contains("web_search"));
}

#[test]
fn a_paused_server_tool_turn_is_sent_back_to_continue() {
    let agent = mock_agent("anthropic/claude-test")
        .toml("default_tools = false\n")
        .instructions("Search.")
        .tool("web_search", "")
        .build();
    let paused = vec![
        anthropic_event(
            "message_start",
            json!({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "claude-test", "usage": {"input_tokens": 10, "output_tokens": 1}}}),
        ),
        anthropic_event(
            "content_block_start",
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "server_tool_use", "id": "srvtoolu_9", "name": "web_search", "input": {}}}),
        ),
        anthropic_event(
            "content_block_delta",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": "{\"query\": \"x\"}"}}),
        ),
        anthropic_event(
            "content_block_stop",
            json!({"type": "content_block_stop", "index": 0}),
        ),
        anthropic_event(
            "message_delta",
            json!({"type": "message_delta", "delta": {"stop_reason": "pause_turn"}, "usage": {"output_tokens": 5}}),
        ),
        anthropic_event("message_stop", json!({"type": "message_stop"})),
    ];
    let server = MockServer::start(vec![
        Reply::Sse(paused),
        Reply::Sse(anthropic_reply("Found it.", &[], 1)),
    ]);
    let (result, output) =
        run_json(anthropic_cmd(&server, &agent).args([".", "search", "-o", "json"]));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(result["result"], "Found it.");
    let second = &server.requests()[1].body["messages"];
    assert_eq!(second.as_array().unwrap().len(), 2);
    assert_eq!(second[1]["role"], "assistant");
    assert_eq!(second[1]["content"][0]["type"], "server_tool_use");
}

#[test]
fn a_bad_stream_deadline_variable_is_an_error_naming_it() {
    let agent = anthropic_agent();
    let server = MockServer::start(vec![]);
    let output = anthropic_cmd(&server, &agent)
        .env("EVE_STREAM_TOTAL_SECS", "0")
        .args([".", "hi"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr
            .contains("EVE_STREAM_TOTAL_SECS must be a number of seconds greater than 0 and at most 31536000, not `0`"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 0);
}

#[test]
fn a_stream_of_only_keep_alives_is_given_up_on_and_retried() {
    let agent = anthropic_agent();
    let ping = anthropic_event("ping", json!({"type": "ping"}));
    let head = anthropic_reply("", &[], 1)[..1].to_vec();
    let keep_alive = || Reply::KeepAlive {
        head: head.clone(),
        tick: ping.clone(),
    };
    let server = MockServer::start(vec![keep_alive(), keep_alive()]);
    let output = anthropic_cmd(&server, &agent)
        .env("EVE_MAX_RETRIES", "1")
        .env("EVE_STREAM_NO_PROGRESS_SECS", "0.3")
        .args([".", "hi"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("error: anthropic sent no content for 0.3 s (keep-alives do not count); giving up on this stream (gave up after 2 attempts)"),
        "{stderr}"
    );
    assert_eq!(server.requests().len(), 2);
}

/// Everything a run left behind that a person or a log reader sees: its output and its session logs.
fn everything_shown(agent: &Agent, output: &std::process::Output) -> String {
    let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&output.stderr));
    if let Ok(entries) = std::fs::read_dir(agent.dir.join(".eve/sessions")) {
        for entry in entries {
            text.push_str(&std::fs::read_to_string(entry.unwrap().path()).unwrap_or_default());
        }
    }
    text
}

#[test]
fn ollama_calls_sharing_index_0_with_different_ids_run_as_two_calls() {
    let agent = mock_agent("ollama/llama3.1:8b")
        .toml("default_tools = false\n[providers.ollama]\nbase_url = \"BASE/v1\"\n")
        .instructions("Be brief.")
        .tool("echo", ECHO_TOOL)
        .build();
    let call = |id: &str, text: &str| {
        openai_chunk(
            json!({"id": "o1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "", "tool_calls": [{"id": id, "index": 0, "type": "function", "function": {"name": "echo", "arguments": json!({"text": text}).to_string()}}]}, "finish_reason": null}]}),
        )
    };
    let server = MockServer::start(vec![
        Reply::Sse(vec![
            call("call_a", "staging"),
            call("call_b", "production"),
            openai_chunk(
                json!({"id": "o1", "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "tool_calls"}]}),
            ),
            OPENAI_DONE.to_string(),
        ]),
        Reply::Sse(vec![
            openai_chunk(
                json!({"id": "o2", "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]}),
            ),
            OPENAI_DONE.to_string(),
        ]),
    ]);
    let toml = std::fs::read_to_string(agent.dir.join("agent.toml")).unwrap();
    std::fs::write(
        agent.dir.join("agent.toml"),
        toml.replace("BASE", &server.url()),
    )
    .unwrap();
    let (result, output) =
        run_json(eve_run().args([agent.dir.to_str().unwrap(), "go", "-o", "json"]));
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(result["end_reason"], "completed");
    let messages = &server.requests()[1].body["messages"];
    assert_eq!(
        messages[2]["tool_calls"],
        json!([
            {"id": "call_a", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"staging\"}"}},
            {"id": "call_b", "type": "function", "function": {"name": "echo", "arguments": "{\"text\":\"production\"}"}},
        ])
    );
    assert_eq!(
        (&messages[3], &messages[4]),
        (
            &json!({"role": "tool", "tool_call_id": "call_a", "content": "{\"text\":\"staging\"}"}),
            &json!({"role": "tool", "tool_call_id": "call_b", "content": "{\"text\":\"production\"}"})
        )
    );
}

#[test]
fn provider_keys_and_url_credentials_are_masked_in_errors_and_logs() {
    let agent = anthropic_agent();
    // A provider (or a proxy) that echoes what it was sent in its error.
    let server = MockServer::start(vec![Reply::Status {
        status: 401,
        headers: vec![],
        body: r#"{"error":{"message":"invalid x-api-key sk-ant-test-secret from proxy:PASSWORD-1234"}}"#.into(),
    }]);
    let with_credentials = server
        .url()
        .replace("http://", "http://proxy:PASSWORD-1234@");
    let output = anthropic_cmd(&server, &agent)
        .env("ANTHROPIC_BASE_URL", &with_credentials)
        .args([".", "hi"])
        .output()
        .unwrap();
    let shown = everything_shown(&agent, &output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("anthropic returned HTTP 401: invalid x-api-key *** from ***"),
        "{shown}"
    );
    assert!(
        !shown.contains("sk-ant-test-secret") && !shown.contains("PASSWORD"),
        "{shown}"
    );
    // The credentials still reach the server, as HTTP basic authentication.
    assert_eq!(
        server.requests()[0].header("authorization"),
        Some("Basic cHJveHk6UEFTU1dPUkQtMTIzNA==")
    );

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let output = anthropic_cmd(&server, &agent)
        .env(
            "ANTHROPIC_BASE_URL",
            format!("http://proxy:PASSWORD-1234@127.0.0.1:{port}"),
        )
        .env("EVE_MAX_RETRIES", "0")
        .args([".", "hi", "-o", "stream-json"])
        .output()
        .unwrap();
    let shown = everything_shown(&agent, &output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(&format!(
            "cannot reach anthropic at http://***@127.0.0.1:{port}/v1/messages"
        )),
        "{shown}"
    );
    assert!(!shown.contains("PASSWORD"), "{shown}");
}

#[test]
fn a_run_says_when_it_built_the_agent_and_not_when_nothing_changed() {
    let agent = scripted_agent("- text: One.\n- text: Two.\n- text: Three.\n");
    let run = || {
        let out = eve_run()
            .current_dir(&agent.dir)
            .args([".", "hi"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let first = run();
    assert!(
        first.starts_with("built `mock-agent` for this first run → .eve/manifest.json\n"),
        "{first}"
    );
    assert!(
        !run().contains("built `"),
        "nothing changed: the last build stands"
    );
    std::fs::write(agent.dir.join("instructions.md"), "You help.").unwrap();
    let changed = run();
    assert!(
        changed.starts_with(
            "built `mock-agent` again: its files changed since the last build → .eve/manifest.json\n"
        ),
        "{changed}"
    );
}
