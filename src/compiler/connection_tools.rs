//! The tools a connection offers: final names (`<connection>__<tool>`, shortened when a
//! provider would refuse them), `allow` and `block` applied, approvals and overrides
//! resolved. The build (from a listing) and the run (from the live server) use this one
//! function, so both see the same tools.

use std::collections::BTreeMap;

use globset::{Glob, GlobMatcher};
use sha2::{Digest, Sha256};

use crate::manifest::connection::{Connection, ServerTool};
use crate::manifest::{Approval, Executor, Tool, ToolSource};

/// The longest tool name the providers accept.
pub const MAX_NAME: usize = 64;

/// Whether every provider accepts `name` as a tool name: `^[a-zA-Z0-9_-]{1,64}$`.
pub fn is_provider_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The name the model sees for `tool` of `connection`: `<connection>__<tool>`, or, when
/// that is too long or holds other characters, those characters replaced by `_`, cut to
/// 55 and followed by `_` and 8 hex digits of the full name's SHA-256 (so two long names
/// that share a beginning stay apart).
pub fn final_name(connection: &str, tool: &str) -> String {
    let full = format!("{connection}__{tool}");
    if is_provider_name(&full) {
        return full;
    }
    let clean: String = full
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(MAX_NAME - 9)
        .collect();
    let hash = crate::text::hex(&Sha256::digest(full.as_bytes()));
    format!("{clean}_{}", &hash[..8])
}

/// A compiled `allow`/`block`/`approval` pattern: a glob, or a plain name.
#[derive(Debug, Clone)]
pub struct Pattern {
    pub text: String,
    glob: Option<GlobMatcher>,
}

impl Pattern {
    /// The pattern for `text`; a text without glob characters matches only itself.
    pub fn new(text: &str) -> Pattern {
        let glob = text
            .contains(['*', '?', '[', '{'])
            .then(|| Glob::new(text).ok().map(|g| g.compile_matcher()))
            .flatten();
        Pattern {
            text: text.to_string(),
            glob,
        }
    }

    /// Whether a glob pattern (rather than a plain name).
    pub fn is_glob(&self) -> bool {
        self.glob.is_some()
    }

    pub fn matches(&self, name: &str) -> bool {
        match &self.glob {
            Some(glob) => glob.is_match(name),
            None => self.text == name,
        }
    }
}

/// Why a listed tool is not offered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftOut {
    /// No `allow` pattern matches it.
    NotAllowed,
    /// A `block` pattern matches it.
    Blocked(String),
    /// `tools/<final name>.toml` says `disabled = true`.
    Disabled(String),
}

/// What becomes of one listed tool.
#[derive(Debug, Clone, PartialEq)]
pub struct Offer {
    /// The server's name for it.
    pub server_name: String,
    pub final_name: String,
    /// The tool as the model would see it (also built for tools left out, so
    /// `eve connections` can show them).
    pub tool: Tool,
    pub left_out: Option<LeftOut>,
}

/// The filters of one connection, compiled once.
#[derive(Debug, Clone)]
struct Filters {
    allow: Vec<Pattern>,
    block: Vec<Pattern>,
    approval: Vec<(Pattern, Approval)>,
}

impl Filters {
    fn new(connection: &Connection) -> Filters {
        Filters {
            allow: connection.allow.iter().map(|p| Pattern::new(p)).collect(),
            block: connection.block.iter().map(|p| Pattern::new(p)).collect(),
            approval: connection
                .approval
                .iter()
                .map(|(p, a)| (Pattern::new(p), *a))
                .collect(),
        }
    }

    fn left_out(&self, name: &str) -> Option<LeftOut> {
        if !self.allow.is_empty() && !self.allow.iter().any(|p| p.matches(name)) {
            return Some(LeftOut::NotAllowed);
        }
        self.block
            .iter()
            .find(|p| p.matches(name))
            .map(|p| LeftOut::Blocked(p.text.clone()))
    }

    /// An entry naming the tool decides; among patterns, `always` wins.
    fn approval(&self, name: &str) -> Approval {
        if let Some((_, approval)) = self
            .approval
            .iter()
            .find(|(p, _)| !p.is_glob() && p.text == name)
        {
            return *approval;
        }
        let mut matched = self.approval.iter().filter(|(p, _)| p.matches(name));
        if matched.any(|(_, a)| *a == Approval::Always) {
            Approval::Always
        } else {
            Approval::Never
        }
    }
}

/// What `connection` makes of the tools its server lists, in the server's order.
pub fn offer(connection: &Connection, tools: &[ServerTool]) -> Vec<Offer> {
    let filters = Filters::new(connection);
    tools
        .iter()
        .map(|server| {
            let final_name = final_name(&connection.name, &server.name);
            let over = connection.overrides.get(&final_name);
            let description = over
                .and_then(|o| o.description.clone())
                .or_else(|| Some(server.description.clone()).filter(|d| !d.trim().is_empty()))
                .or_else(|| server.annotations.title.clone())
                .unwrap_or_else(|| {
                    format!(
                        "The `{}` tool of the `{}` connection.",
                        server.name, connection.name
                    )
                });
            let tool = Tool {
                name: final_name.clone(),
                description,
                input_schema: server.input_schema.clone(),
                source: ToolSource::Connection,
                approval: over
                    .and_then(|o| o.approval)
                    .unwrap_or_else(|| filters.approval(&server.name)),
                timeout_secs: connection.timeout_secs,
                read_only: server.annotations.read_only_hint == Some(true),
                executor: Executor::Mcp {
                    connection: connection.name.clone(),
                    tool: server.name.clone(),
                    annotations: server.annotations.clone(),
                },
                settings: BTreeMap::new(),
                defer: over.and_then(|o| o.defer).unwrap_or(connection.defer),
            };
            let left_out = match over {
                Some(o) if o.disabled => Some(LeftOut::Disabled(o.file.clone())),
                _ => filters.left_out(&server.name),
            };
            Offer {
                server_name: server.name.clone(),
                final_name,
                tool,
                left_out,
            }
        })
        .collect()
}

