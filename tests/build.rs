//! `eve build` end to end: every fixture folder, snapshots of what a person sees.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::{copy_to_temp, fixtures, mask_time, run_in};
use pretty_assertions::assert_eq;

fn case_names(kind: &str) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures().join(kind))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// A compact view of a manifest for snapshots: built-in descriptions and schemas are
/// the catalog's, so only where a tool differs from it is shown.
fn manifest_view(dir: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join(".eve/manifest.json")).unwrap();
    let mut manifest: serde_json::Value = serde_json::from_str(&text).unwrap();
    strip(&mut manifest);
    manifest
}

fn strip(manifest: &mut serde_json::Value) {
    manifest["inputs_hash"] = "[hash]".into();
    for tool in manifest["tools"].as_array_mut().unwrap() {
        let builtin = eve::tools::builtin::CATALOG.find(tool["name"].as_str().unwrap());
        if let Some(builtin) = builtin
            && tool["executor"]["kind"] == "builtin"
        {
            if tool["description"] == builtin.description {
                tool["description"] = "[catalog]".into();
            }
            if tool["input_schema"] == builtin.schema() {
                tool["input_schema"] = "[catalog]".into();
            }
        }
    }
    for sub in manifest["subagents"].as_array_mut().unwrap() {
        strip(&mut sub["manifest"]);
    }
}

#[test]
fn valid_fixtures_build_cleanly() {
    for case in case_names("valid") {
        let tmp = copy_to_temp(&fixtures().join("valid").join(&case));
        let out = run_in(tmp.path(), &["build"]);
        assert_eq!(out.code, 0, "{case}: {}", out.stderr);
        let manifest = serde_json::to_string_pretty(&manifest_view(tmp.path())).unwrap();
        insta::assert_snapshot!(
            format!("valid_{case}"),
            format!("{}\n---\n{manifest}", mask_time(&out.stderr))
        );
    }
}

#[test]
fn invalid_fixtures_report_their_diagnostic() {
    for case in case_names("invalid") {
        let tmp = copy_to_temp(&fixtures().join("invalid").join(&case));
        let out = run_in(tmp.path(), &["build"]);
        let has_errors = out.stderr.contains("\nerror[") || out.stderr.starts_with("error[");
        assert_eq!(
            out.code,
            if has_errors { 1 } else { 0 },
            "{case}: {}",
            out.stderr
        );
        assert!(
            out.stderr.contains("error[") || out.stderr.contains("warning["),
            "{case} reported nothing: {}",
            out.stderr
        );
        assert_eq!(
            tmp.path().join(".eve/manifest.json").exists(),
            !has_errors,
            "{case}: a manifest must be written exactly when the build succeeds"
        );
        insta::assert_snapshot!(format!("invalid_{case}"), mask_time(&out.stderr));
    }
}

/// A temporary agent directory with these files.
fn agent_with(files: &[(&str, String)]) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for (name, text) in files {
        std::fs::write(tmp.path().join(name), text).unwrap();
    }
    tmp
}

