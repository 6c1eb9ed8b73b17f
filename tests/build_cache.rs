//! The build cache: a build that finds nothing changed gives the same manifest and the
//! same diagnostics as a cold one, and every kind of change is seen.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use common::{copy_to_temp, fixtures, run_in};
use eve::compiler::{self, Build};
use eve::tools::builtin::CATALOG;

/// Sets every file and folder below `dir` (itself included) to a time well in the past,
/// so the cache trusts them: as if the edits were made long before the build.
fn age(dir: &Path) {
    let old = SystemTime::now() - Duration::from_secs(60);
    for entry in walkdir::WalkDir::new(dir).contents_first(true) {
        let entry = entry.unwrap();
        if entry.path_is_symlink() {
            continue;
        }
        std::fs::File::open(entry.path())
            .unwrap()
            .set_modified(old)
            .unwrap();
    }
}

fn build(dir: &Path) -> Build {
    let build = compiler::build(dir, &CATALOG);
    if let Some(manifest) = &build.manifest
        && !build.cached
    {
        compiler::write_manifest(dir, manifest).unwrap();
    }
    build
}

fn bytes(build: &Build) -> Vec<u8> {
    compiler::manifest_bytes(build.manifest.as_ref().unwrap()).unwrap()
}

#[test]
fn a_cached_build_equals_a_cold_one_for_every_fixture() {
    for case in std::fs::read_dir(fixtures().join("valid")).unwrap() {
        let case = case.unwrap().path();
        let tmp = copy_to_temp(&case);
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join(".eve")).unwrap();
        age(dir);
        let cold = build(dir);
        assert!(!cold.cached, "{}", case.display());
        let Some(_) = &cold.manifest else {
            continue;
        };
        let hit = build(dir);
        assert!(
            hit.cached,
            "{}: nothing changed, the cache must answer",
            case.display()
        );
        assert_eq!(bytes(&hit), bytes(&cold), "{}", case.display());
        assert_eq!(
            hit.diagnostics.iter().collect::<Vec<_>>(),
            cold.diagnostics.iter().collect::<Vec<_>>(),
            "{}",
            case.display()
        );
        assert_eq!(hit.eval_count, cold.eval_count);
        // Pure compilation agrees too.
        assert_eq!(bytes(&compiler::compile(dir, &CATALOG)), bytes(&cold));
    }
}

fn agent() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("agent.toml"), "model = \"openai/gpt-4.1\"\n").unwrap();
    std::fs::write(dir.join("instructions.md"), "You help.\n").unwrap();
    std::fs::create_dir_all(dir.join("skills/plan")).unwrap();
    std::fs::write(
        dir.join("skills/plan/SKILL.md"),
        "---\ndescription: Plans\n---\nSee [notes](notes.md).\n",
    )
    .unwrap();
    std::fs::write(dir.join("skills/plan/notes.md"), "n\n").unwrap();
    std::fs::write(
        dir.join("skills/ship.md"),
        "---\ndescription: Ships\n---\nGo.\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join(".eve")).unwrap();
    age(dir);
    tmp
}

fn skills(build: &Build) -> Vec<(String, String)> {
    build
        .manifest
        .as_ref()
        .unwrap()
        .skills
        .iter()
        .map(|s| (s.name.clone(), s.description.clone()))
        .collect()
}

#[test]
fn a_same_size_edit_with_its_time_restored_is_seen_while_racily_clean() {
    let tmp = agent();
    let dir = tmp.path();
    let file = dir.join("skills/ship.md");
    // Written now: the cache will not trust it.
    std::fs::write(&file, "---\ndescription: Ships\n---\nGo.\n").unwrap();
    let before = std::fs::metadata(&file).unwrap().modified().unwrap();
    build(dir);
    std::fs::write(&file, "---\ndescription: Sinks\n---\nGo.\n").unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(before)
        .unwrap();
    let after = build(dir);
    assert!(!after.cached);
    assert!(
        skills(&after).contains(&("ship".into(), "Sinks".into())),
        "{:?}",
        skills(&after)
    );
}

#[test]
fn skills_added_removed_and_renamed_and_resources_changed_are_seen() {
    let tmp = agent();
    let dir = tmp.path();
    assert!(!build(dir).cached);
    assert!(build(dir).cached);

    std::fs::write(dir.join("skills/new.md"), "---\ndescription: New\n---\nx\n").unwrap();
    age(dir);
    let added = build(dir);
    assert!(!added.cached);
    assert_eq!(skills(&added).len(), 3);

    std::fs::rename(dir.join("skills/new.md"), dir.join("skills/renamed.md")).unwrap();
    age(dir);
    let renamed = build(dir);
    assert!(skills(&renamed).iter().any(|(n, _)| n == "renamed"));
    assert!(!skills(&renamed).iter().any(|(n, _)| n == "new"));

    std::fs::remove_file(dir.join("skills/renamed.md")).unwrap();
    std::fs::write(dir.join("skills/plan/extra.md"), "e\n").unwrap();
    age(dir);
    let changed = build(dir);
    assert_eq!(skills(&changed).len(), 2);
    let plan = &changed.manifest.as_ref().unwrap().skills[0];
    assert!(
        plan.resources.iter().any(|r| r.ends_with("extra.md")),
        "{:?}",
        plan.resources
    );
    assert!(build(dir).cached);
}

#[test]
fn a_deleted_or_corrupted_cache_only_costs_a_full_build() {
    let tmp = agent();
    let dir = tmp.path();
    let cold = build(dir);
    let cache = dir.join(".eve/build-cache");
    std::fs::remove_file(&cache).unwrap();
    let again = build(dir);
    assert!(!again.cached);
    assert_eq!(bytes(&again), bytes(&cold));
    let text = std::fs::read_to_string(&cache).unwrap();
    std::fs::write(&cache, text.replace("F ", "F 9")).unwrap();
    let corrupted = build(dir);
    assert!(!corrupted.cached);
    assert_eq!(bytes(&corrupted), bytes(&cold));
    std::fs::write(&cache, "garbage").unwrap();
    assert!(!build(dir).cached);
    // A manifest that does not match the cache is not trusted either.
    assert!(build(dir).cached);
    std::fs::write(dir.join(".eve/manifest.json"), "{}").unwrap();
    let rebuilt = build(dir);
    assert!(!rebuilt.cached);
    assert_eq!(bytes(&rebuilt), bytes(&cold));
}

#[test]
fn warnings_of_unchanged_files_are_printed_again_on_a_cached_build() {
    let tmp = copy_to_temp(&fixtures().join("invalid/not-a-skill"));
    std::fs::create_dir_all(tmp.path().join(".eve")).unwrap();
    age(tmp.path());
    let first = run_in(tmp.path(), &["build"]);
    let cache = tmp.path().join(".eve/build-cache");
    let stored = std::fs::metadata(&cache).unwrap().modified().unwrap();
    let second = run_in(tmp.path(), &["build"]);
    assert_eq!(
        std::fs::metadata(&cache).unwrap().modified().unwrap(),
        stored,
        "the second build came from the cache (it wrote nothing)"
    );
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stderr.contains("warning[W0408]"), "{}", first.stderr);
    let strip = |s: &str| common::mask_time(s);
    assert_eq!(strip(&second.stderr), strip(&first.stderr));
}
