//! Connections end to end: the real binary with MCP servers over stdio, streamable HTTP
//! and HTTP+SSE — eve's own test server (`examples/mcp-test-server`) and, when `.ci/run`
//! installed it, the reference `@modelcontextprotocol/server-everything`.

use crate::common;

use std::path::PathBuf;

use crate::common::eve;
use crate::common::mcp::{self, start_http_server};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// An agent directory with connections, a scripted model and a log of what the test
/// server did; it is its own workspace.
struct Agent(common::Agent);

impl std::ops::Deref for Agent {
    type Target = common::Agent;

    fn deref(&self) -> &common::Agent {
        &self.0
    }
}

impl Agent {
    fn new(connections: &[(&str, &str)], script: &str) -> Agent {
        let agent = common::Agent::builder()
            .name("agent")
            .model("scripted:script.yaml")
            .toml("default_tools = false\n")
            .instructions("You test connections.\n")
            .file("script.yaml", script)
            .in_place()
            .requests_log("agent/requests.ndjson")
            .build();
        std::fs::create_dir_all(agent.dir.join("connections")).unwrap();
        let agent = Agent(agent);
        for (name, text) in connections {
            agent.connection(name, text);
        }
        agent
    }

    fn connection(&self, name: &str, text: &str) {
        let text = text.replace("@LOG@", &self.log().display().to_string());
        std::fs::write(self.dir.join(format!("connections/{name}.toml")), text).unwrap();
    }

    /// Where the test server notes what happened.
    fn log(&self) -> PathBuf {
        self.dir.join("server.log")
    }

    fn server_log(&self) -> Vec<String> {
        std::fs::read_to_string(self.log())
            .unwrap_or_default()
            .lines()
            .map(str::to_string)
            .collect()
    }

    fn starts(&self) -> usize {
        self.server_log()
            .iter()
            .filter(|l| l.starts_with("started "))
            .count()
    }

    /// `eve build` from the agent directory, which is then the workspace (as in `run`):
    /// the server runs sandboxed there and writes its log inside it.
    fn build(&self, args: &[&str]) -> std::process::Output {
        eve()
            .current_dir(&self.dir)
            .arg("build")
            .arg(&self.dir)
            .args(args)
            .output()
            .unwrap()
    }

    /// `eve run` with the scripted model, requests logged; returns the output and events.
    fn run(&self, args: &[&str]) -> (std::process::Output, Vec<Value>) {
        let output = self.run_cmd(args).output().unwrap();
        let events = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        (output, events)
    }

    fn run_cmd(&self, args: &[&str]) -> assert_cmd::Command {
        let mut cmd = self.eve();
        cmd.current_dir(&self.dir)
            .args(["run", ".", "-o", "stream-json"])
            .args(args);
        cmd
    }
}

/// The test server, logging to the agent's `server.log`.
fn server(extra: &str) -> String {
    format!("command = [\"mcp-test-server\"]\nenv = {{ MCP_TEST_LOG = \"@LOG@\" }}\n{extra}")
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn of_type<'a>(events: &'a [Value], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == kind)
        .map(|e| &e["data"])
        .collect()
}

