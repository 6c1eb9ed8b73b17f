//! `eve import claude`: Claude Code's files — a plugin folder, a project's `.claude/`, a
//! folder of agent files, or one agent file — turned into an eve agent directory, with a
//! report of every field dropped or changed. Everything is read first (as hostile
//! input, beneath the imported folder) into a [`tree::Tree`] held in memory, and written
//! only when the whole import is known, beneath the destination.

pub mod agent_file;
pub mod command;
pub mod copy;
pub mod frontmatter;
pub mod literal;
pub mod mcp;
pub mod model;
pub mod report;
pub mod skills;
pub mod slug;
pub mod source;
pub mod tool_names;
pub mod tree;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

use report::{Note, Report, shown};
use source::{Kind, Source, join};
use tree::Tree;

/// How deep `commands/` folders are read (Claude Code namespaces commands by folder).
const MAX_COMMAND_DEPTH: usize = 4;

/// What the person pointed at.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Layout {
    /// A plugin, or a folder with a plugin's parts, or a project's `.claude/` folder:
    /// its parts are under `base` (`""` or `.claude`), `.mcp.json` at the top.
    Folder { base: String, plugin: bool },
    /// A folder of agent files (`~/.claude/agents`).
    Agents,
    /// One agent file, in the folder of the source.
    File(String),
}

/// An import planned: the files to write and what to say about them.
#[derive(Debug)]
pub struct Plan {
    /// The name the agent would get from what was imported (`brand-voice`).
    pub name: String,
    pub tree: Tree,
    pub report: Report,
    /// The files of the top agent (`agent.toml`, `instructions.md`, `.gitignore`), left
    /// out when adding to an agent directory that exists.
    pub top: Tree,
}

/// Reads the Claude Code files at `path` and plans the agent directory they make.
pub fn plan(path: &Path) -> anyhow::Result<Plan> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read `{}`", path.display()))?;
    let (source, layout) = if meta.is_dir() {
        let source = Source::open(path)?;
        let layout = layout(&source)?;
        (source, layout)
    } else {
        let Some(file) = path.file_name().and_then(|f| f.to_str()) else {
            bail!("`{}` is not a folder or a Markdown file", path.display());
        };
        if !file.ends_with(".md") {
            bail!(
                "`{}` is not a Claude Code agent file (a `.md` file) or a folder",
                path.display()
            );
        }
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let mut source = Source::open(parent)?;
        source.shown = path.display().to_string();
        (source, Layout::File(file.to_string()))
    };
    Planner::new(&source).run(&layout)
}

/// Finds what the folder holds: a plugin's parts at the top, else a project's
/// `.claude/` folder, else a folder named `agents` of agent files.
fn layout(source: &Source) -> anyhow::Result<Layout> {
    let present = |rel: &str| !matches!(source.kind(rel), Kind::Missing);
    if ["agents", "skills", "commands", ".claude-plugin"]
        .iter()
        .any(|p| present(p))
    {
        let plugin = source.kind(".claude-plugin/plugin.json") == Kind::File;
        return Ok(Layout::Folder {
            base: String::new(),
            plugin,
        });
    }
    if matches!(source.kind(".claude"), Kind::Dir(_)) {
        return Ok(Layout::Folder {
            base: ".claude".into(),
            plugin: false,
        });
    }
    if present(".mcp.json") {
        return Ok(Layout::Folder {
            base: String::new(),
            plugin: false,
        });
    }
    if source.path().file_name().is_some_and(|n| n == "agents") {
        return Ok(Layout::Agents);
    }
    bail!(
        "`{}` holds nothing to import: no `agents/`, `skills/`, `commands/`, `.mcp.json` or `.claude-plugin/`, and no `.claude/` folder",
        source.shown
    )
}

struct Planner<'a> {
    source: &'a Source,
    tree: Tree,
    report: Report,
    skill_names: BTreeSet<String>,
    servers: Vec<mcp::Server>,
    servers_from: String,
    subagents: Vec<String>,
}

