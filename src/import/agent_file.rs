//! One Claude Code agent file (`.claude/agents/*.md`, a plugin's `agents/*.md`) as an eve
//! subagent: `subagents/<name>/agent.toml` from the frontmatter, `instructions.md` from
//! the body (kept literal), `tools/` files for the tools it lists, and `connections/`
//! for the MCP servers it may use.

use std::collections::{BTreeMap, BTreeSet};

use serde_yaml::Value;

use super::frontmatter::Front;
use super::literal::literal;
use super::mcp::{Server, toml_string};
use super::model::{self, Model};
use super::report::{Note, shown};
use super::slug::{slug, unique};
use super::tool_names::{self, Mapped};

/// The frontmatter keys of a Claude Code agent file.
pub const KEYS: &[&str] = &[
    "name",
    "description",
    "tools",
    "disallowedTools",
    "model",
    "color",
    "permissionMode",
    "maxTurns",
    "skills",
    "hooks",
    "mcpServers",
    "memory",
    "background",
    "isolation",
    "effort",
    "initialPrompt",
];

/// A subagent made from an agent file.
#[derive(Debug, Clone, PartialEq)]
pub struct Subagent {
    /// Its folder's name under `subagents/`.
    pub name: String,
    /// Paths relative to its folder, and contents.
    pub files: Vec<(String, String)>,
    pub notes: Vec<Note>,
}

/// What the agent file's plugin offers it.
pub struct Context<'a> {
    /// The plugin's MCP servers (each subagent gets its own copy of those it may use).
    pub servers: &'a [Server],
    /// Where the servers came from, for the files' comments.
    pub servers_from: &'a str,
    /// The plugin's name, for Claude Code's `mcp__plugin_<plugin>_<server>__<tool>` names.
    pub plugin: Option<&'a str>,
    /// Whether a subagent name is taken (by another subagent, or a tool of the parent).
    pub taken: &'a dyn Fn(&str) -> bool,
}

/// Converts the agent file `rel` (read as `front`).
pub fn convert(front: &Front, rel: &str, cx: &Context<'_>) -> Subagent {
    let mut notes = Vec::new();
    if let Some(why) = &front.lenient {
        notes.push(Note::Warning(format!(
            "{why}: `name`, `description` and the other fields were read line by line; check `agent.toml`"
        )));
    }
    let name = subagent_name(front, rel, cx, &mut notes);

    let mut toml = format!(
        "# Imported by `eve import claude` from {} (a Claude Code subagent).\n",
        shown(rel)
    );
    let description = match front.text("description") {
        Some(d) => d,
        None => {
            let derived = crate::compiler::skills::derive_description(&front.body)
                .unwrap_or_else(|| format!("The subagent `{name}`"));
            notes.push(Note::Changed(format!(
                "no `description`: the parent's model reads `{}` to decide when to use it",
                shown(&derived)
            )));
            derived
        }
    };
    toml.push_str(&format!("description = {}\n", toml_text(&description)));
    if let Some(value) = front.text("model") {
        match model::map(&value) {
            Model::Inherit => {}
            Model::Ref(id, note) => {
                toml.push_str(&format!("model = {}\n", toml_string(&id)));
                notes.extend(note.map(|n| Note::Changed(format!("model {n}"))));
            }
            Model::Unknown(why) => notes.push(Note::Dropped(format!("model {why}"))),
        }
    }

    let tools = tool_list(front.get("tools"));
    let disallowed = tool_list(front.get("disallowedTools")).unwrap_or_default();
    let plan = plan_tools(tools.as_deref(), &disallowed, cx, &mut notes);
    if plan.restricted {
        toml.push_str("default_tools = false\n");
    }
    if let Some(turns) = front.get("maxTurns") {
        match turns.as_u64().filter(|n| *n >= 1) {
            Some(n) => {
                toml.push_str(&format!("\n[limits]\nmax_steps = {n}\n"));
                notes.push(Note::Changed(format!(
                    "`maxTurns: {n}` → `[limits] max_steps = {n}`"
                )));
            }
            None => notes.push(Note::Dropped(
                "`maxTurns`: not a positive whole number".to_string(),
            )),
        }
    }
    for (key, value) in &front.fields {
        if !matches!(
            key.as_str(),
            "name" | "description" | "model" | "tools" | "disallowedTools" | "maxTurns"
        ) {
            notes.push(Note::Dropped(dropped_field(key, value)));
        }
    }

    let mut files = vec![("agent.toml".to_string(), toml)];
    files.push((
        "instructions.md".to_string(),
        instructions(&front.body, &name, &mut notes),
    ));
    files.extend(plan.files(cx.servers_from));
    Subagent { name, files, notes }
}

