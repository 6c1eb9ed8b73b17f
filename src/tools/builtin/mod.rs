//! The built-in tools, one file each: its catalog entry (`SPEC`) beside its executor
//! (`build`). Adding a built-in is one file here and one line in [`builtins!`].

use std::sync::Arc;

use crate::catalog::Catalog;
use crate::manifest::{self, Manifest};
use crate::tools::ToolExec;

/// Declares the built-ins in offer order: the modules, the [`Builtin`] enum, the
/// [`CATALOG`] the compiler reads, and the pairing of each entry with its constructor.
macro_rules! builtins {
    ($($variant:ident => $module:ident),+ $(,)?) => {
        $(pub mod $module;)+

        /// Which built-in a tool is.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Builtin {
            $($variant),+
        }

        impl Builtin {
            /// Every built-in, in offer order.
            pub const ALL: &[Builtin] = &[$(Builtin::$variant),+];

            /// Its catalog entry.
            pub fn spec(self) -> &'static crate::catalog::BuiltinTool {
                match self {
                    $(Builtin::$variant => &$module::SPEC),+
                }
            }

            /// Its executor, configured by the manifest's entry for it.
            pub fn build(
                self,
                tool: &manifest::Tool,
                manifest: &Arc<Manifest>,
            ) -> Result<Arc<dyn ToolExec>, String> {
                match self {
                    $(Builtin::$variant => $module::build(tool, manifest)),+
                }
            }
        }

        /// The catalog of every built-in tool, in offer order.
        pub static CATALOG: Catalog = Catalog::new(&[$(&$module::SPEC),+]);
    };
}

builtins! {
    Bash => bash,
    ReadFile => read_file,
    WriteFile => write_file,
    EditFile => edit_file,
    Glob => glob,
    Grep => grep,
    WebFetch => web_fetch,
    WebSearch => web_search,
    Todo => todo,
    AskQuestion => ask_question,
    Agent => agent,
    LoadSkill => load_skill,
    SearchTools => search_tools,
    CallTool => call_tool,
}

