//! JSON Schemas (draft-07, the draft taplo reads) of the files of an agent directory,
//! made from their shapes: what `eve schema` prints, `eve init` writes into
//! `.eve/schemas/`, and `schemas/` holds in eve's repository.

use std::path::Path;

use serde_json::{Map, Value, json};

use super::shape::{self, Key, Kind, Str, Table};
use crate::catalog::{BuiltinTool, Catalog, SettingKind};

/// The draft the schemas are written in.
pub const DRAFT: &str = "http://json-schema.org/draft-07/schema#";

/// Where `eve init` writes the schemas, inside the agent directory.
pub const AGENT_SCHEMAS_DIR: &str = ".eve/schemas";

/// Which file a schema describes.
#[derive(Debug, Clone, Copy)]
pub enum Schema {
    /// `agent.toml`, a subagent's included.
    Agent,
    /// `tools/<slug>.toml` for a new tool: a slug that is no built-in's.
    Tool,
    /// `tools/<name>.toml` for a built-in: its override, disabling or replacement.
    Builtin(&'static BuiltinTool),
    /// `tools/<connection>__<tool>.toml`.
    ConnectionTool,
    /// `connections/<name>.toml`.
    Connection,
    /// `evals/**/*.toml`.
    Eval,
    /// A skill's YAML frontmatter.
    Skill,
    /// `hooks/<name>.toml`.
    Hook,
}

impl Schema {
    /// Every schema: one per kind of file, and one per built-in tool.
    pub fn all(catalog: &Catalog) -> Vec<Schema> {
        let mut all = vec![
            Schema::Agent,
            Schema::Tool,
            Schema::ConnectionTool,
            Schema::Connection,
            Schema::Eval,
            Schema::Skill,
            Schema::Hook,
        ];
        all.extend(catalog.iter().map(Schema::Builtin));
        all
    }

    /// The schema of the file at `path` (relative to its agent directory, `/`-separated),
    /// if it has one. `connections` are that agent's connection names.
    pub fn for_file(path: &str, catalog: &Catalog, connections: &[&str]) -> Option<Schema> {
        let parts: Vec<&str> = path.split('/').collect();
        match parts.as_slice() {
            ["agent.toml"] => Some(Schema::Agent),
            ["tools", file] => {
                let slug = file.strip_suffix(".toml")?;
                if connections
                    .iter()
                    .any(|c| slug.starts_with(&format!("{c}__")))
                {
                    Some(Schema::ConnectionTool)
                } else {
                    Some(catalog.find(slug).map_or(Schema::Tool, Schema::Builtin))
                }
            }
            ["connections", file] if file.ends_with(".toml") => Some(Schema::Connection),
            ["hooks", file] if file.ends_with(".toml") => Some(Schema::Hook),
            ["skills", file] if file.ends_with(".md") => Some(Schema::Skill),
            ["skills", _, "SKILL.md"] => Some(Schema::Skill),
            ["evals", folders @ .., file]
                if file.ends_with(".toml")
                    && !folders.iter().any(|f| f.starts_with(['_', '.'])) =>
            {
                Some(Schema::Eval)
            }
            _ => None,
        }
    }

    /// Its path below a folder of schemas (`schemas/`, `.eve/schemas/`).
    pub fn file(&self) -> String {
        match self {
            Schema::Agent => "agent.json".into(),
            Schema::Tool => "tool.json".into(),
            Schema::Builtin(tool) => format!("tools/{}.json", tool.name),
            Schema::ConnectionTool => "connection-tool.json".into(),
            Schema::Connection => "connection.json".into(),
            Schema::Eval => "eval.json".into(),
            Schema::Skill => "skill.json".into(),
            Schema::Hook => "hook.json".into(),
        }
    }

