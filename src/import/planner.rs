//! Planning an import: what the imported folder is (a plugin, a marketplace's plugin,
//! a project, a folder of agent files, one agent file), and the [`Plan`] its parts make
//! — every file of the agent directory held in memory, and the report — read beneath
//! the imported folder, nothing written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Context as _, bail};

use super::marketplace::{self, Listed};
use super::report::{self, Note, Report, shown};
use super::source::{Kind, Source, join};
use super::tree::Tree;
use super::{
    agent_file, command, frontmatter, literal, mcp, server_copy, server_files, skills, slug,
};

/// How deep `commands/` folders are read (Claude Code namespaces commands by folder).
const MAX_COMMAND_DEPTH: usize = 4;
/// How deep `agents/` folders are read (Claude Code reads them all; collections sort
/// agents into a folder per category).
const MAX_AGENT_DEPTH: usize = 8;

/// What the person pointed at.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Layout {
    /// A plugin, or a folder with a plugin's parts, or a project's `.claude/` folder:
    /// its parts are under `base` (`""` or `.claude`), `.mcp.json` at the top.
    Folder { base: String, plugin: bool },
    /// A marketplace (`.claude-plugin/marketplace.json` and no `plugin.json`, or
    /// `--plugin` given): one of the plugins it lists.
    Marketplace,
    /// A folder of agent files (`~/.claude/agents`).
    Agents,
    /// One agent file, in the folder of the source.
    File(String),
}

/// What the person asked for beside the path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The plugin of a marketplace to import (`--plugin NAME`).
    pub plugin: Option<String>,
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
/// A marketplace whose plugin is not picked fails with a [`marketplace::Pick`]; an
/// import that brings nothing eve can use fails saying what was there.
pub fn plan(path: &Path, options: &Options) -> anyhow::Result<Plan> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot read `{}`", path.display()))?;
    if !meta.is_dir() {
        if options.plugin.is_some() {
            bail!(
                "`--plugin` picks a plugin of a marketplace folder; `{}` is a file",
                path.display()
            );
        }
        let (source, file) = file_source(path)?;
        return Planner::new(&source).run(&Layout::File(file));
    }
    let source = Source::open(path)?;
    match layout(&source, options)? {
        Layout::Marketplace => {
            let (plugin, listed, market) = pick(&source, options)?;
            let mut planner = Planner::new(&plugin);
            planner.listed = Some((listed, market));
            planner.run(&Layout::Folder {
                base: String::new(),
                plugin: true,
            })
        }
        layout => Planner::new(&source).run(&layout),
    }
}

/// The folder of one agent file, opened, and the file's name.
fn file_source(path: &Path) -> anyhow::Result<(Source, String)> {
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
    Ok((source, file.to_string()))
}

/// The plugin of the marketplace `source` to import: its folder (beneath the
/// marketplace's, never outside it), its entry, and the marketplace's name.
fn pick(source: &Source, options: &Options) -> anyhow::Result<(Source, Listed, String)> {
    let file = marketplace::FILE;
    let market = source
        .read_text(file)
        .and_then(|text| marketplace::read(&text))
        .map_err(|why| anyhow::anyhow!("cannot read `{}/{file}`: {why}", source.shown))?;
    let listed = market
        .choose(options.plugin.as_deref(), &source.shown)?
        .clone();
    let marketplace::Place::Here(rel) = &listed.place else {
        bail!("the plugin `{}` is not in this folder", shown(&listed.name));
    };
    let plugin = source.sub(rel).map_err(|why| {
        anyhow::anyhow!(
            "cannot import the plugin `{}` from `{}/{}`: {why}",
            shown(&listed.name),
            source.shown,
            shown(rel)
        )
    })?;
    Ok((plugin, listed, market.name))
}

