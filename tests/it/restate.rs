//! `eve serve --restate` end to end: a real `restate-server`, two eve workers behind
//! one address (a load balancer on 127.0.0.1), the mock HTTP provider, driven through
//! the `/eve/v1` API as a client would. The mock counts every model request of both
//! workers; a command tool appends a line to a file each time it runs.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::mock::{MockServer, Reply, anthropic_reply};
use crate::common::restate::{Balancer, RestateServer, binary_or_skip, free_port, http};
use crate::common::serve::{Served, agent, request, types};
use serde_json::{Value, json};

/// The longest message `eve serve` takes (`src/serve/routes.rs`).
const MAX_MESSAGE: usize = 256 * 1024;

const APPEND: (&str, &str) = (
    "append",
    "description = \"Appends a line to out.txt\"\ncommand = [\"sh\", \"-c\", \"echo step >> out.txt\"]\n[input_schema]\ntype = \"object\"\n",
);
const ASK: (&str, &str) = ("ask_question", "");
/// Marks that it started, then waits until the test lets it go.
const WAIT: (&str, &str) = (
    "wait",
    "description = \"Waits\"\ncommand = [\"sh\", \"-c\", \"echo started >> started.txt; while [ ! -f release ]; do sleep 0.05; done\"]\ntimeout_secs = 120\n[input_schema]\ntype = \"object\"\n",
);

/// A Restate server, its workers behind a balancer, the mock model, the agent.
struct Cluster {
    server: RestateServer,
    _balancer: Balancer,
    workers: Vec<Served>,
    mock: MockServer,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// `replies` from the mock, `tools` in the agent, two workers with `env`; `None`
    /// (after a message) when restate-server is not installed here.
    fn start(
        test: &str,
        replies: Vec<Reply>,
        tools: &[(&str, &str)],
        env: &[&[(&str, &str)]],
    ) -> Option<Cluster> {
        let binary = binary_or_skip(test)?;
        let server = RestateServer::start(&binary);
        let mock = MockServer::start(replies);
        let dir = agent("", tools);
        let balancer = Balancer::start();
        let mut workers = Vec::new();
        for extra in env {
            let port = free_port();
            let endpoint = format!("127.0.0.1:{port}");
            let url = mock.url();
            let mut vars = vec![
                ("ANTHROPIC_API_KEY", "sk-ant-mock"),
                ("ANTHROPIC_BASE_URL", url.as_str()),
            ];
            vars.extend_from_slice(extra);
            workers.push(Served::start(
                dir.path(),
                &[
                    "--restate",
                    "--restate-endpoint",
                    &endpoint,
                    "--restate-ingress",
                    &server.ingress,
                    "--restate-admin",
                    &server.admin,
                    // One invocation per connection: the balancer gives each new one to
                    // the next worker.
                    "--restate-streams",
                    "1",
                    "--model",
                    "anthropic/claude-test",
                ],
                &vars,
            ));
            balancer.add(port);
        }
        server.register(&balancer.uri());
        Some(Cluster {
            server,
            _balancer: balancer,
            workers,
            mock,
            dir,
        })
    }

    fn lines(&self, file: &str) -> usize {
        std::fs::read_to_string(self.dir.path().join(file))
            .map(|t| t.lines().count())
            .unwrap_or(0)
    }

    /// The worker whose log says it ran a part of session `id`.
    fn ran(&self, id: &str) -> Vec<usize> {
        let mark = format!("session {id}: turn on this worker");
        (0..self.workers.len())
            .filter(|&i| self.workers[i].stderr().contains(&mark))
            .collect()
    }
}

/// A reply that calls `tool` with no input.
fn call(id: &str, tool: &str) -> Reply {
    Reply::Sse(anthropic_reply("", &[(id, tool, json!({}))], 1))
}

fn text(text: &str) -> Reply {
    Reply::Sse(anthropic_reply(text, &[], 1))
}

