//! Checks the tables of a case share: names against the agent, globs, JSON Schemas,
//! regular expressions, relative paths.

use std::ops::Range;
use std::path::{Component, Path};

use serde_json::Value;
use toml_edit::Item;

use crate::compiler::diagnostic::{Diagnostic, code};
use crate::compiler::toml_reader::{self, Spanned, TableReader, TomlFile};
use crate::suggest;

/// Why a path written in a case is not a plain relative path inside the workspace.
pub(super) fn check_relative(path: &str) -> Result<(), &'static str> {
    let given = Path::new(path);
    if path.trim().is_empty() {
        return Err("is empty");
    }
    if given.is_absolute() || path.starts_with('/') || path.starts_with('\\') {
        return Err("is an absolute path");
    }
    if given
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        return Err("climbs out with `..`");
    }
    Ok(())
}

/// Whether `name` is one of `names`; reports it with "did you mean" when not.
pub(super) fn known(
    toml: &TomlFile,
    what: &str,
    name: &str,
    span: Option<Range<usize>>,
    names: &[&str],
    code: &'static str,
) -> bool {
    if names.contains(&name) {
        return true;
    }
    let diagnostic = Diagnostic::error(code, format!("the agent has no {what} `{name}`"))
        .at(&toml.src, span)
        .label(format!("unknown {what}"));
    let diagnostic = match suggest::closest(name, names.iter().copied()) {
        Some(near) => diagnostic.help(format!("did you mean `{near}`?")),
        None if names.is_empty() => diagnostic.note(format!("the agent has no {what}s")),
        None => diagnostic.note(format!("its {what}s: {}", toml_reader::list(names))),
    };
    toml.report(diagnostic);
    false
}

/// Reports the strings of a match pattern that are not valid globs.
pub(super) fn check_globs(toml: &TomlFile, key: &str, item: &Item) {
    let mut bad = Vec::new();
    collect_bad_globs(&toml_reader::to_json(item), &mut bad);
    for glob in bad {
        toml.report(
            Diagnostic::error(code::EVAL_PATTERN, format!("`{key}` holds an invalid glob `{glob}`"))
                .at(&toml.src, item.span())
                .note("a string in a match is a glob: `*` matches any text, `?` one character, `[…]` one of a set; a backslash makes the next character literal (`\\\\*` in a TOML string)"),
        );
    }
}

fn collect_bad_globs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) if crate::pattern::glob(s).is_none() => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_bad_globs(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_bad_globs(v, out)),
        _ => {}
    }
}

/// A JSON Schema written as a TOML table; `None` (reported) when it is not one.
pub(super) fn check_schema(toml: &TomlFile, key: &str, item: &Item) -> Option<Value> {
    if !item.is_table_like() {
        toml.error(
            code::EVAL_PATTERN,
            format!("`{key}` must be a table holding a JSON Schema"),
            item.span(),
        );
        return None;
    }
    let schema = toml_reader::to_json(item);
    let problem = jsonschema::meta::validate(&schema)
        .err()
        .map(|e| e.to_string())
        .or_else(|| {
            jsonschema::validator_for(&schema)
                .err()
                .map(|e| e.to_string())
        });
    match problem {
        Some(problem) => {
            toml.error(
                code::EVAL_PATTERN,
                format!("`{key}` is not a valid JSON Schema: {problem}"),
                item.span(),
            );
            None
        }
        None => Some(schema),
    }
}

pub(super) fn check_regex(toml: &TomlFile, key: &str, value: &Spanned<String>) -> bool {
    match regex::Regex::new(&value.value) {
        Ok(_) => true,
        Err(e) => {
            let detail = e.to_string();
            let last = detail
                .lines()
                .last()
                .unwrap_or("invalid regular expression")
                .trim();
            toml.error(
                code::EVAL_PATTERN,
                format!(
                    "`{key}` is not a valid regular expression: {}",
                    last.trim_start_matches("error: ")
                ),
                value.span.clone(),
            );
            false
        }
    }
}

/// A string or an array of strings.
pub(super) fn strings(table: &mut TableReader<'_>, key: &'static str) -> Vec<Spanned<String>> {
    let Some(item) = table.item(key) else {
        return Vec::new();
    };
    if let Some(s) = item.as_str() {
        return vec![Spanned {
            value: s.to_string(),
            span: item.span(),
        }];
    }
    match item.as_array() {
        Some(array) if array.iter().all(|v| v.as_str().is_some()) => array
            .iter()
            .filter_map(|v| {
                v.as_str().map(|s| Spanned {
                    value: s.to_string(),
                    span: v.span(),
                })
            })
            .collect(),
        _ => {
            table.wrong_type(key, item, "a string or an array of strings");
            Vec::new()
        }
    }
}
