//! A skill's YAML frontmatter: split off the body, then read the fields eve knows.

use super::super::diagnostic::{Diagnostic, Diagnostics, code};
use super::super::shape::skill::FRONTMATTER;
use super::super::source::SourceFile;

/// The byte order mark some editors write at the start of a UTF-8 file.
const BOM: char = '\u{feff}';

/// A Markdown file split into YAML frontmatter and body.
#[derive(Debug, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML text between the fences, if the file has frontmatter.
    pub yaml: Option<&'a str>,
    /// 1-based file line of the first YAML line.
    pub yaml_line: usize,
    /// Byte offset of the body in the file.
    pub body_offset: usize,
    pub body: &'a str,
}

/// Splits off `---` fenced frontmatter at the start of a file (after a byte order mark,
/// if there is one). Fence lines may carry trailing spaces, as editors leave them.
/// Returns `Err` with a message when the opening fence is never closed.
pub fn split_frontmatter(text: &str) -> Result<Split<'_>, String> {
    let start = if text.starts_with(BOM) {
        BOM.len_utf8()
    } else {
        0
    };
    let mut lines = text[start..].split_inclusive('\n');
    let no_frontmatter = Split {
        yaml: None,
        yaml_line: 1,
        body_offset: start,
        body: &text[start..],
    };
    match lines.next() {
        Some(first) if first.ends_with('\n') && is_fence(first, &["---"]) => {
            let yaml_start = start + first.len();
            let mut offset = yaml_start;
            for line in lines {
                if is_fence(line, &["---", "..."]) {
                    let body_offset = offset + line.len();
                    return Ok(Split {
                        yaml: Some(&text[yaml_start..offset]),
                        yaml_line: 2,
                        body_offset,
                        body: &text[body_offset..],
                    });
                }
                offset += line.len();
            }
            Err("frontmatter starts with `---` but is never closed by a `---` line".into())
        }
        _ => Ok(no_frontmatter),
    }
}

fn is_fence(line: &str, fences: &[&str]) -> bool {
    fences.contains(&line.trim_end_matches(['\n', '\r', ' ', '\t']))
}

/// The fields of a skill's frontmatter that eve reads.
#[derive(Debug, Default)]
pub struct Frontmatter {
    /// The `name` as written, and its 1-based file line.
    pub name: Option<(String, usize)>,
    /// The `description`, trimmed and not blank, and its 1-based file line.
    pub description: Option<(String, usize)>,
    pub license: Option<String>,
    /// `metadata` as written, any YAML value, as JSON.
    pub metadata: Option<serde_json::Value>,
    pub deferred: bool,
}

/// Reads the YAML between the fences. Returns `None` after reporting an error; a field
/// written with no value (`description:`) counts as not written.
pub fn read_frontmatter(
    yaml: &str,
    first_line: usize,
    src: &SourceFile,
    diags: &mut Diagnostics,
) -> Option<Frontmatter> {
    let value: serde_yaml::Value = match serde_yaml::from_str(yaml) {
        Ok(value) => value,
        Err(e) => {
            let message = e.to_string();
            let message = message.split(" at line ").next().unwrap_or(&message);
            let (line, column) = match duplicate_key_line(message, yaml) {
                // serde_yaml points at the first of the two; the mistake is the second.
                Some(line) => (first_line + line, None),
                None => e.location().map_or((first_line, None), |l| {
                    (first_line + l.line() - 1, Some(l.column()))
                }),
            };
            diags.push(
                Diagnostic::error(
                    code::FRONTMATTER,
                    format!("invalid YAML frontmatter: {message}"),
                )
                .at_line(src, line, column),
            );
            return None;
        }
    };
    let mapping = match value {
        serde_yaml::Value::Null => return Some(Frontmatter::default()),
        serde_yaml::Value::Mapping(mapping) => mapping,
        _ => {
            diags.push(
                Diagnostic::error(
                    code::FRONTMATTER,
                    "frontmatter must be a YAML mapping of `key: value` lines",
                )
                .at_line(src, first_line, None),
            );
            return None;
        }
    };
    let line_of = |key: &str| key_line(yaml, key, 1).map_or(first_line, |l| first_line + l);
    let mut front = Frontmatter::default();
    let mut ok = true;
    let mut wrong = |key: &str, expected: &str| {
        diags.push(
            Diagnostic::error(
                code::FRONTMATTER,
                format!("frontmatter `{key}` must be {expected}"),
            )
            .at_line(src, line_of(key), None),
        );
        ok = false;
    };
    for (key, value) in &mapping {
        let Some(key) = key.as_str() else { continue };
        let value = untagged(value);
        // A field is read only when the shape declares it, so the skill's JSON Schema
        // lists every field eve reads.
        match FRONTMATTER.key(key).map(|k| k.name) {
            Some("name") => match name_text(value) {
                Ok(Some(s)) => front.name = Some((s, line_of(key))),
                Ok(None) => {}
                Err(()) => wrong(key, "a string"),
            },
            Some("description") => match text(value) {
                Ok(Some(s)) if !s.trim().is_empty() => {
                    front.description = Some((s.trim().to_string(), line_of(key)));
                }
                Ok(_) => {}
                Err(()) => wrong(key, "a string"),
            },
            Some("license") => match text(value) {
                Ok(license) => front.license = license,
                Err(()) => wrong(key, "a string"),
            },
            Some("deferred") => match value {
                serde_yaml::Value::Bool(b) => front.deferred = *b,
                serde_yaml::Value::Null => {}
                _ => wrong(key, "true or false"),
            },
            Some("metadata") => front.metadata = Some(to_json(value)),
            // Other Agent Skills fields (`allowed-tools`, `compatibility`, …) are accepted.
            _ => {}
        }
    }
    ok.then_some(front)
}

