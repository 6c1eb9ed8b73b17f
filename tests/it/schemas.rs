//! The JSON Schemas of `eve schema`: the committed ones are the generated ones, every
//! fixture agent's files validate, and the schemas refuse exactly the keys `eve build`
//! calls unknown (E0003).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{eve, fixtures};
use eve::compiler::schema::Schema;
use eve::tools::builtin::CATALOG;
use pretty_assertions::assert_eq;
use serde_json::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_committed_schemas_are_the_generated_ones() {
    let dir = repo().join("schemas");
    let hint = "the schemas changed: run `cargo run -- schema --write schemas` and commit them";
    let mut expected = BTreeSet::new();
    for schema in Schema::all(&CATALOG) {
        let file = schema.file();
        let committed = fs::read_to_string(dir.join(&file)).unwrap_or_default();
        assert!(committed == schema.text(), "{file}: {hint}");
        expected.insert(file);
    }
    let present: BTreeSet<String> = walkdir::WalkDir::new(&dir)
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_type().is_file())
        .map(|e| slash(e.path().strip_prefix(&dir).unwrap()))
        .collect();
    assert_eq!(
        present, expected,
        "{hint}; delete the files under schemas/ that it does not write"
    );
}

#[test]
fn every_schema_is_a_valid_draft_07_schema() {
    for schema in Schema::all(&CATALOG) {
        let json = schema.json();
        assert_eq!(json["$schema"], "http://json-schema.org/draft-07/schema#");
        jsonschema::meta::validate(&json).unwrap_or_else(|e| panic!("{}: {e}", schema.file()));
        jsonschema::validator_for(&json).unwrap();
    }
}

/// Every property of every schema has a description.
#[test]
fn every_property_has_a_description() {
    fn check(value: &Value, at: &str, missing: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::Object(properties)) = map.get("properties") {
                    for (name, property) in properties {
                        let described = property.get("description").is_some_and(Value::is_string);
                        // `false`: a key refused in this kind of file (described at the top).
                        if !described && property != &Value::Bool(false) {
                            missing.push(format!("{at}/{name}"));
                        }
                    }
                }
                for (key, inner) in map {
                    check(inner, &format!("{at}/{key}"), missing);
                }
            }
            Value::Array(items) => items.iter().for_each(|v| check(v, at, missing)),
            _ => {}
        }
    }
    let mut missing = Vec::new();
    for schema in Schema::all(&CATALOG) {
        check(&schema.json(), &schema.file(), &mut missing);
    }
    // `then`/`else` branches and `if` conditions name keys without describing them.
    missing.retain(|m| !m.contains("/if/") && !m.contains("/then/") && !m.contains("/else/"));
    assert_eq!(missing, Vec::<String>::new());
}

fn slash(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// A file of an agent directory that has a schema: its path from the top agent
/// directory, its schema and its content as JSON.
struct File {
    shown: String,
    schema: Schema,
    json: Value,
}

/// Every file of the agent directory at `dir` (and its subagents) that has a schema.
fn files(dir: &Path) -> Vec<File> {
    fn collect(top: &Path, dir: &Path, out: &mut Vec<File>) {
        let connections: Vec<String> = fs::read_dir(dir.join("connections"))
            .into_iter()
            .flatten()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter_map(|n| n.strip_suffix(".toml").map(str::to_string))
            .collect();
        let names: Vec<&str> = connections.iter().map(String::as_str).collect();
        let entries = walkdir::WalkDir::new(dir)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| {
                let name = e.file_name().to_string_lossy();
                e.depth() == 0 || !(name == ".eve" || name == "subagents" && e.depth() == 1)
            });
        for entry in entries {
            let entry = entry.unwrap();
            if !entry.file_type().is_file() {
                continue;
            }
            let path = slash(entry.path().strip_prefix(dir).unwrap());
            let Some(schema) = Schema::for_file(&path, &CATALOG, &names) else {
                continue;
            };
            // Only the top agent's eval cases are read.
            if matches!(schema, Schema::Eval) && dir != top {
                continue;
            }
            // A skill may hold a stray byte that is not UTF-8 (W0415).
            let text = String::from_utf8_lossy(&fs::read(entry.path()).unwrap()).into_owned();
            let Some(json) = as_json(&schema, &text) else {
                continue;
            };
            out.push(File {
                shown: slash(entry.path().strip_prefix(top).unwrap()),
                schema,
                json,
            });
        }
        for sub in fs::read_dir(dir.join("subagents")).into_iter().flatten() {
            let sub = sub.unwrap().path();
            if sub.is_dir() {
                collect(top, &sub, out);
            }
        }
    }
    let mut out = Vec::new();
    collect(dir, dir, &mut out);
    out
}

