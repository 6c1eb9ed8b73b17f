//! The build cache: a build that finds nothing changed gives the same manifest and the
//! same diagnostics as a cold one, and every kind of change is seen.

use crate::common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use crate::common::{copy_to_temp, fixtures, run_in};
use eve::compiler::diagnostic::code;
use eve::compiler::{self, Build};
use eve::tools::builtin::CATALOG;

/// Sets every file and folder below `dir` (itself included) changed in the last minute
/// to a time well in the past, so the cache trusts them: as if the edits were made long
/// before the build. Older ones are left alone (setting a time is a change too).
fn age(dir: &Path) {
    let old = SystemTime::now() - Duration::from_secs(120);
    let recent = SystemTime::now() - Duration::from_secs(60);
    for entry in walkdir::WalkDir::new(dir).contents_first(true) {
        let entry = entry.unwrap();
        if entry.path_is_symlink() || entry.metadata().unwrap().modified().unwrap() < recent {
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
    // try again rather than repeat this one (the cache keeps its skills all the same).
    assert!(!build(dir).cached);
    assert!(!build(dir).cached);
    assert!(!build(dir).cached);
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

fn diagnostics(build: &Build) -> Vec<eve::compiler::Diagnostic> {
    build.diagnostics.iter().cloned().collect()
}

/// The entries of `skills/` of the agent in `dir`, by name.
fn skill_entries(dir: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir.join("skills")) else {
        return Vec::new();
    };
    let mut entries: Vec<_> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    entries.sort();
    entries
}

/// How many entries the `skills/` folders of the agent in `dir` and its subagents have.
fn all_skill_entries(dir: &Path) -> usize {
    let subagents = std::fs::read_dir(dir.join("subagents"))
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| p.is_dir())
                .map(|p| all_skill_entries(&p))
                .sum()
        })
        .unwrap_or(0);
    skill_entries(dir).len() + subagents
}

/// The Markdown file of the first skill of the agent in `dir`, if it has one.
fn first_skill_file(dir: &Path) -> Option<std::path::PathBuf> {
    skill_entries(dir).into_iter().find_map(|entry| {
        let file = if entry.is_dir() {
            entry.join("SKILL.md")
        } else {
            entry.clone()
        };
        (file.extension().is_some_and(|e| e == "md") && file.is_file()).then_some(file)
    })
}

fn append(file: &Path, text: &str) {
    let mut old = std::fs::read_to_string(file).unwrap();
    old.push_str(text);
    std::fs::write(file, old).unwrap();
}

/// A build after an edit gives what a build without any cache gives: the same manifest
/// bytes, the same diagnostics, in the same order.
fn assert_like_cold(dir: &Path, partial: &Build, what: &str) {
    assert!(!partial.cached, "{what}: something changed");
    let cold = compiler::compile(dir, &CATALOG);
    assert_eq!(
        partial
            .manifest
            .as_ref()
            .map(|m| compiler::manifest_bytes(m).unwrap()),
        cold.manifest
            .as_ref()
            .map(|m| compiler::manifest_bytes(m).unwrap()),
        "{what}"
    );
    assert_eq!(diagnostics(partial), diagnostics(&cold), "{what}");
    assert_eq!(partial.eval_count, cold.eval_count, "{what}");
}

#[test]
fn a_build_after_one_edit_equals_a_cold_one_for_every_fixture() {
    for kind in ["valid", "invalid"] {
        for case in std::fs::read_dir(fixtures().join(kind)).unwrap() {
            let case = case.unwrap().path();
            let what = case.display().to_string();
            let tmp = copy_to_temp(&case);
            let dir = tmp.path();
            std::fs::create_dir_all(dir.join(".eve")).unwrap();
            if kind == "valid" {
                list_connections(dir);
            }
            age(dir);
            build(dir);
            let entries = all_skill_entries(dir);
            if let Some(file) = first_skill_file(dir) {
                append(&file, "\nEdited since.\n");
                age(dir);
                let partial = build(dir);
                assert_like_cold(dir, &partial, &what);
                assert_eq!(
                    partial.reused_skills,
                    entries - 1,
                    "{what}: the other skills"
                );
            }
            if dir.join("agent.toml").is_file() {
                append(&dir.join("agent.toml"), "\n# edited since\n");
                age(dir);
                let partial = build(dir);
                assert_like_cold(dir, &partial, &what);
                assert_eq!(partial.reused_skills, entries, "{what}: every skill");
            }
        }
    }
}

