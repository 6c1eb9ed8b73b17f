//! The shapes against the readers: every key a shape declares is read, with the type
//! and values it declares and the default it states; every key is documented.

use std::collections::BTreeMap;
use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{DefaultValue, Key, Kind, Table};
use crate::catalog::SettingKind;
use crate::compiler::diagnostic::Diagnostics;
use crate::compiler::inputs::{AgentToml, Loaded, SkillFile};
use crate::compiler::{config, connections, evals, skills, tools};
use crate::manifest::Manifest;
use crate::tools::builtin::CATALOG;

/// A kind of file, with the documents its keys are tried in.
#[derive(Clone)]
struct FileKind {
    name: &'static str,
    path: &'static str,
    root: &'static Table,
    /// Documents the key under test is added to. A key counts as read when, in one of
    /// them, a value of the wrong type changes what the build reports.
    bases: Vec<Value>,
}

fn kinds() -> Vec<FileKind> {
    vec![
        FileKind {
            name: "agent",
            path: "agent.toml",
            root: &super::agent::AGENT,
            bases: vec![json!({ "model": "openai/x" })],
        },
        FileKind {
            name: "override",
            path: "tools/bash.toml",
            root: &super::tool::OVERRIDE,
            bases: vec![json!({})],
        },
        FileKind {
            name: "new tool",
            path: "tools/lookup.toml",
            root: &super::tool::NEW,
            bases: vec![
                json!({ "description": "d", "command": ["true"], "input_schema": { "type": "object" } }),
                json!({ "description": "d", "http": { "url": "http://127.0.0.1/" }, "input_schema": { "type": "object" } }),
            ],
        },
        FileKind {
            name: "connection tool",
            path: "tools/fs__read.toml",
            root: &super::tool::CONNECTION_TOOL,
            bases: vec![json!({})],
        },
        FileKind {
            name: "connection",
            path: "connections/fs.toml",
            root: &super::connection::CONNECTION,
            bases: vec![
                json!({ "command": ["true"] }),
                json!({ "url": "http://127.0.0.1/mcp" }),
            ],
        },
        FileKind {
            name: "hook",
            path: "hooks/guard.toml",
            root: &super::hook::HOOK,
            bases: vec![json!({ "event": "before_tool", "command": ["true"] })],
        },
        FileKind {
            name: "eval",
            path: "evals/case.toml",
            root: &super::eval::CASE,
            bases: vec![
                json!({ "prompt": "p" }),
                json!({}),
                json!({ "prompt": "p", "reply": [{ "tool_calls": [{ "name": "read_file" }] }] }),
            ],
        },
        FileKind {
            name: "skill",
            path: "skills/s.md",
            root: &super::skill::FRONTMATTER,
            bases: vec![json!({})],
        },
    ]
}

/// One step into a document: a key, or the first item of an array.
#[derive(Debug, Clone)]
enum Step {
    Key(&'static str),
    Name,
    First,
}

/// Every key below `table`, with the steps to it.
fn walk(table: &'static Table, at: Vec<Step>, out: &mut Vec<(Vec<Step>, &'static Key)>) {
    for key in table.keys {
        let mut path = at.clone();
        path.push(Step::Key(key.name));
        out.push((path.clone(), key));
        let mut kind = &key.kind;
        let mut inner = path;
        loop {
            match kind {
                Kind::Table(t) => break walk(t, inner, out),
                Kind::Tables(t) => {
                    inner.push(Step::First);
                    break walk(t, inner, out);
                }
                Kind::Map { values, .. } => {
                    inner.push(Step::Name);
                    kind = values;
                }
                Kind::Array(item) => {
                    inner.push(Step::First);
                    kind = item;
                }
                Kind::OneOf(kinds) => match kinds.iter().find(|k| matches!(k, Kind::Table(_))) {
                    Some(table) => kind = table,
                    None => break,
                },
                _ => break,
            }
        }
    }
}

/// A value the reader takes as the right type, and one of a wrong type; `None` for a
/// key that takes anything.
fn values(kind: &Kind) -> Option<(Value, Value)> {
    let wrong_number = json!("x");
    Some(match kind {
        Kind::Str(_) | Kind::StringOrStrings => (json!("x"), json!(1)),
        Kind::Enum(v) | Kind::EnumAnyCase(v) => (json!(v[0]), json!(1)),
        Kind::Bool => (json!(false), wrong_number),
        Kind::True => (json!(true), wrong_number),
        Kind::PositiveInt | Kind::Count => (json!(1), wrong_number),
        Kind::IntRange { min, .. } => (json!(min), wrong_number),
        Kind::Number { .. } => (json!(0.5), wrong_number),
        Kind::Strings(_) => (json!(["x"]), json!(1)),
        Kind::EnumList(v) => (json!([v[0]]), json!(1)),
        Kind::Table(_) | Kind::Map { .. } | Kind::AnyTable | Kind::Settings => {
            (json!({}), json!(1))
        }
        Kind::Tables(_) | Kind::Array(_) => (json!([]), json!(1)),
        Kind::OneOf(kinds) => (values(&kinds[0])?.0, json!(1)),
        Kind::JsonSchema { .. } => (json!({ "type": "object" }), json!(1)),
        Kind::Any => return None,
    })
}

