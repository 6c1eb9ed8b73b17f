//! `eve init` and `eve build` end to end: scaffolding, determinism, JSON output, hostile inputs.

use crate::common;

use std::fs;
use std::path::Path;

use crate::common::{copy_to_temp, fixtures, run_in};
use pretty_assertions::assert_eq;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn init_writes_an_agent_that_builds_without_diagnostics() {
    let tmp = tempfile::tempdir().unwrap();
    let init = run_in(tmp.path(), &["init", "demo"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert!(
        init.stderr.contains("created agent `demo` in demo"),
        "{}",
        init.stderr
    );
    assert!(init.stderr.contains("eve dev demo"), "{}", init.stderr);
    for file in [
        "agent.toml",
        "instructions.md",
        "skills/summarize-folder.md",
        "tools/bash.toml",
        "evals/summarize-folder.toml",
        "hooks/no-force-push.toml",
        ".gitignore",
    ] {
        assert!(tmp.path().join("demo").join(file).is_file(), "{file}");
    }
    let gitignore = fs::read_to_string(tmp.path().join("demo/.gitignore")).unwrap();
    assert!(
        gitignore.contains("\n.eve/*\n!.eve/schemas/\n"),
        "{gitignore}"
    );
    let agent = fs::read_to_string(tmp.path().join("demo/agent.toml")).unwrap();
    assert!(agent.contains("name = \"demo\""), "{agent}");
    // Each TOML file starts with the directive taplo reads, naming a schema that is there.
    for (file, directive, schema) in [
        (
            "agent.toml",
            "#:schema ./.eve/schemas/agent.json",
            ".eve/schemas/agent.json",
        ),
        (
            "tools/bash.toml",
            "#:schema ../.eve/schemas/tools/bash.json",
            ".eve/schemas/tools/bash.json",
        ),
        (
            "evals/summarize-folder.toml",
            "#:schema ../.eve/schemas/eval.json",
            ".eve/schemas/eval.json",
        ),
        (
            "hooks/no-force-push.toml",
            "#:schema ../.eve/schemas/hook.json",
            ".eve/schemas/hook.json",
        ),
    ] {
        let text = fs::read_to_string(tmp.path().join("demo").join(file)).unwrap();
        assert_eq!(text.lines().next(), Some(directive), "{file}");
        let written = fs::read_to_string(tmp.path().join("demo").join(schema)).unwrap();
        let committed = fs::read_to_string(
            repo()
                .join("schemas")
                .join(schema.strip_prefix(".eve/schemas/").unwrap()),
        )
        .unwrap();
        assert_eq!(written, committed, "{schema}");
    }

    let build = run_in(tmp.path(), &["build", "demo"]);
    assert_eq!(build.code, 0, "{}", build.stderr);
    let lines: Vec<&str> = build.stderr.lines().collect();
    assert!(
        lines[1..]
            .iter()
            .all(|l| l.starts_with("context: ") || l.starts_with("  ") || l.starts_with("hooks: ")),
        "the summary line, the context budget and the hooks, nothing else: {}",
        build.stderr
    );
    assert!(lines[1].starts_with("context: ~"), "{}", build.stderr);
    assert_eq!(
        lines.last(),
        Some(&"hooks: no-force-push (before_tool: bash)"),
        "{}",
        build.stderr
    );
    assert!(
        lines[0].starts_with(
            "built `demo`: 12 tools, 1 skill, 0 subagents, 1 hook, 1 eval case, sandbox workspace-write in "
        ),
        "{}",
        lines[0]
    );
    let manifest = eve::compiler::read_manifest(&tmp.path().join("demo")).unwrap();
    let bash = manifest.tools.iter().find(|t| t.name == "bash").unwrap();
    assert_eq!(bash.approval, eve::manifest::Approval::Always);
    assert_eq!(manifest.hooks[0].name, "no-force-push");

    // The example hook refuses a force push, and lets the rest through.
    fs::write(
        tmp.path().join("demo/replies.yaml"),
        "- tool_calls: [{name: bash, input: {command: \"git push --force origin main\"}}, {name: bash, input: {command: \"pwd\"}}]\n- text: done\n",
    )
    .unwrap();
    let model = format!(
        "scripted:{}",
        tmp.path().join("demo/replies.yaml").display()
    );
    let run = run_in(
        tmp.path(),
        &[
            "run",
            "demo",
            "--model",
            &model,
            "--yes",
            "-o",
            "stream-json",
            "push it",
        ],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("A hook refused this call: force pushes are not allowed"),
        "{}",
        run.stdout
    );
    assert_eq!(
        run.stdout.matches("\"decision\":\"continue\"").count(),
        1,
        "{}",
        run.stdout
    );
}

#[test]
fn init_uses_the_model_given_and_refuses_a_bad_one() {
    let tmp = tempfile::tempdir().unwrap();
    let ok = run_in(tmp.path(), &["init", "a", "--model", "openai/gpt-4o"]);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    let manifest = {
        assert_eq!(run_in(tmp.path(), &["build", "a"]).code, 0);
        eve::compiler::read_manifest(&tmp.path().join("a")).unwrap()
    };
    assert_eq!(manifest.agent.model, "openai/gpt-4o");
    assert!(
        manifest.tools.iter().any(|t| t.name == "web_search"),
        "OpenAI's Responses API hosts web_search"
    );

    let bad = run_in(tmp.path(), &["init", "b", "--model", "gpt-4o"]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("not of the form `provider/model-id`"),
        "{}",
        bad.stderr
    );
    assert!(
        !tmp.path().join("b").exists(),
        "nothing is written for a bad model"
    );
}

#[test]
fn init_refuses_a_folder_that_is_not_empty_unless_forced() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("busy");
    fs::create_dir(&dir).unwrap();
    fs::write(dir.join("notes.txt"), "mine").unwrap();
    let refused = run_in(tmp.path(), &["init", "busy"]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("`busy` is not empty"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert!(!dir.join("agent.toml").exists());

    let forced = run_in(tmp.path(), &["init", "busy", "--force"]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert!(dir.join("agent.toml").is_file());
    assert_eq!(fs::read_to_string(dir.join("notes.txt")).unwrap(), "mine");
}

/// `eve init --force` over a checkout whose `.eve`, `.eve/schemas` or `tools` is a link
/// elsewhere (or whose `agent.toml` is one) writes nothing, there or anywhere.
#[test]
fn init_does_not_write_through_a_symbolic_link() {
    for link in [".eve", ".eve/schemas", "tools", "agent.toml"] {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("checkout");
        let elsewhere = tmp.path().join("elsewhere");
        fs::create_dir_all(&elsewhere).unwrap();
        fs::write(elsewhere.join("keep.txt"), "mine").unwrap();
        let at = dir.join(link);
        fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &at).unwrap();

        let init = run_in(tmp.path(), &["init", "checkout", "--force"]);
        assert_eq!(init.code, 2, "{link}: {}", init.stderr);
        assert!(
            init.stderr
                .contains(&format!("`checkout/{link}` is a symbolic link")),
            "{link}: {}",
            init.stderr
        );
        let beyond: Vec<_> = fs::read_dir(&elsewhere)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(beyond, ["keep.txt"], "{link}");
        assert!(!dir.join("instructions.md").exists(), "{link}");
    }
}

#[test]
fn init_in_the_current_folder_names_the_agent_after_it() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("my-bot");
    fs::create_dir(&dir).unwrap();
    let init = run_in(&dir, &["init"]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    assert_eq!(run_in(&dir, &["build"]).code, 0);
    assert_eq!(
        eve::compiler::read_manifest(&dir).unwrap().agent.name,
        "my-bot"
    );
}

#[test]
fn example_agent_builds_cleanly_and_deterministically() {
    let a = copy_to_temp(&repo().join("example-agent"));
    let b = copy_to_temp(&repo().join("example-agent"));
    let first = run_in(a.path(), &["build"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(
        first.stderr.starts_with("built `repo-helper`: ")
            && !first.stderr.contains("warning[")
            && first.stderr.contains("\ncontext: ~"),
        "no diagnostics, the summary and the budget: {}",
        first.stderr
    );
    let bytes = fs::read(a.path().join(".eve/manifest.json")).unwrap();

    assert_eq!(run_in(a.path(), &["build"]).code, 0);
    assert_eq!(
        fs::read(a.path().join(".eve/manifest.json")).unwrap(),
        bytes
    );

    // Another copy in another place gives the same bytes: no absolute paths, no times.
    assert_eq!(run_in(b.path(), &["build"]).code, 0);
    assert_eq!(
        fs::read(b.path().join(".eve/manifest.json")).unwrap(),
        bytes
    );

    let manifest = eve::compiler::read_manifest(a.path()).unwrap();
    let sources: Vec<(&str, eve::manifest::ToolSource)> = manifest
        .tools
        .iter()
        .map(|t| (t.name.as_str(), t.source))
        .collect();
    assert!(sources.contains(&("bash", eve::manifest::ToolSource::Override)));
    let web_fetch = manifest
        .tools
        .iter()
        .find(|t| t.name == "web_fetch")
        .unwrap();
    assert_eq!(
        web_fetch.approval,
        eve::manifest::Approval::Always,
        "a person approves every fetch"
    );
    assert!(
        !sources.iter().any(|(n, _)| *n == "web_search"),
        "web_search is disabled"
    );
    assert!(
        manifest
            .tools
            .iter()
            .any(|t| matches!(t.executor, eve::manifest::Executor::Command { .. }))
    );
    assert!(
        manifest.skills.iter().any(|s| !s.resources.is_empty()),
        "a packaged skill with a resource"
    );
    assert!(!manifest.subagents.is_empty());
}

#[test]
fn json_format_lists_every_diagnostic_with_position() {
    let tmp = copy_to_temp(&fixtures().join("invalid/three-mistakes"));
    let out = run_in(tmp.path(), &["build", "--format", "json"]);
    assert_eq!(out.code, 1);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        report,
        serde_json::json!({"diagnostics": [
            {"severity": "error", "code": "E0003", "message": "unknown key `modle`",
             "file": "agent.toml", "line": 1, "column": 1, "help": "did you mean `model`?"},
            {"severity": "error", "code": "E0303", "message": "undefined variable `dat`",
             "file": "instructions.md", "line": 2, "column": 13, "help": "did you mean `date`?"},
            {"severity": "error", "code": "E0201", "message": "unknown tool `raed_file`",
             "file": "tools/raed_file.toml", "line": 1, "column": 1, "help": "did you mean `read_file`?"},
        ], "budget": null})
    );
    let clean = copy_to_temp(&fixtures().join("valid/minimal"));
    let out = run_in(clean.path(), &["build", "--format", "json"]);
    assert_eq!(out.code, 0);
    let report: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(report["diagnostics"], serde_json::json!([]));
    let manifest = eve::compiler::read_manifest(clean.path()).unwrap();
    let budget = eve::compiler::budget::Budget::of(&manifest);
    assert_eq!(report["budget"], serde_json::to_value(&budget).unwrap());
    assert_eq!(report["budget"]["context_window"], 200_000);
    assert!(budget.total > 0 && budget.total == report["budget"]["total"]);
}

#[test]
fn paths_in_diagnostics_are_shown_from_where_eve_runs() {
    let tmp = copy_to_temp(&fixtures().join("invalid/unknown-tool"));
    let parent = tmp.path().parent().unwrap();
    let out = run_in(parent, &["build", "unknown-tool"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("--> unknown-tool/tools/raed_file.toml:1:1"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_failed_build_leaves_the_last_manifest_untouched() {
    let tmp = copy_to_temp(&fixtures().join("valid/minimal"));
    assert_eq!(run_in(tmp.path(), &["build"]).code, 0);
    let good = fs::read(tmp.path().join(".eve/manifest.json")).unwrap();
    fs::write(tmp.path().join("agent.toml"), "model = \n").unwrap();
    assert_eq!(run_in(tmp.path(), &["build"]).code, 1);
    assert_eq!(
        fs::read(tmp.path().join(".eve/manifest.json")).unwrap(),
        good
    );
}

#[test]
fn usage_errors_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    assert_eq!(run_in(tmp.path(), &["build", "--format", "xml"]).code, 2);
    assert_eq!(run_in(tmp.path(), &["frobnicate"]).code, 2);
    let missing = run_in(tmp.path(), &["build", "no-such-agent"]);
    assert_eq!(missing.code, 2);
    assert!(
        missing.stderr.contains("`no-such-agent` is not a folder"),
        "{}",
        missing.stderr
    );
}

fn minimal_copy() -> common::TempCopy {
    copy_to_temp(&fixtures().join("valid/minimal"))
}

#[test]
fn a_skill_that_is_not_utf8_is_reported_with_its_line() {
    let tmp = minimal_copy();
    fs::create_dir_all(tmp.path().join("skills")).unwrap();
    fs::write(
        tmp.path().join("skills/latin1.md"),
        b"# Caf\n\xe9 au lait\n",
    )
    .unwrap();
    let out = run_in(tmp.path(), &["build", "--strict"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains("error[E0001]: file is not valid UTF-8 (line 2, byte 6)"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("--> skills/latin1.md"),
        "{}",
        out.stderr
    );
    // Without --strict the skill loads as other clients load it, each bad byte read
    // as U+FFFD, and the warning says where.
    let out = run_in(tmp.path(), &["build"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.contains(
            "warning[W0415]: file is not valid UTF-8 (line 2, byte 6); each bad byte reads as U+FFFD\n --> skills/latin1.md"
        ),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("W0413"), "{}", out.stderr);
}

#[test]
fn a_huge_skill_is_refused_without_being_read() {
    let tmp = minimal_copy();
    fs::create_dir_all(tmp.path().join("skills")).unwrap();
    let file = fs::File::create(tmp.path().join("skills/huge.md")).unwrap();
    file.set_len(20 * 1024 * 1024).unwrap();
    for (args, code) in [(&["build", "--strict"][..], 1), (&["build"][..], 0)] {
        let out = run_in(tmp.path(), args);
        assert_eq!(out.code, code, "{}", out.stderr);
        assert!(
            out.stderr
                .contains("file is too large (20971520 bytes; the limit is 1048576 bytes)"),
            "{}",
            out.stderr
        );
    }
}

#[cfg(unix)]
#[test]
fn symlink_loops_and_broken_links_are_reported_not_followed_forever() {
    use std::os::unix::fs::symlink;
    let tmp = minimal_copy();
    let skills = tmp.path().join("skills");
    fs::create_dir_all(skills.join("pkg")).unwrap();
    fs::write(
        skills.join("pkg/SKILL.md"),
        "---\ndescription: d\n---\nbody\n",
    )
    .unwrap();
    symlink("..", skills.join("pkg/up")).unwrap();
    symlink("self", skills.join("self")).unwrap();
    fs::create_dir_all(tmp.path().join("tools")).unwrap();
    symlink("missing.toml", tmp.path().join("tools/gone.toml")).unwrap();
    let out = run_in(tmp.path(), &["build"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("--> skills/pkg/up"), "{}", out.stderr);
    assert!(out.stderr.contains("--> skills/self"), "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("symbolic link loop").count(),
        2,
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains("--> tools/gone.toml"), "{}", out.stderr);
    assert!(
        out.stderr.contains("broken symbolic link"),
        "{}",
        out.stderr
    );
}

#[cfg(unix)]
#[test]
fn an_unreadable_file_is_an_error_not_a_panic() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = minimal_copy();
    let path = tmp.path().join("instructions.md");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    let out = run_in(tmp.path(), &["build"]);
    if fs::read(&path).is_ok() {
        // Privileged users (root in CI containers) can read it anyway: then it builds.
        assert_eq!(out.code, 0, "{}", out.stderr);
    } else {
        assert_eq!(out.code, 1);
        assert!(
            out.stderr
                .contains("error[E0001]: cannot read: Permission denied"),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("--> instructions.md"), "{}", out.stderr);
    }
    assert!(!out.stderr.contains("panicked"), "{}", out.stderr);
}

#[test]
fn unreadable_instructions_are_one_error_not_two() {
    let tmp = minimal_copy();
    fs::write(tmp.path().join("instructions.md"), b"caf\xe9\n").unwrap();
    let out = run_in(tmp.path(), &["build"]);
    assert_eq!(out.code, 1);
    assert_eq!(out.stderr.matches("error[").count(), 1, "{}", out.stderr);
    assert!(out.stderr.contains("--> instructions.md"), "{}", out.stderr);
}

#[test]
fn completions_and_the_man_page_name_every_command() {
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let out = run_in(Path::new("."), &["completions", shell]);
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        for command in ["build", "run", "dev", "sessions", "doctor"] {
            assert!(out.stdout.contains(command), "{shell} lacks {command}");
        }
    }
    let bad = run_in(Path::new("."), &["completions", "tcsh"]);
    assert_eq!(bad.code, 2);
    let man = run_in(Path::new("."), &["man"]);
    assert_eq!(man.code, 0);
    assert!(man.stdout.contains(".TH eve 1"), "{}", &man.stdout[..200]);
    assert!(man.stdout.contains("Build and run AI agents"));
}

/// `eve doctor DIR` checks what a first run needs and sends nothing: the model's key
/// and each stdio connection's program, where eve would start it from; anything missing
/// is a non-zero exit.
#[test]
fn doctor_checks_the_models_key_and_the_connections_programs() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    fs::create_dir_all(dir.join("connections")).unwrap();
    fs::write(
        dir.join("agent.toml"),
        "name = \"d\"\nmodel = \"anthropic/claude-sonnet-4-5\"\n",
    )
    .unwrap();
    fs::write(dir.join("instructions.md"), "Help.\n").unwrap();
    fs::write(
        dir.join("connections/gone.toml"),
        "command = [\"no-such-mcp-server-for-eve\"]\nrequired = false\n",
    )
    .unwrap();
    fs::write(
        dir.join("connections/here.toml"),
        "command = [\"sh\"]\nrequired = false\n",
    )
    .unwrap();
    let doctor = |key: Option<&str>| {
        let mut command = common::eve();
        command
            .current_dir(dir)
            .arg("doctor")
            .env_remove("ANTHROPIC_API_KEY");
        if let Some(key) = key {
            command.env("ANTHROPIC_API_KEY", key);
        }
        command.output().unwrap()
    };
    let missing = doctor(None);
    let text = String::from_utf8_lossy(&missing.stdout);
    assert_eq!(missing.status.code(), Some(1), "{text}");
    assert!(
        text.contains("model `anthropic/claude-sonnet-4-5`: ANTHROPIC_API_KEY is not set"),
        "{text}"
    );
    assert!(
        text.contains(
            "connection `gone`: cannot start `no-such-mcp-server-for-eve`: no such program on PATH"
        ),
        "{text}"
    );
    assert!(text.contains("connection `here`: starts /"), "{text}");
    let keyed = doctor(Some("sk-ant-never-sent"));
    let text = String::from_utf8_lossy(&keyed.stdout);
    assert!(
        text.contains("model `anthropic/claude-sonnet-4-5`: ready"),
        "{text}"
    );
    assert!(!text.contains("sk-ant-never-sent"), "{text}");
    // Still one program missing.
    assert_eq!(keyed.status.code(), Some(1), "{text}");
    fs::remove_file(dir.join("connections/gone.toml")).unwrap();
    assert_eq!(doctor(Some("sk-ant-never-sent")).status.code(), Some(0));
}