impl<'a> Planner<'a> {
    fn new(source: &'a Source) -> Planner<'a> {
        Planner {
            source,
            tree: Tree::default(),
            report: Report::default(),
            skill_names: BTreeSet::new(),
            servers: Vec::new(),
            servers_from: ".mcp.json".into(),
            subagents: Vec::new(),
        }
    }

    fn run(mut self, layout: &Layout) -> anyhow::Result<Plan> {
        let folder_name = self
            .source
            .path()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let (name, description, what) = match layout {
            Layout::Folder { base, plugin } => self.folder(base, *plugin, &folder_name)?,
            Layout::Agents => {
                self.agents("", None)?;
                let what = "a folder of Claude Code agent files".to_string();
                ("claude-agents".to_string(), None, what)
            }
            Layout::File(file) => {
                let name = self.agents(file, None)?;
                let what = format!("the Claude Code agent file `{}`", shown(file));
                (
                    name.unwrap_or_else(|| file.trim_end_matches(".md").to_string()),
                    None,
                    what,
                )
            }
        };
        self.report.what = what;
        let name = slug::slug(&name).unwrap_or_else(|| "claude-agent".into());
        let top = self.top(description.as_deref())?;
        self.checks();
        Ok(Plan {
            name,
            tree: self.tree,
            report: self.report,
            top,
        })
    }

    /// A Claude Code folder (a plugin's, a project's `.claude/`, or one with a
    /// `.mcp.json`): its skills, commands, agents and MCP servers. Returns the agent's
    /// name and description, and what was imported (for the report).
    fn folder(
        &mut self,
        base: &str,
        plugin: bool,
        folder_name: &str,
    ) -> anyhow::Result<(String, Option<String>, String)> {
        let manifest = if plugin { self.plugin_json() } else { None };
        let name = manifest
            .as_ref()
            .and_then(|m| m.get("name"))
            .and_then(|n| n.as_str())
            .map(str::to_string);
        let description = manifest
            .as_ref()
            .and_then(|m| m.get("description"))
            .and_then(|n| n.as_str())
            .map(str::to_string);
        let project = base == ".claude";
        let name = name.unwrap_or_else(|| {
            if folder_name == ".claude" {
                "claude-agent".into()
            } else {
                folder_name.to_string()
            }
        });
        let what = if plugin {
            format!("the Claude Code plugin `{}`", shown(&name))
        } else if project {
            format!("the Claude Code project `{}`", shown(&name))
        } else {
            format!("the Claude Code folder `{}`", shown(folder_name))
        };
        self.mcp(".mcp.json", manifest.as_ref());
        let extra = |key: &str| {
            manifest
                .as_ref()
                .map(|m| component_paths(m.get(key)))
                .unwrap_or_default()
        };
        let (skill_paths, command_paths, agent_paths) =
            (extra("skills"), extra("commands"), extra("agents"));
        let plugin_name = manifest
            .as_ref()
            .and_then(|m| m.get("name"))
            .and_then(|n| n.as_str())
            .map(str::to_string);
        let parts = |default: &str, extra: Vec<String>| {
            let default = join(base, default);
            let present = self.source.kind(&default) != Kind::Missing;
            present
                .then_some(default)
                .into_iter()
                .chain(extra)
                .collect::<Vec<_>>()
        };
        let (skills, commands, agents) = (
            parts("skills", skill_paths),
            parts("commands", command_paths),
            parts("agents", agent_paths),
        );
        for dir in skills {
            if self.exists(&dir) {
                self.skills(&dir)?;
            }
        }
        for entry in commands {
            if self.exists(&entry) {
                self.commands(&entry, &entry, 0)?;
            }
        }
        for entry in agents {
            if self.exists(&entry) {
                self.agents(&entry, plugin_name.as_deref())?;
            }
        }
        self.left_out_entries(base, project);
        Ok((name, description, what))
    }

    /// Whether `rel` exists; a path `plugin.json` names that does not is reported.
    fn exists(&mut self, rel: &str) -> bool {
        let there = self.source.kind(rel) != Kind::Missing;
        if !there {
            self.report
                .leave_out(rel, "`plugin.json` names it, and it does not exist");
        }
        there
    }

    fn plugin_json(&mut self) -> Option<serde_json::Value> {
        let rel = ".claude-plugin/plugin.json";
        let parsed = self
            .source
            .read_text(rel)
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).map_err(|e| e.to_string()));
        match parsed {
            Ok(value) if value.is_object() => {
                let used = [
                    "name",
                    "description",
                    "mcpServers",
                    "agents",
                    "commands",
                    "skills",
                ];
                if let Some(map) = value.as_object() {
                    for key in map.keys().filter(|k| !used.contains(&k.as_str())) {
                        let why = match key.as_str() {
                            "hooks" => "eve has no hooks",
                            "lspServers" => "eve has no language servers",
                            "outputStyles" => "eve has no output styles",
                            "version" | "author" | "homepage" | "repository" | "license"
                            | "keywords" => "a detail of the plugin's listing",
                            _ => "not used by eve",
                        };
                        self.report
                            .leave_out(format!("{rel} `{}`", shown(key)), why);
                    }
                }
                Some(value)
            }
            Ok(_) => {
                self.report.leave_out(rel, "not a JSON object");
                None
            }
            Err(why) => {
                self.report
                    .leave_out(rel, format!("cannot read it: {}", shown(&why)));
                None
            }
        }
    }

    fn mcp(&mut self, rel: &str, plugin: Option<&serde_json::Value>) {
        let mut inputs: Vec<(String, serde_json::Value)> = Vec::new();
        match self.source.kind(rel) {
            Kind::Missing => {}
            Kind::File => match self
                .source
                .read_text(rel)
                .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
            {
                Ok(value) => inputs.push((rel.to_string(), value)),
                Err(why) => self
                    .report
                    .leave_out(rel, format!("cannot read it: {}", shown(&why))),
            },
            Kind::Dir(_) => self.report.leave_out(rel, "a folder, not a file"),
            Kind::Refused(why) => self.report.leave_out(rel, why),
            Kind::Special(what) => self.report.leave_out(rel, format!("{what}, not read")),
        }
        if let Some(servers) = plugin.and_then(|p| p.get("mcpServers")) {
            match servers {
                serde_json::Value::Object(_) => inputs.push((
                    ".claude-plugin/plugin.json `mcpServers`".into(),
                    serde_json::json!({ "mcpServers": servers }),
                )),
                _ => self.report.leave_out(
                    ".claude-plugin/plugin.json `mcpServers`",
                    "not an object of servers (a path to another file is not followed)",
                ),
            }
        }
        for (from, value) in inputs {
            let taken: Vec<String> = self.servers.iter().map(|s| s.name.clone()).collect();
            let read = mcp::read(&value, &|n| taken.iter().any(|t| t == n));
            for refused in read.refused {
                let entry = if refused.name.is_empty() {
                    from.clone()
                } else {
                    format!("{from} `{}`", shown(&refused.name))
                };
                self.report.leave_out(entry, refused.why);
            }
            for server in read.servers {
                let path = format!("connections/{}.toml", server.name);
                if self
                    .tree
                    .add(&path, server.file(&from, 0, None, &[]))
                    .is_err()
                {
                    continue;
                }
                self.report.item(
                    path,
                    format!(
                        "{from} `{}` ({})",
                        shown(&server.original),
                        server.transport
                    ),
                    server.notes.clone(),
                );
                self.servers.push(server);
            }
            self.servers_from = from;
        }
    }

    fn skills(&mut self, dir: &str) -> anyhow::Result<()> {
        let outcome = skills::copy(self.source, dir, &mut self.tree, &mut self.skill_names)?;
        for c in outcome.copied {
            let from = if c.files == 1 {
                c.from
            } else {
                format!("{} ({} files)", c.from, c.files)
            };
            self.report.item(c.written, from, c.notes);
        }
        for (entry, why) in outcome.left_out {
            self.report.leave_out(entry, why);
        }
        Ok(())
    }

    /// The command files at `rel` (a file, or a folder read `depth` levels down);
    /// `root` is the commands folder, whose sub-folders prefix the names.
    fn commands(&mut self, root: &str, rel: &str, depth: usize) -> anyhow::Result<()> {
        match self.source.kind(rel) {
            Kind::Missing => {}
            Kind::Dir(_) if depth > MAX_COMMAND_DEPTH => self
                .report
                .leave_out(format!("{rel}/"), "commands are read four folders deep"),
            Kind::Dir(_) => {
                let listing = match self.source.list(rel) {
                    Ok(l) => l,
                    Err(why) => {
                        self.report.leave_out(format!("{rel}/"), why);
                        return Ok(());
                    }
                };
                for name in &listing.names {
                    if name.starts_with('.') {
                        self.report
                            .leave_out(join(rel, name), "hidden (eve skips it too)");
                        continue;
                    }
                    self.commands(root, &join(rel, name), depth + 1)?;
                }
            }
            Kind::File if rel.ends_with(".md") => self.command(root, rel)?,
            Kind::File => self.report.leave_out(rel, "not a command (a `.md` file)"),
            Kind::Refused(why) => self.report.leave_out(rel, why),
            Kind::Special(what) => self.report.leave_out(rel, format!("{what}, not read")),
        }
        Ok(())
    }

    fn command(&mut self, root: &str, rel: &str) -> anyhow::Result<()> {
        let inner = rel
            .strip_prefix(root)
            .unwrap_or(rel)
            .trim_start_matches('/')
            .trim_end_matches(".md");
        let inner = if inner.is_empty() {
            rel.rsplit('/')
                .next()
                .unwrap_or(rel)
                .trim_end_matches(".md")
        } else {
            inner
        };
        let Some(name) = slug::slug(&inner.replace('/', "-")) else {
            self.report.leave_out(
                rel,
                "its name has no letter or digit to make a skill name of",
            );
            return Ok(());
        };
        if self.skill_names.contains(&name) {
            self.report.leave_out(
                rel,
                format!("a skill `{name}` exists (in Claude Code the skill wins too)"),
            );
            return Ok(());
        }
        let text = match self.source.read_text(rel) {
            Ok(t) => t,
            Err(why) => {
                self.report.leave_out(rel, why);
                return Ok(());
            }
        };
        let front = frontmatter::read(&text, command::KEYS);
        match command::convert(&front) {
            command::Converted::Skill { text, mut notes } => {
                let path = format!("skills/{name}.md");
                self.tree.add(&path, text)?;
                self.skill_names.insert(name.clone());
                notes.insert(
                    0,
                    Note::Changed(
                        "a command becomes a skill: the model loads it when its description fits (eve has no `/` commands)".into(),
                    ),
                );
                self.report.item(path, rel, notes);
            }
            command::Converted::LeftOut(why) => self.report.leave_out(rel, why),
        }
        Ok(())
    }

    /// The agent files at `rel` (a file, or a folder of them). Returns the agent name of
    /// the last file, for a one-file import.
    fn agents(&mut self, rel: &str, plugin: Option<&str>) -> anyhow::Result<Option<String>> {
        let mut name = None;
        match self.source.kind(rel) {
            Kind::Missing => {}
            Kind::Dir(_) => {
                let listing = match self.source.list(rel) {
                    Ok(l) => l,
                    Err(why) => {
                        self.report.leave_out(format!("{rel}/"), why);
                        return Ok(None);
                    }
                };
                for entry in &listing.names {
                    let path = join(rel, entry);
                    if entry.starts_with('.') {
                        self.report.leave_out(path, "hidden (eve skips it too)");
                        continue;
                    }
                    if !entry.ends_with(".md") {
                        self.report
                            .leave_out(path, "not an agent file (a `.md` file)");
                        continue;
                    }
                    name = self.agent(&path, plugin)?.or(name);
                }
            }
            Kind::File => name = self.agent(rel, plugin)?,
            Kind::Refused(why) => self.report.leave_out(rel, why),
            Kind::Special(what) => self.report.leave_out(rel, format!("{what}, not read")),
        }
        Ok(name)
    }

    fn agent(&mut self, rel: &str, plugin: Option<&str>) -> anyhow::Result<Option<String>> {
        let text = match self.source.read_text(rel) {
            Ok(t) => t,
            Err(why) => {
                self.report.leave_out(rel, why);
                return Ok(None);
            }
        };
        let front = frontmatter::read(&text, agent_file::KEYS);
        let written_name = front.text("name");
        let subagents = self.subagents.clone();
        let taken = |n: &str| {
            subagents.iter().any(|s| s == n) || crate::tools::builtin::CATALOG.find(n).is_some()
        };
        let sub = agent_file::convert(
            &front,
            rel,
            &agent_file::Context {
                servers: &self.servers,
                servers_from: &self.servers_from,
                plugin,
                taken: &taken,
            },
        );
        for (path, contents) in &sub.files {
            self.tree
                .add(&format!("subagents/{}/{path}", sub.name), contents.as_str())?;
        }
        self.report
            .item(format!("subagents/{}/", sub.name), rel, sub.notes);
        self.subagents.push(sub.name);
        Ok(written_name)
    }

    /// The top-level entries of the imported folder that are not imported.
    fn left_out_entries(&mut self, base: &str, project: bool) {
        let handled = [
            "agents",
            "skills",
            "commands",
            ".claude-plugin",
            ".mcp.json",
        ];
        let Ok(listing) = self.source.list(base) else {
            return;
        };
        for name in &listing.names {
            if handled.contains(&name.as_str()) || name == ".git" || name == ".DS_Store" {
                continue;
            }
            let rel = join(base, name);
            if is_license(name) && self.source.kind(&rel) == Kind::File {
                // The skills are copied: their license goes with them.
                match self.source.read(&rel, crate::textfile::MAX_FILE_BYTES) {
                    Ok(bytes) => {
                        if self.tree.add(name, bytes).is_ok() {
                            self.report.item(
                                name.as_str(),
                                format!("{rel}, unchanged: the license of what is copied"),
                                Vec::new(),
                            );
                        }
                    }
                    Err(why) => self.report.leave_out(rel, why),
                }
                continue;
            }
            let why = match name.as_str() {
                "hooks" => "eve has no hooks",
                "settings.json" | "settings.local.json" => {
                    "Claude Code's settings (permissions, hooks, models): not imported"
                }
                "CLAUDE.md" => "project memory: copy what the agent needs into `instructions.md`",
                "output-styles" => "eve has no output styles",
                _ if project => "not a part eve imports",
                _ => "not a part of a Claude Code plugin eve imports",
            };
            let shown_entry = if matches!(self.source.kind(&rel), Kind::Dir(_)) {
                format!("{rel}/")
            } else {
                rel
            };
            self.report.leave_out(shown_entry, why);
        }
        if let Ok(plugin) = self.source.list(&join(base, ".claude-plugin")) {
            for name in plugin.names.iter().filter(|n| *n != "plugin.json") {
                let why = if name == "marketplace.json" {
                    "a marketplace listing of the plugin"
                } else {
                    "not used by eve"
                };
                self.report.leave_out(format!(".claude-plugin/{name}"), why);
            }
        }
        if project && self.source.kind("CLAUDE.md") == Kind::File {
            self.report.leave_out(
                "CLAUDE.md",
                "project memory: copy what the agent needs into `instructions.md`",
            );
        }
    }

    /// The top agent's own files.
    fn top(&mut self, description: Option<&str>) -> anyhow::Result<Tree> {
        let mut top = Tree::default();
        let mut toml = format!(
            "# Imported by `eve import claude` from {}.\n",
            self.report.what
        );
        if let Some(description) = description.map(str::trim).filter(|d| !d.is_empty()) {
            toml.push_str(&format!(
                "description = {}\n",
                mcp::toml_string(description)
            ));
        }
        toml.push_str(&format!(
            "model = {}\n",
            mcp::toml_string(crate::compiler::config::DEFAULT_MODEL)
        ));
        top.add("agent.toml", toml)?;
        let mut text = format!("You are an agent made from {}", self.report.what);
        if let Some(d) = description.map(str::trim).filter(|d| !d.is_empty()) {
            text.push_str(&format!(": {}", d.trim_end_matches('.')));
        }
        text.push_str(".\n\nWork on the task you are given, in the workspace.");
        if !self.skill_names.is_empty() {
            text.push_str(
                " When a task matches one of your skills, load that skill first and follow it.",
            );
        }
        if !self.subagents.is_empty() {
            text.push_str(" Hand a self-contained piece of work to the subagent whose description fits it; it sees nothing of this conversation, so give it everything it needs.");
        }
        top.add("instructions.md", format!("{}\n", literal::literal(&text)))?;
        top.add(".gitignore", ".eve/\n")?;
        Ok(top)
    }

    fn checks(&mut self) {
        let check = &mut self.report.check;
        check.push(format!(
            "`instructions.md` and `agent.toml` of the agent itself are written by the import (model `{}`): say what the agent is for",
            crate::compiler::config::DEFAULT_MODEL
        ));
        for server in &self.servers {
            if !server.variables.is_empty() {
                let vars: Vec<String> = server.variables.iter().map(|v| format!("`{v}`")).collect();
                let them = if vars.len() == 1 { "it" } else { "them" };
                check.push(format!(
                    "connection `{}` reads {} from the environment: set {them} before `eve build` lists its tools",
                    server.name,
                    vars.join(", ")
                ));
            }
        }
        let open: Vec<String> = self
            .servers
            .iter()
            .filter(|s| s.transport != "stdio" && s.variables.is_empty())
            .map(|s| format!("`{}`", s.name))
            .collect();
        if !open.is_empty() {
            let (which, send) = if open.len() == 1 {
                ("connection", "sends")
            } else {
                ("connections", "send")
            };
            check.push(format!(
                "{which} {} {send} no credentials: a server that needs a sign-in (OAuth) needs a token in `headers` (`Authorization = \"Bearer ${{TOKEN}}\"`)",
                open.join(", ")
            ));
        }
        if !self.servers.is_empty() {
            check.push(
                "`eve build` starts each connection's server to list its tools; `eve connections` shows what each offers".into(),
            );
        }
    }
}

