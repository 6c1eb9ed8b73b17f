//! `eve build` end to end: every fixture folder, snapshots of what a person sees.

use crate::common;

use std::path::Path;

use crate::common::{copy_to_temp, fixtures, mask_time, run_in};
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
    assert_eq!(out.stderr.matches("error[E0003]: unknown key `").count(), 3);
    assert!(out.stderr.ends_with(
        "… and 59,997 more E0003 errors (eve build --verbose shows all)\nerror: could not build `{}`: 60,000 errors\n"
            .replace("{}", &eve::compiler::agent_name(tmp.path()))
            .as_str()
    ), "{}", out.stderr);
    assert!(out.stderr.len() < 5_000, "{} bytes", out.stderr.len());
    let verbose = run_in(tmp.path(), &["build", "--verbose"]);
    assert_eq!(
        verbose
            .stderr
            .matches("error[E0003]: unknown key `")
            .count(),
        10
    );
    assert!(
        verbose
            .stderr
            .contains("error[E0003]: … and 59,990 more like this\n --> agent.toml\n")
    );
    assert!(
        verbose.stderr.ends_with(": 60,000 errors\n"),
        "{}",
        verbose.stderr
    );
    assert!(
        verbose.stderr.len() < 10_000,
        "{} bytes",
        verbose.stderr.len()
    );

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
        3
    );
    assert!(
        out.stderr
            .contains("… and 59,997 more E0303 errors (eve build --verbose shows all)\n")
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

/// What a build of the temporary agent directory `dir` printed, with its time and its
/// (random) name masked.
fn masked(dir: &Path, stderr: &str) -> String {
    mask_time(stderr).replace(
        &format!("`{}`", eve::compiler::agent_name(dir)),
        "`[agent]`",
    )
}

/// The names of the skills in the manifest of `dir`.
fn skill_names(dir: &Path) -> Vec<String> {
    manifest_view(dir)["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_skill_that_cannot_be_used_is_left_out_and_strict_refuses_the_agent() {
    let tmp = copy_to_temp(&fixtures().join("invalid/skills-left-out"));
    std::fs::create_dir_all(tmp.path().join(".eve")).unwrap();
    age(tmp.path());
    let lenient = run_in(tmp.path(), &["build"]);
    assert_eq!(lenient.code, 0, "{}", lenient.stderr);
    assert_eq!(skill_names(tmp.path()), ["tidy"]);
    assert_eq!(lenient.stderr.matches("warning[W0413]").count(), 3);
    // The lenient build is in the cache now; a strict one must not take its answer.
    let strict = run_in(tmp.path(), &["build", "--strict"]);
    assert_eq!(strict.code, 1, "{}", strict.stderr);
    insta::assert_snapshot!("strict_skills-left-out", mask_time(&strict.stderr));
    let again = run_in(tmp.path(), &["build"]);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(mask_time(&again.stderr), mask_time(&lenient.stderr));
    let json = run_in(tmp.path(), &["build", "--strict", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let codes: Vec<&str> = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["E0401", "E0405", "E0401"]);

    // `eve run` builds through the same door, leniently: the skill is left out, the
    // agent runs.
    std::fs::write(tmp.path().join("replies.yaml"), "- text: Done.\n").unwrap();
    let run = run_in(
        tmp.path(),
        &["run", ".", "--model", "scripted:replies.yaml", "go"],
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("warning[W0413]").count(),
        3,
        "{}",
        run.stderr
    );
    assert_eq!(run.stdout.trim(), "Done.");
}

#[test]
fn with_strict_the_skill_fixtures_refuse_the_agent_as_they_did() {
    for case in [
        "frontmatter",
        "frontmatter-unclosed",
        "frontmatter-duplicate-key",
        "invalid-skill-name",
        "skill-without-description",
        "duplicate-skill",
        "package-without-skill-md",
        "skill-mistakes-together",
        "skill-names-normalised",
    ] {
        let tmp = copy_to_temp(&fixtures().join("invalid").join(case));
        let out = run_in(tmp.path(), &["build", "--strict"]);
        assert_eq!(out.code, 1, "{case}: {}", out.stderr);
        assert!(!out.stderr.contains("W0413"), "{case}: {}", out.stderr);
        insta::assert_snapshot!(format!("strict_{case}"), mask_time(&out.stderr));
        let lenient = run_in(tmp.path(), &["build"]);
        assert_eq!(lenient.code, 0, "{case}: {}", lenient.stderr);
        // An invalid name is loaded normalised, as Claude Code loads it; the rest
        // costs the skill.
        let expected = if case == "invalid-skill-name" {
            "warning[W0414]"
        } else {
            "warning[W0413]"
        };
        assert!(
            lenient.stderr.contains(expected),
            "{case}: {}",
            lenient.stderr
        );
    }
}

#[test]
fn repeated_diagnostics_print_three_of_each_code_and_a_count_unless_verbose() {
    let tmp = agent_with(&[
        (
            "agent.toml",
            "model = \"anthropic/claude-sonnet-4-5\"\n".into(),
        ),
        ("instructions.md", "You help.\n".into()),
    ]);
    std::fs::create_dir_all(tmp.path().join("skills")).unwrap();
    for i in 1..=8 {
        std::fs::write(
            tmp.path().join(format!("skills/step-{i}.md")),
            format!("---\nname: Step {i}\ndescription: Does step {i}\n---\nDo it.\n"),
        )
        .unwrap();
    }
    std::fs::write(tmp.path().join("skills/notes.txt"), "not a skill\n").unwrap();
    let out = run_in(tmp.path(), &["build"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    insta::assert_snapshot!("grouped_name_mismatches", masked(tmp.path(), &out.stderr));
    let verbose = run_in(tmp.path(), &["build", "--verbose"]);
    assert_eq!(verbose.stderr.matches("warning[W0402]").count(), 8);
    assert!(!verbose.stderr.contains("more W0402"), "{}", verbose.stderr);
    let json = run_in(tmp.path(), &["build", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let mismatches = report["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "W0402")
        .count();
    assert_eq!(mismatches, 8);
    // `eve run` prints a build's diagnostics the same way, and all with --verbose.
    std::fs::write(tmp.path().join("replies.yaml"), "- text: Done.\n").unwrap();
    let model = ["--model", "scripted:replies.yaml"];
    let run = run_in(tmp.path(), &[&["run", ".", "go"][..], &model].concat());
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stderr.matches("warning[W0402]").count(),
        3,
        "{}",
        run.stderr
    );
    assert!(
        run.stderr
            .contains("… and 5 more W0402 warnings (eve build --verbose shows all)\n")
    );
    let run = run_in(
        tmp.path(),
        &[&["run", ".", "go", "-v"][..], &model].concat(),
    );
    assert_eq!(
        run.stderr.matches("warning[W0402]").count(),
        8,
        "{}",
        run.stderr
    );
}

#[test]
fn a_twenty_thousand_skill_library_cannot_be_listed_and_builds_deferred() {
    let tmp = agent_with(&[
        ("agent.toml", "model = \"scripted:replies.yaml\"\n".into()),
        (
            "instructions.md",
            "You help.\n{% for s in skills %}- {{ s.name }}: {{ s.description }}\n{% endfor %}"
                .into(),
        ),
        (
            "replies.yaml",
            "- tool_calls: [{name: search_tools, input: {query: \"invoices 12345\"}}]\n\
             - tool_calls: [{name: load_skill, input: {name: skill-12345}}]\n\
             - text: Done.\n"
                .into(),
        ),
    ]);
    std::fs::create_dir_all(tmp.path().join("skills")).unwrap();
    for i in 0..20_000 {
        let description = format!(
            "Handles invoices of kind {i}. It reads the request, checks what is missing, asks for it, does the work in small steps, and reports what it did and what is left to do afterwards."
        );
        std::fs::write(
            tmp.path().join(format!("skills/skill-{i:05}.md")),
            format!("---\ndescription: {description}\n---\nWork on kind {i}.\n"),
        )
        .unwrap();
    }
    let out = run_in(tmp.path(), &["build"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(!out.stderr.contains("MiB"), "{}", out.stderr);
    assert!(out.stderr.lines().count() < 150, "{}", out.stderr);
    insta::assert_snapshot!(
        "skills_overflow_twenty_thousand",
        masked(tmp.path(), &out.stderr)
    );

    let defer = |text: &str| {
        std::fs::write(
            tmp.path().join("agent.toml"),
            format!("model = \"scripted:replies.yaml\"\n\n[skills]\n{text}\n"),
        )
        .unwrap();
    };
    defer("defeer = true");
    let typo = run_in(tmp.path(), &["build"]);
    assert_eq!(typo.code, 1, "{}", typo.stderr);
    assert!(
        typo.stderr.contains("unknown key `skills.defeer`")
            && typo.stderr.contains("did you mean `defer`?"),
        "{}",
        typo.stderr
    );
    defer("defer = true");
    let built = run_in(tmp.path(), &["build"]);
    assert_eq!(built.code, 0, "{}", built.stderr);
    assert!(built.stderr.lines().count() < 150, "{}", built.stderr);
    let manifest = manifest_view(tmp.path());
    let skills = manifest["skills"].as_array().unwrap();
    assert_eq!(skills.len(), 20_000);
    assert!(skills.iter().all(|s| s["deferred"] == true));

    let log = tmp.path().join("requests.ndjson");
    let run = common::eve()
        .current_dir(tmp.path())
        .env("EVE_SCRIPTED_LOG", &log)
        .args(["run", ".", "go", "--output", "stream-json"])
        .output()
        .unwrap();
    assert_eq!(
        run.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let results: Vec<String> = String::from_utf8_lossy(&run.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["type"] == "action.result")
        .map(|e| e["data"]["output"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(results.len(), 2, "{results:?}");
    let found: serde_json::Value =
        serde_json::from_str(results[0].split("\nLoad a skill").next().unwrap()).unwrap();
    assert_eq!(found["skills"][0]["name"], "skill-12345", "{}", results[0]);
    assert!(
        results[1].starts_with("<skill name=\"skill-12345\">\nWork on kind 12345.\n</skill>"),
        "{}",
        results[1]
    );
    let first: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let system = first["system"].as_str().unwrap();
    assert!(system.contains("# More skills"), "{system}");
    assert!(
        system.len() < 2_000,
        "the deferred skills are not listed: {system}"
    );
}
