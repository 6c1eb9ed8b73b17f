//! Connections in the manifest: an MCP server's settings as written (no `${VAR}` value
//! resolved), and the tools a server lists, as eve keeps them.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::Approval;

/// One `connections/<name>.toml`: an MCP server whose tools the agent uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    /// From the file name; its tools reach the model as `<name>__<tool>`.
    pub name: String,
    pub description: Option<String>,
    pub transport: Transport,
    /// Whether a server that cannot start stops the build (without a cached listing) and
    /// the session; otherwise it is a warning and its tools are missing.
    pub required: bool,
    pub startup_timeout_secs: u64,
    /// Upper bound of one tool call, in seconds.
    pub timeout_secs: u64,
    /// Its tools are reached through the tool catalog (`search_tools`, `call_tool`).
    pub defer: bool,
    /// Glob patterns over the server's tool names; empty: every tool.
    pub allow: Vec<String>,
    pub block: Vec<String>,
    /// Approval per server tool name or glob (`"*"` for all).
    pub approval: BTreeMap<String, Approval>,
    /// `tools/<name>__<tool>.toml` files, by the final name they are written for.
    pub overrides: BTreeMap<String, ToolOverride>,
    /// SHA-256 of the connection file: the key of its cached listing.
    pub key: String,
    /// The file, relative to the agent directory (for messages).
    pub file: String,
}

/// How eve reaches the server. Values are as written: `${VAR}` stays a reference.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Transport {
    /// A process eve starts, speaking JSON-RPC on stdin and stdout.
    Stdio {
        /// The program and its arguments (`{{ agent_dir }}` and `{{ workspace }}` allowed).
        command: Vec<String>,
        /// Variables the server gets beside the minimal base; values may hold `${VAR}`.
        env: BTreeMap<String, String>,
        /// Where it runs, relative to the workspace; `None`: the workspace.
        cwd: Option<String>,
        /// Whether the server runs in the session's sandbox (`sandbox = false` opts out).
        #[serde(default = "yes")]
        sandbox: bool,
    },
    /// A streamable HTTP endpoint (or the older HTTP+SSE one).
    Http {
        url: String,
        /// Request headers; values may hold `${VAR}`.
        headers: BTreeMap<String, String>,
    },
}

/// What a `tools/<name>__<tool>.toml` file changes about one server tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolOverride {
    pub description: Option<String>,
    pub approval: Option<Approval>,
    pub disabled: bool,
    pub defer: Option<bool>,
    pub file: String,
}

/// One tool as a server lists it, checked and kept the way eve needs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerTool {
    /// The server's own name for it.
    pub name: String,
    pub description: String,
    /// An object JSON Schema (checked when the listing is read).
    pub input_schema: serde_json::Value,
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
}

/// A server's tools as eve listed them: what the build checks names against, kept in
/// `.eve/connections/<name>.json`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    /// The server's name and version, as it reported them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    pub tools: Vec<ServerTool>,
    /// Tools the server listed that eve cannot offer, and why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<LeftOutTool>,
}

/// A listed tool eve cannot offer (a broken schema, a duplicate name).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOutTool {
    pub name: String,
    pub reason: String,
}

/// The hints a server gives about a tool (MCP `ToolAnnotations`). Hints, not promises:
/// eve uses `read_only_hint` only to schedule calls side by side.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Annotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl Annotations {
    /// Whether the server gave no hint at all.
    pub fn is_empty(&self) -> bool {
        *self == Annotations::default()
    }
}

impl Connection {
    /// The names of the environment variables its `${VAR}` references read.
    pub fn variables(&self) -> Vec<String> {
        let values: Vec<&String> = match &self.transport {
            Transport::Stdio { env, .. } => env.values().collect(),
            Transport::Http { headers, .. } => headers.values().collect(),
        };
        let mut names: Vec<String> = values
            .into_iter()
            .flat_map(|v| references(v))
            .map(str::to_string)
            .collect();
        names.sort();
        names.dedup();
        names
    }
}

/// The variable names of the `${VAR}` references in `value` (`$$` is a literal `$`).
pub fn references(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            match tail.find('}') {
                Some(end) => {
                    out.push(&tail[..end]);
                    rest = &tail[end + 1..];
                }
                None => break,
            }
        } else {
            rest = after;
        }
    }
    out
}

fn yes() -> bool {
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_found_and_dollars_escaped() {
        assert_eq!(references("Bearer ${TOKEN}"), ["TOKEN"]);
        assert_eq!(references("${A}:${B}$$"), ["A", "B"]);
        assert_eq!(references("$${NOT} $5 ${"), Vec::<&str>::new());
    }
}
