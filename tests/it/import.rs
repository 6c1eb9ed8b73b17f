//! `eve import claude` end to end: fixture folders of Claude Code files (and two real
//! plugins) imported with the real binary, snapshots of the tree and the report, each
//! result built; and the attacks an imported folder can try.

use std::path::Path;

use crate::common::{fixtures, run_in};
use pretty_assertions::assert_eq;

/// Every file below `dir`, sorted, with its contents; files copied unchanged from
/// `source` (skills, a license) are named with their size only, and checked equal.
/// Without `full`, only the TOML files are shown whole (a real plugin's prompts are long).
fn tree(dir: &Path, source: &Path, full: bool) -> String {
    let mut out = String::new();
    let mut paths: Vec<_> = walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| e.path().strip_prefix(dir).unwrap().to_path_buf())
        .filter(|p| !p.starts_with(".eve"))
        .collect();
    paths.sort();
    for rel in paths {
        let bytes = std::fs::read(dir.join(&rel)).unwrap();
        let rel_text = rel.to_string_lossy();
        let original = source.join(&rel);
        let copied = (rel.starts_with("skills") || rel_text == "LICENSE")
            && original.is_file()
            && std::fs::read(&original).unwrap() == bytes;
        if copied {
            out.push_str(&format!(
                "== {rel_text} ({} bytes, as in the plugin)\n",
                bytes.len()
            ));
        } else if !full && !rel_text.ends_with(".toml") {
            out.push_str(&format!("== {rel_text} ({} bytes)\n", bytes.len()));
        } else {
            out.push_str(&format!(
                "== {rel_text}\n{}",
                String::from_utf8_lossy(&bytes)
            ));
            if !out.ends_with('\n') {
                out.push('\n');
            }
        }
    }
    out
}

/// Imports `case` (a path under `tests/fixtures/import/`) into `out` of a new folder,
/// checks that the result builds (in process: no server starts), and returns the
/// folder, the command's output and a snapshot text.
fn import(case: &str) -> (tempfile::TempDir, String) {
    let full = !case.starts_with("real/");
    let source = fixtures().join("import").join(case);
    let tmp = tempfile::tempdir().unwrap();
    let out = run_in(
        tmp.path(),
        &[
            "import",
            "claude",
            source.to_str().unwrap(),
            "--into",
            "out",
        ],
    );
    assert_eq!(out.code, 0, "{case}: {}{}", out.stdout, out.stderr);
    assert_eq!(out.stderr, "", "{case}");
    let dir = tmp.path().join("out");
    let build = eve::compiler::compile(&dir, &eve::tools::builtin::CATALOG);
    let diagnostics: Vec<String> = build
        .diagnostics
        .iter()
        .map(|d| {
            format!(
                "{}[{}] {}",
                if d.is_error() { "error" } else { "warning" },
                d.code,
                d.message
            )
        })
        .collect();
    assert!(
        build.manifest.is_some(),
        "{case} does not build: {diagnostics:#?}"
    );
    let report = out
        .stdout
        .replace(&source.display().to_string(), "[source]");
    let plugin_root = if source.is_dir() {
        source.clone()
    } else {
        source.parent().unwrap().to_path_buf()
    };
    let snapshot = format!(
        "{report}--- build\n{}\n--- tree\n{}",
        if diagnostics.is_empty() {
            "no diagnostics".to_string()
        } else {
            diagnostics.join("\n")
        },
        tree(&dir, &plugin_root, full)
    );
    (tmp, snapshot)
}