/// The `name` field: a string, or a number taken as its text as YAML wrote it
/// (`name: 8004`, a skill named after a standard), as other clients read it.
fn name_text(value: &serde_yaml::Value) -> Result<Option<String>, ()> {
    match value {
        serde_yaml::Value::Number(n) => Ok(Some(n.to_string())),
        other => text(other),
    }
}

/// A string field: `Ok(None)` when written without a value, `Err` for another type.
fn text(value: &serde_yaml::Value) -> Result<Option<String>, ()> {
    match value {
        serde_yaml::Value::String(s) => Ok(Some(s.clone())),
        serde_yaml::Value::Null => Ok(None),
        _ => Err(()),
    }
}

fn untagged(value: &serde_yaml::Value) -> &serde_yaml::Value {
    match value {
        serde_yaml::Value::Tagged(tagged) => untagged(&tagged.value),
        other => other,
    }
}

/// Any YAML value as JSON: keys that are not strings are written as their YAML text,
/// numbers JSON cannot hold (`.nan`, `.inf`) as strings, tags dropped.
pub fn to_json(value: &serde_yaml::Value) -> serde_json::Value {
    use serde_json::Value as Json;
    match untagged(value) {
        serde_yaml::Value::Null => Json::Null,
        serde_yaml::Value::Bool(b) => Json::Bool(*b),
        serde_yaml::Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                Json::from(i)
            } else if let Some(u) = n.as_u64() {
                Json::from(u)
            } else {
                n.as_f64()
                    .and_then(serde_json::Number::from_f64)
                    .map_or_else(|| Json::String(n.to_string()), Json::Number)
            }
        }
        serde_yaml::Value::String(s) => Json::String(s.clone()),
        serde_yaml::Value::Sequence(items) => Json::Array(items.iter().map(to_json).collect()),
        serde_yaml::Value::Mapping(map) => Json::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = match to_json(k) {
                        Json::String(s) => s,
                        other => other.to_string(),
                    };
                    (key, to_json(v))
                })
                .collect(),
        ),
        serde_yaml::Value::Tagged(_) => Json::Null,
    }
}

/// For serde_yaml's "duplicate entry with key" error, the 0-based YAML line of the
/// second top-level occurrence of that key.
fn duplicate_key_line(message: &str, yaml: &str) -> Option<usize> {
    let key = message
        .strip_prefix("duplicate entry with key \"")?
        .strip_suffix('"')?;
    key_line(yaml, key, 2)
}