/// The tool results of the last request's last message, as (name, content, is_error).
fn results(request: &Value) -> Vec<(String, String, bool)> {
    let messages = request["messages"].as_array().unwrap();
    messages.last().unwrap()["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r["content"].as_str().unwrap().to_string(),
                r["is_error"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_build_lists_the_tools_once_and_reuses_the_cache_until_the_file_changes() {
    let agent = Agent::new(
        &[("t", &server("[tools]\nallow = [\"echo\", \"add\"]\n"))],
        "[]",
    );
    let first = agent.build(&[]);
    assert!(first.status.success(), "{}", stderr(&first));
    assert_eq!(agent.starts(), 1);
    let tools: Vec<Value> = agent.manifest()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!([t["name"], t["read_only"], t["executor"]]))
        .collect();
    assert_eq!(
        tools,
        [
            json!(["t__echo", true, {"kind": "mcp", "connection": "t", "tool": "echo", "annotations": {"read_only_hint": true}}]),
            json!(["t__add", false, {"kind": "mcp", "connection": "t", "tool": "add"}]),
        ]
    );
    let cache = agent.dir.join(".eve/connections/t.json");
    assert!(cache.is_file());

    // Unchanged: no process starts, the same manifest.
    let before = std::fs::read(agent.dir.join(".eve/manifest.json")).unwrap();
    let again = agent.build(&[]);
    assert!(again.status.success(), "{}", stderr(&again));
    assert_eq!(agent.starts(), 1, "a cached listing costs no process start");
    assert_eq!(
        std::fs::read(agent.dir.join(".eve/manifest.json")).unwrap(),
        before
    );

    // `--refresh` lists again; so does any change to the file.
    agent.build(&["--refresh"]);
    assert_eq!(agent.starts(), 2);
    agent.connection("t", &server("[tools]\nallow = [\"echo\"]\n"));
    let changed = agent.build(&[]);
    assert!(changed.status.success(), "{}", stderr(&changed));
    assert_eq!(agent.starts(), 3);
    assert_eq!(agent.manifest()["tools"].as_array().unwrap().len(), 1);
}

#[test]
fn the_model_is_offered_the_servers_tools_and_gets_text_images_structured_content_and_errors() {
    let agent = Agent::new(
        &[(
            "t",
            &server("[tools]\nallow = [\"echo\", \"picture\", \"fail\", \"big\"]\n"),
        )],
        "- tool_calls:\n    - {name: t__echo, input: {text: hi}}\n    - {name: t__picture, input: {}}\n    - {name: t__fail, input: {}}\n    - {name: t__big, input: {}}\n    - {name: t__echo, input: {text: 5}}\n- text: done\n",
    );
    let (output, events) = agent.run(&["go"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    // What the model was offered: exactly the manifest's tools, as the server described them.
    let offered: Vec<Value> = agent.manifest()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!({"name": t["name"], "description": t["description"], "input_schema": t["input_schema"]}))
        .collect();
    let sent: Vec<Value> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| json!({"name": t["name"], "description": t["description"], "input_schema": t["input_schema"]}))
        .collect();
    assert_eq!(sent, offered);
    assert_eq!(
        sent[0],
        json!({"name": "t__echo", "description": "Echoes the text back", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}})
    );
    assert!(
        !requests[0]["system"]
            .as_str()
            .unwrap()
            .contains("# More tools"),
        "nothing is deferred"
    );
    let results = results(&requests[1]);
    assert_eq!(results[0], ("t__echo".into(), "echo: hi".into(), false));
    assert_eq!(
        results[1],
        (
            "t__picture".into(),
            "a 1x1 PNG\n[image 1: image/png, 0 KiB]\n{\"height\":1,\"width\":1}".into(),
            false
        )
    );
    assert_eq!(
        results[2],
        ("t__fail".into(), "the tool failed on purpose".into(), true)
    );
    assert!(
        results[3].1.len() < 70 * 1024,
        "capped: {} bytes",
        results[3].1.len()
    );
    assert!(results[3].1.contains("bytes cut from the middle"));
    // The arguments are checked against the server's schema before any call.
    assert!(results[4].2);
    assert!(
        results[4].1.starts_with("Invalid arguments for `t__echo`:"),
        "{}",
        results[4].1
    );
    // Read-only calls run side by side, in any order.
    let mut calls: Vec<String> = agent
        .server_log()
        .into_iter()
        .filter(|l| l.starts_with("call "))
        .collect();
    calls.sort();
    assert_eq!(
        calls,
        ["call big", "call echo", "call fail", "call picture"]
    );
    // The image went to the model as an image, beside the text.
    let messages = requests[1]["messages"].as_array().unwrap();
    let images = &messages.last().unwrap()["results"][1]["images"];
    assert_eq!(
        *images,
        json!([{"media_type": "image/png", "data": include_str!("../../examples/mcp-test-server/png.txt")}])
    );
    // Events name the connection that ran each call.
    let connections: Vec<&Value> = of_type(&events, "action.result")
        .iter()
        .map(|r| &r["connection"])
        .collect();
    assert_eq!(connections, [&json!("t"); 5]);
}

#[test]
fn images_reach_anthropic_as_image_blocks_in_the_tool_result() {
    use common::mock::{MockServer, Reply, anthropic_reply};
    let agent = Agent::new(&[("t", &server("[tools]\nallow = [\"picture\"]\n"))], "[]");
    std::fs::write(
        agent.dir.join("agent.toml"),
        "name = \"agent\"\nmodel = \"anthropic/claude-test\"\ndefault_tools = false\n",
    )
    .unwrap();
    let mock = MockServer::start(vec![
        Reply::Sse(anthropic_reply(
            "",
            &[("toolu_1", "t__picture", json!({}))],
            1,
        )),
        Reply::Sse(anthropic_reply("A pixel.", &[], 1)),
    ]);
    let output = eve()
        .current_dir(&agent.dir)
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .env("ANTHROPIC_BASE_URL", mock.url())
        .args(["run", ".", "look", "-o", "json"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = mock.requests();
    let last = requests[1].body["messages"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(
        last,
        json!({"role": "user", "content": [{
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": [
                {"type": "text", "text": "a 1x1 PNG\n[image 1: image/png, 0 KiB]\n{\"height\":1,\"width\":1}"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": include_str!("../../examples/mcp-test-server/png.txt")}}
            ],
            "cache_control": {"type": "ephemeral"}
        }]})
    );
}

#[test]
fn read_only_tools_run_side_by_side_and_the_others_alone() {
    let agent = Agent::new(
        &[("t", &server(""))],
        "- tool_calls:\n    - {name: t__meet, input: {label: a}}\n    - {name: t__meet, input: {label: b}}\n    - {name: t__mark, input: {label: w}}\n- text: done\n",
    );
    let (output, _) = agent.run(&["go"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let results = results(&agent.requests()[1]);
    assert_eq!(
        results,
        [
            ("t__meet".into(), "met".into(), false),
            ("t__meet".into(), "met".into(), false),
            ("t__mark".into(), "marked".into(), false)
        ],
        "both readOnlyHint calls ran at once"
    );
    let order: Vec<String> = agent
        .server_log()
        .into_iter()
        .filter(|l| l.starts_with("meet-") || l.starts_with("mark "))
        .collect();
    assert_eq!(
        order.last().unwrap(),
        "mark w",
        "the barrier ran after both: {order:?}"
    );
    assert_eq!(order.len(), 5);
}

#[test]
fn an_approval_parks_the_turn_and_approve_resumes_it() {
    let agent = Agent::new(
        &[(
            "t",
            &server("[tools]\nallow = [\"add\"]\napproval = { add = \"always\" }\n"),
        )],
        "- tool_calls: [{name: t__add, input: {a: 1, b: 2}}]\n- text: done\n",
    );
    let (parked, events) = agent.run(&["add them"]);
    assert_eq!(parked.status.code(), Some(3), "{}", stderr(&parked));
    let requested = of_type(&events, "input.requested");
    assert_eq!(requested[0]["request"]["tool"], "t__add");
    assert!(
        !agent.server_log().iter().any(|l| l == "call add"),
        "nothing ran before the approval"
    );
    let session = of_type(&events, "session.started")[0]["session_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (resumed, _) = agent.run(&["--session", &session, "--approve"]);
    assert!(resumed.status.success(), "{}", stderr(&resumed));
    assert_eq!(
        results(&agent.requests()[1]),
        [("t__add".into(), "3".into(), false)]
    );
}

#[test]
fn a_call_past_its_timeout_is_cancelled_on_the_server() {
    let agent = Agent::new(
        &[(
            "t",
            &server("timeout_secs = 1\n[tools]\nallow = [\"sleep\", \"echo\"]\n"),
        )],
        "- tool_calls: [{name: t__sleep, input: {secs: 3600}}]\n- tool_calls: [{name: t__echo, input: {text: after}}]\n- text: done\n",
    );
    let (output, _) = agent.run(&["sleep"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(
        results(&requests[1]),
        [(
            "t__sleep".into(),
            "`t__sleep` did not answer within its timeout (1 s); eve cancelled the call on connection `t`.".into(),
            true
        )]
    );
    assert_eq!(
        results(&requests[2]),
        [("t__echo".into(), "echo: after".into(), false)]
    );
    assert!(
        agent.server_log().iter().any(|l| l == "cancelled sleep"),
        "the server got notifications/cancelled: {:?}",
        agent.server_log()
    );
}

#[test]
fn a_server_that_dies_fails_the_call_naming_it_and_is_restarted_once() {
    let agent = Agent::new(
        &[("t", &server("[tools]\nallow = [\"crash\", \"echo\"]\n"))],
        "- tool_calls: [{name: t__crash, input: {}}]\n- tool_calls: [{name: t__echo, input: {text: back}}]\n- tool_calls: [{name: t__crash, input: {}}]\n- tool_calls: [{name: t__echo, input: {text: again}}]\n- text: done\n",
    );
    let (output, _) = agent.run(&["crash"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    let crashed = &results(&requests[1])[0];
    assert!(crashed.2);
    assert_eq!(
        crashed.1,
        "connection `t` stopped during `t__crash`: the server exited with status 3; the end of .eve/logs/t.log:\nmcp-test-server starting (mode ``)\ncrashing on purpose\nThe next call starts it again."
    );
    assert_eq!(
        results(&requests[2]),
        [("t__echo".into(), "echo: back".into(), false)]
    );
    assert!(
        results(&requests[3])[0]
            .1
            .ends_with("It is not restarted again in this session.")
    );
    let refused = &results(&requests[4])[0];
    assert!(refused.2);
    assert!(
        refused
            .1
            .starts_with("connection `t` stopped (the server exited with status 3")
            && refused
                .1
                .ends_with("and eve restarts a server only once per session"),
        "{}",
        refused.1
    );
    // One start for the build, one for the session, one restart.
    assert_eq!(agent.starts(), 3);
    let log = std::fs::read_to_string(agent.dir.join(".eve/logs/t.log")).unwrap();
    assert_eq!(log.matches("crashing on purpose").count(), 2);
}

#[test]
fn a_changed_tool_list_is_offered_from_the_next_step() {
    let agent = Agent::new(
        &[("t", &server(""))],
        "- tool_calls: [{name: t__change_list, input: {}}]\n- tool_calls: [{name: t__late, input: {text: new}}]\n- text: done\n",
    );
    let (output, events) = agent.run(&["change"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    let names = |r: &Value| -> Vec<String> {
        r["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert!(!names(&requests[0]).contains(&"t__late".to_string()));
    assert!(names(&requests[1]).contains(&"t__late".to_string()));
    assert_eq!(
        of_type(&events, "tools.changed"),
        [
            &json!({"turn_id": of_type(&events, "turn.started")[0]["turn_id"], "connection": "t", "added": ["t__late"], "removed": []})
        ]
    );
    assert_eq!(
        results(&requests[2]),
        [("t__late".into(), "echo: new".into(), false)]
    );
}

#[test]
fn a_flood_of_list_changed_notifications_costs_one_listing_per_step() {
    let agent = Agent::new(
        &[(
            "f",
            "command = [\"mcp-test-server\"]\nenv = { MCP_TEST_MODE = \"flood\", MCP_TEST_LOG = \"@LOG@\" }\n",
        )],
        "- tool_calls: [{name: f__echo, input: {text: one}}]\n- tool_calls: [{name: f__echo, input: {text: two}}]\n- text: done\n",
    );
    let (output, _) = agent.run(&["flood"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        results(&agent.requests()[2]),
        [("f__echo".into(), "echo: two".into(), false)]
    );
    let listings = agent.server_log().iter().filter(|l| *l == "list").count();
    // The build's listing, the session's, then at most one per step boundary.
    assert!(
        listings <= 5,
        "{listings} listings for 10,000 notifications"
    );
}

#[test]
fn a_stdio_server_sees_no_provider_key_and_secret_values_are_redacted() {
    let agent = Agent::new(
        &[(
            "t",
            "command = [\"mcp-test-server\"]\nenv = { MCP_TEST_LOG = \"@LOG@\", GITHUB_TOKEN = \"${EVE_TEST_GH_TOKEN}\" }\n[tools]\nallow = [\"env\"]\n",
        )],
        "- tool_calls: [{name: t__env, input: {}}]\n- text: done\n",
    );
    let output = agent
        .run_cmd(&["env"])
        .env("ANTHROPIC_API_KEY", "sk-ant-never")
        .env("OPENAI_API_KEY", "sk-openai-never")
        .env("MY_SERVICE_API_KEY", "sk-other-never")
        .env("UNLISTED_VARIABLE", "not-for-servers")
        .env("EVE_TEST_GH_TOKEN", "ghp_secret_value_123")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let (_, text, _) = results(&agent.requests()[1]).remove(0);
    let env: serde_json::Map<String, Value> = serde_json::from_str(&text).unwrap();
    let mut names: Vec<&str> = env.keys().map(String::as_str).collect();
    names.sort_unstable();
    let allowed = [
        "GITHUB_TOKEN",
        "HOME",
        "LANG",
        "MCP_TEST_LOG",
        "PATH",
        "TMPDIR",
        // Python keeps the folder it starts in off its import path.
        "PYTHONSAFEPATH",
        // A sandboxed server's own cache folder.
        "XDG_CACHE_HOME",
        "npm_config_cache",
    ];
    assert!(
        names.iter().all(|n| allowed.contains(n)),
        "the server saw {names:?}"
    );
    assert!(names.contains(&"GITHUB_TOKEN"));
    assert_eq!(
        env["GITHUB_TOKEN"], "[${EVE_TEST_GH_TOKEN}]",
        "the value is redacted from the result"
    );
    // The value is nowhere eve writes: manifest, cache, session log, server log, output.
    for entry in walkdir::WalkDir::new(agent.dir.join(".eve")) {
        let entry = entry.unwrap();
        if entry.file_type().is_file() {
            let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
            assert!(
                !text.contains("ghp_secret_value_123"),
                "{} holds the token",
                entry.path().display()
            );
        }
    }
    for text in [
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    ] {
        assert!(!text.contains("ghp_secret_value_123"));
        assert!(!text.contains("sk-ant-never"));
    }
}

#[test]
fn an_unset_variable_is_an_error_naming_it_and_the_file() {
    let agent = Agent::new(
        &[(
            "t",
            "command = [\"mcp-test-server\"]\nenv = { TOKEN = \"${EVE_TEST_NOT_SET}\" }\n",
        )],
        "[]",
    );
    let output = agent.build(&[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("error[E0809]: cannot list the tools of connection `t`: connections/t.toml: `env.TOKEN` reads `${EVE_TEST_NOT_SET}`, and the environment variable EVE_TEST_NOT_SET is not set"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_server_that_never_answers_times_out() {
    let agent = Agent::new(
        &[(
            "s",
            "command = [\"mcp-test-server\"]\nenv = { MCP_TEST_MODE = \"silent\" }\nstartup_timeout_secs = 1\n",
        )],
        "[]",
    );
    let output = agent.build(&[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("cannot list the tools of connection `s`: the server did not answer within 1 s; the end of .eve/logs/s.log:\nmcp-test-server starting (mode `silent`)"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_required_server_that_does_not_start_fails_the_session() {
    let agent = Agent::new(
        &[(
            "t",
            "command = [\"mcp-test-server\"]\nenv = { MCP_TEST_MODE = \"${EVE_TEST_MODE}\" }\n[tools]\nallow = [\"echo\"]\n",
        )],
        "- text: never\n",
    );
    let build = eve()
        .env("EVE_TEST_MODE", "normal")
        .arg("build")
        .arg(&agent.dir)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", stderr(&build));
    let output = agent
        .run_cmd(&["hello"])
        .env("EVE_TEST_MODE", "exit")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let failed = of_type(&events, "session.failed");
    assert_eq!(
        failed[0]["error"],
        "connection `t` did not start: the server did not start: it exited with status 7; the end of .eve/logs/t.log:\nmcp-test-server starting (mode `exit`)\nexiting at once, as asked"
    );
    assert!(
        agent.requests().is_empty(),
        "no model call without the server"
    );
}

#[test]
fn a_deferred_connection_is_reached_through_the_catalog_and_starts_at_its_first_call() {
    let agent = Agent::new(
        &[(
            "t",
            &server(
                "defer = true\ndescription = \"Test tools\"\n[tools]\nallow = [\"echo\", \"add\"]\n",
            ),
        )],
        "- tool_calls: [{name: search_tools, input: {query: echo}}]\n- text: found it\n",
    );
    assert!(agent.build(&[]).status.success());
    let built = agent.starts();
    let (output, events) = agent.run(&["find it"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(agent.starts(), built, "a search starts no server");
    let requests = agent.requests();
    let names: Vec<&str> = requests[0]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search_tools", "call_tool"]);
    let system = requests[0]["system"].as_str().unwrap();
    assert!(system.ends_with("\n\n# More tools\n\nMore tools are available than are in your tool list. When a task needs something your listed tools cannot do, find a tool with `search_tools` and run it with `call_tool`. They include the tools of these connections:\n\n- `t`: Test tools"), "{system}");
    let found = &results(&requests[1])[0];
    let listed: Value = serde_json::from_str(found.1.split("\nRun one").next().unwrap()).unwrap();
    assert_eq!(
        listed["tools"][0],
        json!({"name": "t__echo", "description": "Echoes the text back", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}})
    );
    assert_eq!(
        of_type(&events, "session.started")[0]["deferred_tools"],
        json!(["t__echo", "t__add"])
    );

    std::fs::write(
        agent.dir.join("script.yaml"),
        "- tool_calls: [{name: call_tool, input: {name: t__echo, input: {text: deferred}}}]\n- tool_calls: [{name: call_tool, input: {name: t__add, input: {a: 1}}}]\n- text: done\n",
    )
    .unwrap();
    std::fs::remove_file(agent.dir.join("requests.ndjson")).unwrap();
    let (output, events) = agent.run(&["call it"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(
        results(&requests[1]),
        [("call_tool".into(), "echo: deferred".into(), false)]
    );
    assert_eq!(
        agent.starts(),
        built + 1,
        "the first call started the server"
    );
    assert_eq!(of_type(&events, "action.result")[0]["connection"], "t");
    // call_tool checks the input against the named tool's schema.
    let invalid = &results(&requests[2])[0];
    assert!(
        invalid.2 && invalid.1.starts_with("Invalid arguments for `t__add`:"),
        "{invalid:?}"
    );
    // The tool list never changed within the session.
    assert_eq!(requests[0]["tools"], requests[2]["tools"]);
}

#[test]
fn streamable_http_works_like_stdio() {
    let (_server, port, _tmp) = start_http_server("--http", &[]);
    let agent = Agent::new(
        &[(
            "h",
            &format!(
                "url = \"http://127.0.0.1:{port}/mcp\"\nheaders = {{ Authorization = \"Bearer ${{EVE_TEST_HTTP_TOKEN}}\" }}\n[tools]\nallow = [\"echo\"]\n"
            ),
        )],
        "- tool_calls: [{name: h__echo, input: {text: over http}}]\n- text: done\n",
    );
    let build = eve()
        .env("EVE_TEST_HTTP_TOKEN", "tok")
        .arg("build")
        .arg(&agent.dir)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", stderr(&build));
    let output = agent
        .run_cmd(&["go"])
        .env("EVE_TEST_HTTP_TOKEN", "tok")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        results(&agent.requests()[1]),
        [("h__echo".into(), "echo: over http".into(), false)]
    );
}

#[test]
fn an_http_sse_server_is_reached_through_the_fallback() {
    let (_server, port, _tmp) = start_http_server("--sse", &[]);
    let agent = Agent::new(
        &[("old", &format!("url = \"http://127.0.0.1:{port}/sse\"\n"))],
        "- tool_calls: [{name: old__echo, input: {text: legacy}}]\n- text: done\n",
    );
    let report = eve()
        .args(["connections"])
        .arg(&agent.dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    assert!(report.status.success(), "{text}{}", stderr(&report));
    assert!(
        text.contains(" over HTTP+SSE: raw-sse 0.1, 1 tool listed"),
        "{text}"
    );
    let (output, _) = agent.run(&["go"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        results(&agent.requests()[1]),
        [("old__echo".into(), "echo: legacy".into(), false)]
    );
}

#[test]
fn an_http_sse_endpoint_on_another_origin_is_refused() {
    let (_server, port, _tmp) = start_http_server(
        "--sse",
        &[("MCP_TEST_SSE_ENDPOINT", "http://localhost:9/steal")],
    );
    let agent = Agent::new(
        &[("old", &format!("url = \"http://127.0.0.1:{port}/sse\"\n"))],
        "[]",
    );
    let output = agent.build(&[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("the server names an endpoint on another origin (http://localhost:9), where eve would send its headers; refused"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn eve_connections_shows_each_tool_as_the_model_sees_it() {
    let agent = Agent::new(
        &[(
            "t",
            &server(
                "[tools]\nallow = [\"echo\", \"add\", \"crash\"]\nblock = [\"crash\"]\napproval = { add = \"always\" }\n",
            ),
        )],
        "[]",
    );
    let output = eve().arg("connections").arg(&agent.dir).output().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<String> = text
        .lines()
        .map(|l| match l.find("started in ") {
            Some(at) => format!(
                "{}started in [time]{}",
                &l[..at],
                &l[l.find(" ms").unwrap()..]
            ),
            None => l.to_string(),
        })
        .collect();
    assert_eq!(
        lines,
        [
            "t (stdio: mcp-test-server)",
            "  started in [time] ms over stdio: eve-test-server 1.0.0, 12 tools listed",
            "  sandbox: workspace-write, network on",
            "  t__echo         read-only",
            "  t__add          needs approval",
            "  t__fail         left out (not in `allow`)",
            "  t__picture      left out (not in `allow`)",
            "  t__sleep        left out (not in `allow`)",
            "  t__change_list  left out (not in `allow`)",
            "  t__crash        blocked (`crash`)",
            "  t__env          left out (not in `allow`)",
            "  t__big          left out (not in `allow`)",
            "  t__meet         left out (not in `allow`)",
            "  t__mark         left out (not in `allow`)",
            "  t__flood        left out (not in `allow`)",
        ]
    );
}

#[cfg(unix)]
#[test]
fn ctrl_c_kills_the_server_process_group() {
    let agent = Agent::new(
        &[("t", &server("[tools]\nallow = [\"sleep\"]\n"))],
        "- tool_calls: [{name: t__sleep, input: {secs: 600}}]\n- text: never\n",
    );
    assert!(agent.build(&[]).status.success());
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("eve"))
        .current_dir(&agent.dir)
        .env("PATH", mcp::path_with_server())
        .args(["run", ".", "go", "-o", "json"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut waited = 0;
    while !agent.server_log().iter().any(|l| l == "call sleep") {
        std::thread::sleep(std::time::Duration::from_millis(20));
        waited += 1;
        assert!(
            waited < 1500,
            "the call never reached the server: {:?}",
            agent.server_log()
        );
    }
    let pid: i32 = agent
        .server_log()
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("started "))
        .unwrap()
        .parse()
        .unwrap();
    // SAFETY: sends SIGINT to the eve process this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Gone, or a zombie waiting to be reaped: either way, not running.
    let alive = !stat.is_empty()
        && stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| !rest.trim_start().starts_with('Z'));
    assert!(!alive, "the server {pid} survived Ctrl-C: {stat}");
    assert!(
        agent.server_log().iter().any(|l| l == "cancelled sleep"),
        "the call was cancelled first"
    );
}

// The reference server, installed by `.ci/run` from npm: nobody on this project wrote it.

fn everything() -> Option<PathBuf> {
    mcp::npm_package("@modelcontextprotocol/server-everything").map(|dir| dir.join("dist/index.js"))
}

#[test]
fn server_everything_over_stdio() {
    let Some(script) = everything() else { return };
    let agent = Agent::new(
        &[(
            "ev",
            &format!(
                "command = [\"node\", \"{}\", \"stdio\"]\nenv = {{ EVE_VISIBLE = \"yes\" }}\n[tools]\nallow = [\"echo\", \"get-env\", \"get-sum\"]\n",
                script.display()
            ),
        )],
        "- tool_calls:\n    - {name: ev__echo, input: {message: hello}}\n    - {name: ev__get-sum, input: {a: 2, b: 3}}\n    - {name: ev__get-env, input: {}}\n- text: done\n",
    );
    let build = agent.build(&[]);
    assert!(build.status.success(), "{}", stderr(&build));
    let names: Vec<String> = agent.manifest()["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["ev__echo", "ev__get-env", "ev__get-sum"]);
    let output = agent
        .run_cmd(&["go"])
        .env("ANTHROPIC_API_KEY", "sk-ant-never")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let results = results(&agent.requests()[1]);
    assert_eq!(results[0], ("ev__echo".into(), "Echo: hello".into(), false));
    assert!(results[1].1.contains('5'), "{:?}", results[1]);
    let env: serde_json::Map<String, Value> = serde_json::from_str(&results[2].1).unwrap();
    assert_eq!(env["EVE_VISIBLE"], "yes");
    assert!(!env.contains_key("ANTHROPIC_API_KEY"), "{env:?}");
    let allowed = [
        "EVE_VISIBLE",
        "HOME",
        "LANG",
        "PATH",
        "PYTHONSAFEPATH",
        "TMPDIR",
        "XDG_CACHE_HOME",
        "npm_config_cache",
    ];
    assert!(
        env.keys().all(|k| allowed.contains(&k.as_str())),
        "{:?}",
        env.keys()
    );
}

#[test]
fn server_everything_over_streamable_http_and_http_sse() {
    let Some(script) = everything() else { return };
    for (mode, path, transport) in [
        ("streamableHttp", "mcp", "streamable HTTP"),
        ("sse", "sse", "HTTP+SSE"),
    ] {
        let port = mcp::free_port();
        let child = std::process::Command::new("node")
            .arg(&script)
            .arg(mode)
            .env("PORT", port.to_string())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let _server = mcp::Running(child);
        mcp::wait_for_port(port);
        let agent = Agent::new(
            &[(
                "ev",
                &format!("url = \"http://127.0.0.1:{port}/{path}\"\n[tools]\nallow = [\"echo\"]\n"),
            )],
            "- tool_calls: [{name: ev__echo, input: {message: over the network}}]\n- text: done\n",
        );
        let report = eve().arg("connections").arg(&agent.dir).output().unwrap();
        let text = String::from_utf8_lossy(&report.stdout);
        assert!(
            text.contains(&format!(" over {transport}:")),
            "{mode}: {text}{}",
            stderr(&report)
        );
        let (output, _) = agent.run(&["go"]);
        assert!(output.status.success(), "{mode}: {}", stderr(&output));
        assert_eq!(
            results(&agent.requests()[1]),
            [("ev__echo".into(), "Echo: over the network".into(), false)],
            "{mode}"
        );
    }
}

#[test]
fn eve_dev_keeps_the_servers_running_from_turn_to_turn() {
    let agent = Agent::new(
        &[("t", &server("[tools]\nallow = [\"echo\"]\n"))],
        "- tool_calls: [{name: t__echo, input: {text: one}}]\n- text: first done\n- tool_calls: [{name: t__echo, input: {text: two}}]\n- text: second done\n",
    );
    assert!(agent.build(&[]).status.success());
    let output = eve()
        .current_dir(&agent.dir)
        .env("EVE_SCRIPTED_LOG", agent.dir.join("requests.ndjson"))
        .args(["dev", ".", "--model", "scripted:script.yaml"])
        .write_stdin("first\nsecond\n")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(
        results(&requests[1]),
        [("t__echo".into(), "echo: one".into(), false)]
    );
    assert_eq!(
        results(&requests[3]),
        [("t__echo".into(), "echo: two".into(), false)]
    );
    // One start for the build, one for both turns.
    assert_eq!(agent.starts(), 2, "{:?}", agent.server_log());
}

#[test]
fn a_reply_larger_than_eve_reads_is_dropped_and_the_call_times_out() {
    let agent = Agent::new(
        &[(
            "t",
            &server("timeout_secs = 1\n[tools]\nallow = [\"big\", \"echo\"]\n"),
        )],
        "- tool_calls: [{name: t__big, input: {mb: 6}}]\n- tool_calls: [{name: t__echo, input: {text: still here}}]\n- text: done\n",
    );
    let (output, _) = agent.run(&["huge"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    let huge = &results(&requests[1])[0];
    assert!(
        huge.2 && huge.1.contains("did not answer within its timeout (1 s)"),
        "{huge:?}"
    );
    assert_eq!(
        results(&requests[2]),
        [("t__echo".into(), "echo: still here".into(), false)]
    );
}

#[test]
fn live_tools_that_differ_from_the_build_are_offered_with_one_warning() {
    let agent = Agent::new(
        &[(
            "t",
            "command = [\"mcp-test-server\"]\nenv = { MCP_TEST_ONLY = \"${EVE_TEST_ONLY}\" }\n",
        )],
        "- tool_calls: [{name: t__add, input: {a: 2, b: 2}}]\n- text: done\n",
    );
    let build = eve()
        .env("EVE_TEST_ONLY", "echo")
        .arg("build")
        .arg(&agent.dir)
        .output()
        .unwrap();
    assert!(build.status.success(), "{}", stderr(&build));
    let output = agent
        .run_cmd(&["add"])
        .env("EVE_TEST_ONLY", "echo,add")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let events: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert_eq!(
        of_type(&events, "session.started")[0]["warnings"],
        json!([
            "connection `t` offers other tools than when the agent was built (new: `t__add`); `eve build --refresh` checks them"
        ])
    );
    assert_eq!(
        results(&agent.requests()[1]),
        [("t__add".into(), "4".into(), false)]
    );
}

#[test]
fn the_variables_connections_read_leave_the_environment_of_tools() {
    let agent = Agent::new(
        &[(
            "t",
            "command = [\"mcp-test-server\"]\nenv = { TOKEN = \"${EVE_TEST_CONN_SECRET}\" }\n[tools]\nallow = [\"env\"]\n",
        )],
        "- tool_calls: [{name: showenv, input: {}}, {name: t__env, input: {}}]\n- text: done\n",
    );
    std::fs::write(
        agent.dir.join("tools/showenv.toml"),
        "description = \"Prints the environment\"\ncommand = [\"sh\", \"-c\", \"env\"]\n[input_schema]\ntype = \"object\"\n",
    )
    .unwrap();
    let output = agent
        .run_cmd(&["env"])
        .env("EVE_TEST_CONN_SECRET", "conn-secret-0123456789")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let results = results(&agent.requests()[1]);
    assert!(
        !results[0].1.contains("EVE_TEST_CONN_SECRET"),
        "a command tool saw it: {}",
        results[0].1
    );
    assert!(!results[0].1.contains("conn-secret-0123456789"));
    // The server got the value (it is redacted from what came back).
    assert!(
        results[1]
            .1
            .contains("\"TOKEN\":\"[${EVE_TEST_CONN_SECRET}]\""),
        "{}",
        results[1].1
    );
}

#[test]
fn what_a_dying_server_prints_cannot_drive_the_terminal() {
    let agent = Agent::new(
        &[(
            "t",
            "command = [\"mcp-test-server\"]\nenv = { MCP_TEST_MODE = \"ansi\" }\n",
        )],
        "[]",
    );
    let output = agent.build(&[]);
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}'),
        "{text:?}"
    );
    assert!(
        text.contains("\\u{1b}[2J\\u{1b}]52;c;cm0gLXJm\\u{7}cleared your screen"),
        "{text}"
    );
}

#[test]
fn a_server_killed_between_calls_fails_the_next_call_and_the_one_after_restarts_it() {
    let agent = Agent::new(
        &[("t", &server("[tools]\nallow = [\"echo\"]\n"))],
        "- tool_calls: [{name: t__echo, input: {text: one}}]\n- tool_calls: [{name: kill_server, input: {}}]\n- tool_calls: [{name: t__echo, input: {text: two}}]\n- tool_calls: [{name: t__echo, input: {text: three}}]\n- text: done\n",
    );
    // Has the server killed (its pid is the last `started` line of the log) and waits
    // until it is gone or a zombie, so the next call finds it dead. The test kills it:
    // a process of a call cannot signal one outside the call's PID namespace.
    let ask = agent.dir.join("kill-the-server");
    std::fs::write(
        agent.dir.join("tools/kill_server.toml"),
        format!(
            "description = \"Kills the MCP server\"\ncommand = [\"sh\", \"-c\", \"touch '{0}'; while [ -e '{0}' ]; do sleep 0.02; done\"]\n[input_schema]\ntype = \"object\"\n",
            ask.display()
        ),
    )
    .unwrap();
    let log = agent.log();
    let killer = std::thread::spawn(move || {
        while !ask.exists() {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let pid: i32 = std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("started "))
            .unwrap()
            .parse()
            .unwrap();
        // SAFETY: sends SIGKILL to the server this test's eve started.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            if stat.is_empty()
                || stat
                    .rsplit(')')
                    .next()
                    .is_some_and(|r| r.trim_start().starts_with('Z'))
            {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::fs::remove_file(&ask).unwrap();
    });
    let (output, _) = agent.run(&["kill it"]);
    killer.join().unwrap();
    assert!(output.status.success(), "{}", stderr(&output));
    let requests = agent.requests();
    assert_eq!(
        results(&requests[1]),
        [("t__echo".into(), "echo: one".into(), false)]
    );
    let failed = &results(&requests[3])[0];
    assert!(failed.2, "{failed:?}");
    assert!(
        failed.1.starts_with("connection `t` stopped")
            && failed.1.ends_with("The next call starts it again."),
        "{}",
        failed.1
    );
    assert!(
        failed.1.contains("was killed by a signal") || failed.1.contains("closed its output"),
        "{}",
        failed.1
    );
    assert_eq!(
        results(&requests[4]),
        [("t__echo".into(), "echo: three".into(), false)]
    );
}

#[test]
fn invisible_and_bidi_characters_in_a_servers_tool_names_never_reach_the_terminal_raw() {
    // A hostile server lists names that read differently than they are (a right-to-left
    // override, a zero-width space); the connection file quotes one in `allow` too.
    let agent = Agent::new(
        &[(
            "t",
            "command = [\"mcp-test-server\"]\nenv = { MCP_TEST_EXTRA = \"run\\u202Egnp.exe,ok\\u200Bname,dot.ted\" }\n[tools]\nallow = [\"echo\", \"dot.ted\", \"rm\\u2066x\"]\n",
        )],
        "[]",
    );
    let output = agent.build(&[]);
    let text = stderr(&output);
    for raw in ['\u{202e}', '\u{200b}', '\u{2066}'] {
        assert!(!text.contains(raw), "{raw:?} reached the terminal: {text}");
    }
    assert!(
        text.contains("tool `run\\u{202e}gnp.exe` of connection `t` is left out: its name breaks MCP's rule for tool names"),
        "{text}"
    );
    assert!(text.contains("ok\\u{200b}name"), "{text}");
    assert!(text.contains("rm\\u{2066}x"), "{text}");
    // A name within the rule is offered (shortened, as `.` is not a model's character).
    assert!(
        text.contains("`dot.ted` of connection `t` is offered as"),
        "{text}"
    );
}