#[test]
fn a_plugin_with_skills_agents_commands_and_servers_imports_and_builds() {
    let (tmp, snapshot) = import("plugin");
    insta::assert_snapshot!("import_plugin", snapshot);
    // The real build too: its servers are on 127.0.0.1 or fail to start, and a server
    // that cannot be listed is a warning (`required = false`).
    let out = run_in(&tmp.path().join("out"), &["build"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stderr.contains("built `out`: "), "{}", out.stderr);
    assert!(!out.stderr.contains("error["), "{}", out.stderr);
}

#[test]
fn a_project_its_agents_folder_and_one_agent_file_import_and_build() {
    for (case, name) in [
        ("project", "import_project"),
        ("project/.claude/agents", "import_agents_folder"),
        ("single/code-reviewer.md", "import_single_file"),
    ] {
        let (_tmp, snapshot) = import(case);
        insta::assert_snapshot!(name, snapshot);
    }
}

#[test]
fn real_plugins_import_build_and_report_what_was_dropped() {
    for case in ["feature-dev", "brand-voice"] {
        let (_tmp, snapshot) = import(&format!("real/{case}"));
        assert!(snapshot.contains("\nnot imported:\n"), "{snapshot}");
        insta::assert_snapshot!(format!("import_real_{case}"), snapshot);
    }
}

#[test]
fn a_folder_that_is_not_empty_is_refused_unless_forced_and_an_agent_keeps_its_own_files() {
    let source = fixtures().join("import/single/code-reviewer.md");
    let source = source.to_str().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("mine");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("agent.toml"), "model = \"openai/gpt-4.1\"\n").unwrap();
    std::fs::write(dir.join("instructions.md"), "My own instructions.\n").unwrap();
    let out = run_in(tmp.path(), &["import", "claude", source, "--into", "mine"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("`mine` is not empty"), "{}", out.stderr);
    assert!(out.stderr.contains("--force"), "{}", out.stderr);
    assert!(!dir.join("subagents").exists());

    let out = run_in(
        tmp.path(),
        &["import", "claude", source, "--into", "mine", "--force"],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        std::fs::read_to_string(dir.join("agent.toml")).unwrap(),
        "model = \"openai/gpt-4.1\"\n"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("instructions.md")).unwrap(),
        "My own instructions.\n"
    );
    assert!(dir.join("subagents/code-reviewer/agent.toml").is_file());
    assert!(
        out.stdout
            .contains("the agent's own `agent.toml` and instructions are kept")
    );

    // Again: the files it writes are there now, and are replaced and listed.
    std::fs::write(
        dir.join("subagents/code-reviewer/instructions.md"),
        "edited\n",
    )
    .unwrap();
    let out = run_in(
        tmp.path(),
        &["import", "claude", source, "--into", "mine", "--force"],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert!(
        out.stdout
            .contains("replaced (--force):\n  subagents/code-reviewer/agent.toml\n  subagents/code-reviewer/instructions.md\n"),
        "{}",
        out.stdout
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("subagents/code-reviewer/instructions.md")).unwrap(),
        "Review the code you are pointed at.\n"
    );

    // A file where the folder should be, or a path that does not exist.
    std::fs::write(tmp.path().join("file"), "x").unwrap();
    let out = run_in(tmp.path(), &["import", "claude", source, "--into", "file"]);
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("is not a folder"), "{}", out.stderr);
    let out = run_in(tmp.path(), &["import", "claude", "nowhere", "--into", "x"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("`nowhere` does not exist"),
        "{}",
        out.stderr
    );
}

#[test]
fn an_imported_folder_cannot_make_eve_read_outside_it_or_write_outside_the_destination() {
    let tmp = tempfile::tempdir().unwrap();
    let secret = tmp.path().join("secret");
    std::fs::create_dir(&secret).unwrap();
    std::fs::write(secret.join("id_rsa"), "PRIVATE KEY").unwrap();
    std::fs::write(
        secret.join("SKILL.md"),
        "---\ndescription: leaked\n---\nPRIVATE KEY\n",
    )
    .unwrap();
    let plugin = tmp.path().join("plugin");
    for dir in ["agents", "skills/ok", "commands"] {
        std::fs::create_dir_all(plugin.join(dir)).unwrap();
    }
    let link =
        |target: &Path, at: &str| std::os::unix::fs::symlink(target, plugin.join(at)).unwrap();
    // Links that lead out: a whole skill, a resource, an agent file, a command, `.mcp.json`.
    link(&secret, "skills/stolen");
    std::fs::write(
        plugin.join("skills/ok/SKILL.md"),
        "---\ndescription: Fine\n---\nFine.\n",
    )
    .unwrap();
    link(&secret.join("id_rsa"), "skills/ok/key.txt");
    link(Path::new("../../../secret"), "skills/ok/up");
    link(&secret.join("id_rsa"), "agents/spy.md");
    link(&secret.join("id_rsa"), "commands/spy.md");
    link(&secret.join("id_rsa"), ".mcp.json");
    // Names that try to climb out of the destination.
    std::fs::write(
        plugin.join("agents/climb.md"),
        "---\nname: ../../../escaped\ndescription: Climbs\n---\nClimb.\n",
    )
    .unwrap();
    std::fs::write(
        plugin.join("commands/climb.md"),
        "---\nname: ../../../escaped\ndescription: Climbs\n---\nClimb.\n",
    )
    .unwrap();
    std::fs::write(plugin.join("commands/..%2f..%2fescaped.md"), "Climb.\n").unwrap();
    // A FIFO would hang a reader that opens it blocking.
    rustix::fs::mknodat(
        rustix::fs::CWD,
        plugin.join("skills/ok/pipe"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
    let out = run_in(
        tmp.path(),
        &["import", "claude", "plugin", "--into", "out/agent"],
    );
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);

    let written: Vec<String> = walkdir::WalkDir::new(tmp.path())
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            e.path()
                .strip_prefix(tmp.path())
                .unwrap()
                .display()
                .to_string()
        })
        .filter(|p| !p.starts_with("plugin/") && !p.starts_with("secret/"))
        .collect();
    assert!(
        written.iter().all(|p| p.starts_with("out/agent/")),
        "{written:?}"
    );
    for path in &written {
        let text = std::fs::read_to_string(tmp.path().join(path)).unwrap_or_default();
        assert!(!text.contains("PRIVATE KEY"), "{path} holds the secret");
    }
    assert!(
        written.contains(&"out/agent/subagents/escaped/agent.toml".to_string()),
        "{written:?}"
    );
    assert!(
        written.contains(&"out/agent/skills/climb.md".to_string()),
        "{written:?}"
    );
    assert!(
        out.stdout
            .contains("  commands/..%2f..%2fescaped.md: hidden"),
        "{}",
        out.stdout
    );
    for left_out in [
        "skills/stolen",
        "agents/spy.md",
        "commands/spy.md",
        ".mcp.json",
    ] {
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("  {left_out}: ")))
            .unwrap_or_else(|| panic!("{left_out} not reported: {}", out.stdout));
        assert!(line.contains("leads outside the imported folder"), "{line}");
    }
    for dropped in ["`skills/ok/key.txt`", "`skills/ok/up`", "`skills/ok/pipe`"] {
        assert!(
            out.stdout
                .lines()
                .any(|l| l.contains("dropped: ") && l.contains(dropped)),
            "{dropped}: {}",
            out.stdout
        );
    }
}