    /// The schema.
    pub fn json(&self) -> Value {
        let (title, about, body) = match self {
            Schema::Agent => (
                "agent.toml".to_string(),
                "An eve agent's settings. Reference: docs/agent-directory.md#agenttoml".to_string(),
                object(&shape::agent::AGENT, None),
            ),
            Schema::Tool => (
                "tools/<slug>.toml".to_string(),
                "A new tool: a `description`, an `[input_schema]` and one executor, `command` or `[http]`. Reference: docs/agent-directory.md#new-tools".to_string(),
                object(&shape::tool::NEW, None),
            ),
            Schema::Builtin(tool) => (
                format!("tools/{}.toml", tool.name),
                format!(
                    "Changes the built-in tool `{}`: `disabled = true` removes it; `description`, `approval`, `timeout_secs`, `defer` or `[settings]` override it; `command`, `[http]` or `[input_schema]` replace it with a new tool. Reference: docs/agent-directory.md#tools",
                    tool.name
                ),
                builtin(tool),
            ),
            Schema::ConnectionTool => (
                "tools/<connection>__<tool>.toml".to_string(),
                "Changes one tool of a connection. Reference: docs/connections.md#changing-one-tool".to_string(),
                with_disable_rule(object(&shape::tool::CONNECTION_TOOL, None)),
            ),
            Schema::Connection => (
                "connections/<name>.toml".to_string(),
                "An MCP server whose tools the agent uses: `command` (stdio) or `url` (HTTP). Reference: docs/connections.md#every-key".to_string(),
                object(&shape::connection::CONNECTION, None),
            ),
            Schema::Eval => (
                "evals/<case>.toml".to_string(),
                "An eval case: `eve eval` runs it and checks what it expects. Reference: docs/evals.md#the-case-file".to_string(),
                object(&shape::eval::CASE, None),
            ),
            Schema::Hook => (
                "hooks/<name>.toml".to_string(),
                "A hook: a program eve runs at a point of a turn (`event`), for the tools in `tools`, that may allow, refuse or rewrite what happens there. Reference: docs/hooks.md#the-hook-file".to_string(),
                object(&shape::hook::HOOK, None),
            ),
            Schema::Skill => (
                "skill frontmatter".to_string(),
                "The YAML frontmatter of a skill (`skills/<name>.md`, `skills/<name>/SKILL.md`). Fields of other Agent Skills clients are accepted and ignored. Reference: docs/agent-directory.md#frontmatter".to_string(),
                object(&shape::skill::FRONTMATTER, None),
            ),
        };
        let mut schema = Map::new();
        schema.insert("$schema".into(), json!(DRAFT));
        schema.insert("title".into(), json!(title));
        schema.insert("description".into(), json!(about));
        if let Value::Object(body) = body {
            schema.extend(body);
        }
        Value::Object(schema)
    }

    /// The schema as the text of its file: pretty JSON and a final newline.
    pub fn text(&self) -> String {
        let mut text = serde_json::to_string_pretty(&self.json()).unwrap_or_default();
        text.push('\n');
        text
    }
}

/// Writes every schema into `dir`, creating it and its `tools/` folder.
pub fn write_all(dir: &Path, catalog: &Catalog) -> std::io::Result<()> {
    for schema in Schema::all(catalog) {
        let path = dir.join(schema.file());
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&path, schema.text())?;
    }
    Ok(())
}

/// The `#:schema` line taplo and Even Better TOML read, for the file at `path` (relative
/// to the top agent directory): a path to its schema in `.eve/schemas/`, relative to the
/// file's folder, as taplo resolves it.
pub fn directive(path: &str, schema: &Schema) -> String {
    let depth = path.matches('/').count();
    let up = if depth == 0 {
        "./".to_string()
    } else {
        "../".repeat(depth)
    };
    format!("#:schema {up}{AGENT_SCHEMAS_DIR}/{}", schema.file())
}