/// The subagent's name: its `name` (or the file's), as a folder name no tool of the
/// parent has.
fn subagent_name(front: &Front, rel: &str, cx: &Context<'_>, notes: &mut Vec<Note>) -> String {
    let written = written_name(front, rel);
    let base = slug(&written).unwrap_or_else(|| "agent".to_string());
    let base = if (cx.taken)(&base) && crate::tools::builtin::CATALOG.find(&base).is_some() {
        format!("{base}-agent")
    } else {
        base
    };
    let name = unique(&base, cx.taken);
    if name != written {
        notes.push(Note::Changed(format!(
            "name `{}` → `{name}` (a subagent is named after its folder: lowercase letters, digits, `-` and `_`, and no tool of the parent's name)",
            shown(&written)
        )));
    }
    name
}

/// The agent's name as the file gives it: its `name`, else the file's name.
pub fn written_name(front: &Front, rel: &str) -> String {
    let stem = rel
        .rsplit('/')
        .next()
        .unwrap_or(rel)
        .trim_end_matches(".md");
    front.text("name").unwrap_or_else(|| stem.to_string())
}

/// `instructions.md`: the agent file's body, kept literal.
fn instructions(body: &str, name: &str, notes: &mut Vec<Note>) -> String {
    let body = body.trim_matches('\n');
    if body.trim().is_empty() {
        notes.push(Note::Changed(
            "the agent file has no body: `instructions.md` only names the subagent".into(),
        ));
        format!("You are the subagent `{name}`.\n")
    } else {
        let text = literal(body);
        if text != body {
            notes.push(Note::Changed(
                "the body holds `{{`, `{%` or `{#`: `instructions.md` wraps it in `{% raw %}` so the model reads it as written".into(),
            ));
        }
        format!("{text}\n")
    }
}

/// A TOML string for a value that may span lines: a multi-line literal string when it
/// can be one, otherwise a basic string with escapes.
fn toml_text(value: &str) -> String {
    if value.contains('\n')
        && !value.contains("'''")
        && !value
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        format!("'''\n{value}'''")
    } else {
        toml_string(value)
    }
}

/// A `tools` value as entries: a comma-separated string or a list; `None` when the
/// field is absent or empty (Claude Code then gives every tool).
fn tool_list(value: Option<&Value>) -> Option<Vec<String>> {
    let entries: Vec<String> = match value? {
        Value::String(s) => s.split(',').map(|e| e.trim().to_string()).collect(),
        Value::Sequence(items) => items
            .iter()
            .filter_map(|i| i.as_str().map(|s| s.trim().to_string()))
            .collect(),
        _ => return None,
    };
    let entries: Vec<String> = entries.into_iter().filter(|e| !e.is_empty()).collect();
    (!entries.is_empty()).then_some(entries)
}

/// A server a subagent may use: its `[tools] allow` (`None`: all its tools) and `block`.
struct Use<'a> {
    server: &'a Server,
    allow: Option<Vec<String>>,
    block: Vec<String>,
}

/// What the subagent's tools are.
struct Plan<'a> {
    /// `default_tools = false`: only the listed tools.
    restricted: bool,
    opted_in: BTreeSet<&'static str>,
    disabled: BTreeSet<&'static str>,
    /// The servers it may use, by connection name.
    servers: BTreeMap<&'a str, Use<'a>>,
}

