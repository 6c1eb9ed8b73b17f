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