/// The tools of `connection` the model is offered (or reaches through the catalog).
pub fn offered(connection: &Connection, tools: &[ServerTool]) -> Vec<Tool> {
    offer(connection, tools)
        .into_iter()
        .filter(|o| o.left_out.is_none())
        .map(|o| o.tool)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::connection::{Annotations, ToolOverride, Transport};
    use pretty_assertions::assert_eq;

    fn connection() -> Connection {
        Connection {
            name: "gh".into(),
            description: None,
            transport: Transport::Http {
                url: "http://127.0.0.1:1/mcp".into(),
                headers: BTreeMap::new(),
            },
            required: true,
            startup_timeout_secs: 30,
            timeout_secs: 120,
            defer: false,
            allow: vec!["get_*".into(), "create_issue".into()],
            block: vec!["get_secret*".into()],
            approval: [
                ("*".to_string(), Approval::Always),
                ("get_issue".to_string(), Approval::Never),
            ]
            .into(),
            overrides: BTreeMap::new(),
            key: String::new(),
            file: "connections/gh.toml".into(),
        }
    }

    fn tool(name: &str, read_only: bool) -> ServerTool {
        ServerTool {
            name: name.into(),
            description: format!("Does {name}"),
            input_schema: serde_json::json!({"type": "object"}),
            annotations: Annotations {
                read_only_hint: read_only.then_some(true),
                ..Annotations::default()
            },
        }
    }

    #[test]
    fn names_are_prefixed_and_shortened_deterministically() {
        assert_eq!(final_name("fs", "read_file"), "fs__read_file");
        assert_eq!(final_name("ev", "get-env"), "ev__get-env");
        let dotted = final_name("fs", "read.file");
        assert_eq!(dotted.len(), "fs__read_file".len() + 9);
        assert!(dotted.starts_with("fs__read_file_"), "{dotted}");
        assert_ne!(
            dotted,
            final_name("fs", "read file"),
            "a hash keeps them apart"
        );
        let long = "x".repeat(80);
        let a = final_name("conn", &long);
        assert_eq!(a.len(), 64);
        assert!(is_provider_name(&a), "{a}");
        assert_eq!(a, final_name("conn", &long), "deterministic");
        assert_ne!(a, final_name("conn", &format!("{long}y")));
        assert!(is_provider_name(&final_name("c", "naïve ✓ tool")));
    }

    #[test]
    fn allow_block_approval_and_overrides_decide_each_tool() {
        let mut connection = connection();
        connection.overrides.insert(
            "gh__get_pr".into(),
            ToolOverride {
                description: Some("Reads a PR".into()),
                defer: Some(true),
                ..ToolOverride::default()
            },
        );
        connection.overrides.insert(
            "gh__get_user".into(),
            ToolOverride {
                disabled: true,
                file: "tools/gh__get_user.toml".into(),
                ..ToolOverride::default()
            },
        );
        let tools = [
            tool("get_issue", true),
            tool("get_pr", true),
            tool("create_issue", false),
            tool("delete_repo", false),
            tool("get_secret_key", true),
            tool("get_user", true),
        ];
        let offers = offer(&connection, &tools);
        let summary: Vec<_> = offers
            .iter()
            .map(|o| {
                (
                    o.final_name.as_str(),
                    o.tool.approval,
                    o.tool.read_only,
                    o.tool.defer,
                    o.left_out.clone(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                ("gh__get_issue", Approval::Never, true, false, None),
                ("gh__get_pr", Approval::Always, true, true, None),
                ("gh__create_issue", Approval::Always, false, false, None),
                (
                    "gh__delete_repo",
                    Approval::Always,
                    false,
                    false,
                    Some(LeftOut::NotAllowed)
                ),
                (
                    "gh__get_secret_key",
                    Approval::Always,
                    true,
                    false,
                    Some(LeftOut::Blocked("get_secret*".into()))
                ),
                (
                    "gh__get_user",
                    Approval::Always,
                    true,
                    false,
                    Some(LeftOut::Disabled("tools/gh__get_user.toml".into()))
                ),
            ]
        );
        assert_eq!(offers[1].tool.description, "Reads a PR");
        assert_eq!(offers[0].tool.description, "Does get_issue");
        assert_eq!(
            offered(&connection, &tools)
                .iter()
                .map(|t| t.name.as_str())
                .collect::<Vec<_>>(),
            ["gh__get_issue", "gh__get_pr", "gh__create_issue"]
        );
    }
}