/// `base` with `value` put at the end of `path`, making the tables and arrays on the way.
fn with(base: &Value, path: &[Step], value: Value) -> Value {
    fn put(at: &mut Value, path: &[Step], value: Value) {
        let Some((step, rest)) = path.split_first() else {
            *at = value;
            return;
        };
        match step {
            Step::Key(key) => {
                if !at.is_object() {
                    *at = json!({});
                }
                let slot = at
                    .as_object_mut()
                    .unwrap()
                    .entry(*key)
                    .or_insert(Value::Null);
                put(slot, rest, value);
            }
            Step::Name => {
                if !at.is_object() {
                    *at = json!({});
                }
                let slot = at
                    .as_object_mut()
                    .unwrap()
                    .entry("x")
                    .or_insert(Value::Null);
                put(slot, rest, value);
            }
            Step::First => {
                if !at.is_array() || at.as_array().unwrap().is_empty() {
                    *at = json!([{}]);
                }
                put(&mut at.as_array_mut().unwrap()[0], rest, value);
            }
        }
    }
    let mut doc = base.clone();
    put(&mut doc, path, value);
    doc
}

/// A JSON object as TOML: tables at the top, everything in arrays inline.
fn toml_text(json: &Value) -> String {
    fn value(v: &Value) -> toml_edit::Value {
        match v {
            Value::String(s) => s.as_str().into(),
            Value::Bool(b) => (*b).into(),
            Value::Number(n) => match n.as_i64() {
                Some(i) => i.into(),
                None => n.as_f64().unwrap().into(),
            },
            Value::Array(items) => items.iter().map(value).collect::<toml_edit::Array>().into(),
            Value::Object(map) => {
                let mut table = toml_edit::InlineTable::new();
                for (k, v) in map {
                    table.insert(k, value(v));
                }
                table.into()
            }
            Value::Null => unreachable!("no nulls in test documents"),
        }
    }
    fn table(map: &serde_json::Map<String, Value>) -> toml_edit::Table {
        let mut out = toml_edit::Table::new();
        for (k, v) in map {
            let item = match v {
                Value::Object(inner) => toml_edit::Item::Table(table(inner)),
                other => toml_edit::Item::Value(value(other)),
            };
            out.insert(k, item);
        }
        out
    }
    let mut doc = toml_edit::DocumentMut::new();
    *doc.as_table_mut() = table(json.as_object().expect("a document is an object"));
    doc.to_string()
}

/// What the build reports about `doc` as the file of `kind`: every diagnostic's code
/// and message.
fn report(kind: &FileKind, doc: &Value) -> Vec<String> {
    let mut diags = Diagnostics::default();
    let loaded = |text: String| Loaded {
        path: kind.path.into(),
        display: kind.path.into(),
        text,
    };
    match kind.name {
        "agent" => {
            config::compile(
                &AgentToml::File(loaded(toml_text(doc))),
                "agent.toml",
                "dir",
                None,
                Path::new("."),
                &mut diags,
            );
        }
        "override" | "new tool" | "connection tool" => {
            let config = agent_config();
            tools::compile(
                &[loaded(toml_text(doc))],
                &config,
                &[],
                &CATALOG,
                &["fs"],
                false,
                &mut diags,
            );
        }
        "connection" => {
            connections::read_all(&[loaded(toml_text(doc))], &mut diags);
        }
        "hook" => {
            crate::compiler::hooks::compile(
                &[loaded(toml_text(doc))],
                &[],
                &crate::tools::builtin::CATALOG,
                Path::new("."),
                &mut diags,
            );
        }
        "eval" => {
            let manifest = eval_agent();
            evals::compile(
                &[loaded(toml_text(doc))],
                &manifest,
                Path::new("."),
                Path::new("."),
                &mut diags,
            );
        }
        "skill" => {
            let yaml = serde_yaml::to_string(doc).unwrap();
            let file = loaded(format!("---\n{yaml}---\nBody.\n"));
            skills::compile_entry(
                &SkillFile::Flat {
                    name: "s".into(),
                    file,
                },
                "",
                Path::new("."),
                &mut diags,
            );
        }
        other => unreachable!("{other}"),
    }
    diags
        .into_iter()
        .map(|d| format!("{} {} {:?} {:?}", d.code, d.message, d.notes, d.help))
        .collect()
}

