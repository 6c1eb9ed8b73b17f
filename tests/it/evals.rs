//! `eve eval` end to end: the real binary on fixture agents with eval cases; what a
//! person sees is snapshotted, with times, token estimates and temporary paths masked.

use crate::common;

use std::fs;
use std::path::Path;

use crate::common::mock::{MockServer, Reply, anthropic_reply};
use crate::common::{copy_to_temp, eve, fixtures, run_in};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn agent(name: &str) -> common::TempCopy {
    copy_to_temp(&fixtures().join("evals").join(name))
}

/// What differs between runs: times, token estimates (the system prompt holds the
/// workspace path), the artifacts folder and temporary workspaces.
fn mask(text: &str) -> String {
    let time = regex::Regex::new(r" +(\d+ ms|\d+\.\d s)\b").unwrap();
    let tokens = regex::Regex::new(r"· [\d,]+ tokens in, [\d,]+ out ·").unwrap();
    let artifacts = regex::Regex::new(r"artifacts: .*").unwrap();
    let workspace = regex::Regex::new(r"workspace: .*").unwrap();
    let text = time.replace_all(text, " [time]");
    let text = tokens.replace_all(&text, "· [tokens] ·");
    let text = artifacts.replace_all(&text, "artifacts: [artifacts]");
    workspace
        .replace_all(&text, "workspace: [tmp]")
        .into_owned()
}