impl Plan<'_> {
    /// The `tools/` and `connections/` files that make the plan.
    fn files(&self, servers_from: &str) -> Vec<(String, String)> {
        let mut files = Vec::new();
        for builtin in &self.opted_in {
            files.push((
                format!("tools/{builtin}.toml"),
                "# Opted in: the Claude Code agent lists this tool (`default_tools = false` leaves out the others).\n"
                    .to_string(),
            ));
        }
        for builtin in &self.disabled {
            files.push((
                format!("tools/{builtin}.toml"),
                "# The Claude Code agent's `disallowedTools` names this tool.\ndisabled = true\n"
                    .to_string(),
            ));
        }
        for used in self.servers.values() {
            files.push((
                format!("connections/{}.toml", used.server.name),
                used.server
                    .file(servers_from, 2, used.allow.as_deref(), &used.block),
            ));
        }
        files
    }
}

impl<'a> Plan<'a> {
    /// Lets the subagent use the MCP tool `entry` (`mcp__` then `rest`) lists: the line
    /// saying what it became, or the note saying why it cannot.
    fn allow_mcp(&mut self, entry: &str, rest: &str, cx: &Context<'a>) -> Result<String, Note> {
        match mcp_tool(rest, cx) {
            Some((server, tool)) => {
                let allow = &mut self
                    .servers
                    .entry(&server.name)
                    .or_insert(Use {
                        server,
                        allow: Some(Vec::new()),
                        block: Vec::new(),
                    })
                    .allow;
                let shown_as = match &tool {
                    Some(tool) => {
                        if let Some(allow) = allow {
                            allow.push(tool.clone());
                        }
                        format!("`{}__{tool}`", server.name)
                    }
                    None => {
                        *allow = None;
                        format!("every tool of connection `{}`", server.name)
                    }
                };
                Ok(format!("`{}` → {shown_as}", shown(entry)))
            }
            None => Err(Note::Dropped(format!(
                "tool `{}`: no MCP server of that name in the imported files",
                shown(entry)
            ))),
        }
    }

    /// Leaves out what `disallowedTools` names.
    fn disallow(&mut self, disallowed: &[String], cx: &Context<'a>, notes: &mut Vec<Note>) {
        for entry in disallowed {
            if let Some(rest) = entry.strip_prefix("mcp__") {
                match mcp_tool(rest, cx) {
                    Some((server, Some(tool))) => {
                        if let Some(used) = self.servers.get_mut(server.name.as_str()) {
                            used.block.push(tool);
                        }
                    }
                    Some((server, None)) => {
                        self.servers.remove(server.name.as_str());
                    }
                    None => notes.push(Note::Dropped(format!(
                        "disallowed tool `{}`: no MCP server of that name in the imported files",
                        shown(entry)
                    ))),
                }
                continue;
            }
            let (name, _) = tool_names::split_rule(entry);
            match tool_names::map(name) {
                Some(Mapped::Builtin(builtin)) => {
                    if !self.opted_in.remove(builtin) && !self.restricted {
                        self.disabled.insert(builtin);
                    }
                    notes.push(Note::Changed(format!(
                        "disallowed `{}` → `{builtin}` left out",
                        shown(entry)
                    )));
                }
                _ => notes.push(Note::Dropped(format!(
                    "disallowed tool `{}`: eve has no such tool",
                    shown(entry)
                ))),
            }
        }
    }
}