/// An agent with `skills` skills (most packaged, with resources and links, some with
/// warnings), a few files that are not skills, and a subagent with skills of its own.
fn big_agent(skills: usize) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let write = |rel: &str, text: &str| {
        let path = dir.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("agent.toml", "model = \"openai/gpt-4.1\"\n");
    write(
        "instructions.md",
        "You are {{ agent.name }}.\n{% for s in skills %}- {{ s.name }}\n{% endfor %}",
    );
    write("NOTES.md", "notes\n");
    for n in 0..skills {
        if n % 4 == 3 {
            write(
                &format!("skills/flat-{n:04}.md"),
                &format!("# Procedure {n}\n\nDo it carefully.\n"),
            );
            continue;
        }
        let skill = format!("skills/skill-{n:04}");
        let broken = if n % 10 == 0 {
            "\nSee [the missing part](references/missing.md).\n"
        } else {
            ""
        };
        let name = if n % 7 == 0 {
            format!("Skill Number {n}")
        } else {
            format!("skill-{n:04}")
        };
        write(
            &format!("{skill}/SKILL.md"),
            &format!(
                "---\nname: {name}\ndescription: Does task {n}.\nmetadata:\n  weight: 0.1\n  big: 1.7976931348623157e308\n  tiny: 2.638344616030823e-256\n  odd: 7.4e-323\n  third: 0.30000000000000004\n  n: {n}\n---\n# Skill {n}\n\nRead [the guide](references/guide.md) and [notes](../../NOTES.md).\n{broken}"
            ),
        );
        write(&format!("{skill}/references/guide.md"), "guide\n");
        write(&format!("{skill}/scripts/run.sh"), "echo hi\n");
    }
    write("skills/README.txt", "not a skill\n");
    write("subagents/helper/agent.toml", "description = \"Helps\"\n");
    write("subagents/helper/instructions.md", "Help.\n");
    for n in 0..40 {
        write(
            &format!("subagents/helper/skills/s-{n:02}/SKILL.md"),
            &format!("---\ndescription: Sub task {n}.\n---\nSee [x](x.md).\n"),
        );
        write(&format!("subagents/helper/skills/s-{n:02}/x.md"), "x\n");
    }
    std::fs::create_dir_all(dir.join(".eve")).unwrap();
    age(dir);
    tmp
}

#[test]
fn a_large_agent_rebuilds_only_what_changed_and_gives_the_cold_bytes() {
    let tmp = big_agent(160);
    let dir = tmp.path();
    let cold = build(dir);
    assert!(cold.manifest.is_some(), "{:?}", diagnostics(&cold));
    assert!(
        diagnostics(&cold)
            .iter()
            .any(|d| d.code == code::BROKEN_SKILL_LINK),
        "the generated agent has warnings: {:?}",
        diagnostics(&cold)
    );
    let entries = all_skill_entries(dir);
    assert!(build(dir).cached);

    // One skill edited: only it is read again.
    append(
        &dir.join("skills/skill-0005/SKILL.md"),
        "\nOne more step.\n",
    );
    age(dir);
    let edited = build(dir);
    assert_like_cold(dir, &edited, "one SKILL.md edited");
    assert_eq!(edited.reused_skills, entries - 1);
    assert!(build(dir).cached);

    // A resource added to one skill, a linked one removed from another.
    std::fs::write(dir.join("skills/skill-0001/references/new.md"), "new\n").unwrap();
    std::fs::remove_file(dir.join("skills/skill-0002/references/guide.md")).unwrap();
    age(dir);
    let resources = build(dir);
    assert_like_cold(dir, &resources, "resources changed");
    assert_eq!(resources.reused_skills, entries - 2);
    let skill = |build: &Build, name: &str| {
        build
            .manifest
            .as_ref()
            .unwrap()
            .skills
            .iter()
            .find(|s| s.name == name)
            .cloned()
            .unwrap()
    };
    assert!(
        skill(&resources, "skill-0001")
            .resources
            .contains(&"skills/skill-0001/references/new.md".to_string())
    );

    // A skill renamed, one in the subagent edited, the notes every skill links changed.
    std::fs::rename(dir.join("skills/skill-0009"), dir.join("skills/renamed")).unwrap();
    append(
        &dir.join("subagents/helper/skills/s-03/SKILL.md"),
        "\nMore.\n",
    );
    age(dir);
    let renamed = build(dir);
    assert_like_cold(dir, &renamed, "a skill renamed");
    assert_eq!(renamed.reused_skills, entries - 2);

    // The cache gone, or the manifest: the same bytes again.
    std::fs::remove_file(dir.join(".eve/manifest.json")).unwrap();
    let rebuilt = build(dir);
    assert_like_cold(dir, &rebuilt, "the manifest removed");
    assert_eq!(rebuilt.reused_skills, entries);
    std::fs::remove_file(dir.join(".eve/build-cache")).unwrap();
    let cold_again = build(dir);
    assert_like_cold(dir, &cold_again, "the cache removed");
    assert_eq!(cold_again.reused_skills, 0);
}