/// The artifacts folder of the only eval run of `dir`.
fn artifacts(dir: &Path) -> std::path::PathBuf {
    let mut runs: Vec<_> = fs::read_dir(dir.join(".eve/evals"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    runs.sort();
    runs.pop().unwrap()
}

fn events(dir: &Path, case: &str) -> Vec<Value> {
    let path = artifacts(dir)
        .join("cases")
        .join(case)
        .join("run-1/events.ndjson");
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn every_expectation_kind_passes() {
    let tmp = agent("passing");
    let out = run_in(tmp.path(), &["eval", "--jobs", "3"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(out.stderr, "");
    insta::assert_snapshot!("evals_passing", mask(&out.stdout));
    let summary: Value = serde_json::from_str(
        &fs::read_to_string(artifacts(tmp.path()).join("summary.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        (summary["cases"].clone(), summary["passed"].clone()),
        (json!(8), json!(8))
    );
    let lines = fs::read_to_string(artifacts(tmp.path()).join("results.jsonl")).unwrap();
    assert_eq!(lines.lines().count(), 8);
}

#[test]
fn stubs_answer_matching_calls_and_the_real_tool_the_others() {
    let tmp = agent("passing");
    let out = run_in(tmp.path(), &["eval", "stubs"]);
    assert_eq!(out.code, 0, "{}", out.stdout);
    let results: Vec<(String, bool, String)> = events(tmp.path(), "stubs")
        .iter()
        .filter(|e| e["type"] == "action.result")
        .map(|e| {
            let d = &e["data"];
            (
                d["name"].as_str().unwrap().to_string(),
                d["is_error"].as_bool().unwrap(),
                d["output"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        results,
        vec![
            ("read_file".into(), false, "from the stub".into()),
            (
                "read_file".into(),
                false,
                "     1\tfrom the workspace".into()
            ),
            ("web_fetch".into(), true, "503 Service Unavailable".into()),
            ("web_fetch".into(), false, "text page".into()),
            ("web_fetch".into(), false, "<p>second</p>".into()),
        ]
    );
}

#[test]
fn every_expectation_kind_fails_with_what_was_expected_and_what_happened() {
    let tmp = agent("failing");
    let out = run_in(tmp.path(), &["eval", "--jobs", "4"]);
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    insta::assert_snapshot!("evals_failing", mask(&out.stdout));
    insta::assert_snapshot!("evals_failing_warnings", out.stderr);
}

#[test]
fn answers_approvals_and_denials_resume_the_waiting_turn() {
    let tmp = agent("turns");
    let out = run_in(tmp.path(), &["eval"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    insta::assert_snapshot!("evals_turns", mask(&out.stdout));
    let denied: Vec<Value> = events(tmp.path(), "approve-then-deny")
        .into_iter()
        .filter(|e| e["type"] == "action.result")
        .map(|e| json!([e["data"]["output"], e["data"]["is_error"]]))
        .collect();
    assert_eq!(
        denied,
        vec![
            json!(["Thu Jan  1 00:00:00 UTC 1970", false]),
            json!(["The user denied this call: not today", true]),
        ]
    );
}

#[test]
fn parallel_runs_never_share_a_workspace() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("parallel");
    fs::create_dir_all(dir.join("evals")).unwrap();
    fs::write(
        dir.join("agent.toml"),
        "model = \"anthropic/claude-sonnet-4-5\"\n",
    )
    .unwrap();
    fs::write(dir.join("instructions.md"), "Work in {{ workspace }}.\n").unwrap();
    for n in 0..6 {
        fs::write(
            dir.join(format!("evals/case-{n}.toml")),
            format!(
                r#"prompt = "Mark the workspace"
repeat = 2
[[reply]]
tool_calls = [{{ name = "glob", input = {{ pattern = "*.txt" }} }}, {{ name = "write_file", input = {{ path = "mine-{n}.txt", content = "{n}" }} }}]
[[reply]]
text = "Marked."
[expect]
files = {{ "mine-{n}.txt" = "{n}" }}
tools = {{ called = ["glob"] }}
"#
            ),
        )
        .unwrap();
    }
    let out = run_in(tmp.path(), &["eval", "parallel", "--jobs", "4", "--keep"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    let kept: Vec<&str> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once("workspace (run ").map(|(_, rest)| rest))
        .map(|rest| rest.split_once(": ").unwrap().1)
        .collect();
    assert_eq!(kept.len(), 12, "{}", out.stdout);
    let mut unique = kept.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 12, "every run has its own workspace");
    for workspace in &kept {
        let files: Vec<String> = fs::read_dir(workspace)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(files.len(), 1, "{workspace}: {files:?}");
        fs::remove_dir_all(workspace).unwrap();
    }
    // Each run's glob saw no other run's marker.
    for n in 0..6 {
        for run in 1..=2 {
            let path = artifacts(&dir).join(format!("cases/case-{n}/run-{run}/events.ndjson"));
            let text = fs::read_to_string(path).unwrap();
            let glob = text
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap())
                .find(|e| e["type"] == "action.result" && e["data"]["name"] == "glob")
                .unwrap();
            assert!(
                !glob["data"]["output"].as_str().unwrap().contains("mine-"),
                "{glob}"
            );
        }
    }
}

#[test]
fn a_case_past_its_timeout_is_cancelled_and_reported() {
    let tmp = agent("failing");
    let out = run_in(tmp.path(), &["eval", "timeout"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stdout
            .contains("✗ timed out after 1 s (timeout_secs): the turn was cancelled"),
        "{}",
        out.stdout
    );
    let cancelled = events(tmp.path(), "timeout")
        .iter()
        .any(|e| e["type"] == "turn.cancelled");
    assert!(cancelled);
}

#[test]
fn junit_is_valid_xml_with_one_testcase_per_case_and_hostile_text_escaped() {
    let tmp = agent("failing");
    let out = run_in(
        tmp.path(),
        &["eval", "reply", "tools", "files", "--junit", "out.xml"],
    );
    assert_eq!(out.code, 1);
    let xml = fs::read_to_string(tmp.path().join("out.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let cases: Vec<(&str, bool)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .map(|n| {
            (
                n.attribute("name").unwrap(),
                n.children().any(|c| c.has_tag_name("failure")),
            )
        })
        .collect();
    assert_eq!(
        cases,
        vec![("files", true), ("reply", true), ("tools", true)]
    );
    let failure = doc
        .descendants()
        .find(|n| {
            n.has_tag_name("failure") && n.parent().unwrap().attribute("name") == Some("reply")
        })
        .unwrap();
    let text = failure.text().unwrap();
    assert!(text.contains("</failure> ]]> &"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "escape characters are spelled out: {text}"
    );
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(
        (suite.attribute("tests"), suite.attribute("failures")),
        (Some("3"), Some("3"))
    );

    let passing = agent("passing");
    let out = run_in(passing.path(), &["eval", "--junit", "ok.xml"]);
    assert_eq!(out.code, 0);
    let xml = fs::read_to_string(passing.path().join("ok.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("testcase"))
            .count(),
        8
    );
    assert!(!doc.descendants().any(|n| n.has_tag_name("failure")));
}

#[test]
fn exit_codes_and_usage_errors() {
    let tmp = agent("passing");
    let unknown = run_in(tmp.path(), &["eval", "reploy"]);
    assert_eq!(
        (unknown.code, unknown.stderr.as_str()),
        (
            2,
            "error: no eval case matches `reploy`: did you mean `reply`?\n"
        )
    );
    let tag = run_in(tmp.path(), &["eval", "--tag", "filez"]);
    assert_eq!(
        (tag.code, tag.stderr.as_str()),
        (
            2,
            "error: no eval case has the tag `filez`: did you mean `files`?\n"
        )
    );
    let judge = run_in(tmp.path(), &["eval", "--judge-model", "scripted:nope.yaml"]);
    assert_eq!(judge.code, 2);
    assert!(
        judge.stderr.starts_with(
            "error: --judge-model scripted:nope.yaml: cannot read the scripted replies"
        ),
        "{}",
        judge.stderr
    );
    let model = run_in(tmp.path(), &["eval", "--model", "nowhere/x"]);
    assert_eq!(model.code, 2);
    assert!(
        model.stderr.contains("unknown provider `nowhere`"),
        "{}",
        model.stderr
    );
    assert!(!tmp.path().join(".eve/evals").exists(), "nothing ran");
    let missing = run_in(tmp.path(), &["eval", "nowhere/"]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    let none = tempfile::tempdir().unwrap();
    fs::write(
        none.path().join("agent.toml"),
        "model = \"anthropic/claude-sonnet-4-5\"\n",
    )
    .unwrap();
    fs::write(none.path().join("instructions.md"), "Hi.\n").unwrap();
    let empty = run_in(none.path(), &["eval", "."]);
    assert_eq!(empty.code, 2);
    assert!(
        empty
            .stderr
            .ends_with("has no eval cases: add one as `evals/<name>.toml`\n"),
        "{}",
        empty.stderr
    );
}

#[test]
fn a_case_naming_a_tool_the_agent_lacks_fails_the_build_and_eval_exits_2() {
    let tmp = copy_to_temp(&fixtures().join("invalid/eval-unknown-tool"));
    let build = run_in(tmp.path(), &["build"]);
    assert_eq!(build.code, 1);
    let eval = run_in(tmp.path(), &["eval"]);
    assert_eq!(eval.code, 2);
    assert!(
        eval.stderr.contains("help: did you mean `read_file`?"),
        "{}",
        eval.stderr
    );
    assert!(
        eval.stderr.ends_with("error: could not build `eval-unknown-tool` and its evals: fix the errors above, then run again\n"),
        "{}",
        eval.stderr
    );
    assert_eq!(eval.stdout, "");
}

#[test]
fn list_tags_json_and_repeat() {
    let tmp = agent("passing");
    let list = run_in(tmp.path(), &["eval", "--list"]);
    assert_eq!(list.code, 0);
    insta::assert_snapshot!("evals_list", list.stdout);
    assert!(
        !tmp.path().join(".eve/evals").exists(),
        "--list runs nothing"
    );

    let tagged = run_in(
        tmp.path(),
        &[
            "eval", "--tag", "files", "--tag", "reply", "--format", "json",
        ],
    );
    assert_eq!(tagged.code, 0, "{}", tagged.stderr);
    let json: Value = serde_json::from_str(&tagged.stdout).unwrap();
    let ids: Vec<&str> = json["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["files", "reply"]);
    assert_eq!(json["summary"]["passed"], 2);
    let check = &json["cases"][1]["runs"][0]["checks"][0];
    assert_eq!(check["expectation"], "expect.end");
    assert_eq!(check["status"], "passed");

    let repeated = run_in(tmp.path(), &["eval", "reply", "--repeat", "3"]);
    assert_eq!(repeated.code, 0);
    assert!(
        repeated.stdout.contains("3/3 runs passed (needs 3)"),
        "{}",
        repeated.stdout
    );
    assert!(
        repeated.stdout.contains("pass@1 1.00 over repeated cases"),
        "{}",
        repeated.stdout
    );
}

#[test]
fn a_judge_is_skipped_without_a_model_soft_without_gate_and_fails_with_it() {
    let tmp = agent("judged");
    let no = run_in(tmp.path(), &["eval"]);
    assert_eq!(no.code, 0, "{}", no.stdout);
    insta::assert_snapshot!("evals_judge_skipped", mask(&no.stdout));

    fs::write(
        tmp.path().join("no.yaml"),
        "- text: '{\"pass\": false, \"reason\": \"it is curt\"}'\n",
    )
    .unwrap();
    let failed = run_in(tmp.path(), &["eval", "--judge-model", "scripted:no.yaml"]);
    assert_eq!(failed.code, 1, "{}", failed.stdout);
    insta::assert_snapshot!("evals_judge_failed", mask(&failed.stdout));
    let strict = run_in(
        tmp.path(),
        &[
            "eval",
            "soft",
            "--judge-model",
            "scripted:no.yaml",
            "--strict",
        ],
    );
    assert_eq!(strict.code, 1, "{}", strict.stdout);

    fs::write(
        tmp.path().join("yes.yaml"),
        "- text: 'Verdict: {\"pass\": true, \"reason\": \"polite enough\"}'\n",
    )
    .unwrap();
    let passed = run_in(
        tmp.path(),
        &["eval", "--judge-model", "scripted:yes.yaml", "--strict"],
    );
    assert_eq!(passed.code, 0, "{}", passed.stdout);
    assert!(
        passed.stdout.contains("2 cases: 2 passed, 0 failed ·"),
        "{}",
        passed.stdout
    );
}

fn live_server() -> MockServer {
    MockServer::start(vec![
        Reply::Sse(anthropic_reply(
            "Let me look.",
            &[("toolu_1", "read_file", json!({"path": "notes.txt"}))],
            3,
        )),
        Reply::Sse(anthropic_reply("Your notes say: buy milk.", &[], 1)),
    ])
}

#[test]
fn a_case_without_replies_runs_on_the_agents_model() {
    let tmp = agent("live");
    let server = live_server();
    let out = eve()
        .current_dir(tmp.path())
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .args(["eval"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0].body["model"], "claude-test");
    let second = requests[1].body.to_string();
    assert!(
        second.contains("Buy milk."),
        "the tool ran in the case's workspace: {second}"
    );
}

#[test]
fn record_turns_a_live_run_into_replies_that_replay_offline() {
    let tmp = agent("live");
    let server = live_server();
    let out = eve()
        .current_dir(tmp.path())
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .args(["eval", "--record", "--record-stubs"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(stderr, "recorded evals/notes.toml: 2 replies and 1 stub\n");
    let case = fs::read_to_string(tmp.path().join("evals/notes.toml")).unwrap();
    insta::assert_snapshot!("evals_recorded_case", case);

    // Offline now: no base URL, no key, and the recorded stub answers read_file.
    let replay = run_in(tmp.path(), &["eval"]);
    assert_eq!(replay.code, 0, "{}{}", replay.stdout, replay.stderr);
    assert_eq!(
        server.requests().len(),
        2,
        "the replay never called the model"
    );
}

#[test]
fn a_scripted_case_never_reaches_a_real_model() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("offline");
    fs::create_dir_all(dir.join("evals")).unwrap();
    fs::create_dir_all(dir.join("subagents/finder")).unwrap();
    fs::write(
        dir.join("agent.toml"),
        "model = \"anthropic/claude-sonnet-4-5\"\n[limits]\ncontext_window = 20000\nmax_output_tokens = 1000\n[compaction]\nmodel = \"anthropic/claude-haiku-4-5\"\n",
    )
    .unwrap();
    fs::write(dir.join("instructions.md"), "Work in {{ workspace }}.\n").unwrap();
    fs::write(
        dir.join("subagents/finder/agent.toml"),
        "description = \"Finds files\"\nmodel = \"anthropic/claude-opus-4-1\"\n",
    )
    .unwrap();
    fs::write(dir.join("subagents/finder/instructions.md"), "Find.\n").unwrap();
    // A large read and a reported count near the window make the next step compact the
    // history: the summary is a model call, on the compaction model unless pinned.
    let big = "a line of the large file that fills the context window quickly\n".repeat(400);
    fs::create_dir_all(dir.join("evals/_ws")).unwrap();
    fs::write(dir.join("evals/_ws/big.txt"), big).unwrap();
    fs::write(
        dir.join("evals/offline.toml"),
        r#"prompt = "Find the notes"
[workspace]
from = "_ws"
[[reply]]
tool_calls = [{ name = "read_file", input = { path = "big.txt" } }]
usage = { input_tokens = 19000, output_tokens = 10 }
[[reply]]
text = "Summary: the agent listed the files."
[[reply]]
tool_calls = [{ name = "finder", input = { task = "find notes" } }]
[[reply]]
text = "notes.txt"
[[reply]]
text = "Found notes.txt."
[expect]
subagents = ["finder"]
events = { present = ["compaction.completed"] }
"#,
    )
    .unwrap();
    let server = MockServer::start(Vec::new());
    let out = eve()
        .current_dir(tmp.path())
        .env("ANTHROPIC_BASE_URL", server.url())
        .env("ANTHROPIC_API_KEY", "test-key")
        .args(["eval", "offline"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    assert_eq!(
        server.requests().len(),
        0,
        "no request reached the model's server"
    );
}

#[cfg(unix)]
#[test]
fn file_expectations_never_follow_a_link_out_of_the_workspace() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret.txt");
    fs::write(&secret, "the secret\n").unwrap();
    let dir = tmp.path().join("links");
    fs::create_dir_all(dir.join("evals")).unwrap();
    fs::write(
        dir.join("agent.toml"),
        "model = \"anthropic/claude-sonnet-4-5\"\n",
    )
    .unwrap();
    fs::write(dir.join("instructions.md"), "Work in {{ workspace }}.\n").unwrap();
    fs::write(
        dir.join("evals/link.toml"),
        format!(
            r#"prompt = "Link it"
[[reply]]
tool_calls = [{{ name = "bash", input = {{ command = "ln -s {0} leak.txt && mkdir -p d && ln -s {1} d/up" }} }}]
[[reply]]
text = "Linked."
[expect]
files = {{ "leak.txt" = {{ contains = "secret" }}, "d/up/secret.txt" = {{ contains = "secret" }} }}
"#,
            secret.display(),
            tmp.path().display()
        ),
    )
    .unwrap();
    let out = run_in(tmp.path(), &["eval", "links"]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(!out.stdout.contains("the secret"), "{}", out.stdout);
    assert!(
        out.stdout.contains("actual:   not read: it is a symbolic link, and eve does not follow links in a workspace"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("actual:   not read: `up` on the way is a symbolic link or not a folder"),
        "{}",
        out.stdout
    );

    // A workspace folder that links out is refused when the case is built.
    fs::create_dir_all(dir.join("evals/_ws")).unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("evals/_ws/secret.txt")).unwrap();
    fs::write(
        dir.join("evals/from.toml"),
        "prompt = \"Hi\"\n[workspace]\nfrom = \"_ws\"\n",
    )
    .unwrap();
    let build = run_in(&dir, &["build"]);
    assert_eq!(build.code, 1);
    assert!(
        build.stderr.contains("error[E0707]: workspace folder `_ws` holds `secret.txt`, a symbolic link that leads out of it"),
        "{}",
        build.stderr
    );
}

#[test]
fn a_file_expectation_that_climbs_out_of_the_workspace_fails_the_case() {
    // W0710 says the expectation can never hold; the case once passed all the same,
    // its expectation dropped, whatever it asked (even that a file outside exists).
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("climb");
    fs::create_dir_all(dir.join("evals")).unwrap();
    fs::write(
        dir.join("agent.toml"),
        "model = \"anthropic/claude-sonnet-4-5\"\n",
    )
    .unwrap();
    fs::write(dir.join("instructions.md"), "Help.\n").unwrap();
    fs::write(
        dir.join("evals/climb.toml"),
        r#"prompt = "Hi"
[[reply]]
text = "Done."
[expect]
files = { "../climb/agent.toml" = { exists = true }, "/etc/hostname" = { absent = true }, "a/../../x" = {} }
"#,
    )
    .unwrap();
    let out = run_in(tmp.path(), &["eval", "climb"]);
    assert_eq!(out.code, 1, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("warning[W0710]"), "{}", out.stderr);
    for path in ["../climb/agent.toml", "/etc/hostname", "a/../../x"] {
        assert!(
            out.stdout.contains(&format!("expect.files.{path:?}")),
            "{path}: {}",
            out.stdout
        );
    }
    assert_eq!(
        out.stdout
            .matches("the path leaves the workspace: eve never reads a file outside it, so this can never hold")
            .count(),
        3,
        "{}",
        out.stdout
    );
}

#[test]
fn init_writes_a_case_that_passes() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(run_in(tmp.path(), &["init", "demo"]).code, 0);
    let out = run_in(tmp.path(), &["eval", "demo"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("1 case: 1 passed, 0 failed"),
        "{}",
        out.stdout
    );
}

#[test]
fn the_example_agents_cases_pass_and_skipping_read_file_fails_with_the_refused_write() {
    let tmp = copy_to_temp(&Path::new(env!("CARGO_MANIFEST_DIR")).join("example-agent"));
    let out = run_in(tmp.path(), &["eval"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("5 cases: 5 passed, 0 failed"),
        "{}",
        out.stdout
    );

    let path = tmp.path().join("evals/fix-typo.toml");
    let case = fs::read_to_string(&path).unwrap();
    let skipped = case.replacen(
        "[[reply]]\ntool_calls = [{ name = \"read_file\", input = { path = \"src/greeting.txt\" } }]\n\n",
        "",
        1,
    );
    assert_ne!(skipped, case);
    fs::write(&path, skipped).unwrap();
    let out = run_in(tmp.path(), &["eval", "fix-typo"]);
    assert_eq!(out.code, 1);
    insta::assert_snapshot!("evals_example_refused_write", mask(&out.stdout));
}