/// Finds what the folder holds: a marketplace, a plugin's parts at the top, else a
/// project's `.claude/` folder, else a folder named `agents` of agent files.
fn layout(source: &Source, options: &Options) -> anyhow::Result<Layout> {
    let present = |rel: &str| !matches!(source.kind(rel), Kind::Missing);
    let plugin = source.kind(".claude-plugin/plugin.json") == Kind::File;
    if present(marketplace::FILE) && (options.plugin.is_some() || !plugin) {
        return Ok(Layout::Marketplace);
    }
    if options.plugin.is_some() {
        bail!(
            "`--plugin` picks a plugin of a marketplace, and `{}` has no `{}`",
            source.shown,
            marketplace::FILE
        );
    }
    if ["agents", "skills", "commands", ".claude-plugin"]
        .iter()
        .any(|p| present(p))
    {
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
    /// Each subagent's name → the agent file it came from (to report a clash).
    subagent_files: BTreeMap<String, String>,
    /// Each connection → the subagents given a copy of it.
    copies: BTreeMap<String, Vec<String>>,
    /// The entries at the top of the plugin copied for its servers.
    server_entries: server_copy::Done,
    /// The servers that name files the agent directory will not hold (the build
    /// leaves them out, and starts none of them).
    unstarted: BTreeSet<String>,
    /// Where the plugin's hooks were read from (for the message when they are all it
    /// has and none could be carried).
    hooks: Vec<String>,
    /// The entries at the top of the plugin copied for its hooks.
    hook_entries: BTreeSet<String>,
    /// The marketplace entry of the plugin imported, and the marketplace's name.
    listed: Option<(Listed, String)>,
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
            subagent_files: BTreeMap::new(),
            copies: BTreeMap::new(),
            server_entries: server_copy::Done::default(),
            unstarted: BTreeSet::new(),
            hooks: Vec::new(),
            hook_entries: BTreeSet::new(),
            listed: None,
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
            Layout::Marketplace => bail!("a marketplace is planned through the plugin picked"),
            Layout::Agents => {
                self.agents("", None, true)?;
                let what = "a folder of Claude Code agent files".to_string();
                ("claude-agents".to_string(), None, what)
            }
            Layout::File(file) => {
                let name = self.agents(file, None, false)?;
                let what = format!("the Claude Code agent file `{}`", shown(file));
                (
                    name.unwrap_or_else(|| file.trim_end_matches(".md").to_string()),
                    None,
                    what,
                )
            }
        };
        self.report.what = what;
        self.usable()?;
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

    /// Refuses an import that brings nothing eve can use (no skill, subagent or
    /// connection), saying what was there.
    fn usable(&self) -> anyhow::Result<()> {
        if ["skills", "subagents", "connections", "hooks"]
            .iter()
            .any(|dir| self.tree.has_below(dir))
        {
            return Ok(());
        }
        let what = &self.report.what;
        let mut text = if self.hooks.is_empty() {
            format!(
                "{what} holds nothing eve can use: no skill, agent, command, MCP server or hook it can import; nothing was imported"
            )
        } else {
            let hooks: Vec<String> = self.hooks.iter().map(|h| format!("`{h}`")).collect();
            format!(
                "{what} has only hooks ({}), and none eve can run: nothing was imported",
                hooks.join(", ")
            )
        };
        if !self.report.left_out.is_empty() {
            text.push_str("\nwhat was there:");
            for (entry, why) in &self.report.left_out {
                text.push_str(&format!("\n  {entry}: {why}"));
            }
        }
        bail!("{}", crate::text::for_terminal(&text))
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
        let manifest = self.manifest(plugin);
        let field = |key: &str| {
            manifest
                .as_ref()
                .and_then(|m| m.get(key))
                .and_then(|n| n.as_str())
                .map(str::to_string)
        };
        let (plugin_name, description) = (field("name"), field("description"));
        let name = plugin_name.clone().unwrap_or_else(|| {
            if folder_name == ".claude" {
                "claude-agent".into()
            } else {
                folder_name.to_string()
            }
        });
        let what = self.what(base, plugin, &name, folder_name);
        let [skills, commands, agents] =
            ["skills", "commands", "agents"].map(|part| self.parts(base, part, manifest.as_ref()));
        let servers_files = self.mcp(".mcp.json", manifest.as_ref())?;
        for dir in &skills {
            if self.exists(dir) {
                self.skills(dir)?;
            }
        }
        for entry in &commands {
            if self.exists(entry) {
                self.commands(entry, entry, 0)?;
            }
        }
        for entry in &agents {
            if self.exists(entry) {
                self.agents(entry, plugin_name.as_deref(), true)?;
            }
        }
        let hooks_files = self.plugin_hooks(base, manifest.as_ref())?;
        // The entries at the top that the manifest's paths name were read as parts.
        let read: BTreeSet<String> = [&skills, &commands, &agents, &servers_files, &hooks_files]
            .into_iter()
            .flatten()
            .filter_map(|p| p.split('/').next())
            .map(str::to_string)
            .collect();
        self.left_out_entries(base, base == ".claude", &read);
        Ok((name, description, what))
    }

    /// The plugin's hooks — `hooks/hooks.json` under `base`, and the `hooks` of its
    /// manifest (an object, or the paths of more such files) — as `hooks/*.toml`, with
    /// the plugin's entries their commands name (`${CLAUDE_PLUGIN_ROOT}/hooks/…`) copied.
    /// Returns the files read.
    fn plugin_hooks(
        &mut self,
        base: &str,
        manifest: Option<&serde_json::Value>,
    ) -> anyhow::Result<Vec<String>> {
        let mut found: Vec<(String, serde_json::Value)> = Vec::new();
        let mut files = vec![join(base, "hooks/hooks.json")];
        // A project's hooks are in its settings, beside everything else there.
        let project = base == ".claude";
        if project && let Ok(text) = self.source.read_text(".claude/settings.json") {
            match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(settings) => {
                    if let Some(hooks) = settings.get("hooks") {
                        found.push((".claude/settings.json `hooks`".into(), hooks.clone()));
                    }
                }
                Err(e) => self
                    .report
                    .leave_out(".claude/settings.json", format!("not read: {e}")),
            }
        }
        match manifest.and_then(|m| m.get("hooks")) {
            Some(serde_json::Value::Object(map)) => found.push((
                "the manifest's `hooks`".into(),
                serde_json::Value::Object(map.clone()),
            )),
            Some(paths) => files.extend(
                component_paths(Some(paths))
                    .into_iter()
                    .filter(|p| self.exists(p)),
            ),
            None => {}
        }
        let mut seen = BTreeSet::new();
        files.retain(|f| seen.insert(f.clone()));
        let mut read = Vec::new();
        for rel in files {
            match self.source.kind(&rel) {
                Kind::File => {}
                Kind::Missing => continue,
                Kind::Refused(why) => {
                    self.report.leave_out(rel, why);
                    continue;
                }
                Kind::Dir(_) | Kind::Special(_) => {
                    self.report.leave_out(rel, "not a file of hooks");
                    continue;
                }
            }
            read.push(rel.clone());
            match self
                .source
                .read_text(&rel)
                .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
            {
                Ok(json) => found.push((rel, json)),
                Err(why) => self.report.leave_out(rel, format!("not read: {why}")),
            }
        }
        let connections: Vec<(String, String)> = self
            .servers
            .iter()
            .map(|s| (s.original.clone(), s.name.clone()))
            .collect();
        let mut taken = Vec::new();
        for (from, json) in found {
            self.hooks.push(from.clone());
            let converted =
                super::hooks::convert(&json, &from, (&connections, project), &mut taken);
            if converted.files.is_empty() && converted.left_out.is_empty() {
                self.report.leave_out(from.clone(), "holds no hooks");
            }
            for (at, why) in converted.left_out {
                self.report.leave_out(at, why);
            }
            for file in converted.files {
                let written = format!("hooks/{}.toml", file.name);
                self.tree.add(&written, file.toml)?;
                let mut notes = file.notes;
                notes.extend(self.hook_files(base, &file.command)?);
                self.report.item(written, file.from, notes);
            }
        }
        Ok(read)
    }

    /// Copies the entries at the top of the plugin (under `base`) that a hook's
    /// `command` names as `${CLAUDE_PLUGIN_ROOT}/…`, once each: notes for what could
    /// not be.
    fn hook_files(&mut self, base: &str, command: &str) -> anyhow::Result<Vec<Note>> {
        use super::server_files::{Named, named, top_entry};
        let mut notes = Vec::new();
        // Quoted or not, the variable is the plugin's folder (`"${CLAUDE_PLUGIN_ROOT}"/x`).
        let root = super::server_files::PLUGIN_ROOT;
        let command = command
            .replace("$CLAUDE_PLUGIN_ROOT", root)
            .replace(&format!("\"{root}\""), root)
            .replace(&format!("'{root}'"), root);
        for path in named(&command) {
            let path = match path {
                Named::Inside(path) => path,
                Named::Whole | Named::Escaping(_) => {
                    notes.push(Note::Warning(
                        "it names the plugin's folder as a whole, or a path out of it: only the entries it names by path are copied".into(),
                    ));
                    continue;
                }
                Named::Absolute(_) | Named::Relative(_) => continue,
            };
            let entry = top_entry(&path).to_string();
            // Skills are imported as skills; the rest once each.
            if entry == "skills"
                || self.server_entries.copied(&entry)
                || !self.hook_entries.insert(entry.clone())
            {
                continue;
            }
            if entry == "hooks" {
                self.hook_scripts(base, &mut notes)?;
                continue;
            }
            let copied = match super::server_copy::refused(self.source, &path, &entry) {
                Some(why) => Err(why),
                None if self.tree.has(&entry) || self.tree.has_below(&entry) => {
                    Err("the import writes that path already".to_string())
                }
                None => super::server_copy::copy_entry(
                    self.source,
                    &join(base, &entry),
                    &entry,
                    &mut self.tree,
                )?,
            };
            self.copied_for_hooks(copied, &path, &mut notes);
        }
        Ok(notes)
    }

    /// The plugin's `hooks/` folder into the agent's, but for what would be read as the
    /// agent's own: its hook files (`*.toml` at the top) and `hooks.json`.
    fn hook_scripts(&mut self, base: &str, notes: &mut Vec<Note>) -> anyhow::Result<()> {
        let folder = join(base, "hooks");
        let listing = match self.source.list(&folder) {
            Ok(listing) => listing,
            Err(why) => {
                notes.push(Note::Dropped(format!("`hooks/`: not copied: {why}")));
                return Ok(());
            }
        };
        for name in &listing.names {
            let target = format!("hooks/{name}");
            if name == "hooks.json" || name.ends_with(".toml") {
                if name != "hooks.json" {
                    notes.push(Note::Dropped(format!(
                        "`{}`: not copied: a `.toml` file there would be an eve hook of its own",
                        shown(&target)
                    )));
                }
                continue;
            }
            let copied = if self.tree.has(&target) || self.tree.has_below(&target) {
                Err("the import writes that path already".to_string())
            } else {
                super::server_copy::copy_entry(
                    self.source,
                    &join(&folder, name),
                    &target,
                    &mut self.tree,
                )?
            };
            self.copied_for_hooks(copied, &target, notes);
        }
        Ok(())
    }

    /// Reports what was copied for the hooks, or notes why `path` was not.
    fn copied_for_hooks(
        &mut self,
        copied: Result<super::report::Copied, String>,
        path: &str,
        notes: &mut Vec<Note>,
    ) {
        match copied {
            Ok(item) => self.report.item(
                item.written,
                format!("{}, which hooks run", item.from),
                item.notes,
            ),
            Err(why) => notes.push(Note::Dropped(format!(
                "`{}`: not copied: {why}",
                shown(path)
            ))),
        }
    }

    /// The paths of one part (`skills`): its folder under `base` when there is one, and
    /// the paths the manifest adds (a path inside one read already is read once).
    fn parts(&self, base: &str, part: &str, manifest: Option<&serde_json::Value>) -> Vec<String> {
        let default = join(base, part);
        let present = self.source.kind(&default) != Kind::Missing;
        let mut all: Vec<String> = present.then_some(default).into_iter().collect();
        let extra = manifest
            .map(|m| component_paths(m.get(part)))
            .unwrap_or_default();
        for e in extra {
            if !all
                .iter()
                .any(|a| e == *a || e.starts_with(&format!("{a}/")))
            {
                all.push(e);
            }
        }
        all
    }

    /// What is imported, for the report: `the Claude Code plugin \`x\``…
    fn what(&self, base: &str, plugin: bool, name: &str, folder_name: &str) -> String {
        match &self.listed {
            Some((_, market)) if !market.is_empty() => format!(
                "the Claude Code plugin `{}` of the marketplace `{}`",
                shown(name),
                shown(market)
            ),
            _ if plugin => format!("the Claude Code plugin `{}`", shown(name)),
            _ if base == ".claude" => format!("the Claude Code project `{}`", shown(name)),
            _ => format!("the Claude Code folder `{}`", shown(folder_name)),
        }
    }

    /// The plugin's manifest: its `plugin.json`, else its marketplace entry (which is
    /// the manifest of a plugin listed with `"strict": false`).
    fn manifest(&mut self, plugin: bool) -> Option<serde_json::Value> {
        if plugin && self.source.kind(".claude-plugin/plugin.json") == Kind::File {
            return self.plugin_json();
        }
        self.listed.as_ref().map(|(listed, _)| listed.manifest())
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
            Ok(serde_json::Value::Object(map)) => {
                let used = [
                    "name",
                    "description",
                    "mcpServers",
                    "agents",
                    "commands",
                    "skills",
                    "hooks",
                ];
                for key in map.keys().filter(|k| !used.contains(&k.as_str())) {
                    let why = match key.as_str() {
                        "lspServers" => "eve has no language servers",
                        "outputStyles" => "eve has no output styles",
                        "version" | "author" | "homepage" | "repository" | "license"
                        | "keywords" => "a detail of the plugin's listing",
                        _ => "not used by eve",
                    };
                    self.report
                        .leave_out(format!("{rel} `{}`", shown(key)), why);
                }
                Some(serde_json::Value::Object(map))
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

    /// The servers of `rel` (`.mcp.json`) and of the manifest's `mcpServers` (an object
    /// of servers, or the path of another such file in the plugin).
    /// Returns the servers files read.
    fn mcp(
        &mut self,
        rel: &str,
        plugin: Option<&serde_json::Value>,
    ) -> anyhow::Result<Vec<String>> {
        let mut inputs: Vec<(String, serde_json::Value)> = Vec::new();
        let mut files = vec![rel.to_string()];
        let key = if self.listed.is_some()
            && self.source.kind(".claude-plugin/plugin.json") != Kind::File
        {
            format!("{} `mcpServers`", marketplace::FILE)
        } else {
            ".claude-plugin/plugin.json `mcpServers`".to_string()
        };
        match plugin.and_then(|p| p.get("mcpServers")) {
            None => {}
            Some(servers @ serde_json::Value::Object(_)) => {
                inputs.push((key, serde_json::json!({ "mcpServers": servers })))
            }
            Some(path @ serde_json::Value::String(_)) => {
                match component_paths(Some(path)).first() {
                    Some(other) if !files.contains(other) => files.push(other.clone()),
                    Some(_) => {}
                    None => self
                        .report
                        .leave_out(key, "a path that leads outside the plugin"),
                }
            }
            Some(_) => self
                .report
                .leave_out(key, "not an object of servers or a path"),
        }
        for file in files.iter().rev() {
            if file != rel && self.source.kind(file) == Kind::Missing {
                self.report.leave_out(
                    file.as_str(),
                    "`plugin.json` names it, and it does not exist",
                );
            } else if let Some(value) = self.mcp_file(file) {
                inputs.insert(0, (file.clone(), value));
            }
        }
        for (from, value) in inputs {
            self.servers_of(&from, &value)?;
        }
        Ok(files)
    }

    /// The parsed `.mcp.json` at `rel`, if there is one it can read.
    fn mcp_file(&mut self, rel: &str) -> Option<serde_json::Value> {
        match self.source.kind(rel) {
            Kind::Missing => {}
            Kind::File => match self
                .source
                .read_text(rel)
                .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
            {
                Ok(value) => return Some(value),
                Err(why) => self
                    .report
                    .leave_out(rel, format!("cannot read it: {}", shown(&why))),
            },
            Kind::Dir(_) => self.report.leave_out(rel, "a folder, not a file"),
            Kind::Refused(why) => self.report.leave_out(rel, why),
            Kind::Special(what) => self.report.leave_out(rel, format!("{what}, not read")),
        }
        None
    }

    /// The servers of one file (`from`), each a connection file, with the plugin's
    /// files it runs copied.
    fn servers_of(&mut self, from: &str, value: &serde_json::Value) -> anyhow::Result<()> {
        let taken: Vec<String> = self.servers.iter().map(|s| s.name.clone()).collect();
        let read = mcp::read(value, &|n| taken.iter().any(|t| t == n));
        for refused in read.refused {
            let entry = if refused.name.is_empty() {
                from.to_string()
            } else {
                format!("{from} `{}`", shown(&refused.name))
            };
            self.report.leave_out(entry, refused.why);
        }
        for mut server in read.servers {
            let outcome = server_copy::copy(
                self.source,
                &mut server,
                &mut self.tree,
                &mut self.server_entries,
            )?;
            if !outcome.missing.is_empty() {
                self.unstarted.insert(server.name.clone());
            }
            let path = format!("connections/{}.toml", server.name);
            if self
                .tree
                .add(&path, server.file(from, 0, None, &[]))
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
            for c in outcome.copied {
                self.report.item(c.written, c.from, c.notes);
            }
            self.servers.push(server);
        }
        self.servers_from = from.to_string();
        Ok(())
    }

    /// The skills of the folder `dir`, or the one skill `dir` is (a manifest's path).
    fn skills(&mut self, dir: &str) -> anyhow::Result<()> {
        let (tree, taken) = (&mut self.tree, &mut self.skill_names);
        let outcome = if self.source.kind(&join(dir, "SKILL.md")) == Kind::File {
            skills::copy_one(self.source, dir, tree, taken)?
        } else {
            skills::copy(self.source, dir, tree, taken)?
        };
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

    /// The agent files at `rel` (a file, or a folder of them read with its sub-folders,
    /// as Claude Code does). `scanned`: found in a folder, not named by the person.
    /// Returns the agent name of the last file, for a one-file import.
    fn agents(
        &mut self,
        rel: &str,
        plugin: Option<&str>,
        scanned: bool,
    ) -> anyhow::Result<Option<String>> {
        let mut seen = BTreeSet::new();
        self.agents_in(rel, plugin, scanned, 0, &mut seen)
    }

    fn agents_in(
        &mut self,
        rel: &str,
        plugin: Option<&str>,
        scanned: bool,
        depth: usize,
        seen: &mut BTreeSet<(u64, u64)>,
    ) -> anyhow::Result<Option<String>> {
        let mut name = None;
        match self.source.kind(rel) {
            Kind::Missing => {}
            Kind::Dir(_) if depth > MAX_AGENT_DEPTH => self.report.leave_out(
                format!("{rel}/"),
                format!("agent files are read {MAX_AGENT_DEPTH} folders deep"),
            ),
            Kind::Dir(id) if !seen.insert(id) => self
                .report
                .leave_out(format!("{rel}/"), "a link back to a folder already read"),
            Kind::Dir(id) => {
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
                    } else if matches!(self.source.kind(&path), Kind::Dir(_)) {
                        name = self
                            .agents_in(&path, plugin, scanned, depth + 1, seen)?
                            .or(name);
                    } else if !entry.ends_with(".md") {
                        self.report
                            .leave_out(path, "not an agent file (a `.md` file)");
                    } else {
                        name = self.agent(&path, plugin, scanned)?.or(name);
                    }
                }
                seen.remove(&id);
            }
            Kind::File => name = self.agent(rel, plugin, scanned)?,
            Kind::Refused(why) => self.report.leave_out(rel, why),
            Kind::Special(what) => self.report.leave_out(rel, format!("{what}, not read")),
        }
        Ok(name)
    }

    fn agent(
        &mut self,
        rel: &str,
        plugin: Option<&str>,
        scanned: bool,
    ) -> anyhow::Result<Option<String>> {
        let text = match self.source.read_text(rel) {
            Ok(t) => t,
            Err(why) => {
                self.report.leave_out(rel, why);
                return Ok(None);
            }
        };
        let front = frontmatter::read(&text, agent_file::KEYS);
        if scanned && front.fields.is_empty() && front.lenient.is_none() {
            // A collection's `README.md` beside its agents: Claude Code loads an agent
            // file only with a `name` and a `description` in its frontmatter.
            self.report.leave_out(
                rel,
                "no frontmatter: not an agent file (Claude Code loads one only with `name` and `description` in its frontmatter)",
            );
            return Ok(None);
        }
        let written_name = front.text("name");
        let subagents = self.subagents.clone();
        let taken = |n: &str| {
            subagents.iter().any(|s| s == n) || crate::tools::builtin::CATALOG.find(n).is_some()
        };
        let mut sub = agent_file::convert(
            &front,
            rel,
            &agent_file::Context {
                servers: &self.servers,
                servers_from: &self.servers_from,
                plugin,
                taken: &taken,
            },
        );
        self.clash(&front, rel, &mut sub);
        for (path, contents) in &sub.files {
            self.tree
                .add(&format!("subagents/{}/{path}", sub.name), contents.as_str())?;
            if let Some(connection) = path
                .strip_prefix("connections/")
                .and_then(|p| p.strip_suffix(".toml"))
            {
                let copies = self.copies.entry(connection.to_string()).or_default();
                copies.push(sub.name.clone());
            }
        }
        self.report
            .item(format!("subagents/{}/", sub.name), rel, sub.notes);
        self.subagent_files
            .insert(sub.name.clone(), rel.to_string());
        self.subagents.push(sub.name);
        Ok(written_name)
    }

    /// Says so when the subagent of `rel` was named apart because another agent file
    /// has its name (files in different folders of `agents/` often do).
    fn clash(&self, front: &frontmatter::Front, rel: &str, sub: &mut agent_file::Subagent) {
        let Some(base) = slug::slug(&agent_file::written_name(front, rel)) else {
            return;
        };
        if let Some(other) = self.subagent_files.get(&base).filter(|_| sub.name != base) {
            sub.notes.insert(
                0,
                Note::Warning(format!(
                    "two agent files are named `{base}`: `{}` is `subagents/{base}/`, this one `subagents/{}/` (Claude Code would use only one of them)",
                    shown(other),
                    sub.name
                )),
            );
        }
    }

    fn left_out_entries(&mut self, base: &str, project: bool, read: &BTreeSet<String>) {
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
            if handled.contains(&name.as_str())
                || read.contains(name)
                || name == ".git"
                || name == ".DS_Store"
            {
                continue;
            }
            let rel = join(base, name);
            if is_license(name) && self.source.kind(&rel) == Kind::File {
                self.license(name, &rel);
                continue;
            }
            if self.server_entries.copied(name) || self.hook_entries.contains(name) {
                continue;
            }
            let why = self.why_left_out(name, project);
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

    /// Why the entry `name` (at `rel`) at the top of the imported folder is not imported.
    fn why_left_out(&mut self, name: &str, project: bool) -> &'static str {
        match name {
            "hooks" => "no `hooks.json` in it: not a part eve imports",
            "settings.json" => {
                "Claude Code's settings: permissions and models are not imported (its `hooks` are)"
            }
            "settings.local.json" => "personal Claude Code settings: not imported",
            "CLAUDE.md" => "project memory: copy what the agent needs into `instructions.md`",
            "output-styles" => "eve has no output styles",
            _ if project => "not a part eve imports",
            _ => "not a part of a Claude Code plugin eve imports",
        }
    }

    /// The plugin's license file `rel`, copied beside `agent.toml` as `name`: the
    /// skills are copied, and their license goes with them.
    fn license(&mut self, name: &str, rel: &str) {
        match self.source.read(rel, crate::textfile::MAX_FILE_BYTES) {
            Ok(bytes) => {
                if self.tree.add(name, bytes).is_ok() {
                    self.report.item(
                        name,
                        format!("{rel}, unchanged: the license of what is copied"),
                        Vec::new(),
                    );
                }
            }
            Err(why) => self.report.leave_out(rel, why),
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
                "`eve build` lists each connection's tools; `eve connections` shows what each offers".into(),
            );
        }
        let started = self
            .servers
            .iter()
            .filter(|s| s.transport == "stdio" && !self.unstarted.contains(&s.name));
        for server in started {
            self.report.starts.push(report::Start {
                connection: server.name.clone(),
                argv: server
                    .argv()
                    .iter()
                    .map(|a| server.resolved(a, server_files::PLUGIN_ROOT))
                    .collect(),
                cwd: server
                    .cwd()
                    .map(|c| server.resolved(c, server_files::PLUGIN_ROOT)),
                copies: self.copies.get(&server.name).cloned().unwrap_or_default(),
            });
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