fn agent_config() -> config::Config {
    let mut diags = Diagnostics::default();
    let file = Loaded {
        path: "agent.toml".into(),
        display: "agent.toml".into(),
        text: "model = \"anthropic/x\"\n".into(),
    };
    config::compile(
        &AgentToml::File(file),
        "agent.toml",
        "dir",
        None,
        Path::new("."),
        &mut diags,
    )
}

fn eval_agent() -> Manifest {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/valid/minimal");
    crate::compiler::compile(&dir, &CATALOG)
        .manifest
        .expect("the minimal fixture builds")
}

fn shown(path: &[Step]) -> String {
    path.iter()
        .map(|s| match s {
            Step::Key(k) => format!(".{k}"),
            Step::Name => ".NAME".into(),
            Step::First => "[1]".into(),
        })
        .collect::<String>()
        .trim_start_matches('.')
        .to_string()
}

/// The schema may not declare a key the compiler ignores: for each key, a value of the
/// wrong type must change the build's report. (The other way round, a reader that reads a
/// key its shape does not declare fails a debug assertion in `TableReader`.)
#[test]
fn every_key_the_shapes_declare_is_read_with_its_type() {
    let mut ignored = Vec::new();
    for kind in kinds() {
        let mut keys = Vec::new();
        walk(kind.root, Vec::new(), &mut keys);
        for (path, key) in keys {
            let Some((right, wrong)) = values(&key.kind) else {
                continue;
            };
            let read = kind.bases.iter().any(|base| {
                report(&kind, &with(base, &path, right.clone()))
                    != report(&kind, &with(base, &path, wrong.clone()))
            });
            if !read {
                ignored.push(format!("{}: {}", kind.name, shown(&path)));
            }
        }
    }
    // A built-in's settings come from its catalog entry.
    let over = kinds().into_iter().find(|k| k.name == "override").unwrap();
    for tool in CATALOG.iter().filter(|t| !t.settings.is_empty()) {
        let kind = FileKind {
            path: Box::leak(format!("tools/{}.toml", tool.name).into_boxed_str()),
            ..over.clone()
        };
        for setting in tool.settings {
            let (right, wrong) = match setting.kind {
                SettingKind::Bool => (json!(false), json!("x")),
                SettingKind::PositiveInt => (json!(1), json!("x")),
                SettingKind::IntRange { min, .. } => (json!(min), json!("x")),
                SettingKind::StringList | SettingKind::CommandPatterns => (json!(["ls"]), json!(1)),
            };
            let doc = |v: Value| json!({ "settings": { setting.name: v } });
            if report(&kind, &doc(right)) == report(&kind, &doc(wrong)) {
                ignored.push(format!("{}: settings.{}", tool.name, setting.name));
            }
        }
    }
    assert_eq!(
        ignored,
        Vec::<String>::new(),
        "keys the compiler does not read"
    );
}

/// Every value of an enum is taken as the first one is; any other value is refused.
#[test]
fn enums_hold_exactly_the_values_the_compiler_accepts() {
    let mut wrong = Vec::new();
    for kind in kinds() {
        let mut keys = Vec::new();
        walk(kind.root, Vec::new(), &mut keys);
        for (path, key) in keys {
            let (values, list, any_case) = match &key.kind {
                Kind::Enum(v) => (*v, false, false),
                Kind::EnumAnyCase(v) => (*v, false, true),
                Kind::EnumList(v) => (*v, true, false),
                _ => continue,
            };
            let value = |v: &str| if list { json!([v]) } else { json!(v) };
            let mut tried: Vec<String> = values.iter().map(|v| v.to_string()).collect();
            if any_case {
                tried.extend(values.iter().map(|v| v.to_lowercase()));
            }
            // In some document the key is read: there every value is taken as the first
            // one is, and a value not in the list is refused.
            let holds = kind.bases.iter().any(|base| {
                let first = report(&kind, &with(base, &path, value(values[0])));
                tried
                    .iter()
                    .all(|v| report(&kind, &with(base, &path, value(v))) == first)
                    && report(&kind, &with(base, &path, value("zz-no-such-value"))) != first
            });
            if !holds {
                wrong.push(format!("{}: {}", kind.name, shown(&path)));
            }
        }
    }
    assert_eq!(wrong, Vec::<String>::new());
}

