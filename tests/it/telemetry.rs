//! Telemetry (issue 29): a scripted turn exported over OTLP/HTTP to a receiver on
//! 127.0.0.1 that decodes eve's protobuf with the official definitions.

use std::collections::HashMap;

use opentelemetry_proto::tonic::trace::v1::Span;
use serde_json::Value;

use crate::common::agent::Agent;
use crate::common::otlp::{self, Receiver, attr, event_attr, ids};

const KEY: &str = "sk-ant-telemetry-secret-0123456789";
const COLLECTOR_TOKEN: &str = "collector-token-abcdef";

/// Three steps: `bash` twice (the first prints the environment it was given), then the
/// answer, each with the token counts the log must agree with.
const THREE_STEPS: &str = r#"- tool_calls: [{name: bash, input: {command: "env"}}]
  usage: {input_tokens: 100, output_tokens: 10, cache_read_tokens: 40}
- tool_calls: [{name: bash, input: {command: "echo two"}}]
  usage: {input_tokens: 200, output_tokens: 20}
- text: all done
  usage: {input_tokens: 300, output_tokens: 30}
"#;

fn exported_run(agent: &Agent, receiver_endpoint: &str, prompt: &str) -> std::process::Output {
    agent
        .run_cmd()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver_endpoint)
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("authorization=Bearer%20{COLLECTOR_TOKEN}"),
        )
        .env("ANTHROPIC_API_KEY", KEY)
        .env(
            "TRACEPARENT",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        )
        .arg(prompt)
        .write_stdin("")
        .output()
        .unwrap()
}

fn by_name<'a>(spans: &'a [Span], prefix: &str) -> Vec<&'a Span> {
    spans
        .iter()
        .filter(|s| s.name.starts_with(prefix))
        .collect()
}

/// The log's `step.completed` usages, in step order.
fn logged_usage(agent: &Agent) -> Vec<Value> {
    std::fs::read_to_string(agent.session_log())
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["event"]["type"] == "step.completed")
        .map(|r| r["event"]["data"]["usage"].clone())
        .collect()
}