/// The keys a built-in's file may hold: an override's and a new tool's, each only in
/// its kind of file; `disabled = true` alone.
fn builtin(tool: &BuiltinTool) -> Value {
    let over = &shape::tool::OVERRIDE;
    let new = &shape::tool::NEW;
    let mut properties = Map::new();
    for key in new.keys {
        properties.insert(key.name.into(), property(key, &shape::tool::NEW, None));
    }
    for key in over.keys {
        properties.insert(key.name.into(), property(key, over, Some(tool)));
    }
    if let Some(timeout) = properties.get_mut("timeout_secs") {
        timeout["default"] = json!(tool.timeout_secs);
    }
    let excluded = |table: &Table, other: &Table| -> Value {
        let keys: Map<String, Value> = other
            .names()
            .filter(|name| table.key(name).is_none())
            .map(|name| (name.to_string(), Value::Bool(false)))
            .collect();
        json!({ "properties": keys })
    };
    let trigger: Vec<Value> = shape::tool::NEW_TOOL_KEYS
        .iter()
        .map(|k| json!({ "required": [k] }))
        .collect();
    let mut then = excluded(new, over);
    if let (Value::Object(then), Value::Object(rules)) = (&mut then, rules(new)) {
        then.extend(rules);
    }
    let body = json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
        "allOf": [{ "if": { "anyOf": trigger }, "then": then, "else": excluded(over, new) }],
    });
    with_disable_rule(body)
}

/// Adds: with `disabled = true`, no other key.
fn with_disable_rule(mut body: Value) -> Value {
    let rule = json!({
        "if": { "properties": { "disabled": { "const": true } }, "required": ["disabled"] },
        "then": { "propertyNames": { "enum": ["disabled"] } },
    });
    match body.get_mut("allOf").and_then(Value::as_array_mut) {
        Some(all) => all.insert(0, rule),
        None => body["allOf"] = json!([rule]),
    }
    body
}

/// The schema of a table: its keys, closed unless it is open, and its rules.
fn object(table: &Table, tool: Option<&BuiltinTool>) -> Value {
    let properties: Map<String, Value> = table
        .keys
        .iter()
        .map(|key| (key.name.to_string(), property(key, table, tool)))
        .collect();
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    out.insert("properties".into(), Value::Object(properties));
    if !table.open {
        out.insert("additionalProperties".into(), Value::Bool(false));
    }
    if let Value::Object(rules) = rules(table) {
        out.extend(rules);
    }
    Value::Object(out)
}

/// A table's rules: required keys, groups of which exactly one key is present, and keys
/// that need another.
fn rules(table: &Table) -> Value {
    let mut out = Map::new();
    if !table.required.is_empty() {
        out.insert("required".into(), json!(table.required));
    }
    let one_of = |group: &&[&str]| -> Value {
        json!({ "oneOf": group.iter().map(|k| json!({ "required": [k] })).collect::<Vec<_>>() })
    };
    match table.one_of {
        [] => {}
        [group] => {
            if let Value::Object(group) = one_of(group) {
                out.extend(group);
            }
        }
        groups => {
            out.insert(
                "allOf".into(),
                Value::Array(groups.iter().map(one_of).collect()),
            );
        }
    }
    let needs: Map<String, Value> = table
        .keys
        .iter()
        .filter(|k| !k.needs.is_empty())
        .map(|k| (k.name.to_string(), json!(k.needs)))
        .collect();
    if !needs.is_empty() {
        out.insert("dependencies".into(), Value::Object(needs));
    }
    Value::Object(out)
}

/// One key: its value's schema, its description and its default.
fn property(key: &Key, table: &Table, tool: Option<&BuiltinTool>) -> Value {
    let mut schema = match (&key.kind, tool) {
        (Kind::Settings, Some(tool)) => settings(tool),
        (kind, _) => value(kind),
    };
    if table.nullable
        && let Some(Value::String(t)) = schema.get("type").cloned()
    {
        schema["type"] = json!([t, "null"]);
    }
    schema["description"] = json!(key.doc);
    if let Some(default) = key.default.to_json() {
        schema["default"] = default;
    }
    schema
}