/// The value at a dotted path of a JSON value.
fn at<'v>(value: &'v Value, path: &str) -> Option<&'v Value> {
    path.split('.').try_fold(value, |v, key| v.get(key))
}

/// Compares each default of `table` with the compiled value at the same path (renamed as
/// `renames` say); an absent value stands for `false`, `[]` or `{}` (skipped in the
/// manifest).
fn check_defaults(
    table: &'static Table,
    compiled: &Value,
    renames: &[(&str, &str)],
    unchecked: &[&str],
) -> Vec<String> {
    let mut keys = Vec::new();
    walk(table, Vec::new(), &mut keys);
    let mut wrong = Vec::new();
    for (path, key) in keys {
        let Some(default) = key.default.to_json() else {
            continue;
        };
        if path.iter().any(|s| !matches!(s, Step::Key(_))) {
            continue;
        }
        let name = shown(&path);
        if unchecked.contains(&name.as_str()) {
            continue;
        }
        let renamed = renames
            .iter()
            .find(|(from, _)| *from == name)
            .map_or(name.as_str(), |(_, to)| to);
        let empty = matches!(
            key.default,
            DefaultValue::Bool(false) | DefaultValue::EmptyArray | DefaultValue::EmptyTable
        );
        match at(compiled, renamed) {
            Some(value) if *value == default => {}
            None if empty => {}
            found => wrong.push(format!("{name}: default {default}, compiled {found:?}")),
        }
    }
    wrong
}

#[test]
fn defaults_are_the_compilers() {
    let config = {
        let mut diags = Diagnostics::default();
        let file = Loaded {
            path: "agent.toml".into(),
            display: "agent.toml".into(),
            // An empty `[reasoning]`: its defaults apply only when it is written.
            text: "model = \"openai/x\"\n[providers.p]\nbase_url = \"http://h\"\n[reasoning]\n"
                .into(),
        };
        let config = config::compile(
            &AgentToml::File(file),
            "agent.toml",
            "dir",
            None,
            Path::new("."),
            &mut diags,
        );
        assert!(diags.is_empty());
        config
    };
    let mut agent = serde_json::to_value(&config.agent).unwrap();
    agent["instructions"] = json!({ "env": config.instructions_env });
    let mut wrong = check_defaults(&super::agent::AGENT, &agent, &[], &[]);
    // A provider's own defaults.
    wrong.extend(check_defaults(
        &super::agent::PROVIDER,
        &agent["providers"]["p"],
        &[],
        &[],
    ));

    let read = connections::read_all(
        &[Loaded {
            path: "connections/fs.toml".into(),
            display: "connections/fs.toml".into(),
            text: "command = [\"true\"]\n".into(),
        }],
        &mut Diagnostics::default(),
    );
    let connection = serde_json::to_value(&read[0].connection).unwrap();
    wrong.extend(check_defaults(
        &super::connection::CONNECTION,
        &connection,
        &[
            ("env", "transport.env"),
            ("sandbox", "transport.sandbox"),
            ("tools.block", "block"),
            ("tools.approval", "approval"),
        ],
        // An HTTP connection's: checked below.
        &["headers"],
    ));
    let http = connections::read_all(
        &[Loaded {
            path: "connections/fs.toml".into(),
            display: "connections/fs.toml".into(),
            text: "url = \"http://127.0.0.1/mcp\"\n".into(),
        }],
        &mut Diagnostics::default(),
    );
    assert_eq!(
        serde_json::to_value(&http[0].connection).unwrap()["transport"]["headers"],
        json!({})
    );

    let config = agent_config();
    let new_tool = |text: &str| -> Value {
        let mut diags = Diagnostics::default();
        let compiled = tools::compile(
            &[Loaded {
                path: "tools/lookup.toml".into(),
                display: "tools/lookup.toml".into(),
                text: format!("description = \"d\"\n{text}\n[input_schema]\ntype = \"object\"\n"),
            }],
            &config,
            &[],
            &CATALOG,
            &[],
            false,
            &mut diags,
        );
        assert!(
            !diags.has_errors(),
            "{:?}",
            diags.into_iter().collect::<Vec<_>>()
        );
        let tool = compiled.tools.iter().find(|t| t.name == "lookup").unwrap();
        serde_json::to_value(tool).unwrap()
    };
    wrong.extend(check_defaults(
        &super::tool::NEW,
        &new_tool("command = [\"true\"]"),
        &[("allow_option_arguments", "executor.allow_option_arguments")],
        // Not in the manifest: a disabled tool is not there at all. `[http]`: below.
        &[
            "disabled",
            "http.method",
            "http.headers",
            "http.allow_private",
        ],
    ));
    wrong.extend(check_defaults(
        &super::tool::HTTP,
        &new_tool("[http]\nurl = \"http://127.0.0.1/\"")["executor"],
        &[],
        &[],
    ));
    assert_eq!(wrong, Vec::<String>::new());

    // An eval case's and a scripted reply's defaults.
    let manifest = eval_agent();
    let case = evals::compile(
        &[Loaded {
            path: "evals/case.toml".into(),
            display: "evals/case.toml".into(),
            text: "prompt = \"p\"\n".into(),
        }],
        &manifest,
        Path::new("."),
        Path::new("."),
        &mut Diagnostics::default(),
    );
    let case = &case[0];
    let default = |key: &str| super::eval::CASE.key(key).unwrap().default.to_json();
    assert_eq!(
        (default("repeat"), default("timeout_secs"), default("tags")),
        (
            Some(json!(case.repeat)),
            Some(json!(case.timeout_secs)),
            Some(json!(case.tags))
        )
    );
    let reply: crate::manifest::script::Reply = serde_json::from_value(json!({})).unwrap();
    let reply_default = |key: &str| super::eval::REPLY.key(key).unwrap().default.to_json();
    assert_eq!(
        (reply_default("text"), reply_default("reasoning")),
        (Some(json!(reply.text)), Some(json!(reply.reasoning)))
    );
}

