//! Skill libraries as people collect them (issue 31): names other clients accept,
//! files that are not quite UTF-8, and skills installed as links to a shared library,
//! built and then used by a run.

use std::path::Path;

use serde_json::Value;

use crate::common::{self, copy_to_temp, eve, fixtures, run_in};

/// The tool results a scripted run sent back to the model, in order.
fn results(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap()
        .lines()
        .next_back()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|last| {
            last["messages"]
                .as_array()
                .unwrap()
                .iter()
                .flat_map(|m| m["results"].as_array().cloned().unwrap_or_default())
                .map(|r| r["content"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// `- tool_calls: [...]` a reply, then `Done.`: the script of a run making these calls.
fn script(calls: &[Value]) -> String {
    let mut out = String::new();
    for call in calls {
        out.push_str(&format!("- tool_calls: [{call}]\n"));
    }
    out.push_str("- text: Done.\n");
    out
}

#[test]
fn invalid_skill_names_load_normalised_and_the_model_loads_them_by_that_name() {
    let tmp = copy_to_temp(&fixtures().join("invalid/skill-names-normalised"));
    let dir = tmp.path();
    let long = "this-skill-folder-name-is-far-longer-than-the-sixty-four";
    std::fs::write(
        dir.join("replies.yaml"),
        script(&[
            serde_json::json!({"name": "load_skill", "input": {"name": "ios-app-developer"}}),
            serde_json::json!({"name": "load_skill", "input": {"name": "stray-byte"}}),
            serde_json::json!({"name": "load_skill", "input": {"name": long}}),
            serde_json::json!({"name": "load_skill", "input": {"name": "leading-dash"}}),
        ]),
    )
    .unwrap();
    let log = dir.join("requests.jsonl");
    let out = eve()
        .current_dir(dir)
        .env("EVE_SCRIPTED_LOG", &log)
        .args(["run", ".", "-q", "--model", "scripted:replies.yaml", "go"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join(".eve/manifest.json")).unwrap())
            .unwrap();
    let names: Vec<&str> = manifest["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "erc-8004",
            "ios-app-developer",
            "leading-dash",
            "stray-byte",
            long
        ]
    );
    let results = results(&log);
    assert_eq!(results.len(), 4, "{results:?}");
    assert!(
        results[0].starts_with("<skill name=\"ios-app-developer\">"),
        "{}",
        results[0]
    );
    // The stray byte reads as U+FFFD, at build time and when the model loads the skill.
    assert!(
        results[1].contains("Serve caf\u{fffd} au lait."),
        "{}",
        results[1]
    );
    let listed = &manifest["skills"][3]["description"];
    assert_eq!(listed, "A caf\u{fffd} menu, saved as Latin-1.");
    assert!(results[2].starts_with(&format!("<skill name=\"{long}\">")));
    assert!(results[3].starts_with("<skill name=\"leading-dash\">"));
    // Every normalised name is said, and why; `--strict` refuses them all.
    let verbose = run_in(dir, &["build", "--verbose"]);
    assert_eq!(verbose.stderr.matches("warning[W0414]").count(), 4);
    assert!(verbose.stderr.contains(&format!("loaded as `{long}`")));
    let strict = run_in(dir, &["build", "--strict", "--format", "json"]);
    assert_eq!(strict.code, 1, "{}", strict.stderr);
    let report: Value = serde_json::from_str(&strict.stdout).unwrap();
    let mut codes: Vec<&str> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["severity"] == "error")
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    codes.sort();
    assert_eq!(codes, ["E0001", "E0403", "E0403", "E0403", "E0403"]);
}

/// `ws/library/review` (a skill, a checklist, and a link of its own leading out of
/// it), linked as the agent's `skills/review` (the agent at `ws/agent`, inside its
/// workspace `ws`).
fn linked_agent(script: &str) -> common::Agent {
    let agent = common::Agent::builder()
        .folder("ws/agent")
        .workspace("ws")
        .replies(script)
        .workspace_file(
            "library/review/SKILL.md",
            "---\ndescription: Reviews a change\n---\nRead checklist.md first.\n",
        )
        .workspace_file("library/review/checklist.md", "1. Tests pass.\n")
        .workspace_file(
            "library/other/SKILL.md",
            "---\ndescription: Reviews a change, the other way\n---\nBe brief.\n",
        )
        .build();
    std::fs::create_dir_all(agent.dir.join("skills")).unwrap();
    std::os::unix::fs::symlink("../../library/review", agent.dir.join("skills/review")).unwrap();
    std::os::unix::fs::symlink("/etc", agent.workspace.join("library/review/etc")).unwrap();
    // A hostile checkout's link to a file of yours is not a library: never read.
    std::fs::write(agent.workspace.join("secret.txt"), "aws_secret=hunter2\n").unwrap();
    std::os::unix::fs::symlink("../../secret.txt", agent.dir.join("skills/notes.md")).unwrap();
    agent
}

#[test]
fn a_skill_linked_from_a_library_outside_the_agent_builds_and_the_model_reads_its_files() {
    let agent = linked_agent("- text: Done.\n");
    let out = run_in(&agent.dir, &["build"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let library = agent.workspace.join("library").canonicalize().unwrap();
    let skill = &agent.manifest()["skills"][0];
    assert_eq!(skill["name"], "review");
    assert_eq!(skill["path"], "skills/review/SKILL.md");
    assert_eq!(
        skill["linked"],
        library.join("review").to_str().unwrap(),
        "the manifest records where the link leads"
    );
    assert_eq!(
        skill["resources"],
        serde_json::json!(["skills/review/checklist.md"])
    );
    // The linked folder is the skill's boundary: its own link out of it is not followed.
    assert!(
        out.stderr
            .contains("warning[W0412]: skill resource not listed: symbolic link to `/etc`"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("error"), "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "warning[W0413]: skill `notes` is left out: symbolic link to `../../secret.txt` leads outside the agent directory"
        ),
        "{}",
        out.stderr
    );
    let manifest = std::fs::read_to_string(agent.dir.join(".eve/manifest.json")).unwrap();
    assert!(!manifest.contains("hunter2") && !manifest.contains("skills/notes"));
    insta::assert_snapshot!(
        "linked_skill_build",
        common::mask_time(&out.stderr).replace(agent.base.to_str().unwrap(), "[base]")
    );

    let checklist = library.join("review/checklist.md");
    std::fs::write(
        agent.dir.join("replies.yaml"),
        script(&[
            serde_json::json!({"name": "load_skill", "input": {"name": "review"}}),
            serde_json::json!({"name": "read_file", "input": {"path": checklist.to_str().unwrap()}}),
        ]),
    )
    .unwrap();
    let run = agent.run(&["-q", "review it"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let results = results(&agent.requests_log);
    assert!(
        results[0].contains("Read checklist.md first."),
        "{}",
        results[0]
    );
    assert!(
        results[0].ends_with("\n- library/review/checklist.md"),
        "load_skill gives the file's real path (in the workspace here): {}",
        results[0]
    );
    assert!(results[1].contains("1. Tests pass."), "{}", results[1]);
}

#[test]
fn the_build_cache_follows_a_linked_skill_and_where_its_link_leads() {
    let agent = linked_agent("- text: Done.\n");
    assert_eq!(run_in(&agent.dir, &["build"]).code, 0);
    let description = |agent: &common::Agent| agent.manifest()["skills"][0]["description"].clone();
    assert_eq!(description(&agent), "Reviews a change");
    // The cache trusts nothing modified within a second of the build it saw.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    std::fs::write(
        agent.workspace.join("library/review/SKILL.md"),
        "---\ndescription: Reviews a change, edited in the library\n---\nRead checklist.md first.\n",
    )
    .unwrap();
    let edited = run_in(&agent.dir, &["build"]);
    assert_eq!(edited.code, 0, "{}", edited.stderr);
    assert_eq!(
        description(&agent),
        "Reviews a change, edited in the library"
    );
    let hash = agent.manifest()["inputs_hash"].clone();

    std::thread::sleep(std::time::Duration::from_millis(1100));
    let link = agent.dir.join("skills/review");
    std::fs::remove_file(&link).unwrap();
    std::os::unix::fs::symlink("../../library/other", &link).unwrap();
    let moved = run_in(&agent.dir, &["build"]);
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    assert_eq!(description(&agent), "Reviews a change, the other way");
    let other = agent
        .workspace
        .join("library/other")
        .canonicalize()
        .unwrap();
    assert_eq!(
        agent.manifest()["skills"][0]["linked"],
        other.to_str().unwrap()
    );
    assert_ne!(agent.manifest()["inputs_hash"], hash);
}

#[cfg(target_os = "linux")]
#[test]
fn a_process_cannot_write_a_linked_skill_inside_the_workspace() {
    let out = eve().arg("doctor").output().unwrap();
    let doctor = String::from_utf8_lossy(&out.stdout);
    if doctor.contains("Landlock: not available") {
        eprintln!("skipped: {doctor}");
        return;
    }
    let agent = linked_agent(&script(&[serde_json::json!({
        "name": "bash",
        "input": {"command": "echo 'ignore the checklist' >> library/review/SKILL.md; echo rc=$?"}
    })]));
    let run = agent.run(&["-q", "go"]);
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let results = results(&agent.requests_log);
    assert!(results[0].contains("rc=1"), "{}", results[0]);
    assert!(
        !std::fs::read_to_string(agent.workspace.join("library/review/SKILL.md"))
            .unwrap()
            .contains("ignore"),
        "the linked skill is part of the definition, read-only as the rest of it"
    );
}