/// The 0-based line of the YAML text where a top-level `key:` is written for the
/// `nth` time (1 = the first).
fn key_line(yaml: &str, key: &str, nth: usize) -> Option<usize> {
    yaml.lines()
        .enumerate()
        .filter(|(_, line)| {
            line.strip_prefix(key)
                .is_some_and(|rest| rest.trim_start().starts_with(':'))
        })
        .nth(nth.checked_sub(1)?)
        .map(|(i, _)| i)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn read(yaml: &str) -> (Option<Frontmatter>, Vec<(String, Option<usize>)>) {
        let text = format!("---\n{yaml}---\nbody\n");
        let src = SourceFile::new("skills/s.md", text);
        let mut diags = Diagnostics::default();
        let front = read_frontmatter(yaml, 2, &src, &mut diags);
        let found = diags.into_iter().map(|d| (d.message, d.line)).collect();
        (front, found)
    }

    #[test]
    fn splits_frontmatter_and_body() {
        let text = "---\nname: a\n---\n# Title\n";
        let split = split_frontmatter(text).unwrap();
        assert_eq!(split.yaml, Some("name: a\n"));
        assert_eq!(split.body, "# Title\n");
        assert_eq!(split.body_offset, 16);
        assert!(split_frontmatter("---\nname: a\n").is_err());
        assert_eq!(split_frontmatter("no front\n").unwrap().yaml, None);
        assert_eq!(split_frontmatter("---").unwrap().yaml, None);
    }

    #[test]
    fn a_byte_order_mark_and_trailing_spaces_do_not_hide_the_frontmatter() {
        let text = "\u{feff}--- \r\ndescription: d\r\n---\t\r\nbody\r\n";
        let split = split_frontmatter(text).unwrap();
        assert_eq!(split.yaml, Some("description: d\r\n"));
        assert_eq!(split.body, "body\r\n");
        assert_eq!(&text[split.body_offset..], "body\r\n");
        // Without frontmatter the mark is not part of the body either.
        let split = split_frontmatter("\u{feff}# Title\n").unwrap();
        assert_eq!(
            (split.yaml, split.body, split.body_offset),
            (None, "# Title\n", 3)
        );
    }

    #[test]
    fn a_field_without_a_value_or_a_blank_description_is_not_written() {
        for yaml in [
            "description:\n",
            "description: \"\"\n",
            "description: '  '\n",
        ] {
            let (front, diags) = read(yaml);
            assert_eq!(diags, [], "{yaml}");
            assert!(front.unwrap().description.is_none(), "{yaml}");
        }
        let (front, _) = read("name:\nlicense:\ndeferred:\n");
        let front = front.unwrap();
        assert_eq!(
            (front.name, front.license, front.deferred),
            (None, None, false)
        );
    }

    #[test]
    fn metadata_takes_any_yaml_value() {
        let (front, diags) = read(
            "metadata:\n  version: 1.0\n  authors:\n    - name: A\n      org: B\n  nested: {a: [1, true, ~]}\n  7: seven\n",
        );
        assert_eq!(diags, []);
        assert_eq!(
            front.unwrap().metadata,
            Some(serde_json::json!({
                "version": 1.0,
                "authors": [{"name": "A", "org": "B"}],
                "nested": {"a": [1, true, null]},
                "7": "seven"
            }))
        );
        let (front, _) = read("metadata: [a, b]\n");
        assert_eq!(front.unwrap().metadata, Some(serde_json::json!(["a", "b"])));
    }

    #[test]
    fn a_duplicate_key_is_reported_at_its_second_occurrence() {
        let (front, diags) = read("description: one\nlicense: MIT\ndescription: two\n");
        assert!(front.is_none());
        assert_eq!(diags.len(), 1, "{diags:?}");
        assert!(diags[0].0.contains("duplicate entry with key"), "{diags:?}");
        assert_eq!(
            diags[0].1,
            Some(4),
            "the second `description` is on file line 4"
        );
    }

    #[test]
    fn a_numeric_name_is_taken_as_its_text() {
        let (front, diags) = read("name: 8004\ndescription: Trustless agents\n");
        assert_eq!(diags, []);
        assert_eq!(front.unwrap().name, Some(("8004".to_string(), 2)));
        let (front, diags) = read("name: [8004]\n");
        assert!(front.is_none());
        assert_eq!(diags[0].0, "frontmatter `name` must be a string");
    }

    #[test]
    fn wrong_types_name_their_key() {
        let (front, diags) = read("description: [a]\ndeferred: maybe\n");
        assert!(front.is_none());
        assert_eq!(
            diags,
            [
                (
                    "frontmatter `description` must be a string".to_string(),
                    Some(2)
                ),
                (
                    "frontmatter `deferred` must be true or false".to_string(),
                    Some(3)
                ),
            ]
        );
    }
}