/// A license file (`LICENSE`, `LICENSE.md`, `COPYING`, `NOTICE`…).
fn is_license(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["LICENSE", "LICENCE", "COPYING", "NOTICE"].iter().any(|l| {
        upper == *l || upper.starts_with(&format!("{l}.")) || upper.starts_with(&format!("{l}-"))
    })
}

/// A `plugin.json` component path entry: a string or a list of strings, each
/// relative to the plugin (`./custom/agents`).
fn component_paths(value: Option<&serde_json::Value>) -> Vec<String> {
    let entries: Vec<&str> = match value {
        Some(serde_json::Value::String(s)) => vec![s.as_str()],
        Some(serde_json::Value::Array(items)) => items.iter().filter_map(|i| i.as_str()).collect(),
        _ => Vec::new(),
    };
    entries
        .into_iter()
        .map(|e| e.trim_start_matches("./").trim_end_matches('/').to_string())
        .filter(|e| !e.is_empty() && !e.split('/').any(|p| p == ".."))
        .collect()
}

/// The destination a plan is written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// Absent or empty: a new agent.
    New,
    /// Not empty, and `--force` given: files written are replaced; an agent directory
    /// that exists (it has `agent.toml`) keeps its own `agent.toml` and instructions.
    Into { existing_agent: bool },
}

