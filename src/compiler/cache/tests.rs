//! Unit tests of `compiler/cache.rs`.

#![allow(clippy::unwrap_used)]

use super::*;

fn old(file: &Path) {
    let old = std::time::SystemTime::now() - std::time::Duration::from_secs(10);
    std::fs::File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_modified(old)
        .unwrap();
}

fn outcome(diags: &Diagnostics) -> Option<Finished<'_>> {
    Some(Finished {
        inputs_hash: "sha256:abc",
        diagnostics: diags,
        eval_cases: 2,
    })
}

#[test]
fn a_damaged_or_foreign_cache_is_no_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("f");
    std::fs::write(&file, "x").unwrap();
    old(&file);
    let seen = Arc::new(Seen::default());
    assert!(recording(&seen, || is_file(&file)));
    let mut diags = Diagnostics::default();
    diags.push(Diagnostic::warning(
        super::super::diagnostic::code::NOT_A_SKILL,
        "w",
    ));
    store(tmp.path(), &seen, "a /x", outcome(&diags));
    let hit = check(tmp.path(), "a /x", &[]).hit.unwrap();
    assert_eq!(hit.inputs_hash, "sha256:abc");
    assert_eq!(hit.eval_cases, 2);
    assert_eq!(hit.diagnostics.iter().count(), 1);
    assert!(
        check(tmp.path(), "a /y", &[]).hit.is_none(),
        "another directory"
    );

    let cache = path(tmp.path());
    let text = std::fs::read_to_string(&cache).unwrap();
    std::fs::write(
        &cache,
        text.replace("inputs sha256:abc", "inputs sha256:abd"),
    )
    .unwrap();
    assert!(
        check(tmp.path(), "a /x", &[]).hit.is_none(),
        "a bad checksum"
    );
    std::fs::write(&cache, text.replacen(env!("CARGO_PKG_VERSION"), "0.0.0", 1)).unwrap();
    assert!(
        check(tmp.path(), "a /x", &[]).hit.is_none(),
        "another version"
    );
    std::fs::write(&cache, &text).unwrap();
    assert!(check(tmp.path(), "a /x", &[]).hit.is_some());
    std::fs::write(&file, "y").unwrap();
    assert!(
        check(tmp.path(), "a /x", &[]).hit.is_none(),
        "a changed file"
    );
}

#[test]
fn an_entry_changed_just_before_its_build_started_is_not_trusted() {
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("f");
    std::fs::write(&file, "x").unwrap();
    let seen = Arc::new(Seen::default());
    assert!(recording(&seen, || is_file(&file)));
    store(tmp.path(), &seen, "a", outcome(&Diagnostics::default()));
    assert!(check(tmp.path(), "a", &[]).hit.is_none());
}

#[cfg(unix)]
#[test]
fn a_permission_change_is_a_change() {
    use std::os::unix::fs::PermissionsExt;
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("f");
    std::fs::write(&file, "x").unwrap();
    old(&file);
    let seen = Arc::new(Seen::default());
    assert!(recording(&seen, || is_file(&file)));
    store(tmp.path(), &seen, "a", outcome(&Diagnostics::default()));
    assert!(check(tmp.path(), "a", &[]).hit.is_some());
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    assert!(check(tmp.path(), "a", &[]).hit.is_none());
}

