//! Claude Code's frontmatter, read the way Claude Code reads it: YAML when it is YAML,
//! and otherwise — about one public agent file in ten has descriptions with unquoted
//! `Examples:` or `user:` in them, which YAML refuses — the known keys read by hand, one
//! `key: value` line each (continued by the lines under it), with a warning.

use serde_yaml::Value;

use crate::compiler::skills::frontmatter::split_frontmatter;

/// A file's frontmatter and body.
#[derive(Debug, Clone, PartialEq)]
pub struct Front {
    /// The fields in file order (YAML mapping order).
    pub fields: Vec<(String, Value)>,
    pub body: String,
    /// Why the YAML was read by hand, if it was.
    pub lenient: Option<String>,
}

impl Front {
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.fields.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The field as a trimmed string that is not blank (numbers and booleans as written).
    pub fn text(&self, key: &str) -> Option<String> {
        let text = match self.get(key)? {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => return None,
        };
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_string())
    }
}

/// Reads `text`. `known` are the keys the hand reader recognises at the start of a
/// line; any other `word:` line is part of the value above it.
pub fn read(text: &str, known: &[&str]) -> Front {
    let split = match split_frontmatter(text) {
        Ok(split) => split,
        Err(why) => {
            return Front {
                fields: Vec::new(),
                body: text.to_string(),
                lenient: Some(format!("{why}; the whole file is read as the body")),
            };
        }
    };
    let body = split.body.to_string();
    let Some(yaml) = split.yaml else {
        return Front {
            fields: Vec::new(),
            body,
            lenient: None,
        };
    };
    match serde_yaml::from_str::<Value>(yaml) {
        Ok(Value::Mapping(map)) => Front {
            fields: map
                .into_iter()
                .filter_map(|(k, v)| k.as_str().map(|k| (k.to_string(), v)))
                .collect(),
            body,
            lenient: None,
        },
        Ok(Value::Null) => Front {
            fields: Vec::new(),
            body,
            lenient: None,
        },
        Ok(_) => Front {
            fields: by_hand(yaml, known),
            body,
            lenient: Some("the frontmatter is not a YAML mapping".into()),
        },
        Err(e) => Front {
            fields: by_hand(yaml, known),
            body,
            lenient: Some(format!(
                "the frontmatter is not valid YAML ({})",
                first_line(&e.to_string())
            )),
        },
    }
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or(text)
}

/// The known keys at the start of a line, each with the rest of its line and the lines
/// under it up to the next known key. A value of `- item` lines is a list; a value in
/// matching quotes loses them; `>` and `|` block markers are dropped.
fn by_hand(yaml: &str, known: &[&str]) -> Vec<(String, Value)> {
    let mut fields: Vec<(String, Vec<String>)> = Vec::new();
    for line in yaml.lines() {
        let key = line
            .split_once(':')
            .map(|(k, _)| k)
            .filter(|k| known.contains(k));
        match key {
            Some(key) => {
                let rest = line[key.len() + 1..].trim();
                fields.push((key.to_string(), vec![rest.to_string()]));
            }
            None => {
                if let Some((_, lines)) = fields.last_mut() {
                    lines.push(line.to_string());
                }
            }
        }
    }
    fields
        .into_iter()
        .filter(|(key, _)| !key.is_empty())
        .map(|(key, lines)| (key, value(&lines)))
        .collect()
}

fn value(lines: &[String]) -> Value {
    let first = lines.first().map_or("", |l| l.as_str());
    let rest: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.trim())
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if first.is_empty() && !rest.is_empty() && rest.iter().all(|l| l.starts_with("- ")) {
        return Value::Sequence(
            rest.iter()
                .map(|l| Value::String(unquote(l[2..].trim()).to_string()))
                .collect(),
        );
    }
    let first = if matches!(first, ">" | "|" | ">-" | "|-" | ">+" | "|+") {
        ""
    } else {
        first
    };
    let mut text = first.to_string();
    for line in &lines[1..] {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(line.trim());
    }
    Value::String(unquote(text.trim()).to_string())
}

fn unquote(text: &str) -> &str {
    for quote in ['"', '\''] {
        if text.len() >= 2 && text.starts_with(quote) && text.ends_with(quote) {
            return &text[1..text.len() - 1];
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const KNOWN: &[&str] = &["name", "description", "tools", "model", "color"];

    #[test]
    fn valid_yaml_is_read_as_yaml() {
        let front = read(
            "---\nname: a\ndescription: >\n  Two\n  lines\ntools: [Read, Grep]\n---\nBody\n",
            KNOWN,
        );
        assert_eq!(front.lenient, None);
        assert_eq!(front.text("description").as_deref(), Some("Two lines"));
        assert_eq!(front.body, "Body\n");
        assert!(matches!(front.get("tools"), Some(Value::Sequence(s)) if s.len() == 2));
    }

    #[test]
    fn invalid_yaml_is_read_by_hand() {
        let text = "---\nname: code-reviewer\ndescription: Use this agent after code changes. Examples: <example>Context: a PR\nuser: \"Review it\"\nassistant: \"I'll use the code-reviewer agent\"</example>\ntools: Read, Grep\nmodel: sonnet\ncolor: red\n---\nYou review code.\n";
        let front = read(text, KNOWN);
        assert!(
            front
                .lenient
                .as_deref()
                .unwrap()
                .starts_with("the frontmatter is not valid YAML")
        );
        assert_eq!(front.text("name").as_deref(), Some("code-reviewer"));
        assert_eq!(
            front.text("description").as_deref(),
            Some(
                "Use this agent after code changes. Examples: <example>Context: a PR\nuser: \"Review it\"\nassistant: \"I'll use the code-reviewer agent\"</example>"
            )
        );
        assert_eq!(front.text("tools").as_deref(), Some("Read, Grep"));
        assert_eq!(front.text("model").as_deref(), Some("sonnet"));
        assert_eq!(front.body, "You review code.\n");
    }

    #[test]
    fn lists_and_quotes_by_hand() {
        let text =
            "---\nname: \"x: y\"\ntools:\n  - Read\n  - 'Bash(git:*)'\ndescription: a: b\n---\n";
        let front = read(text, KNOWN);
        assert!(front.lenient.is_some());
        assert_eq!(front.text("name").as_deref(), Some("x: y"));
        assert_eq!(
            front.get("tools"),
            Some(&Value::Sequence(vec![
                Value::String("Read".into()),
                Value::String("Bash(git:*)".into())
            ]))
        );
    }

    #[test]
    fn no_or_unclosed_frontmatter_is_all_body() {
        let front = read("Just a prompt.\n", KNOWN);
        assert_eq!((front.fields.len(), front.lenient), (0, None));
        let front = read("---\nname: a\nno end\n", KNOWN);
        assert!(front.lenient.as_deref().unwrap().contains("never closed"));
        assert_eq!(front.body, "---\nname: a\nno end\n");
    }
}
