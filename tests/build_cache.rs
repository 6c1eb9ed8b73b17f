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
    let build = compiler::build(dir, &CATALOG, eve::compiler::listing::Options::default());
    if let Some(manifest) = &build.manifest
        && !build.cached
    {
        compiler::write_manifest(dir, manifest).unwrap();
    }
    build
}

/// For an agent with connections: lists their tools once with the real binary (which
/// starts the test server and caches the listings), then forgets that build, so that an
/// in-process build, which starts no servers, has listings to read.
fn list_connections(dir: &Path) {
    if dir.join("connections").is_dir() {
        let out = run_in(dir, &["build"]);
        assert_eq!(out.code, 0, "{}", out.stderr);
        std::fs::remove_file(dir.join(".eve/build-cache")).unwrap();
    }
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
        list_connections(dir);
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

#[test]
fn a_connection_without_a_listing_keeps_the_build_out_of_the_cache() {
    let tmp = copy_to_temp(&fixtures().join("valid/connection"));
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join(".eve")).unwrap();
    age(dir);
    // No server is started in process and no listing is cached: the next build must
    // try again rather than repeat this one.
    assert!(!build(dir).cached);
    assert!(!build(dir).cached);
    assert!(!dir.join(".eve/build-cache").exists());
}

#[test]
fn a_listing_refreshed_since_the_last_build_is_seen() {
    let tmp = copy_to_temp(&fixtures().join("valid/connection"));
    let dir = tmp.path();
    list_connections(dir);
    age(dir);
    let cold = build(dir);
    assert!(!cold.cached);
    assert!(build(dir).cached);
    // `eve build --refresh` (or a run) wrote a new listing: the server describes `add`
    // differently now. The cached build must not hand back the old tool list.
    let listing_path = dir.join(".eve/connections/t.json");
    let mut listing: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&listing_path).unwrap()).unwrap();
    let add = listing["listing"]["tools"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|t| t["name"] == "add")
        .unwrap();
    add["description"] = "Says it again".into();
    std::fs::write(&listing_path, serde_json::to_vec_pretty(&listing).unwrap()).unwrap();
    let after = build(dir);
    assert!(!after.cached);
    let manifest = after.manifest.as_ref().unwrap();
    let add = manifest.tools.iter().find(|t| t.name == "t__add").unwrap();
    assert_eq!(add.description, "Says it again");
}
