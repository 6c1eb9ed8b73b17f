//! A server's `tools/list` replies read as hostile input: each tool checked on its own,
//! so a broken one is left out with the reason instead of failing the whole list.

use std::collections::HashSet;

use serde_json::Value;

use super::values::Redactor;
use crate::manifest::connection::{Annotations, LeftOutTool, Listing, ServerTool};

/// The most tools eve takes from one server.
pub const MAX_TOOLS: usize = 1000;
/// The most pages of `tools/list` eve follows.
pub const MAX_PAGES: usize = 100;
/// Longer descriptions are cut (a hostile server could fill the context with one).
pub const MAX_DESCRIPTION: usize = 8000;
/// A larger input schema leaves its tool out.
pub const MAX_SCHEMA_BYTES: usize = 64 * 1024;
/// A longer name leaves its tool out (MCP's tool-name rule: 1 to 128 characters).
pub const MAX_NAME: usize = 128;

/// Collects the pages of one listing.
#[derive(Debug, Default)]
pub struct Builder {
    listing: Listing,
    seen: HashSet<String>,
}

impl Builder {
    /// Adds one page (the `result` of `tools/list`); returns the next cursor, if any.
    pub fn page(&mut self, result: &Value) -> Result<Option<String>, String> {
        let Some(tools) = result.get("tools").and_then(Value::as_array) else {
            return Err("its reply to tools/list holds no `tools` list".into());
        };
        for item in tools {
            let name = item
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if self.listing.tools.len() >= MAX_TOOLS {
                self.leave_out(
                    name,
                    format!("the server lists more than {MAX_TOOLS} tools"),
                );
                continue;
            }
            match tool(item) {
                Ok(tool) if !self.seen.insert(tool.name.clone()) => {
                    self.leave_out(tool.name, "the server lists this name twice".into());
                }
                Ok(tool) => self.listing.tools.push(tool),
                Err(reason) => self.leave_out(name, reason),
            }
        }
        Ok(result
            .get("nextCursor")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_string))
    }

    fn leave_out(&mut self, name: String, reason: String) {
        // A flood of broken tools must not become a flood of warnings.
        if self.listing.left_out.len() < 50 {
            let name = if name.is_empty() {
                "(no name)".into()
            } else {
                name
            };
            self.listing.left_out.push(LeftOutTool { name, reason });
        }
    }

    /// The listing, with the server's name and every secret value redacted.
    pub fn finish(mut self, server: Option<String>, secrets: &Redactor) -> Listing {
        self.listing.server = server.map(|s| secrets.redact(&s));
        for tool in &mut self.listing.tools {
            tool.description = secrets.redact(&tool.description);
            secrets.redact_json(&mut tool.input_schema);
            if let Some(title) = &mut tool.annotations.title {
                *title = secrets.redact(title);
            }
        }
        for left in &mut self.listing.left_out {
            left.name = crate::text::for_terminal(&secrets.redact(&left.name)).into_owned();
            left.reason = secrets.redact(&left.reason);
        }
        self.listing
    }
}