#[test]
fn units_are_reused_one_by_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    std::fs::write(&a, "a").unwrap();
    std::fs::write(&b, "b").unwrap();
    old(&a);
    old(&b);
    let seen = Arc::new(Seen::default());
    recording(&seen, || {
        for (key, file) in [("skills/a", &a), ("skills/b", &b)] {
            unit(key, || is_file(file), |_| Some(format!("payload of {key}")));
        }
    });
    store(tmp.path(), &seen, "a", None);
    let verdict = check(tmp.path(), "a", &[]);
    assert!(
        verdict.hit.is_none(),
        "a build without an outcome never answers"
    );
    assert_eq!(verdict.reuse.len(), 2);
    let touched = check(tmp.path(), "a", &["skills/a/SKILL.md".to_string()]);
    assert_eq!(touched.reuse.len(), 1, "skills/a was reported changed");
    assert!(touched.reuse.0.contains_key("skills/b"));

    std::fs::write(&b, "bb").unwrap();
    let verdict = check(tmp.path(), "a", &[]);
    assert_eq!(verdict.reuse.len(), 1);
    let again = Arc::new(Seen::reusing(verdict.reuse));
    recording(&again, || {
        assert_eq!(
            reuse("skills/a", |p| Some(p.to_string())).as_deref(),
            Some("payload of skills/a")
        );
        assert_eq!(reuse("skills/b", |p| Some(p.to_string())), None);
        assert_eq!(
            reuse("skills/a", |_| None::<()>),
            None,
            "an unreadable payload"
        );
    });
    assert_eq!(again.reused(), 1);
}

#[cfg(unix)]
#[test]
fn a_fifo_in_place_of_the_cache_is_no_cache_and_no_hang() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::create_dir(tmp.path().join(".eve")).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path(tmp.path()),
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .unwrap();
    let verdict = check(tmp.path(), "a", &[]);
    assert!(verdict.hit.is_none() && verdict.reuse.is_empty());
}

#[test]
fn a_path_recorded_twice_is_judged_by_what_it_is_now_in_both_places() {
    let tmp = tempfile::tempdir().unwrap();
    let files: Vec<PathBuf> = (0..PARALLEL_FROM)
        .map(|i| tmp.path().join(format!("f{i}")))
        .collect();
    for file in &files {
        std::fs::write(file, "x").unwrap();
        old(file);
    }
    let texts: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let entry = |i: usize| Entry {
        path: &texts[i],
        fingerprint: Fingerprint::now(&files[i]),
    };
    // Every path, then the first ten again (as a unit repeats its skill's folder).
    let entries: Vec<Entry<'_>> = (0..PARALLEL_FROM).chain(0..10).map(entry).collect();
    let started = now_ns();
    assert!(freshness(tmp.path(), &entries, started).iter().all(|f| *f));
    std::fs::write(&files[3], "longer").unwrap();
    old(&files[3]);
    let fresh = freshness(tmp.path(), &entries, started);
    let stale: Vec<usize> = (0..fresh.len()).filter(|&i| !fresh[i]).collect();
    assert_eq!(stale, vec![3, PARALLEL_FROM + 3]);
}

#[cfg(unix)]
#[test]
fn a_path_looked_at_from_the_agent_directory_is_what_its_full_path_names() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("agent");
    std::fs::create_dir_all(dir.join("skills/x")).unwrap();
    std::fs::write(dir.join("skills/x/SKILL.md"), "body").unwrap();
    std::os::unix::fs::symlink("x", dir.join("skills/y")).unwrap();
    let looker = Looker::new(&dir);
    for rel in [
        "skills",
        "skills/x",
        "skills/x/SKILL.md",
        "skills/y",
        "skills/x/../x/SKILL.md",
        "missing",
    ] {
        let path = dir.join(rel);
        assert_eq!(
            looker.look(&path.display().to_string()),
            Fingerprint::now(&path),
            "{rel}"
        );
    }
    // A path outside the directory is looked at whole.
    let outside = tmp.path().join("outside");
    std::fs::write(&outside, "o").unwrap();
    assert_eq!(
        looker.look(&outside.display().to_string()),
        Fingerprint::now(&outside)
    );
    assert!(looker.look(&outside.display().to_string()).is_some());
}