/// Five steps that each append a line, then the answer.
fn five_steps() -> Vec<Reply> {
    let mut replies: Vec<Reply> = (1..=5)
        .map(|n| call(&format!("toolu_{n}"), "append"))
        .collect();
    replies.push(text("Five lines."));
    replies
}

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What a finished five-step turn's stream must hold: each step once, each call's
/// result once, one end.
fn assert_one_clean_turn(lines: &[Value], steps: u64, results: usize) {
    let types = types(lines);
    let count = |t: &str| types.iter().filter(|x| *x == t).count();
    assert_eq!(count("turn.completed"), 1, "{types:?}");
    assert_eq!(count("action.result"), results, "{types:?}");
    let started: Vec<u64> = lines
        .iter()
        .filter(|l| l["type"] == "step.started")
        .map(|l| l["data"]["step"].as_u64().unwrap())
        .collect();
    assert_eq!(started, (1..=steps).collect::<Vec<_>>(), "each step once");
    let indices: Vec<u64> = lines.iter().filter_map(|l| l["index"].as_u64()).collect();
    assert_eq!(indices, (0..indices.len() as u64).collect::<Vec<_>>());
}

#[test]
fn a_five_step_turn_runs_each_tool_once() {
    // A session_end hook runs, journaled, at the end of each turn's invocation.
    let bye = (
        "hooks/bye",
        "event = \"session_end\"\ncommand = [\"sh\", \"-c\", \"echo end >> ended.txt\"]\n",
    );
    let Some(cluster) = Cluster::start(
        "a_five_step_turn_runs_each_tool_once",
        five_steps(),
        &[APPEND, bye],
        &[&[], &[]],
    ) else {
        return;
    };
    let id = cluster.workers[0].create("Append five lines.");
    let session = cluster.workers[1].wait_for(&id, "idle");
    assert_eq!(session["title"], "Append five lines.");
    assert_eq!(cluster.lines("out.txt"), 5);
    assert_eq!(cluster.mock.requests().len(), 6);
    let lines = cluster.workers[1].stream(&id, "");
    assert_one_clean_turn(&lines, 6, 5);
    let done = lines
        .iter()
        .find(|l| l["type"] == "turn.completed")
        .unwrap();
    assert_eq!(done["data"]["result"], "Five lines.");
    // A second message is a second turn of the same session, on either worker.
    assert_eq!(
        cluster.workers[0]
            .call(
                "POST",
                &format!("/eve/v1/session/{id}"),
                Some(r#"{"message":"again"}"#)
            )
            .status,
        202
    );
    cluster.workers[0].wait_for(&id, "idle");
    let lines = cluster.workers[0].stream(&id, "");
    assert_eq!(
        types(&lines)
            .iter()
            .filter(|t| *t == "turn.started")
            .count(),
        2
    );
    assert!(
        cluster.lines("ended.txt") >= 2,
        "a session_end hook ran per turn"
    );
}

#[test]
fn a_worker_killed_after_step_two_is_replaced_and_no_call_runs_twice() {
    let held = tempfile::tempdir().unwrap();
    let held_0 = held.path().join("0").display().to_string();
    let held_1 = held.path().join("1").display().to_string();
    fn hold(file: &str) -> [(&'static str, &str); 2] {
        [
            ("EVE_RESTATE_HOLD_AFTER", "step 2 call"),
            ("EVE_RESTATE_HOLD_FILE", file),
        ]
    }
    let (env_0, env_1) = (hold(&held_0), hold(&held_1));
    let Some(mut cluster) = Cluster::start(
        "a_worker_killed_after_step_two_is_replaced_and_no_call_runs_twice",
        five_steps(),
        &[APPEND],
        &[&env_0, &env_1],
    ) else {
        return;
    };
    let id = cluster.workers[0].create("Append five lines.");
    wait_until("a worker to hold after step 2's tool call", || {
        Path::new(&held_0).exists() || Path::new(&held_1).exists()
    });
    let busy = if Path::new(&held_0).exists() { 0 } else { 1 };
    let other = 1 - busy;
    assert_eq!(cluster.lines("out.txt"), 2, "steps 1 and 2 ran their tool");
    assert_eq!(
        cluster.mock.requests().len(),
        2,
        "no model call after step 2 yet"
    );
    cluster.workers[busy].kill9();
    let session = cluster.workers[other].wait_for(&id, "idle");
    assert_eq!(session["events"].as_u64(), Some(28));
    assert_eq!(cluster.lines("out.txt"), 5, "no tool ran twice");
    assert_eq!(
        cluster.mock.requests().len(),
        6,
        "no finished model call was made again"
    );
    assert!(
        cluster.ran(&id).contains(&other),
        "the other worker finished the turn:\n{}",
        cluster.workers[other].stderr()
    );
    let lines = cluster.workers[other].stream(&id, "");
    assert_one_clean_turn(&lines, 6, 5);
    let calls: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "action.result")
        .map(|l| l["data"]["call_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        calls,
        ["toolu_1", "toolu_2", "toolu_3", "toolu_4", "toolu_5"]
    );
}

#[test]
fn a_parked_question_is_answered_through_the_other_worker() {
    let replies = vec![
        Reply::Sse(anthropic_reply(
            "",
            &[(
                "toolu_q",
                "ask_question",
                json!({"question": "Which color?", "options": ["red", "blue"]}),
            )],
            1,
        )),
        call("toolu_a", "append"),
        text("Blue it is."),
    ];
    let Some(mut cluster) = Cluster::start(
        "a_parked_question_is_answered_through_the_other_worker",
        replies,
        &[ASK, APPEND],
        &[&[], &[]],
    ) else {
        return;
    };
    let id = cluster.workers[0].create("Paint it");
    let session = cluster.workers[0].wait_for(&id, "waiting");
    assert_eq!(session["pending"]["question"], "Which color?");
    let request_id = session["pending"]["requestId"]
        .as_str()
        .unwrap()
        .to_string();
    // The worker that parked the turn goes away; the answer goes to the other.
    let parked = cluster.ran(&id);
    assert_eq!(parked.len(), 1, "one worker ran the turn so far");
    let other = 1 - parked[0];
    cluster.workers[parked[0]].kill9();
    let wrong = cluster.workers[other].call(
        "POST",
        &format!("/eve/v1/session/{id}"),
        Some(
            &json!({"inputResponses": [{"requestId": "req_other", "optionId": "blue"}]})
                .to_string(),
        ),
    );
    assert_eq!(wrong.status, 409);
    assert_eq!(wrong.body["code"], "request_not_pending");
    // Straight at the ingress: an answer whose text is over the message limit, in
    // whichever field, or an approval of a question, is refused and the turn stays
    // parked.
    let long = "x".repeat(MAX_MESSAGE + 1);
    for resolution in [
        json!({"decision": "answer", "text": long}),
        json!({"decision": "approved", "by": long}),
        json!({"decision": "denied", "reason": long}),
        json!({"decision": "approved"}),
    ] {
        let body = json!({"requestId": request_id, "wake": {"answer": "resolve", "resolution": resolution}});
        let (status, said) = http(
            &cluster.server.ingress,
            "POST",
            &format!("/EveSession/{id}/respond"),
            Some(&body.to_string()),
        );
        assert!(status >= 400, "{status} {said}");
    }
    let still = cluster.workers[other].call("GET", "/eve/v1/sessions", None);
    assert_eq!(still.body["sessions"][0]["status"], "waiting");
    let answered = cluster.workers[other].call(
        "POST",
        &format!("/eve/v1/session/{id}"),
        Some(
            &json!({"inputResponses": [{"requestId": request_id, "optionId": "blue"}]}).to_string(),
        ),
    );
    assert_eq!(answered.status, 202, "{:?}", answered.body);
    cluster.workers[other].wait_for(&id, "idle");
    assert!(cluster.ran(&id).contains(&other));
    let lines = cluster.workers[other].stream(&id, "");
    let types = types(&lines);
    for wanted in [
        "input.requested",
        "turn.waiting",
        "input.resolved",
        "turn.completed",
    ] {
        assert_eq!(
            types.iter().filter(|t| *t == wanted).count(),
            1,
            "{wanted}: {types:?}"
        );
    }
    let done = lines
        .iter()
        .find(|l| l["type"] == "turn.completed")
        .unwrap();
    assert_eq!(done["data"]["result"], "Blue it is.");
    assert_eq!(cluster.lines("out.txt"), 1);
    assert_eq!(
        cluster.mock.requests().len(),
        3,
        "the parked call was not made again"
    );
}

#[test]
fn an_answer_posted_the_moment_the_stream_says_the_turn_waits_is_taken() {
    // Plain `eve serve` once refused an answer sent the moment the stream said the
    // turn waits (its job still held the session); a Restate worker must take it too:
    // the session's state says it waits in the same batch as the parked turn's lines.
    let rounds = 6;
    let mut replies = Vec::new();
    for round in 0..rounds {
        replies.push(Reply::Sse(anthropic_reply(
            "",
            &[(
                &format!("toolu_q{round}"),
                "ask_question",
                json!({"question": "Which color?", "options": ["red", "blue"]}),
            )],
            1,
        )));
        replies.push(text("Blue it is."));
    }
    let Some(cluster) = Cluster::start(
        "an_answer_posted_the_moment_the_stream_says_the_turn_waits_is_taken",
        replies,
        &[ASK],
        &[&[]],
    ) else {
        return;
    };
    let worker = &cluster.workers[0];
    for round in 0..rounds {
        let wanted = ["input.requested", "turn.waiting"][round % 2];
        let id = worker.create("Paint it");
        let requested = worker.first_line(&id, "input.requested");
        let request_id = requested["data"]["request"]["request_id"]
            .as_str()
            .unwrap()
            .to_string();
        if wanted != "input.requested" {
            worker.first_line(&id, wanted);
        }
        let answered = worker.call(
            "POST",
            &format!("/eve/v1/session/{id}"),
            Some(
                &json!({"inputResponses": [{"requestId": request_id, "optionId": "blue"}]})
                    .to_string(),
            ),
        );
        assert_eq!(
            answered.status, 202,
            "round {round}, posted after `{wanted}`: {:?}",
            answered.body
        );
        worker.wait_for(&id, "idle");
        let lines = worker.stream(&id, "");
        assert!(
            lines
                .iter()
                .any(|l| l["type"] == "turn.completed" && l["data"]["result"] == "Blue it is."),
            "round {round}: {lines:?}"
        );
    }
}

#[test]
fn two_sessions_run_at_once_on_two_workers() {
    let replies = vec![
        call("toolu_w1", "wait"),
        call("toolu_w2", "wait"),
        text("Done."),
        text("Done."),
    ];
    let Some(cluster) = Cluster::start(
        "two_sessions_run_at_once_on_two_workers",
        replies,
        &[WAIT],
        &[&[], &[]],
    ) else {
        return;
    };
    let first = cluster.workers[0].create("One");
    wait_until("the first session's tool to start", || {
        cluster.lines("started.txt") == 1
    });
    let second = cluster.workers[1].create("Two");
    wait_until("both tools to run at once", || {
        cluster.lines("started.txt") == 2
    });
    let (ran_first, ran_second) = (cluster.ran(&first), cluster.ran(&second));
    assert_eq!(ran_first.len(), 1, "{ran_first:?}");
    assert_eq!(ran_second.len(), 1, "{ran_second:?}");
    assert_ne!(ran_first, ran_second, "each worker runs one of them");
    for worker in &cluster.workers {
        assert_eq!(worker.session(&first)["status"], "running");
    }
    std::fs::write(cluster.dir.path().join("release"), "").unwrap();
    for id in [&first, &second] {
        cluster.workers[0].wait_for(id, "idle");
        let lines = cluster.workers[1].stream(id, "");
        let done = lines
            .iter()
            .find(|l| l["type"] == "turn.completed")
            .unwrap();
        assert_eq!(done["data"]["result"], "Done.");
    }
    assert_eq!(cluster.mock.requests().len(), 4);
}

#[test]
fn a_restate_worker_keeps_the_api_checks_and_refuses_bad_input() {
    let Some(cluster) = Cluster::start(
        "a_restate_worker_keeps_the_api_checks_and_refuses_bad_input",
        vec![text("Hi.")],
        &[],
        &[&[]],
    ) else {
        return;
    };
    let worker = &cluster.workers[0];
    // The same guard as plain eve serve: a Host that is not loopback is refused.
    let (status, _, _) = request(
        &worker.url,
        "GET",
        "/eve/v1/sessions",
        &[("Host", "evil.example")],
        None,
    );
    assert_eq!(status, 403);
    // Without EVE_SERVE_TOKEN the worker made a token: a caller of this machine without
    // it (a tool of one of its sessions) is refused like any other.
    for (method, path, body) in [
        ("GET", "/eve/v1/sessions", None),
        ("POST", "/eve/v1/session", Some(r#"{"message":"hi"}"#)),
    ] {
        let answer = worker.anonymous(method, path, body, &[]);
        assert_eq!(
            (answer.status, answer.body["code"].as_str()),
            (401, Some("unauthorized")),
            "{method} {path}"
        );
    }
    // A browser page of another origin may not start a session.
    let (status, _, body) = request(
        &worker.url,
        "POST",
        "/eve/v1/session",
        &[("Origin", "http://evil.example")],
        Some(br#"{"message":"hi"}"#),
    );
    assert_eq!(status, 403, "{}", String::from_utf8_lossy(&body));
    let bad = worker.call(
        "POST",
        "/eve/v1/session",
        Some(r#"{"message":"hi","extra":1}"#),
    );
    assert_eq!(bad.status, 400);
    assert_eq!(
        worker
            .call("GET", "/eve/v1/session/ses_nope/stream", None)
            .status,
        404
    );
    let missing = worker.call(
        "POST",
        "/eve/v1/session/ses_01M8NOSUCHSESSION0000000000",
        Some(r#"{"message":"hi"}"#),
    );
    assert_eq!(missing.status, 404, "{:?}", missing.body);
    // Straight at the ingress, bypassing the API: the object checks its input too.
    for (key, body) in [
        (
            "not-a-session",
            r#"{"job":{"job":"turn","message":"hi"},"create":true}"#,
        ),
        (
            "ses_01M8RESTATEDIRECT000000000",
            r#"{"job":{"job":"turn","message":" "},"create":true}"#,
        ),
        (
            "ses_01M8RESTATEDIRECT000000000",
            r#"{"job":{"job":"shell","command":"rm"},"create":true}"#,
        ),
    ] {
        let (status, _) = http(
            &cluster.server.ingress,
            "POST",
            &format!("/EveSession/{key}/accept"),
            Some(body),
        );
        assert!(status >= 400, "{key} {body}: {status}");
    }
    let listed = worker.call("GET", "/eve/v1/sessions", None);
    assert_eq!(listed.status, 200);
    assert_eq!(listed.body["sessions"], json!([]), "no session was created");
    let id = worker.create("Say hi");
    worker.wait_for(&id, "idle");
    let (status, headers, _) = worker.request(
        "GET",
        &format!("/eve/v1/session/{id}/stream?startIndex=-2"),
        &[],
        None,
    );
    assert_eq!(status, 200);
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "content-type" && v.starts_with("application/x-ndjson"))
    );
    let tail = worker.stream(&id, "?startIndex=-2");
    assert_eq!(types(&tail), ["turn.completed", "session.completed"]);
    // A turn straight from the ingress, past `accept`'s checks (a busy or parked
    // session, the message's size): `turn` is private to the ingress.
    let events = worker.call("GET", "/eve/v1/sessions", None).body["sessions"][0]["events"].clone();
    let long = "x".repeat(MAX_MESSAGE + 1);
    for message in ["Say it again", long.as_str()] {
        let (status, body) = http(
            &cluster.server.ingress,
            "POST",
            &format!("/EveSession/{id}/turn"),
            Some(&json!({"job": "turn", "message": message}).to_string()),
        );
        assert!((400..500).contains(&status), "{status} {body}");
    }
    let (status, body) = http(
        &cluster.server.ingress,
        "POST",
        &format!("/EveSession/{id}/accept"),
        Some(&json!({"job": {"job": "turn", "message": long}}).to_string()),
    );
    assert!(status >= 400, "a message over the limit: {status} {body}");
    let after = worker.call("GET", "/eve/v1/sessions", None);
    assert_eq!(after.body["sessions"][0]["status"], "idle");
    assert_eq!(after.body["sessions"][0]["events"], events, "no turn ran");
    assert_eq!(cluster.mock.requests().len(), 1, "the model was asked once");
}

#[test]
fn a_worker_with_a_token_needs_it_and_refuses_an_open_endpoint_without_a_key() {
    let tmp = agent("- text: hi\n", &[]);
    let refused = common::eve()
        .current_dir(tmp.path())
        .args([
            "serve",
            ".",
            "--restate",
            "--restate-endpoint",
            "0.0.0.0:9080",
        ])
        .env_remove("EVE_RESTATE_IDENTITY_KEY")
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("EVE_RESTATE_IDENTITY_KEY"), "{stderr}");
    let Some(binary) = binary_or_skip("a_worker_with_a_token_needs_it") else {
        return;
    };
    let server = RestateServer::start(&binary);
    let endpoint = format!("127.0.0.1:{}", free_port());
    let worker = Served::start(
        tmp.path(),
        &[
            "--restate",
            "--restate-endpoint",
            &endpoint,
            "--restate-ingress",
            &server.ingress,
            "--restate-admin",
            &server.admin,
            "--restate-register",
        ],
        &[("EVE_SERVE_TOKEN", "s3cret-token")],
    );
    assert!(
        worker.stderr().contains("registered http://"),
        "{}",
        worker.stderr()
    );
    assert_eq!(
        worker
            .anonymous("GET", "/eve/v1/sessions", None, &[])
            .status,
        401
    );
    let with = worker.call_with(
        "GET",
        "/eve/v1/sessions",
        None,
        &[("Authorization", "Bearer s3cret-token")],
    );
    assert_eq!(with.status, 200, "{:?}", with.body);
}

#[test]
fn a_reply_too_large_to_journal_fails_the_turn_once() {
    // A hostile provider's reply of 5 MiB: journaled as is, it would make the journal
    // entry (and the state) as large, and Restate retry the invocation for ever.
    // In words of 64 KiB, each its own SSE event: one event of 5 MiB takes the SSE
    // parser long to read.
    let huge = format!("{} ", "y".repeat(64 * 1024)).repeat(80);
    let Some(cluster) = Cluster::start(
        "a_reply_too_large_to_journal_fails_the_turn_once",
        vec![text(&huge), text("Less.")],
        &[],
        &[&[]],
    ) else {
        return;
    };
    let worker = &cluster.workers[0];
    let id = worker.create("Say a lot");
    worker.wait_for(&id, "idle");
    let lines = worker.stream(&id, "");
    let failed = lines
        .iter()
        .find(|l| l["type"] == "turn.failed")
        .unwrap_or_else(|| panic!("{:?}", types(&lines)));
    assert!(
        failed.to_string().contains("more than the 4 MiB"),
        "{failed}"
    );
    assert!(lines.iter().all(|l| l.to_string().len() < 64 * 1024));
    assert_eq!(cluster.mock.requests().len(), 1, "the call was made once");
    // The session takes the next turn.
    let next = worker.call(
        "POST",
        &format!("/eve/v1/session/{id}"),
        Some(r#"{"message":"Less, please"}"#),
    );
    assert_eq!(next.status, 202, "{:?}", next.body);
    worker.wait_for(&id, "idle");
    assert_eq!(cluster.mock.requests().len(), 2);
}

#[test]
fn a_cancelled_turn_ends_aborted_and_its_running_call_says_so() {
    let Some(cluster) = Cluster::start(
        "a_cancelled_turn_ends_aborted_and_its_running_call_says_so",
        vec![call("toolu_w", "wait"), text("Never asked.")],
        &[WAIT],
        &[&[], &[]],
    ) else {
        return;
    };
    let id = cluster.workers[0].create("Wait");
    wait_until("the tool to start", || cluster.lines("started.txt") == 1);
    // Through the other worker's API: the cancel reaches the turn through Restate.
    let cancel = cluster.workers[1].call("POST", &format!("/eve/v1/session/{id}/cancel"), None);
    assert_eq!(cancel.status, 202, "{:?}", cancel.body);
    // A call that runs is not interrupted in Restate mode: it ends, its result is
    // dropped, and the turn ends there.
    std::fs::write(cluster.dir.path().join("release"), "").unwrap();
    cluster.workers[0].wait_for(&id, "idle");
    let lines = cluster.workers[1].stream(&id, "");
    let result = lines
        .iter()
        .find(|l| l["type"] == "action.result")
        .unwrap_or_else(|| panic!("{:?}", types(&lines)));
    // The cancel reaches the call while it runs (its result is dropped and says so),
    // unless the call ended first: then it keeps its result and the turn ends after it.
    let output = result["data"]["output"].as_str().unwrap();
    assert!(
        output.contains("the turn was cancelled") && result["data"]["is_error"] == true
            || result["data"]["is_error"] == false,
        "{result}"
    );
    assert!(!output.contains("could not tell"), "{result}");
    let done = lines
        .iter()
        .find(|l| l["type"] == "turn.completed")
        .unwrap();
    assert_eq!(done["data"]["end_reason"], "aborted");
    assert_eq!(
        types(&lines)
            .iter()
            .filter(|t| *t == "turn.cancelled")
            .count(),
        1
    );
    assert_eq!(
        cluster.mock.requests().len(),
        1,
        "no model call after the cancel"
    );
    // Nothing left to cancel.
    let again = cluster.workers[0].call("POST", &format!("/eve/v1/session/{id}/cancel"), None);
    assert_eq!(again.body["status"], "no_active_turn");
}

/// A valid Restate request-identity public key (the SDK's own tests use it).
const IDENTITY_KEY: &str = "publickeyv1_ChjENKeMvCtRnqG2mrBK1HmPKufgFUc98K8B3ononQvp";

/// The status of an unsigned HTTP/2 discovery request to a Restate endpoint.
fn discover(endpoint: &str) -> u16 {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .no_proxy()
            .http2_prior_knowledge()
            .build()
            .unwrap();
        client
            .get(format!("http://{endpoint}/discover"))
            .header("accept", "application/vnd.restate.endpointmanifest.v4+json")
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    })
}

#[test]
fn with_an_identity_key_the_endpoint_refuses_requests_restate_did_not_sign() {
    let tmp = agent("- text: hi\n", &[]);
    let worker_with = |key: Option<&str>| {
        let endpoint = format!("127.0.0.1:{}", free_port());
        let env: Vec<(&str, &str)> = key
            .map(|k| ("EVE_RESTATE_IDENTITY_KEY", k))
            .into_iter()
            .collect();
        let worker = Served::start(
            tmp.path(),
            &["--restate", "--restate-endpoint", &endpoint],
            &env,
        );
        (worker, endpoint)
    };
    let (_open, endpoint) = worker_with(None);
    assert_eq!(
        discover(&endpoint),
        200,
        "on loopback without a key it answers"
    );
    let (_signed, endpoint) = worker_with(Some(IDENTITY_KEY));
    assert_eq!(discover(&endpoint), 401, "an unsigned request is refused");
    let bad = common::eve()
        .current_dir(tmp.path())
        .args(["serve", ".", "--restate"])
        .env("EVE_RESTATE_IDENTITY_KEY", "publickeyv1_nonsense")
        .output()
        .unwrap();
    assert_ne!(bad.status.code(), Some(0));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("not a Restate identity key"), "{stderr}");
}

#[test]
fn compaction_and_the_todo_list_work_across_workers() {
    let todos = json!({"todos": [{"content": "Write the plan", "status": "in_progress"}]});
    let replies = vec![
        Reply::Sse(anthropic_reply("", &[("toolu_t", "todo", todos)], 1)),
        text("Planned."),
        text("The user asked for a plan."),
        text("Next."),
    ];
    let Some(cluster) = Cluster::start(
        "compaction_and_the_todo_list_work_across_workers",
        replies,
        &[("todo", "")],
        &[&[], &[]],
    ) else {
        return;
    };
    let id = cluster.workers[0].create("Plan it");
    cluster.workers[0].wait_for(&id, "idle");
    let compact = cluster.workers[1].call("POST", &format!("/eve/v1/session/{id}/compact"), None);
    assert_eq!(compact.status, 202, "{:?}", compact.body);
    cluster.workers[1].wait_for(&id, "idle");
    let next = cluster.workers[1].call(
        "POST",
        &format!("/eve/v1/session/{id}"),
        Some(r#"{"message":"Go on"}"#),
    );
    assert_eq!(next.status, 202, "{:?}", next.body);
    cluster.workers[0].wait_for(&id, "idle");
    let lines = cluster.workers[0].stream(&id, "");
    let types = types(&lines);
    assert_eq!(
        types
            .iter()
            .filter(|t| *t == "compaction.completed")
            .count(),
        1,
        "{types:?}"
    );
    let requests = cluster.mock.requests();
    assert_eq!(requests.len(), 4);
    // The turn after the compaction starts from the summary and keeps the todo list,
    // from the session's state in Restate, whichever worker runs it.
    let after = requests[3].body.to_string();
    assert!(after.contains("The user asked for a plan."), "{after}");
    assert!(after.contains("Write the plan"), "{after}");
}