/// Where the plan goes: refuses a folder that is not empty unless `force`.
pub fn destination(into: &Path, force: bool) -> anyhow::Result<Destination> {
    match std::fs::symlink_metadata(into) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Destination::New),
        Err(e) => Err(e).with_context(|| format!("cannot look at `{}`", into.display())),
        Ok(_) if !into.is_dir() => bail!("`{}` exists and is not a folder", into.display()),
        Ok(_) => {
            let empty = std::fs::read_dir(into)
                .with_context(|| format!("cannot list `{}`", into.display()))?
                .next()
                .is_none();
            if empty {
                Ok(Destination::New)
            } else if force {
                Ok(Destination::Into {
                    existing_agent: into.join("agent.toml").exists(),
                })
            } else {
                bail!(
                    "`{}` is not empty\n  = help: pass `--force` to write into it: files the import writes are replaced, and an agent directory keeps its own `agent.toml` and instructions",
                    into.display()
                )
            }
        }
    }
}

/// Writes `plan` into `into` (see [`destination`]), and returns the report.
pub fn write(plan: Plan, into: &Path, force: bool) -> anyhow::Result<Report> {
    let Plan {
        mut tree,
        mut report,
        top,
        ..
    } = plan;
    let destination = destination(into, force)?;
    if destination
        == (Destination::Into {
            existing_agent: true,
        })
    {
        report.check.retain(|c| !c.starts_with("`instructions.md`"));
        report.check.insert(
            0,
            "the agent's own `agent.toml` and instructions are kept: tell it about its new skills and subagents".into(),
        );
    } else {
        for (path, contents) in top.files() {
            tree.add(path, contents)?;
        }
        report.items.insert(
            0,
            report::Item {
                written: "agent.toml, instructions.md".into(),
                from: "written by the import".into(),
                notes: Vec::new(),
            },
        );
    }
    std::fs::create_dir_all(into).with_context(|| format!("cannot create `{}`", into.display()))?;
    report.replaced = tree.existing(into)?;
    tree.write(into, force)?;
    report.into = into.display().to_string();
    Ok(report)
}

/// Where an import goes when the person does not say: `./<name>`.
pub fn default_into(plan: &Plan) -> PathBuf {
    PathBuf::from(&plan.name)
}