impl Builtin {
    /// The built-in with this name.
    pub fn from_name(name: &str) -> Option<Builtin> {
        Builtin::ALL.iter().copied().find(|b| b.spec().name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Availability, SettingKind};
    use pretty_assertions::assert_eq;
    use serde_json::{Value, json};

    /// Every subschema of `schema` that has `properties`, with its JSON pointer.
    fn object_schemas<'a>(schema: &'a Value, at: String, out: &mut Vec<(String, &'a Value)>) {
        if let Some(map) = schema.as_object() {
            if map.contains_key("properties") {
                out.push((at.clone(), schema));
            }
            for (key, value) in map {
                object_schemas(value, format!("{at}/{key}"), out);
            }
        }
    }

    #[test]
    fn every_schema_is_a_strict_object_schema() {
        for tool in CATALOG.iter() {
            let schema: Value = serde_json::from_str(tool.input_schema)
                .unwrap_or_else(|e| panic!("{}: schema is not JSON: {e}", tool.name));
            assert_eq!(tool.schema(), schema, "{}", tool.name);
            assert!(
                jsonschema::meta::validate(&schema).is_ok(),
                "{}: not a valid JSON Schema: {:?}",
                tool.name,
                jsonschema::meta::validate(&schema)
            );
            assert!(jsonschema::validator_for(&schema).is_ok(), "{}", tool.name);
            assert_eq!(schema["type"], "object", "{}", tool.name);

            let mut objects = Vec::new();
            object_schemas(&schema, String::new(), &mut objects);
            assert_eq!(objects.first().map(|(at, _)| at.as_str()), Some(""));
            for (at, object) in objects {
                let place = format!("{}{at}", tool.name);
                assert_eq!(object["type"], "object", "{place}");
                assert_eq!(object["additionalProperties"], false, "{place}");
                let properties = object["properties"].as_object().unwrap();
                for (name, property) in properties {
                    let description = property["description"].as_str().unwrap_or_default();
                    assert!(
                        !description.is_empty(),
                        "{place}: `{name}` has no description"
                    );
                }
                for required in object["required"].as_array().unwrap() {
                    let required = required.as_str().unwrap();
                    assert!(
                        properties.contains_key(required),
                        "{place}: required `{required}` is not a property"
                    );
                }
            }
        }
    }

    #[test]
    fn names_are_unique_valid_slugs_in_offer_order() {
        let names: Vec<_> = CATALOG.names().collect();
        assert_eq!(
            names,
            [
                "bash",
                "read_file",
                "write_file",
                "edit_file",
                "glob",
                "grep",
                "web_fetch",
                "web_search",
                "todo",
                "ask_question",
                "agent",
                "load_skill",
                "search_tools",
                "call_tool",
            ]
        );
        let slug = |name: &str| {
            let mut chars = name.chars();
            name.len() <= 64
                && chars.next().is_some_and(|c| c.is_ascii_lowercase())
                && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        };
        for name in &names {
            assert!(slug(name), "`{name}` is not a valid tool slug");
        }
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn find_looks_tools_up_by_exact_name() {
        for tool in CATALOG.iter() {
            assert_eq!(CATALOG.find(tool.name).map(|t| t.name), Some(tool.name));
        }
        assert!(CATALOG.find("raed_file").is_none());
        assert!(CATALOG.find("Read_File").is_none());
    }

    #[test]
    fn only_tools_without_side_effects_are_read_only() {
        let read_only: Vec<_> = CATALOG
            .iter()
            .filter(|t| t.read_only)
            .map(|t| t.name)
            .collect();
        assert_eq!(
            read_only,
            [
                "read_file",
                "glob",
                "grep",
                "web_fetch",
                "web_search",
                "load_skill",
                "search_tools"
            ]
        );
    }

    #[test]
    fn settings_and_availability() {
        let summary: Vec<_> = CATALOG
            .iter()
            .filter(|t| !t.settings.is_empty() || t.availability != Availability::Always)
            .map(|t| {
                let settings: Vec<_> = t.settings.iter().map(|s| (s.name, s.kind)).collect();
                (t.name, t.availability, settings)
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    "bash",
                    Availability::Always,
                    vec![
                        ("allow", SettingKind::CommandPatterns),
                        ("deny", SettingKind::CommandPatterns)
                    ]
                ),
                (
                    "web_fetch",
                    Availability::Always,
                    vec![("allow_private", SettingKind::Bool)]
                ),
                ("web_search", Availability::AnthropicOnly, vec![]),
                (
                    "agent",
                    Availability::Always,
                    vec![(
                        "max_depth",
                        SettingKind::IntRange {
                            min: 1,
                            max: 10,
                            default: 3
                        }
                    )]
                ),
                ("load_skill", Availability::WithSkills, vec![]),
                ("search_tools", Availability::WithDeferred, vec![]),
                ("call_tool", Availability::WithDeferredTools, vec![]),
            ]
        );
        let bash = CATALOG.find("bash").unwrap();
        assert_eq!(
            bash.setting("deny").map(|s| s.kind),
            Some(SettingKind::CommandPatterns)
        );
        assert!(bash.setting("allow_private").is_none());
    }

    #[test]
    fn descriptions_are_a_few_plain_sentences() {
        for tool in CATALOG.iter() {
            let sentences = tool.description.replace("e.g. ", "").matches(". ").count() + 1;
            assert!(
                (3..=10).contains(&sentences),
                "{}: {sentences} sentences",
                tool.name
            );
            assert!(tool.description.ends_with('.'), "{}", tool.name);
            assert!(!tool.description.contains('\n'), "{}", tool.name);
            assert!(!tool.description.contains("  "), "{}", tool.name);
            assert!(!tool.description.contains('#'), "{}", tool.name);
            assert!(tool.timeout_secs > 0, "{}", tool.name);
        }
    }

    #[test]
    fn schemas_accept_typical_calls_and_reject_bad_ones() {
        let accepted = json!({
            "bash": [{ "command": "cargo test", "timeout_secs": 300 }],
            "read_file": [{ "path": "src/main.rs", "offset": 10, "limit": 50 }],
            "write_file": [{ "path": "a.txt", "content": "" }],
            "edit_file": [
                { "path": "a.rs", "old_string": "a", "new_string": "b", "replace_all": true }
            ],
            "glob": [{ "pattern": "src/**/*.rs", "path": "crates" }],
            "grep": [{ "pattern": "fn main\\(", "output_mode": "content", "context": 2 }],
            "web_fetch": [{ "url": "https://example.com", "format": "text" }],
            "web_search": [{ "query": "rust 2024 edition" }],
            "todo": [{ "todos": [{ "content": "Write tests", "status": "in_progress" }] }],
            "ask_question": [{ "question": "Which?", "options": ["a", "b"] }],
            "agent": [{ "task": "Find every caller of parse_args." }],
            "load_skill": [{ "name": "plan-a-trip" }],
            "search_tools": [{ "query": "github issues", "limit": 3 }],
            "call_tool": [{ "name": "gh__get_issue", "input": { "number": 1 } }]
        });
        let rejected = json!({
            "bash": [{ "command": "ls", "timeout_secs": 601 }, { "cmd": "ls" }],
            "read_file": [{ "path": "src/main.rs", "offset": 0 }],
            "write_file": [{ "path": "a.txt" }],
            "grep": [
                { "pattern": "x", "output_mode": "lines" },
                { "pattern": "x", "context": 21 }
            ],
            "web_fetch": [{ "url": "https://example.com", "format": "pdf" }],
            "todo": [{ "todos": [{ "content": "Write tests", "status": "done" }] }],
            "ask_question": [{ "question": "Which?", "options": ["a"] }],
            "load_skill": [{ "name": "Plan A Trip" }],
            "search_tools": [{ "query": "" }, { "query": "x", "limit": 21 }],
            "call_tool": [{ "name": "x" }, { "name": "x", "input": [] }]
        });
        for (valid, cases) in [(true, accepted), (false, rejected)] {
            for (name, inputs) in cases.as_object().unwrap() {
                let schema = CATALOG.find(name).unwrap().schema();
                let validator = jsonschema::validator_for(&schema).unwrap();
                for input in inputs.as_array().unwrap() {
                    assert_eq!(validator.is_valid(input), valid, "{name}: {input}");
                }
            }
        }
    }
}