#[test]
fn a_build_is_the_same_on_one_thread_and_on_many() {
    let tmp = big_agent(120);
    let dir = tmp.path();
    let on = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let build = pool.install(|| compiler::compile(dir, &CATALOG));
        (bytes(&build), diagnostics(&build))
    };
    let one = on(1);
    assert!(!one.1.is_empty());
    for threads in [2, 4, 2, 8] {
        assert_eq!(on(threads), one, "{threads} threads");
    }
}

/// Rewrites the body of the cache in `dir` with `edit` and puts a checksum on it that
/// holds: what a cache damaged by someone who knows the format looks like.
fn forge_cache(dir: &Path, edit: impl Fn(&str) -> String) {
    use sha2::Digest as _;
    let path = dir.join(".eve/build-cache");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut parts = text.splitn(3, '\n');
    let (head, _, body) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let body = edit(body);
    let sum: String = sha2::Sha256::digest(body.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    std::fs::write(&path, format!("{head}\n{sum}\n{body}")).unwrap();
}

#[test]
fn a_hostile_cache_with_a_good_checksum_gives_a_correct_build_and_no_panic() {
    let tmp = big_agent(40);
    let dir = tmp.path();
    build(dir);
    append(&dir.join("skills/skill-0000/SKILL.md"), "\nx\n");
    age(dir);
    // Payloads that are not JSON, payloads of another unit, fingerprints that do not
    // parse, an unknown code in a diagnostic.
    let edits: [fn(&str) -> String; 6] = [
        |body| {
            body.lines()
                .map(|l| {
                    if l.starts_with("p ") {
                        "p {not json"
                    } else {
                        l
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        },
        |body| {
            let payloads: Vec<&str> = body.lines().filter(|l| l.starts_with("p ")).collect();
            let mut i = 0;
            body.lines()
                .map(|l| {
                    if l.starts_with("p ") {
                        i += 1;
                        payloads[i % payloads.len()]
                    } else {
                        l
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        },
        |body| body.replace("\"code\":\"W0", "\"code\":\"X9"),
        |body| body.replacen("\nF ", "\nF x", 3),
        |body| body.replace("\nu ", "\nu \u{1b}[2J"),
        |body| format!("{body}u dangling"),
    ];
    for (i, edit) in edits.iter().enumerate() {
        let before = std::fs::read_to_string(dir.join(".eve/build-cache")).unwrap();
        forge_cache(dir, edit);
        let forged = build(dir);
        assert_like_cold(dir, &forged, &format!("forgery {i}"));
        std::fs::write(dir.join(".eve/build-cache"), before).unwrap();
    }
}

#[cfg(unix)]
#[test]
fn a_link_on_the_way_to_a_resource_pointed_elsewhere_is_seen() {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("data.md"), "outside\n").unwrap();
    let tmp = agent();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("shared/inside")).unwrap();
    std::fs::write(dir.join("shared/inside/data.md"), "inside\n").unwrap();
    // `skills/plan/data` → `shared/data`, which leads outside the agent for now.
    std::os::unix::fs::symlink(outside.path(), dir.join("shared/data")).unwrap();
    std::os::unix::fs::symlink("../../shared/data", dir.join("skills/plan/data")).unwrap();
    age(dir);
    let first = build(dir);
    assert!(
        diagnostics(&first)
            .iter()
            .any(|d| d.code == code::RESOURCE_SKIPPED),
        "{:?}",
        diagnostics(&first)
    );
    // The link in the middle now leads inside: nothing in `skills/` changed.
    std::fs::remove_file(dir.join("shared/data")).unwrap();
    std::os::unix::fs::symlink("inside", dir.join("shared/data")).unwrap();
    age(dir);
    let after = build(dir);
    assert_like_cold(dir, &after, "the link retargeted");
    let plan = &after.manifest.as_ref().unwrap().skills[0];
    assert!(
        plan.resources
            .contains(&"skills/plan/data/data.md".to_string()),
        "{:?}",
        plan.resources
    );
}

#[test]
fn eve_build_after_an_edit_prints_what_a_cold_build_prints() {
    let tmp = big_agent(60);
    let dir = tmp.path();
    assert_eq!(run_in(dir, &["build"]).code, 0);
    append(&dir.join("skills/skill-0001/SKILL.md"), "\nMore.\n");
    age(dir);
    let partial = run_in(dir, &["build"]);
    std::fs::remove_file(dir.join(".eve/build-cache")).unwrap();
    let cold = run_in(dir, &["build"]);
    assert_eq!(partial.code, 0, "{}", partial.stderr);
    assert!(
        partial.stderr.contains("warning[W0406]"),
        "{}",
        partial.stderr
    );
    assert_eq!(
        common::mask_time(&partial.stderr),
        common::mask_time(&cold.stderr)
    );
}

#[cfg(unix)]
#[test]
fn writing_the_manifest_follows_no_planted_link() {
    let tmp = agent();
    let dir = tmp.path();
    let victim = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(victim.path(), "precious").unwrap();
    // The name the manifest's temporary file had: `.eve/.manifest.json.<pid>.tmp`.
    std::os::unix::fs::symlink(
        victim.path(),
        dir.join(format!(".eve/.manifest.json.{}.tmp", std::process::id())),
    )
    .unwrap();
    let built = build(dir);
    assert_eq!(std::fs::read_to_string(victim.path()).unwrap(), "precious");
    assert_eq!(
        std::fs::read(dir.join(".eve/manifest.json")).unwrap(),
        bytes(&built)
    );
    assert!(
        !std::fs::symlink_metadata(dir.join(".eve/manifest.json"))
            .unwrap()
            .is_symlink()
    );
}

#[test]
fn files_a_watcher_reported_are_read_again_whatever_their_metadata_says() {
    let tmp = big_agent(40);
    let dir = tmp.path();
    let cold = build(dir);
    let entries = all_skill_entries(dir);
    assert!(build(dir).cached);
    let after = compiler::build_after(
        dir,
        &CATALOG,
        eve::compiler::listing::Options::default(),
        &["skills/skill-0001/SKILL.md".to_string()],
    );
    assert!(
        !after.cached,
        "a reported change is never answered from the cache"
    );
    assert_eq!(after.reused_skills, entries - 1, "only the reported skill");
    assert_eq!(bytes(&after), bytes(&cold));
    assert_eq!(diagnostics(&after), diagnostics(&cold));
    // In a subagent's `skills/`: the paths are the top-level directory's.
    let after = compiler::build_after(
        dir,
        &CATALOG,
        eve::compiler::listing::Options::default(),
        &["subagents/helper/skills/s-03/SKILL.md".to_string()],
    );
    assert_eq!(
        after.reused_skills,
        entries - 1,
        "only the subagent's skill"
    );
    assert_eq!(bytes(&after), bytes(&cold));
    // Reported outside `skills/`: every skill is reused, the rest is compiled again.
    let after = compiler::build_after(
        dir,
        &CATALOG,
        eve::compiler::listing::Options::default(),
        &["agent.toml".to_string()],
    );
    assert!(!after.cached);
    assert_eq!(after.reused_skills, entries);
}

#[test]
fn one_build_after_an_edit_an_addition_a_removal_and_a_rename_gives_the_cold_bytes() {
    let tmp = big_agent(80);
    let dir = tmp.path();
    build(dir);
    let entries = all_skill_entries(dir);
    append(
        &dir.join("skills/skill-0005/SKILL.md"),
        "\nOne more step.\n",
    );
    std::fs::write(
        dir.join("skills/added.md"),
        "---\ndescription: Added since.\n---\nNew.\n",
    )
    .unwrap();
    std::fs::remove_file(dir.join("skills/flat-0003.md")).unwrap();
    std::fs::rename(dir.join("skills/skill-0009"), dir.join("skills/renamed")).unwrap();
    age(dir);
    let partial = build(dir);
    assert_like_cold(dir, &partial, "four changes at once");
    // The edited one and the renamed one are read again, the removed one is gone.
    assert_eq!(partial.reused_skills, entries - 3);
    assert_eq!(
        std::fs::read(dir.join(".eve/manifest.json")).unwrap(),
        bytes(&compiler::compile(dir, &CATALOG)),
        "what is on disk is what a cold build writes"
    );
    let names: Vec<String> = skills(&partial).into_iter().map(|(n, _)| n).collect();
    assert!(names.contains(&"added".to_string()), "{names:?}");
    assert!(!names.contains(&"flat-0003".to_string()), "{names:?}");
    assert!(build(dir).cached);
}

#[test]
fn a_truncated_cache_only_costs_a_full_build() {
    let tmp = big_agent(40);
    let dir = tmp.path();
    let cold = build(dir);
    let cache = dir.join(".eve/build-cache");
    let text = std::fs::read(&cache).unwrap();
    append(&dir.join("skills/skill-0001/SKILL.md"), "\nMore.\n");
    age(dir);
    let mut cuts = vec![0, 1, 20, text.len() / 3, text.len() / 2, text.len() - 1];
    // Cut at a line break, the way a half-copied file ends.
    cuts.push(
        text[..text.len() / 2]
            .iter()
            .rposition(|b| *b == b'\n')
            .unwrap()
            + 1,
    );
    for cut in cuts {
        std::fs::write(&cache, &text[..cut]).unwrap();
        let after = build(dir);
        assert_like_cold(dir, &after, &format!("cut at {cut}"));
        assert_eq!(
            after.reused_skills, 0,
            "cut at {cut}: nothing of it is used"
        );
    }
    std::fs::write(&cache, [0xff, 0xfe, 0x00, b'\n']).unwrap();
    assert_like_cold(dir, &build(dir), "not UTF-8");
    assert!(cold.manifest.is_some());
}

/// Puts a forged description in the cached unit of `skills/skill-0005` of `dir` (the
/// checksum made to hold), and edits `agent.toml`, so that the next build reuses units.
fn forge_skill(dir: &Path) {
    forge_cache(dir, |body| {
        body.replace("Does task 5.", "Forged by someone.")
    });
    append(&dir.join("agent.toml"), "\n# edited\n");
    age(dir);
}

fn assert_not_forged(dir: &Path, build: &Build, what: &str) {
    assert_like_cold(dir, build, what);
    assert!(
        !skills(build)
            .iter()
            .any(|(_, d)| d.contains("Forged by someone")),
        "{what}"
    );
}

#[cfg(unix)]
#[test]
fn a_cache_or_manifest_kept_outside_the_agent_directory_is_not_trusted() {
    use std::os::unix::fs::symlink;
    let outside = tempfile::tempdir().unwrap();
    let tmp = big_agent(20);
    let dir = tmp.path();
    build(dir);
    // `.eve/build-cache` a link to a (forged) cache elsewhere.
    let elsewhere = outside.path().join("cache");
    std::fs::rename(dir.join(".eve/build-cache"), &elsewhere).unwrap();
    symlink(&elsewhere, dir.join(".eve/build-cache")).unwrap();
    forge_skill(dir);
    let forged = std::fs::read(&elsewhere).unwrap();
    let after = build(dir);
    assert_not_forged(dir, &after, "a linked cache");
    assert_eq!(after.reused_skills, 0);
    assert_eq!(
        std::fs::read(&elsewhere).unwrap(),
        forged,
        "not written through"
    );
    assert!(
        !std::fs::symlink_metadata(dir.join(".eve/build-cache"))
            .unwrap()
            .is_symlink()
    );

    // `.eve/manifest.json` a link to a manifest elsewhere that says something else.
    assert!(build(dir).cached);
    let manifest = outside.path().join("manifest.json");
    let text = std::fs::read_to_string(dir.join(".eve/manifest.json")).unwrap();
    std::fs::write(
        &manifest,
        text.replace("Does task 5.", "Forged by someone."),
    )
    .unwrap();
    std::fs::remove_file(dir.join(".eve/manifest.json")).unwrap();
    symlink(&manifest, dir.join(".eve/manifest.json")).unwrap();
    let after = build(dir);
    assert!(!after.cached, "a linked manifest is no answer");
    assert_not_forged(dir, &after, "a linked manifest");

    // `.eve` itself a link to a folder elsewhere holding a (forged) cache.
    let state = outside.path().join("state");
    std::fs::rename(dir.join(".eve"), &state).unwrap();
    symlink(&state, dir.join(".eve")).unwrap();
    forge_skill(dir);
    let forged = std::fs::read(state.join("build-cache")).unwrap();
    let listed = || {
        let mut names: Vec<_> = std::fs::read_dir(&state)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let before = listed();
    let after = compiler::build(dir, &CATALOG, eve::compiler::listing::Options::default());
    assert_not_forged(dir, &after, "a linked .eve");
    assert_eq!(after.reused_skills, 0);
    assert_eq!(std::fs::read(state.join("build-cache")).unwrap(), forged);
    // Nor is the manifest written there: a linked `.eve` is an error.
    let refused = compiler::write_manifest(dir, after.manifest.as_ref().unwrap()).unwrap_err();
    assert!(
        format!("{refused:#}")
            .contains("is a symbolic link; eve keeps its state only in a real folder"),
        "{refused:#}"
    );
    assert_eq!(listed(), before);
}

#[test]
fn an_eve_dev_reload_gives_what_a_fresh_build_gives() {
    use std::io::{Read as _, Write as _};
    let tmp = big_agent(40);
    let dir = tmp.path();
    std::fs::write(dir.join("replies.yaml"), "- text: hi\n").unwrap();
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("eve"))
        .args(["dev", dir.to_str().unwrap()])
        .args(["--model", "scripted:replies.yaml", "--debounce", "50"])
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env_remove("EVE_MODEL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let sink = stderr.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = err.read(&mut buf) {
            if n == 0 {
                break;
            }
            let text = String::from_utf8_lossy(&buf[..n]).into_owned();
            sink.lock().unwrap().push_str(&text);
        }
    });
    let wait = |what: &str, done: &dyn Fn() -> bool| {
        let start = std::time::Instant::now();
        while !done() {
            assert!(
                start.elapsed() < Duration::from_secs(30),
                "timed out waiting for {what}:\n{}",
                stderr.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait("the start", &|| stderr.lock().unwrap().contains("eve dev:"));

    append(
        &dir.join("skills/skill-0005/SKILL.md"),
        "\nOne more step.\n",
    );
    std::fs::write(
        dir.join("skills/added.md"),
        "---\ndescription: Added since.\n---\nNew.\n",
    )
    .unwrap();
    std::fs::remove_file(dir.join("skills/flat-0003.md")).unwrap();
    std::fs::rename(dir.join("skills/skill-0009"), dir.join("skills/renamed")).unwrap();
    let fresh = bytes(&compiler::compile(dir, &CATALOG));
    wait("a reload to the fresh build's manifest", &|| {
        std::fs::read(dir.join(".eve/manifest.json")).is_ok_and(|m| m == fresh)
    });
    // eve dev writes the manifest, then says so: the line follows a moment later.
    wait("the reload's line", &|| {
        stderr.lock().unwrap().contains("↻ reloaded:")
    });
    writeln!(stdin, "/quit").unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // And what the reload left in the cache is what the next build starts from.
    let next = build(dir);
    assert_eq!(bytes(&next), fresh);
}

#[test]
fn refresh_builds_from_every_file_again() {
    let tmp = big_agent(20);
    let dir = tmp.path();
    let cold = build(dir);
    assert!(build(dir).cached);
    let refresh = eve::compiler::listing::Options {
        lister: None,
        refresh: true,
        ..Default::default()
    };
    let full = compiler::build(dir, &CATALOG, refresh);
    assert!(!full.cached);
    assert_eq!(full.reused_skills, 0, "no skill from the cache");
    assert_eq!(bytes(&full), bytes(&cold));
    assert_eq!(diagnostics(&full), diagnostics(&cold));
    // What it saw is recorded: the next build is a hit again.
    assert!(build(dir).cached);
}

#[test]
fn eve_run_answers_from_the_cache_only_while_nothing_changed() {
    let tmp = agent();
    let dir = tmp.path();
    std::fs::write(dir.join("replies.yaml"), "- text: One.\n- text: Two.\n").unwrap();
    age(dir);
    let log = dir.join("requests.jsonl");
    let run = |prompt: &str| {
        let out = common::eve()
            .current_dir(dir)
            .env("EVE_SCRIPTED_LOG", &log)
            .args(["run", ".", "--model", "scripted:replies.yaml", prompt])
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    let system = |n: usize| -> String {
        let text = std::fs::read_to_string(&log).unwrap();
        let request: serde_json::Value =
            serde_json::from_str(text.lines().nth(n).unwrap()).unwrap();
        request["system"].as_str().unwrap_or_default().to_string() + &request.to_string()
    };
    run("first");
    assert!(system(0).contains("You help."));
    // An edit between runs (older than the racy window, as an editor's save minutes
    // ago would be): the second run must see it, not the cached manifest.
    std::fs::write(dir.join("instructions.md"), "You help, in French.\n").unwrap();
    age(dir);
    run("second");
    assert!(system(1).contains("You help, in French."), "{}", system(1));
}