/// A file as the JSON its schema describes; `None` when it cannot be parsed (the build
/// reports that).
fn as_json(schema: &Schema, text: &str) -> Option<Value> {
    if matches!(schema, Schema::Skill) {
        let text = text.trim_start_matches('\u{feff}');
        let Some(rest) = text.strip_prefix("---\n").or(text.strip_prefix("---\r\n")) else {
            return Some(serde_json::json!({}));
        };
        let end = rest
            .lines()
            .position(|l| matches!(l.trim_end(), "---" | "..."))?;
        let yaml: String = rest.lines().take(end).map(|l| format!("{l}\n")).collect();
        let value: serde_yaml::Value = serde_yaml::from_str(&yaml).ok()?;
        return match serde_json::to_value(value).ok()? {
            Value::Null => Some(serde_json::json!({})),
            other => Some(other),
        };
    }
    let doc: toml_edit::DocumentMut = text.parse().ok()?;
    Some(eve::compiler::toml_reader::to_json(doc.as_item()))
}

/// What the schema finds wrong with a file: each error's JSON pointer and message, and
/// the keys it refuses as unknown, as dotted paths like the compiler's.
fn check(file: &File) -> (Vec<String>, BTreeSet<String>) {
    let validator = jsonschema::validator_for(&file.schema.json()).unwrap();
    let mut errors = Vec::new();
    let mut unknown = BTreeSet::new();
    for error in validator.iter_errors(&file.json) {
        let pointer = error.instance_path().to_string();
        errors.push(format!("{pointer}: {error}"));
        let dotted = dotted(&pointer);
        match error.kind() {
            jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                for key in unexpected {
                    unknown.insert(join(&dotted, key));
                }
            }
            jsonschema::error::ValidationErrorKind::FalseSchema => {
                unknown.insert(dotted);
            }
            _ => {}
        }
    }
    (errors, unknown)
}

/// A JSON pointer as the compiler writes a key's path: `limits.max_steps`, `turn[1].send`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for segment in pointer.split('/').skip(1) {
        match segment.parse::<usize>() {
            Ok(n) => out.push_str(&format!("[{}]", n + 1)),
            Err(_) => out = join(&out, segment),
        }
    }
    out
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn agent_dirs(parent: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(parent)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("agent.toml").is_file())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_file_of_every_valid_agent_validates() {
    let mut dirs = agent_dirs(&fixtures().join("valid"));
    dirs.extend(agent_dirs(&fixtures().join("evals")));
    dirs.push(repo().join("example-agent"));
    let mut problems = Vec::new();
    let mut checked = BTreeSet::new();
    for dir in dirs {
        for file in files(&dir) {
            checked.insert(file.schema.file());
            for error in check(&file).0 {
                problems.push(format!("{}/{}: {error}", dir.display(), file.shown));
            }
        }
    }
    assert_eq!(problems, Vec::<String>::new());
    // Every kind of file is among them.
    for kind in [
        "agent.json",
        "tool.json",
        "tools/bash.json",
        "connection-tool.json",
        "connection.json",
        "eval.json",
        "skill.json",
    ] {
        assert!(
            checked.contains(kind),
            "no valid fixture has a file for {kind}"
        );
    }
}