/// MCP's rule for tool names (specification 2025-11-25, "Tool names"): 1 to 128 of
/// `A-Z a-z 0-9 _ - .`. A name outside it (a space, a bidirectional override, a
/// look-alike letter) is left out rather than shown to a person or a model.
fn is_tool_name(name: &str) -> bool {
    (1..=MAX_NAME).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

fn tool(item: &Value) -> Result<ServerTool, String> {
    let name = item
        .get("name")
        .and_then(Value::as_str)
        .filter(|n| !n.is_empty())
        .ok_or("it has no name")?;
    if name.len() > MAX_NAME {
        return Err(format!("its name is longer than {MAX_NAME} characters"));
    }
    if !is_tool_name(name) {
        return Err(
            "its name breaks MCP's rule for tool names (ASCII letters, digits, `_`, `-` and `.`)"
                .into(),
        );
    }
    let description = item
        .get("description")
        .and_then(Value::as_str)
        .map(|d| crate::text::shorten(d.trim(), MAX_DESCRIPTION))
        .unwrap_or_default();
    let mut schema = match item.get("inputSchema") {
        Some(Value::Object(schema)) => schema.clone(),
        Some(_) => return Err("its input schema is not a JSON object".into()),
        None => return Err("it has no input schema".into()),
    };
    match schema.get("type") {
        None => {
            schema.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(_) => return Err("its input schema does not describe an object".into()),
    }
    let schema = Value::Object(schema);
    if schema.to_string().len() > MAX_SCHEMA_BYTES {
        return Err(format!(
            "its input schema is larger than {} KiB",
            MAX_SCHEMA_BYTES / 1024
        ));
    }
    if let Err(e) = jsonschema::validator_for(&schema) {
        return Err(format!(
            "its input schema is not a valid JSON Schema: {}",
            crate::text::shorten(&e.to_string(), 200)
        ));
    }
    let hints = item.get("annotations");
    let flag = |key: &str| hints.and_then(|h| h.get(key)).and_then(Value::as_bool);
    let annotations = Annotations {
        title: hints
            .and_then(|h| h.get("title"))
            .or_else(|| item.get("title"))
            .and_then(Value::as_str)
            .map(|t| crate::text::shorten(t, 200)),
        read_only_hint: flag("readOnlyHint"),
        destructive_hint: flag("destructiveHint"),
        idempotent_hint: flag("idempotentHint"),
        open_world_hint: flag("openWorldHint"),
    };
    Ok(ServerTool {
        name: name.to_string(),
        description,
        input_schema: schema,
        annotations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_broken_tool_is_left_out_and_the_rest_are_kept() {
        let mut builder = Builder::default();
        let next = builder
            .page(&json!({
                "tools": [
                    {"name": "good", "description": "Works", "inputSchema": {"type": "object"},
                     "annotations": {"readOnlyHint": true, "destructiveHint": "yes"}},
                    {"name": "untyped", "inputSchema": {"properties": {"a": {"type": "string"}}}},
                    {"name": "array", "inputSchema": {"type": "array"}},
                    {"name": "broken", "inputSchema": {"type": "object", "properties": {"a": {"type": 5}}}},
                    {"name": "noschema"},
                    {"description": "nameless", "inputSchema": {"type": "object"}},
                    {"name": "good", "inputSchema": {"type": "object"}},
                    {"name": "bell\u{7}", "inputSchema": {"type": "object"}},
                    "not an object",
                    {"name": "ok\u{202e}exe.gnp", "inputSchema": {"type": "object"}},
                    {"name": "with space", "inputSchema": {"type": "object"}},
                    {"name": "x".repeat(129), "inputSchema": {"type": "object"}},
                    {"name": "Get.user-2_b", "inputSchema": {"type": "object"}}
                ],
                "nextCursor": "2"
            }))
            .unwrap();
        assert_eq!(next.as_deref(), Some("2"));
        let listing = builder.finish(Some("test 1.0".into()), &Redactor::default());
        let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["good", "untyped", "Get.user-2_b"]);
        assert_eq!(listing.tools[0].annotations.read_only_hint, Some(true));
        assert_eq!(listing.tools[0].annotations.destructive_hint, None);
        assert_eq!(listing.tools[1].input_schema["type"], "object");
        let left: Vec<(&str, &str)> = listing
            .left_out
            .iter()
            .map(|l| (l.name.as_str(), l.reason.as_str()))
            .collect();
        assert_eq!(
            left[0],
            ("array", "its input schema does not describe an object")
        );
        assert!(
            left[1]
                .1
                .starts_with("its input schema is not a valid JSON Schema"),
            "{left:?}"
        );
        assert_eq!(left[2], ("noschema", "it has no input schema"));
        assert_eq!(left[3], ("(no name)", "it has no name"));
        assert_eq!(left[4], ("good", "the server lists this name twice"));
        let rule =
            "its name breaks MCP's rule for tool names (ASCII letters, digits, `_`, `-` and `.`)";
        assert_eq!(left[5], ("bell\\u{7}", rule));
        assert_eq!(left[6], ("(no name)", "it has no name"));
        assert_eq!(
            left[7],
            ("ok\\u{202e}exe.gnp", rule),
            "kept escaped for the terminal"
        );
        assert_eq!(left[8], ("with space", rule));
        assert_eq!(left[9].1, "its name is longer than 128 characters");
    }

    #[test]
    fn a_reply_without_tools_is_an_error_and_huge_parts_are_bounded() {
        let mut builder = Builder::default();
        assert!(builder.page(&json!({"content": []})).is_err());
        let huge = "d".repeat(100_000);
        builder
            .page(&json!({"tools": [{"name": "t", "description": huge, "inputSchema": {"type": "object"}}]}))
            .unwrap();
        let listing = builder.finish(None, &Redactor::default());
        assert_eq!(
            listing.tools[0].description.chars().count(),
            MAX_DESCRIPTION + 1
        );
    }
}