#[test]
fn a_destination_with_a_link_that_leads_out_is_not_written_through() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tmp.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let dir = tmp.path().join("agent");
    std::fs::create_dir(&dir).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("subagents")).unwrap();
    let source = fixtures().join("import/single/code-reviewer.md");
    let out = run_in(
        tmp.path(),
        &[
            "import",
            "claude",
            source.to_str().unwrap(),
            "--into",
            "agent",
            "--force",
        ],
    );
    assert_eq!(out.code, 1, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("leads outside"), "{}", out.stderr);
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
}

#[test]
fn huge_files_are_reported_and_never_read_whole() {
    // Sparse files: gigabytes on paper, nothing on disk. Reading one whole would take
    // the machine's memory; the import must look at the size and leave it out.
    let tmp = tempfile::tempdir().unwrap();
    let plugin = tmp.path().join("plugin");
    for dir in ["agents", "skills/big", "commands"] {
        std::fs::create_dir_all(plugin.join(dir)).unwrap();
    }
    let huge = |rel: &str, len: u64| {
        let file = std::fs::File::create(plugin.join(rel)).unwrap();
        file.set_len(len).unwrap();
    };
    huge("agents/huge.md", 4 << 30);
    huge("commands/huge.md", 4 << 30);
    huge(".mcp.json", 4 << 30);
    huge("skills/big/video.bin", 4 << 30);
    std::fs::write(
        plugin.join("skills/big/SKILL.md"),
        "---\ndescription: Has a huge resource\n---\nBig.\n",
    )
    .unwrap();
    std::fs::create_dir(plugin.join("skills/bloated")).unwrap();
    huge("skills/bloated/SKILL.md", 4 << 30);
    std::fs::write(
        plugin.join("agents/fine.md"),
        "---\nname: fine\ndescription: A small agent\n---\nFine.\n",
    )
    .unwrap();
    let out = run_in(tmp.path(), &["import", "claude", "plugin", "--into", "out"]);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    for left_out in [
        "agents/huge.md",
        "commands/huge.md",
        ".mcp.json",
        "skills/bloated",
    ] {
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("  {left_out}")))
            .unwrap_or_else(|| panic!("{left_out} not reported: {}", out.stdout));
        assert!(line.contains("too large"), "{line}");
    }
    assert!(
        out.stdout.lines().any(|l| l.contains("dropped: ")
            && l.contains("`skills/big/video.bin`")
            && l.contains("too large")),
        "{}",
        out.stdout
    );
    let dir = tmp.path().join("out");
    assert!(dir.join("subagents/fine/agent.toml").is_file());
    assert!(dir.join("skills/big/SKILL.md").is_file());
    assert!(!dir.join("skills/big/video.bin").exists());
    assert!(!dir.join("subagents/huge").exists());
    assert!(!dir.join("skills/huge.md").exists());
    assert!(!dir.join("skills/bloated").exists());
}