/// Keys refused as unknown: each the file's path and the key's dotted path.
type Keys = BTreeSet<(String, String)>;

/// The keys `eve build` reports as unknown in the agent at `dir` (E0003, and E0211 for
/// a built-in's settings), and the keys the schemas refuse as unknown.
fn unknown_keys(dir: &Path) -> (Keys, Keys) {
    let build = eve::compiler::compile(dir, &CATALOG);
    let mut by_build = BTreeSet::new();
    for d in build.diagnostics.iter() {
        let quoted: Vec<&str> = d.message.split('`').skip(1).step_by(2).collect();
        let key = match d.code {
            "E0003" => quoted[0].to_string(),
            "E0211" => format!("settings.{}", quoted[1]),
            _ => continue,
        };
        by_build.insert((d.file.clone().unwrap(), key));
    }
    let mut by_schema = BTreeSet::new();
    for file in files(dir) {
        for key in check(&file).1 {
            by_schema.insert((file.shown.clone(), key));
        }
    }
    (by_build, by_schema)
}

/// Over every invalid fixture, the keys the schema refuses as unknown are exactly the
/// keys `eve build` reports as unknown, file by file.
#[test]
fn the_schemas_refuse_the_keys_the_build_calls_unknown() {
    let mut compared = 0;
    let mut differences = Vec::new();
    for dir in agent_dirs(&fixtures().join("invalid")) {
        let (by_build, by_schema) = unknown_keys(&dir);
        compared += by_build.len();
        if by_schema != by_build {
            differences.push(format!(
                "{}: the schema refuses {by_schema:?}, the build {by_build:?}",
                dir.display()
            ));
        }
    }
    assert_eq!(differences, Vec::<String>::new());
    assert!(
        compared >= 8,
        "the invalid fixtures hold unknown keys: {compared}"
    );
}

/// One misspelled key in each kind of file, at the top and in nested tables: the build
/// and the schema both refuse it, and name the same key. A skill's unknown frontmatter
/// field is refused by neither.
#[test]
fn each_kind_of_file_refuses_a_misspelled_key_where_the_build_does() {
    const AGENT: &str = "name = \"typo\"\nmodel = \"anthropic/claude-sonnet-4-5\"\n";
    let cases: &[(&str, &str, Option<&str>)] = &[
        (
            "agent.toml",
            "[workspace]\nrot = \".\"\n",
            Some("workspace.rot"),
        ),
        ("tools/bash.toml", "timeout_sec = 5\n", Some("timeout_sec")),
        (
            "tools/web_fetch.toml",
            "[settings]\nallow_privat = true\n",
            Some("settings.allow_privat"),
        ),
        (
            "tools/lookup.toml",
            "description = \"Looks a word up\"\n[input_schema]\ntype = \"object\"\n[http]\nurl = \"https://example.com/\"\nmetod = \"GET\"\n",
            Some("http.metod"),
        ),
        (
            "tools/lister.toml",
            "description = \"Lists\"\ncomand = [\"ls\"]\n[input_schema]\ntype = \"object\"\n",
            Some("comand"),
        ),
        (
            "connections/files.toml",
            "command = [\"true\"]\nstartup_timeout = 5\n",
            Some("startup_timeout"),
        ),
        (
            "connections/files.toml",
            "command = [\"true\"]\n[tools]\naproval = \"always\"\n",
            Some("tools.aproval"),
        ),
        (
            "tools/files__read.toml",
            "aproval = \"always\"\n",
            Some("aproval"),
        ),
        (
            "evals/turns.toml",
            "[[turn]]\nsend = \"hi\"\n[[turn]]\nsned = \"again\"\n",
            Some("turn[2].sned"),
        ),
        (
            "evals/call.toml",
            "prompt = \"hi\"\n[[reply]]\ntool_calls = [{ name = \"glob\", inptu = {} }]\n",
            Some("reply[1].tool_calls[1].inptu"),
        ),
        (
            "evals/case.toml",
            "prompt = \"hi\"\n[[reply]]\ntext = \"ok\"\n[expect]\nreply_contain = \"ok\"\n",
            Some("expect.reply_contain"),
        ),
        (
            "skills/notes.md",
            "---\nname: notes\ndescription: Takes notes\ncolour: red\nallowed-tools: Read\n---\nTake notes.\n",
            None,
        ),
    ];
    let mut problems = Vec::new();
    for (file, text, key) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("typo");
        fs::create_dir_all(dir.join(file).parent().unwrap()).unwrap();
        fs::write(dir.join("agent.toml"), AGENT).unwrap();
        fs::write(dir.join("instructions.md"), "You help.\n").unwrap();
        if file.starts_with("tools/files__") {
            fs::create_dir_all(dir.join("connections")).unwrap();
            fs::write(dir.join("connections/files.toml"), "command = [\"true\"]\n").unwrap();
        }
        if *file == "agent.toml" {
            fs::write(dir.join(file), format!("{AGENT}{text}")).unwrap();
        } else {
            fs::write(dir.join(file), text).unwrap();
        }
        let expected: Keys = key
            .iter()
            .map(|k| (file.to_string(), k.to_string()))
            .collect();
        let (by_build, by_schema) = unknown_keys(&dir);
        if by_build != expected || by_schema != expected {
            problems.push(format!(
                "{file}: expected {expected:?}, the build refuses {by_build:?}, the schema {by_schema:?}"
            ));
        }
        // The file has a schema, so the comparison is not vacuous.
        assert!(
            files(&dir).iter().any(|f| f.shown == *file),
            "{file} has no schema"
        );
    }
    assert_eq!(problems, Vec::<String>::new());
}