#[test]
fn a_three_step_turn_is_one_invoke_agent_span_with_three_chats_and_two_tool_calls() {
    let receiver = Receiver::start();
    let agent = Agent::builder().replies(THREE_STEPS).build();
    let out = exported_run(&agent, &receiver.endpoint(), "do it");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("not delivered"), "{stderr}");

    let spans = receiver.spans();
    let turns = by_name(&spans, "invoke_agent ");
    assert_eq!(
        turns.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let turn = turns[0];
    let (trace, turn_id, turn_parent) = ids(turn);
    // Under the trace context the caller passed in TRACEPARENT.
    assert_eq!(trace, "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(turn_parent, "00f067aa0ba902b7");
    assert_eq!(
        attr(turn, "gen_ai.operation.name").as_deref(),
        Some("invoke_agent")
    );
    assert_eq!(attr(turn, "eve.end_reason").as_deref(), Some("completed"));

    let chats = by_name(&spans, "chat ");
    let tools = by_name(&spans, "execute_tool ");
    assert_eq!((chats.len(), tools.len()), (3, 2));
    for child in chats.iter().chain(&tools) {
        let (t, _, parent) = ids(child);
        assert_eq!(
            (t.as_str(), parent.as_str()),
            (trace.as_str(), turn_id.as_str()),
            "{}",
            child.name
        );
    }
    assert!(tools.iter().all(|t| t.name == "execute_tool bash"));
    assert!(
        tools
            .iter()
            .all(|t| attr(t, "gen_ai.tool.call.id").is_some_and(|id| !id.is_empty()))
    );

    // Token attributes equal what the session log recorded, step by step.
    let mut chats = chats;
    chats.sort_by_key(|c| attr(c, "eve.step").unwrap().parse::<u64>().unwrap());
    let logged = logged_usage(&agent);
    assert_eq!(logged.len(), 3);
    for (chat, usage) in chats.iter().zip(&logged) {
        assert_eq!(
            attr(chat, "gen_ai.usage.input_tokens"),
            Some(usage["input_tokens"].to_string())
        );
        assert_eq!(
            attr(chat, "gen_ai.usage.output_tokens"),
            Some(usage["output_tokens"].to_string())
        );
        assert_eq!(
            attr(chat, "gen_ai.provider.name").as_deref(),
            Some("scripted")
        );
    }
    assert_eq!(
        attr(chats[0], "gen_ai.usage.cache_read.input_tokens").as_deref(),
        Some("40")
    );
    assert_eq!(
        attr(chats[2], "gen_ai.response.finish_reasons").as_deref(),
        Some("stop")
    );

    // No content unless asked, and no key anywhere in what was sent.
    for span in &spans {
        assert!(
            attr(span, "gen_ai.tool.call.arguments").is_none(),
            "{}",
            span.name
        );
        assert!(
            attr(span, "gen_ai.tool.call.result").is_none(),
            "{}",
            span.name
        );
        assert!(
            span.events.iter().all(|e| !e.name.contains("message")),
            "{}",
            span.name
        );
    }
    let bytes = receiver.bytes();
    assert!(
        !contains(&bytes, KEY.as_bytes()),
        "the API key was exported"
    );
    assert!(!contains(&bytes, b"do it"), "the prompt was exported");
    // The collector got its credentials; the tool the model ran did not.
    let traces = receiver
        .requests()
        .into_iter()
        .find(|r| r.path == "/v1/traces")
        .unwrap();
    let auth: HashMap<_, _> = traces.headers.into_iter().collect();
    assert_eq!(
        auth.get("authorization").map(String::as_str),
        Some(&*format!("Bearer {COLLECTOR_TOKEN}"))
    );
    let log = std::fs::read_to_string(agent.session_log()).unwrap();
    assert!(log.contains("PATH="), "the env tool did not run");
    assert!(
        !log.contains(COLLECTOR_TOKEN),
        "a tool read the collector's credentials"
    );
    assert!(
        !log.contains("OTEL_EXPORTER_OTLP_HEADERS"),
        "a tool saw the headers variable"
    );

    assert_eq!(
        receiver.resource().get("service.name").map(String::as_str),
        Some("eve")
    );
    let metrics = receiver.metric_names();
    for name in [
        "gen_ai.client.token.usage",
        "gen_ai.client.operation.duration",
        "eve.tool.duration",
    ] {
        assert!(
            metrics.iter().any(|m| m == name),
            "{name} not in {metrics:?}"
        );
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn capture_content_exports_prompts_replies_and_tool_io_with_the_key_masked() {
    let receiver = Receiver::start();
    let agent = Agent::builder()
        .toml("[telemetry]\ncapture_content = true\nattributes = { team = \"search\" }\n")
        .replies(
            "- tool_calls: [{name: bash, input: {command: \"echo from-the-tool\"}}]\n- text: the answer is 42\n",
        )
        .build();
    let out = exported_run(&agent, &receiver.endpoint(), &format!("my key is {KEY}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spans = receiver.spans();
    let turn = by_name(&spans, "invoke_agent ")[0];
    let prompt = event_attr(turn, "gen_ai.user.message", "content").unwrap();
    assert_eq!(prompt, "my key is ***");
    let tool = by_name(&spans, "execute_tool ")[0];
    assert!(
        attr(tool, "gen_ai.tool.call.arguments")
            .unwrap()
            .contains("echo from-the-tool")
    );
    assert!(
        attr(tool, "gen_ai.tool.call.result")
            .unwrap()
            .contains("from-the-tool")
    );
    let replies: Vec<String> = by_name(&spans, "chat ")
        .iter()
        .filter_map(|c| event_attr(c, "gen_ai.assistant.message", "content"))
        .collect();
    assert_eq!(replies, ["the answer is 42"]);
    assert!(
        spans
            .iter()
            .all(|s| attr(s, "team").as_deref() == Some("search"))
    );
    assert!(
        !contains(&receiver.bytes(), KEY.as_bytes()),
        "the API key was exported"
    );
}

#[test]
fn a_collector_that_is_down_or_never_answers_costs_the_turn_its_answer_and_nothing_else() {
    for receiver in [None, Some(Receiver::slow())] {
        // Down: a port nothing listens on.
        let endpoint = receiver.as_ref().map_or_else(
            || format!("http://127.0.0.1:{}", crate::common::mcp::free_port()),
            Receiver::endpoint,
        );
        let agent = Agent::builder().replies(THREE_STEPS).build();
        let started = std::time::Instant::now();
        let out = exported_run(&agent, &endpoint, "do it");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("all done"));
        // What could not be sent is counted and said, once, at exit.
        assert!(stderr.contains("spans were not delivered"), "{stderr}");
        // Bounded by the exit deadline, not the exporter's 10 s timeout (a hang would
        // be minutes): this is a bound, not a benchmark.
        assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
        if let Some(receiver) = receiver {
            assert!(
                !receiver.requests().is_empty(),
                "the slow collector got nothing"
            );
        }
    }
}

#[test]
fn nothing_is_sent_without_an_endpoint_and_the_sdk_switch_turns_it_off() {
    let receiver = Receiver::start();
    let agent = Agent::builder().replies("- text: hi\n").build();
    // OTEL_SDK_DISABLED wins over an endpoint.
    let out = agent
        .run_cmd()
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint())
        .env("OTEL_SDK_DISABLED", "true")
        .arg("x")
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let out = agent.run(&["x"]);
    assert_eq!(out.status.code(), Some(0));
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert!(
        receiver.requests().is_empty(),
        "{:?}",
        receiver.requests().len()
    );
    let _ = otlp::ids;
}

#[test]
fn a_served_turn_with_a_traceparent_header_lands_under_that_trace() {
    use crate::common::serve::{Served, agent};
    let receiver = Receiver::start();
    let dir = agent("- text: served answer\n", &[]);
    let endpoint = receiver.endpoint();
    let mut server = Served::start(
        dir.path(),
        &[],
        &[("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())],
    );
    let parent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    let answer = server.call_with(
        "POST",
        "/eve/v1/session",
        Some(r#"{"message":"hello"}"#),
        &[("traceparent", parent)],
    );
    assert_eq!(answer.status, 202);
    let id = answer.body["sessionId"].as_str().unwrap().to_string();
    // The stream ends with the turn.
    server.stream(&id, "");
    // A second turn without the header starts a trace of its own.
    let second = server.call(
        "POST",
        &format!("/eve/v1/session/{id}"),
        Some(r#"{"message":"again"}"#),
    );
    assert_eq!(second.status, 202, "{:?}", second.body);
    server.stream(&id, "");
    server.terminate();
    let spans = receiver.spans();
    let turns = by_name(&spans, "invoke_agent served");
    assert_eq!(
        turns.len(),
        2,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let traced: Vec<_> = turns
        .iter()
        .map(|t| ids(t))
        .filter(|(t, _, _)| t == "0af7651916cd43dd8448eb211c80319c")
        .collect();
    assert_eq!(traced.len(), 1, "{traced:?}");
    assert_eq!(traced[0].2, "b7ad6b7169203331");
    assert!(
        turns
            .iter()
            .all(|t| attr(t, "eve.session.id").as_deref() == Some(id.as_str()))
    );
    let chat = by_name(&spans, "chat ");
    assert_eq!(chat.len(), 2);
}

#[test]
fn a_subagents_turn_is_nested_under_the_call_that_started_it() {
    let receiver = Receiver::start();
    let agent = Agent::builder()
        .file("subagents/helper/agent.toml", "description = \"Helps\"\n")
        .file("subagents/helper/instructions.md", "Help.\n")
        .replies(
            "- tool_calls: [{name: helper, input: {task: \"look\"}}]\n- text: looked\n- text: done\n",
        )
        .build();
    let out = exported_run(&agent, &receiver.endpoint(), "go");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let spans = receiver.spans();
    let call = by_name(&spans, "execute_tool helper");
    assert_eq!(
        call.len(),
        1,
        "{:?}",
        spans.iter().map(|s| &s.name).collect::<Vec<_>>()
    );
    let child = by_name(&spans, "invoke_agent helper");
    assert_eq!(child.len(), 1);
    let (call_trace, call_id, _) = ids(call[0]);
    let (child_trace, child_id, child_parent) = ids(child[0]);
    assert_eq!((child_trace, child_parent), (call_trace, call_id));
    // The child's model call is the child's, not the parent's.
    let child_chats: Vec<_> = by_name(&spans, "chat ")
        .into_iter()
        .filter(|c| ids(c).2 == child_id)
        .collect();
    assert_eq!(child_chats.len(), 1);
    assert_ne!(
        attr(child[0], "eve.session.id"),
        attr(call[0], "eve.session.id")
    );
}

#[test]
fn an_http_tool_sends_its_calls_traceparent_on() {
    use crate::common::mock::{MockServer, Reply};
    let receiver = Receiver::start();
    let api = MockServer::start(vec![Reply::Status {
        status: 200,
        headers: vec![],
        body: "pong".into(),
    }]);
    let tool = format!(
        "description = \"Pings\"\n[input_schema]\ntype = \"object\"\n[http]\nurl = \"{}/ping\"\nallow_private = true\n",
        api.url()
    );
    let agent = Agent::builder()
        .tool("ping", &tool)
        .replies("- tool_calls: [{name: ping, input: {}}]\n- text: pinged\n")
        .build();
    let out = exported_run(&agent, &receiver.endpoint(), "ping it");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sent = api.requests();
    assert_eq!(sent.len(), 1);
    let traceparent = sent[0]
        .header("traceparent")
        .expect("a traceparent header")
        .to_string();
    let spans = receiver.spans();
    let call = by_name(&spans, "execute_tool ping")[0];
    let (trace, span, _) = ids(call);
    assert_eq!(traceparent, format!("00-{trace}-{span}-01"));
}