/// A cache of one unit and one path of the build's own, stored in `dir`.
fn stored(dir: &Path) -> String {
    let (a, b) = (dir.join("a"), dir.join("b"));
    std::fs::write(&a, "a").unwrap();
    std::fs::write(&b, "b").unwrap();
    old(&a);
    old(&b);
    let seen = Arc::new(Seen::default());
    recording(&seen, || {
        is_file(&a);
        unit("skills/b", || is_file(&b), |_| Some("payload".to_string()));
    });
    store(dir, &seen, "a", outcome(&Diagnostics::default()));
    let verdict = check(dir, "a", &[]);
    // A hit compiles nothing, so it hands out no units.
    assert!(verdict.hit.is_some() && verdict.reuse.is_empty());
    // A change elsewhere (as a watcher reports one) is no hit: the unit is reused.
    let verdict = check(dir, "a", &["agent.toml".to_string()]);
    assert!(verdict.hit.is_none() && verdict.reuse.len() == 1);
    std::fs::read_to_string(path(dir)).unwrap()
}

#[test]
fn a_truncated_cache_is_no_cache() {
    let tmp = tempfile::tempdir().unwrap();
    let text = stored(tmp.path());
    for cut in 0..text.len() {
        std::fs::write(path(tmp.path()), &text.as_bytes()[..cut]).unwrap();
        let verdict = check(tmp.path(), "a", &[]);
        assert!(
            verdict.hit.is_none() && verdict.reuse.is_empty(),
            "cut at {cut}"
        );
    }
}

#[test]
fn a_unit_without_paths_is_never_reused() {
    let tmp = tempfile::tempdir().unwrap();
    let text = stored(tmp.path());
    // Its path records cut off, under a checksum that holds.
    let (head, rest) = text.split_once('\n').unwrap();
    let (_, body) = rest.split_once('\n').unwrap();
    let body = format!("{}\n", &body[..body.find("\np payload\n").unwrap() + 10]);
    let sum = crate::text::hex(&Sha256::digest(body.as_bytes()));
    std::fs::write(path(tmp.path()), format!("{head}\n{sum}\n{body}")).unwrap();
    let verdict = check(tmp.path(), "a", &[]);
    assert!(verdict.reuse.is_empty(), "{body}");
}

#[cfg(unix)]
#[test]
fn a_cache_reached_through_a_link_is_neither_read_nor_written() {
    let tmp = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let text = stored(tmp.path());
    // `.eve/build-cache` a link to a cache kept elsewhere.
    let elsewhere = outside.path().join("cache");
    std::fs::write(&elsewhere, &text).unwrap();
    std::fs::remove_file(path(tmp.path())).unwrap();
    std::os::unix::fs::symlink(&elsewhere, path(tmp.path())).unwrap();
    let verdict = check(tmp.path(), "a", &[]);
    assert!(verdict.hit.is_none() && verdict.reuse.is_empty());
    store(tmp.path(), &Seen::default(), "a", None);
    assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), text);
    assert!(
        !std::fs::symlink_metadata(path(tmp.path()))
            .unwrap()
            .is_symlink()
    );

    // `.eve` itself a link to a folder elsewhere holding a good cache.
    let eve = tmp.path().join(".eve");
    std::fs::remove_dir_all(&eve).unwrap();
    let state = outside.path().join("state");
    std::fs::create_dir(&state).unwrap();
    std::fs::write(state.join(FILE), &text).unwrap();
    std::os::unix::fs::symlink(&state, &eve).unwrap();
    let verdict = check(tmp.path(), "a", &[]);
    assert!(verdict.hit.is_none() && verdict.reuse.is_empty());
    store(tmp.path(), &Seen::default(), "a", None);
    assert_eq!(std::fs::read_to_string(state.join(FILE)).unwrap(), text);
    assert_eq!(
        std::fs::read_dir(&state).unwrap().count(),
        1,
        "nothing written there"
    );
}

#[cfg(unix)]
#[test]
fn writing_the_cache_follows_no_planted_link() {
    let tmp = tempfile::tempdir().unwrap();
    let eve = tmp.path().join(".eve");
    std::fs::create_dir(&eve).unwrap();
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    for name in ["build-cache.tmp", ".build-cache.tmp"] {
        std::os::unix::fs::symlink(&victim, eve.join(name)).unwrap();
    }
    store(tmp.path(), &Seen::default(), "a", None);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    assert!(
        std::fs::read_to_string(path(tmp.path()))
            .unwrap()
            .starts_with(MAGIC)
    );
}