fn plan_tools<'a>(
    tools: Option<&[String]>,
    disallowed: &[String],
    cx: &Context<'a>,
    notes: &mut Vec<Note>,
) -> Plan<'a> {
    let all = tools.is_none_or(|t| t.iter().any(|e| e == "*"));
    let mut plan = Plan {
        restricted: !all,
        opted_in: BTreeSet::new(),
        disabled: BTreeSet::new(),
        servers: BTreeMap::new(),
    };
    if all {
        for server in cx.servers {
            plan.servers.insert(
                &server.name,
                Use {
                    server,
                    allow: None,
                    block: Vec::new(),
                },
            );
        }
        if !cx.servers.is_empty() {
            notes.push(Note::Changed(format!(
                "no `tools` list: eve's default tools, and every MCP server of the plugin as its own connections ({})",
                cx.servers.iter().map(|s| format!("`{}`", s.name)).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let mut mapped = Vec::new();
    let mut unmapped = Vec::new();
    for entry in tools.unwrap_or_default().iter().filter(|e| *e != "*") {
        if let Some(rest) = entry.strip_prefix("mcp__") {
            match plan.allow_mcp(entry, rest, cx) {
                Ok(line) => mapped.push(line),
                Err(note) => unmapped.push(note),
            }
            continue;
        }
        let (name, rule) = tool_names::split_rule(entry);
        match tool_names::map(name) {
            Some(Mapped::Builtin(builtin)) => {
                plan.opted_in.insert(builtin);
                match rule {
                    Some(rule) => mapped.push(format!(
                        "`{}` → `{builtin}` (without the rule `{}`: any use is allowed)",
                        shown(entry),
                        shown(rule)
                    )),
                    None => mapped.push(format!("`{name}` → `{builtin}`")),
                }
            }
            Some(Mapped::Dropped(why)) => {
                unmapped.push(Note::Dropped(format!("tool `{name}`: {why}")));
            }
            None => unmapped.push(Note::Dropped(format!(
                "tool `{}`: not a Claude Code tool eve knows",
                shown(name)
            ))),
        }
    }
    if !mapped.is_empty() {
        notes.push(Note::Changed(format!(
            "tools {} (`default_tools = false`: no other built-in)",
            mapped.join(", ")
        )));
    } else if plan.restricted {
        notes.push(Note::Changed(
            "`tools` names no tool eve has: `default_tools = false` and no built-in".into(),
        ));
    }
    notes.extend(unmapped);
    plan.disallow(disallowed, cx, notes);
    plan
}

/// `server__tool` (after `mcp__`) as a server of the plugin and the tool (`None`: all
/// of them, for `mcp__server` or `mcp__server__*`). Claude Code names a plugin's servers
/// `plugin_<plugin>_<server>`.
fn mcp_tool<'a>(rest: &str, cx: &Context<'a>) -> Option<(&'a Server, Option<String>)> {
    let (server, tool) = match rest.split_once("__") {
        Some((server, tool)) => (server, Some(tool)),
        None => (rest, None),
    };
    let server = cx
        .plugin
        .and_then(|p| server.strip_prefix(&format!("plugin_{p}_")))
        .unwrap_or(server);
    let found = cx
        .servers
        .iter()
        .find(|s| s.original == server || s.name == server)?;
    let tool = tool
        .filter(|t| *t != "*" && !t.is_empty())
        .map(str::to_string);
    Some((found, tool))
}

fn dropped_field(key: &str, value: &Value) -> String {
    let why = match key {
        "color" => "eve has no display colours",
        "permissionMode" => {
            "eve has no permission modes: a tool asks first with `approval = \"always\"` in `tools/<name>.toml`"
        }
        "skills" => {
            "a subagent has skills of its own: copy the ones it preloads into its `skills/`"
        }
        "hooks" => {
            "hooks in an agent file are not imported: write them as the subagent's `hooks/` files"
        }
        "mcpServers" => "servers of its own are not imported: add them as its `connections/` files",
        "memory" => "eve has no agent memory",
        "background" | "isolation" => {
            "an eve subagent runs in its parent's workspace until it answers"
        }
        "effort" => "eve has no effort setting",
        _ => "not a field eve knows",
    };
    let value = match value {
        Value::String(s) => format!(": {}", shown(s)),
        Value::Number(n) => format!(": {n}"),
        Value::Bool(b) => format!(": {b}"),
        _ => String::new(),
    };
    format!("`{}{value}` ({why})", shown(key))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::import::frontmatter::read;
    use pretty_assertions::assert_eq;

    fn convert_text(text: &str, servers: &[Server]) -> Subagent {
        let front = read(text, KEYS);
        let taken = |n: &str| crate::tools::builtin::CATALOG.find(n).is_some();
        convert(
            &front,
            "agents/x.md",
            &Context {
                servers,
                servers_from: ".mcp.json",
                plugin: Some("kit"),
                taken: &taken,
            },
        )
    }

    fn file<'a>(sub: &'a Subagent, path: &str) -> &'a str {
        &sub.files.iter().find(|(p, _)| p == path).unwrap().1
    }

    #[test]
    fn a_listed_subset_opts_in_those_builtins_only() {
        let sub = convert_text(
            "---\nname: Code Reviewer\ndescription: Reviews code\ntools: Read, Grep, Edit, MultiEdit, Bash(git diff:*), LS, Frob\nmodel: opus\ncolor: red\nmaxTurns: 7\n---\nReview {{ carefully }}.\n",
            &[],
        );
        assert_eq!(sub.name, "code-reviewer");
        assert_eq!(
            file(&sub, "agent.toml"),
            "# Imported by `eve import claude` from agents/x.md (a Claude Code subagent).\n\
             description = \"Reviews code\"\nmodel = \"anthropic/claude-opus-4-5\"\ndefault_tools = false\n\n[limits]\nmax_steps = 7\n"
        );
        let paths: Vec<&str> = sub.files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "agent.toml",
                "instructions.md",
                "tools/bash.toml",
                "tools/edit_file.toml",
                "tools/grep.toml",
                "tools/read_file.toml"
            ]
        );
        assert_eq!(
            file(&sub, "instructions.md"),
            "{% raw %}Review {{ carefully }}.{% endraw %}\n"
        );
        let notes = format!("{:?}", sub.notes);
        for part in [
            "`LS`",
            "`Frob`",
            "`color: red`",
            "git diff:*",
            "opus",
            "max_steps",
        ] {
            assert!(notes.contains(part), "{part}: {notes}");
        }
    }

    #[test]
    fn no_tools_list_keeps_the_defaults_and_every_server() {
        let servers = crate::import::mcp::read(
            &serde_json::json!({"github": {"command": "gh-mcp"}, "notes": {"url": "https://x/mcp"}}),
            &|_| false,
        )
        .servers;
        let sub = convert_text(
            "---\nname: helper\ndescription: Helps\n---\nHelp.\n",
            &servers,
        );
        assert!(!file(&sub, "agent.toml").contains("default_tools"));
        assert!(
            sub.files
                .iter()
                .any(|(p, _)| p == "connections/github.toml")
        );
        assert!(sub.files.iter().any(|(p, _)| p == "connections/notes.toml"));

        let sub = convert_text(
            "---\nname: helper\ndescription: Helps\ntools: [Read, mcp__plugin_kit_github__search_issues, mcp__notes, mcp__jira__x]\ndisallowedTools: Write\n---\nHelp.\n",
            &servers,
        );
        let github = file(&sub, "connections/github.toml");
        assert!(
            github.ends_with("[tools]\nallow = [\"search_issues\"]\n"),
            "{github}"
        );
        assert!(!file(&sub, "connections/notes.toml").contains("[tools]"));
        assert!(format!("{:?}", sub.notes).contains("mcp__jira__x"));
    }

    #[test]
    fn a_name_of_a_builtin_gets_another() {
        let sub = convert_text("---\nname: grep\ndescription: Greps\n---\nGrep.\n", &[]);
        assert_eq!(sub.name, "grep-agent");
    }

    #[test]
    fn a_missing_description_comes_from_the_body_and_a_multiline_one_stays_readable() {
        let sub = convert_text("---\nname: a\n---\n# Finds bugs\nMore.\n", &[]);
        assert!(file(&sub, "agent.toml").contains("description = \"Finds bugs\"\n"));
        let sub = convert_text("---\nname: a\ndescription: |\n  One\n  Two\n---\nx\n", &[]);
        assert!(file(&sub, "agent.toml").contains("description = '''\nOne\nTwo'''\n"));
    }
}