#[test]
fn sixty_thousand_unknown_keys_print_ten_and_a_count() {
    let mut toml = String::from("model = \"anthropic/claude-sonnet-4-5\"\n");
    for i in 0..60_000 {
        toml.push_str(&format!("k{i} = 1\n"));
    }
    let tmp = agent_with(&[("agent.toml", toml), ("instructions.md", "Hi\n".into())]);
    let out = run_in(tmp.path(), &["build"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr.matches("error[E0003]: unknown key `").count(),
        10
    );
    assert!(
        out.stderr
            .contains("error[E0003]: … and 59,990 more like this\n --> agent.toml\n")
    );
    assert!(out.stderr.ends_with(": 60000 errors\n"), "{}", out.stderr);
    assert!(out.stderr.len() < 10_000, "{} bytes", out.stderr.len());

    let out = run_in(tmp.path(), &["build", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    let messages: Vec<&str> = json["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["message"].as_str().unwrap())
        .collect();
    assert_eq!(messages.len(), 11);
    assert_eq!(messages[10], "… and 59,990 more like this");
}

#[test]
fn sixty_thousand_undefined_variables_on_one_line_print_ten_and_a_count() {
    let line: Vec<String> = (0..60_000).map(|i| format!("{{{{ v{i} }}}}")).collect();
    let tmp = agent_with(&[
        (
            "agent.toml",
            "model = \"anthropic/claude-sonnet-4-5\"\n".into(),
        ),
        ("instructions.md", line.join(" ")),
    ]);
    let out = run_in(tmp.path(), &["build"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(
        out.stderr
            .matches("error[E0303]: undefined variable `")
            .count(),
        10
    );
    assert!(
        out.stderr
            .contains("error[E0303]: … and 59,990 more like this\n")
    );
    // Each quoted line is cut around its position, not the whole 700 KB line.
    assert!(out.stderr.len() < 10_000, "{} bytes", out.stderr.len());
}

#[test]
fn nested_template_loops_stop_at_the_budget_instead_of_running_for_minutes() {
    let loops = "{% for a in range(1000) %}{% for b in range(1000) %}{% for c in range(1000) %}x{% endfor %}{% endfor %}{% endfor %}\n";
    for (instructions, problem) in [
        (loops.to_string(), "the template does too much work"),
        (
            "{{ \"x\" * 1000000000 }}\n".to_string(),
            "the template does too much work",
        ),
        (
            "{% for i in range(80) %}{{ \"x\" * 60000 }}{% endfor %}\n".to_string(),
            "the instructions render to more than 4 MiB",
        ),
    ] {
        let tmp = agent_with(&[
            (
                "agent.toml",
                "model = \"anthropic/claude-sonnet-4-5\"\n".into(),
            ),
            ("instructions.md", instructions),
        ]);
        let out = run_in(tmp.path(), &["build"]);
        assert_eq!(out.code, 1, "{}", out.stderr);
        assert!(
            out.stderr
                .starts_with(&format!("error[E0304]: template error: {problem}")),
            "{}",
            out.stderr
        );
    }
}

#[test]
fn agent_nesting_deeper_than_the_cap_is_refused_at_build_time() {
    let build = |setting: &str| {
        let tmp = agent_with(&[
            (
                "agent.toml",
                "model = \"anthropic/claude-sonnet-4-5\"\n".into(),
            ),
            ("instructions.md", "Hi\n".into()),
        ]);
        std::fs::create_dir(tmp.path().join("tools")).unwrap();
        std::fs::write(
            tmp.path().join("tools/agent.toml"),
            format!("[settings]\nmax_depth = {setting}\n"),
        )
        .unwrap();
        let out = run_in(tmp.path(), &["build"]);
        (out.code, out.stderr)
    };
    let (code, stderr) = build("1000000");
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.starts_with(
            "error[E0005]: `settings.max_depth` must be from 1 to 10, found 1000000\n --> tools/agent.toml:2:13\n"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("= note: `max_depth` is how deep agents may nest (default 3, at most 10)")
    );
    for bad in ["0", "-3", "11"] {
        let (code, stderr) = build(bad);
        assert_eq!(code, 1, "{stderr}");
        assert!(stderr.starts_with("error[E0005]"), "{bad}: {stderr}");
    }
    let (code, stderr) = build("\"deep\"");
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.starts_with("error[E0004]: `settings.max_depth` must be an integer"),
        "{stderr}"
    );
    for good in ["1", "10"] {
        let (code, stderr) = build(good);
        assert_eq!(code, 0, "{good}: {stderr}");
    }
}

#[test]
fn a_too_large_agent_toml_is_reported_once_as_too_large() {
    let tmp = agent_with(&[("instructions.md", "Hi\n".into())]);
    let big = std::fs::File::create(tmp.path().join("agent.toml")).unwrap();
    big.set_len(2 * 1024 * 1024).unwrap();
    let out = run_in(tmp.path(), &["build"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(
        out.stderr.starts_with("error[E0001]: file is too large (2097152 bytes; the limit is 1048576 bytes)\n --> agent.toml\n"),
        "{}",
        out.stderr
    );
    assert!(
        !out.stderr.contains("missing `agent.toml`"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.ends_with(": 1 error\n"), "{}", out.stderr);
}

/// Sets every file and folder below `dir` to a time well in the past, so the build
/// cache trusts them (as if the edits were made long before the build).
fn age(dir: &Path) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
    for entry in walkdir::WalkDir::new(dir).contents_first(true) {
        let entry = entry.unwrap();
        std::fs::File::open(entry.path())
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
}

#[test]
fn a_long_skill_list_passes_a_quarter_of_the_window_and_a_cached_build_says_so_again() {
    let tmp = agent_with(&[
        (
            "agent.toml",
            "model = \"anthropic/claude-sonnet-4-5\"\n".into(),
        ),
        ("instructions.md", "You help.\n".into()),
    ]);
    std::fs::create_dir_all(tmp.path().join("skills")).unwrap();
    // 1,000 skills with 200-character descriptions: about 55,000 tokens of listing.
    for i in 0..1000 {
        let description = format!("Skill {i:04} {}", "handles one kind of task. ".repeat(7));
        std::fs::write(
            tmp.path().join(format!("skills/skill-{i:04}.md")),
            format!("---\ndescription: {}\n---\nDo it.\n", description.trim()),
        )
        .unwrap();
    }
    std::fs::create_dir_all(tmp.path().join(".eve")).unwrap();
    age(tmp.path());
    let cold = run_in(tmp.path(), &["build"]);
    assert_eq!(cold.code, 0, "{}", cold.stderr);
    assert!(
        cold.stderr
            .starts_with("warning[W0901]: the context before the first message is ~"),
        "{}",
        cold.stderr
    );
    let listing = cold
        .stderr
        .lines()
        .find(|l| l.starts_with("  skills listing"))
        .unwrap();
    assert!(listing.ends_with("(1,000 skills)"), "{listing}");
    let cache = tmp.path().join(".eve/build-cache");
    let stored = std::fs::metadata(&cache).unwrap().modified().unwrap();
    let hit = run_in(tmp.path(), &["build"]);
    assert_eq!(
        std::fs::metadata(&cache).unwrap().modified().unwrap(),
        stored,
        "the second build came from the cache"
    );
    assert_eq!(mask_time(&hit.stderr), mask_time(&cold.stderr));
    let json = run_in(tmp.path(), &["build", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["diagnostics"][0]["code"], "W0901");
    assert_eq!(report["budget"]["skills_listed"], 1000);
    assert!(report["budget"]["share"].as_f64().unwrap() > 0.25);
}