/// The names serde lists for a struct that denies unknown fields.
fn serde_fields<T: serde::de::DeserializeOwned + std::fmt::Debug>() -> Vec<String> {
    let err = serde_json::from_value::<T>(json!({ "zz-unknown": 1 })).unwrap_err();
    let text = err.to_string();
    let list = text.split("expected one of ").nth(1).unwrap_or_default();
    list.split(", ")
        .map(|f| {
            f.trim_matches(|c: char| c == '`' || c.is_whitespace())
                .to_string()
        })
        .map(|f| f.split('`').next().unwrap_or_default().to_string())
        .collect()
}

/// A scripted reply is read by serde: its shape must hold the fields of its types.
#[test]
fn scripted_replies_have_the_fields_of_their_types() {
    use crate::manifest::script::{CALL_FIELDS, REPLY_FIELDS, ScriptedError, ScriptedUsage};
    let names = |t: &Table| t.names().map(str::to_string).collect::<Vec<_>>();
    let strs = |s: &[&str]| s.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(names(&super::eval::REPLY), strs(REPLY_FIELDS));
    assert_eq!(names(&super::eval::CALL), strs(CALL_FIELDS));
    assert_eq!(names(&super::eval::USAGE), serde_fields::<ScriptedUsage>());
    assert_eq!(names(&super::eval::ERROR), serde_fields::<ScriptedError>());
}

/// The keys two tables of one file share (a built-in's file is an override or a new
/// tool) are the same key, so the built-in's schema can hold both.
#[test]
fn shared_tool_keys_have_one_kind() {
    for key in super::tool::OVERRIDE.keys {
        if let Some(new) = super::tool::NEW.key(key.name) {
            assert_eq!(
                format!("{:?}", key.kind),
                format!("{:?}", new.kind),
                "{}",
                key.name
            );
        }
    }
}

/// Every key is in the page that documents its file.
#[test]
fn every_key_is_documented() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let page = |name: &str| std::fs::read_to_string(docs.join(name)).unwrap();
    let pages: BTreeMap<&str, String> = [
        ("agent", page("agent-directory.md")),
        ("override", page("agent-directory.md")),
        ("new tool", page("agent-directory.md")),
        ("connection tool", page("connections.md")),
        ("connection", page("connections.md")),
        ("eval", page("evals.md")),
        ("hook", page("hooks.md")),
        ("skill", page("agent-directory.md")),
    ]
    .into_iter()
    .collect();
    let mut missing = Vec::new();
    for kind in kinds() {
        let mut keys = Vec::new();
        walk(kind.root, Vec::new(), &mut keys);
        let text = &pages[kind.name];
        for (path, key) in keys {
            let word = |at: usize| {
                let before = text[..at].chars().next_back();
                let after = text[at + key.name.len()..].chars().next();
                let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                !ident(before) && !ident(after)
            };
            if !text.match_indices(key.name).any(|(at, _)| word(at)) {
                missing.push(format!("{}: {}", kind.name, shown(&path)));
            }
            assert!(!key.doc.is_empty(), "{} has no doc", key.name);
        }
    }
    assert_eq!(missing, Vec::<String>::new(), "keys no doc page mentions");
}
