//! Inputs nobody on this project wrote, end to end: skills laid out for other clients,
//! symbolic links a checked-out agent may hold, small local models.

use std::fs;
use std::path::Path;

use crate::common::mock::{MockServer, OPENAI_DONE, Reply, openai_chunk};
use crate::common::{eve, run_in};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
}

fn manifest(dir: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(dir.join(".eve/manifest.json")).unwrap()).unwrap()
}

/// A minimal agent at `<tmp>/agent`, with files of the machine next to it at `<tmp>`.
fn agent_in(tmp: &Path) -> std::path::PathBuf {
    let dir = tmp.join("agent");
    write(
        &dir.join("agent.toml"),
        "model = \"anthropic/claude-sonnet-4-5\"\n",
    );
    write(&dir.join("instructions.md"), "You are {{ agent.name }}.\n");
    dir
}

const SECRET: &str = "aws_secret_access_key = NOT-FOR-THE-MODEL";

#[cfg(unix)]
#[test]
fn files_a_symlink_leads_to_outside_the_agent_directory_are_never_read() {
    use std::os::unix::fs::symlink;
    let tmp = tempfile::tempdir().unwrap();
    let dir = agent_in(tmp.path());
    // A file of the person running eve, next to the checked-out agent.
    write(&tmp.path().join("credentials"), &format!("{SECRET}\n"));
    write(
        &tmp.path().join("skill.md"),
        &format!("---\ndescription: d\n---\n{SECRET}\n"),
    );
    fs::create_dir_all(dir.join("skills/pkg")).unwrap();
    fs::create_dir_all(dir.join("skills/docs")).unwrap();
    // A flat skill, a packaged skill's SKILL.md, a whole skill folder, the instructions.
    symlink("../../credentials", dir.join("skills/notes.md")).unwrap();
    symlink("../../../skill.md", dir.join("skills/pkg/SKILL.md")).unwrap();
    symlink(tmp.path(), dir.join("skills/everything")).unwrap();
    fs::remove_file(dir.join("instructions.md")).unwrap();
    symlink("../credentials", dir.join("instructions.md")).unwrap();
    // A resource, and a link inside the agent directory, which is followed.
    write(
        &dir.join("skills/docs/SKILL.md"),
        "---\ndescription: Docs\n---\nRead [the key](key.md) and [shared](shared.md).\n",
    );
    symlink("../../../credentials", dir.join("skills/docs/key.md")).unwrap();
    write(&dir.join("shared/notes.md"), "Shared notes.\n");
    symlink("../../shared/notes.md", dir.join("skills/docs/shared.md")).unwrap();

    // A skill a link leads out of is left out; the instructions are the author's own.
    let out = run_in(&dir, &["build"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(!out.stderr.contains("NOT-FOR-THE-MODEL"), "{}", out.stderr);
    for (name, file, target) in [
        ("notes", "skills/notes.md", "../../credentials"),
        ("pkg", "skills/pkg/SKILL.md", "../../../skill.md"),
    ] {
        let expected = format!(
            "warning[W0413]: skill `{name}` is left out: symbolic link to `{target}` leads outside the agent directory\n --> {file}\n"
        );
        assert!(out.stderr.contains(&expected), "{expected}\n{}", out.stderr);
    }
    assert!(
        out.stderr
            .contains("warning[W0413]: skill `everything` is left out: symbolic link to `"),
        "{}",
        out.stderr
    );
    assert_eq!(out.stderr.matches("error[").count(), 1, "{}", out.stderr);

    let out = run_in(&dir, &["build", "--strict", "--verbose"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(!out.stderr.contains("NOT-FOR-THE-MODEL"), "{}", out.stderr);
    for (file, target) in [
        ("instructions.md", "../credentials"),
        ("skills/notes.md", "../../credentials"),
        ("skills/pkg/SKILL.md", "../../../skill.md"),
    ] {
        let expected = format!(
            "error[E0001]: symbolic link to `{target}` leads outside the agent directory\n --> {file}\n"
        );
        assert!(out.stderr.contains(&expected), "{expected}\n{}", out.stderr);
    }
    assert!(
        out.stderr.contains("--> skills/everything\n"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains(
            "warning[W0412]: skill resource not listed: symbolic link to `../../../credentials` leads outside the agent directory\n --> skills/docs/key.md"
        ),
        "{}",
        out.stderr
    );
    // The link in SKILL.md goes through the refused symlink: a warning, not a read.
    assert!(
        out.stderr
            .contains("warning[W0410]: link `key.md` leaves the agent directory"),
        "{}",
        out.stderr
    );

    // Without the links that make the agent unusable, it builds; the secret is nowhere.
    for link in [
        "instructions.md",
        "skills/notes.md",
        "skills/pkg",
        "skills/everything",
    ] {
        let path = dir.join(link);
        if path.is_dir() && !fs::symlink_metadata(&path).unwrap().is_symlink() {
            fs::remove_dir_all(&path).unwrap();
        } else {
            fs::remove_file(&path).unwrap();
        }
    }
    write(&dir.join("instructions.md"), "You are {{ agent.name }}.\n");
    let out = run_in(&dir, &["build"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let text = fs::read_to_string(dir.join(".eve/manifest.json")).unwrap();
    assert!(!text.contains("NOT-FOR-THE-MODEL"));
    assert_eq!(
        manifest(&dir)["skills"][0]["resources"],
        json!(["skills/docs/shared.md"])
    );
}

#[test]
fn load_skill_lists_linked_files_of_a_plugin_and_says_what_a_placeholder_means() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = agent_in(tmp.path());
    write(&dir.join("CONNECTORS.md"), "Connectors.\n");
    write(
        &dir.join("skills/triage/SKILL.md"),
        "---\nname: Ticket Triage\ndescription: Triage a ticket\n---\nSee [connectors](../../CONNECTORS.md), [the rubric]({baseDir}/rubric.md) and [kb](../kb/SKILL.md).\n",
    );
    write(&dir.join("skills/triage/rubric.md"), "P1, P2.\n");
    write(
        &dir.join("skills/kb/SKILL.md"),
        "# Write a knowledge-base article\n",
    );
    write(
        &dir.join("replies.yaml"),
        "- tool_calls:\n    - name: load_skill\n      input: { name: triage }\n- text: Loaded.\n",
    );
    let log = tmp.path().join("requests.ndjson");
    let out = eve()
        .current_dir(&dir)
        .env("EVE_SCRIPTED_LOG", &log)
        .args([
            "run",
            ".",
            "-q",
            "--model",
            "scripted:replies.yaml",
            "Triage this",
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let requests: Vec<Value> = fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The packaged skill without a description is listed with its first line.
    let system = requests[0]["system"].as_str().unwrap();
    assert!(
        system.contains("\n- `kb`: Write a knowledge-base article"),
        "{system}"
    );
    let result = requests[1]["messages"][2]["results"][0]["content"]
        .as_str()
        .unwrap();
    assert!(
        result.ends_with(
            "\n\nIn these instructions, `{baseDir}` stands for this skill's folder: skills/triage\n\nResource files of this skill (read them with read_file when the instructions above refer to them):\n- CONNECTORS.md\n- skills/kb/SKILL.md\n- skills/triage/rubric.md"
        ),
        "{result}"
    );
}

#[test]
fn an_agent_with_only_a_small_context_window_builds_and_runs_against_a_local_server() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("small");
    let server = MockServer::start(vec![Reply::Sse(vec![
        openai_chunk(
            json!({"id": "l1", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hello from a small model."}, "finish_reason": "stop"}]}),
        ),
        openai_chunk(
            json!({"id": "l1", "choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 7}}),
        ),
        OPENAI_DONE.to_string(),
    ])]);
    // docs/running.md's llama.cpp agent, with only the window set — and no tools: the
    // built-ins alone are about 3,300 tokens, more than 4096 leaves beside a reply (E0902).
    write(
        &dir.join("agent.toml"),
        &format!(
            "model = \"llamacpp/local\"\ndefault_tools = false\n\n[limits]\ncontext_window = 4096\n\n[providers.llamacpp]\nbase_url = \"{}/v1\"\n",
            server.url()
        ),
    );
    write(&dir.join("instructions.md"), "Be brief.\n");
    let out = run_in(&dir, &["build"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!out.stderr.contains("warning"), "{}", out.stderr);
    let agent = &manifest(&dir)["agent"];
    assert_eq!(
        (
            &agent["limits"]["context_window"],
            &agent["limits"]["max_output_tokens"]
        ),
        (&json!(4096), &json!(1024))
    );
    assert_eq!(agent["compaction"]["threshold_percent"], json!(0.75));

    let out = eve()
        .current_dir(&dir)
        .args(["run", ".", "Say hello", "-o", "json"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let result: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(result["result"], "Hello from a small model.");
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].path, "/v1/chat/completions");
    assert_eq!(requests[0].body["max_tokens"], json!(1024));
}

#[test]
fn the_local_server_examples_of_the_docs_build_with_the_window_they_name() {
    let docs =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/running.md")).unwrap();
    let section = docs
        .split("### Local models")
        .nth(1)
        .and_then(|rest| rest.split("\n### ").next())
        .unwrap();
    let blocks: Vec<&str> = section
        .split("```toml\n")
        .skip(1)
        .map(|b| b.split("```").next().unwrap())
        .collect();
    let models: Vec<&str> = blocks.iter().map(|b| b.lines().next().unwrap()).collect();
    assert_eq!(
        models,
        [
            "model = \"ollama/qwen3:8b\"",
            "model = \"llamacpp/local\"",
            "model = \"vllm/Qwen/Qwen3-8B\"",
            "model = \"lmstudio/qwen/qwen3-8b\"",
        ]
    );
    for block in blocks {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("local");
        write(&dir.join("agent.toml"), block);
        write(&dir.join("instructions.md"), "Be brief.\n");
        let out = run_in(&dir, &["build"]);
        assert_eq!(out.code, 0, "{block}\n{}", out.stderr);
        assert!(!out.stderr.contains("warning"), "{}", out.stderr);
        let window: u64 = block
            .split("context_window = ")
            .nth(1)
            .and_then(|v| v.split_whitespace().next())
            .unwrap()
            .parse()
            .unwrap();
        let limits = &manifest(&dir)["agent"]["limits"];
        assert_eq!(limits["context_window"], json!(window), "{block}");
        assert_eq!(
            limits["max_output_tokens"],
            json!((window / 4).min(8192)),
            "{block}"
        );
    }
}