/// The schema of a value of this kind.
fn value(kind: &Kind) -> Value {
    match kind {
        Kind::Str(s) => string(s),
        Kind::Enum(values) => json!({ "type": "string", "enum": values }),
        Kind::EnumAnyCase(values) => {
            let any_case = |v: &&str| -> String {
                v.chars()
                    .map(|c| format!("[{}{}]", c.to_ascii_uppercase(), c.to_ascii_lowercase()))
                    .collect()
            };
            let alternatives: Vec<String> = values.iter().map(any_case).collect();
            json!({
                "type": "string",
                "pattern": format!("^(?:{})$", alternatives.join("|")),
                "examples": values,
            })
        }
        Kind::Bool => json!({ "type": "boolean" }),
        Kind::True => json!({ "const": true }),
        Kind::PositiveInt => json!({ "type": "integer", "minimum": 1 }),
        Kind::Count => json!({ "type": "integer", "minimum": 0 }),
        Kind::IntRange { min, max } => json!({ "type": "integer", "minimum": min, "maximum": max }),
        Kind::Number { above, max } => {
            let mut out = json!({ "type": "number" });
            if let Some(above) = above {
                out["exclusiveMinimum"] = json!(above);
            }
            if let Some(max) = max {
                out["maximum"] = json!(max);
            }
            out
        }
        Kind::Strings(s) => json!({ "type": "array", "items": string(s) }),
        Kind::EnumList(values) => {
            json!({ "type": "array", "items": { "type": "string", "enum": values } })
        }
        Kind::StringOrStrings => json!({
            "anyOf": [{ "type": "string" }, { "type": "array", "items": { "type": "string" } }],
        }),
        Kind::Table(table) => object(table, None),
        Kind::Tables(table) => json!({ "type": "array", "items": object(table, None) }),
        Kind::Map { names, values } => {
            let mut out = json!({ "type": "object", "additionalProperties": value(values) });
            if let Some(names) = names {
                out["propertyNames"] = json!({ "pattern": names });
            }
            out
        }
        Kind::Array(item) => json!({ "type": "array", "items": value(item) }),
        Kind::OneOf(kinds) => json!({ "anyOf": kinds.iter().map(value).collect::<Vec<_>>() }),
        Kind::JsonSchema { object: true } => json!({
            "type": "object",
            "properties": { "type": {
                "const": "object",
                "description": "Models send tool arguments as a JSON object: one property per argument.",
            } },
            "required": ["type"],
        }),
        Kind::JsonSchema { object: false } | Kind::AnyTable => json!({ "type": "object" }),
        Kind::Any => json!({}),
        // Outside a built-in's file no tool says which settings there are.
        Kind::Settings => json!({ "type": "object" }),
    }
}

fn string(s: &Str) -> Value {
    let mut out = json!({ "type": "string" });
    if s.non_blank {
        out["minLength"] = json!(1);
    }
    match (s.pattern, s.non_blank) {
        (Some(pattern), _) => out["pattern"] = json!(pattern),
        (None, true) => out["pattern"] = json!(r"\S"),
        (None, false) => {}
    }
    if let Some(max) = s.max_chars {
        out["maxLength"] = json!(max);
    }
    out
}

/// A built-in's `[settings]`, from its catalog entry.
fn settings(tool: &BuiltinTool) -> Value {
    let properties: Map<String, Value> = tool
        .settings
        .iter()
        .map(|setting| {
            let (mut schema, default) = match setting.kind {
                SettingKind::Bool => (json!({ "type": "boolean" }), json!(false)),
                SettingKind::PositiveInt => {
                    (json!({ "type": "integer", "minimum": 1 }), Value::Null)
                }
                SettingKind::StringList | SettingKind::CommandPatterns => (
                    json!({ "type": "array", "items": { "type": "string" } }),
                    json!([]),
                ),
                SettingKind::IntRange { min, max, default } => (
                    json!({ "type": "integer", "minimum": min, "maximum": max }),
                    json!(default),
                ),
            };
            schema["description"] = json!(sentence(setting.description));
            if !default.is_null() {
                schema["default"] = default;
            }
            (setting.name.to_string(), schema)
        })
        .collect();
    json!({ "type": "object", "properties": properties, "additionalProperties": false })
}

/// A catalog description (lowercase, no final period) as a sentence.
fn sentence(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => format!("{}{}.", first.to_uppercase(), chars.as_str()),
        None => String::new(),
    }
}