#[test]
fn eve_schema_prints_one_schema_and_refuses_an_unknown_kind() {
    let out = eve().args(["schema", "agent"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        fs::read_to_string(repo().join("schemas/agent.json")).unwrap()
    );
    let out = eve().args(["schema", "tool", "bash"]).output().unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        fs::read_to_string(repo().join("schemas/tools/bash.json")).unwrap()
    );

    let out = eve().args(["schema", "hook"]).output().unwrap();
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        fs::read_to_string(repo().join("schemas/hook.json")).unwrap()
    );

    let bad = eve().args(["schema", "agnet"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8(bad.stderr).unwrap();
    assert!(
        stderr.contains(
            "[possible values: agent, tool, connection-tool, connection, eval, skill, hook]"
        ),
        "{stderr}"
    );
    assert!(
        stderr.contains("a similar value exists: 'agent'"),
        "{stderr}"
    );
    assert!(bad.stdout.is_empty());
    let bad = eve().args(["schema", "tool", "gerp"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8(bad.stderr).unwrap();
    assert!(stderr.contains("`gerp` is not a built-in tool"), "{stderr}");
    assert!(stderr.contains("bash, read_file"), "{stderr}");
    assert!(stderr.contains("did you mean `grep`?"), "{stderr}");
    let bad = eve().args(["schema", "tool", "zzzzzz"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8(bad.stderr).unwrap();
    assert!(
        stderr.contains("without a name, `eve schema tool` prints the schema of a new tool"),
        "{stderr}"
    );
    let bad = eve().args(["schema", "agent", "bash"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn eve_schema_write_writes_every_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("schemas");
    let out = eve()
        .args(["schema", "--write"])
        .arg(&dir)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    for schema in Schema::all(&CATALOG) {
        let file = schema.file();
        assert_eq!(
            fs::read_to_string(dir.join(&file)).unwrap(),
            fs::read_to_string(repo().join("schemas").join(&file)).unwrap(),
            "{file}"
        );
    }
}
