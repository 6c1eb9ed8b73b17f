//! Finds and reads the files of an agent directory, and hashes them.
//!
//! Each entry of `skills/` is read and compiled on its own, as one unit of the build
//! cache (see [`cache`]): a skill needs nothing but its own files, so a skill whose files
//! did not change comes back from the last build, and the entries of a large `skills/`
//! are loaded side by side on every core.
// The compiler's reads of the agent directory are made here (see `compiler/mod.rs`).
#![allow(clippy::disallowed_methods)]

use std::fs;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::diagnostic::{Diagnostic, Diagnostics, code};

pub use super::loaded::{Loaded, sha256};
pub use super::skills::SkillFile;
use super::{cache, skills};
pub use crate::textfile::{MAX_FILE_BYTES, read_text};

/// How deep subagents may nest inside subagents.
pub const MAX_SUBAGENT_DEPTH: usize = 4;

/// From this many entries on, `skills/` is loaded by a pool of threads; below, starting
/// them costs more than it saves.
const PARALLEL_SKILLS: usize = 32;

/// What `agent.toml` is.
#[derive(Debug, Clone)]
pub enum AgentToml {
    Missing,
    /// It exists but could not be read (already reported: too large, not UTF-8, …).
    Unreadable,
    File(Loaded),
}

impl AgentToml {
    /// The file, when it was read.
    pub fn loaded(&self) -> Option<&Loaded> {
        match self {
            AgentToml::File(file) => Some(file),
            AgentToml::Missing | AgentToml::Unreadable => None,
        }
    }
}

/// What `instructions.md` / `instructions/` hold.
#[derive(Debug, Clone)]
pub enum InstructionFiles {
    Missing,
    Both,
    /// `instructions.md` exists but could not be read (already reported).
    Unreadable,
    File(Loaded),
    /// The `*.md` files of `instructions/`, in file-name order.
    Dir(Vec<Loaded>),
}

/// One entry of `subagents/`.
#[derive(Debug, Clone)]
pub struct SubagentDir {
    pub name: String,
    pub files: AgentFiles,
}

/// Every input file of one agent directory, read into memory, plus what could not be read.
#[derive(Debug, Clone)]
pub struct AgentFiles {
    pub root: PathBuf,
    /// This directory relative to the top-level agent directory (`""` at the top).
    pub prefix: String,
    /// The top-level agent directory, canonical. A symbolic link is followed only to a
    /// target inside it: a checked-out agent must not make eve read (and show the model,
    /// or a provider) a file elsewhere on the machine.
    pub boundary: PathBuf,
    pub agent_toml: AgentToml,
    pub instructions: InstructionFiles,
    pub tools: Vec<Loaded>,
    /// `connections/<name>.toml`, in file-name order.
    pub connections: Vec<Loaded>,
    /// `hooks/<name>.toml`, in file-name order (the other files there are the scripts
    /// hooks run).
    pub hooks: Vec<Loaded>,
    /// Every entry of `skills/`, in file-name order, read and compiled.
    pub skills: Vec<skills::Unit>,
    pub subagents: Vec<SubagentDir>,
    /// The eval cases, `evals/**/*.toml` (the top agent's only). They test the agent and
    /// are not part of it, so they are not in the hash.
    pub evals: Vec<Loaded>,
    /// Files that could not be read and entries that are not what their folder expects.
    pub problems: Vec<Diagnostic>,
    /// SHA-256 over every path and content read, and eve's version.
    pub hash: String,
}

/// Reads the files of one agent directory, or of one entry of its `skills/`.
struct Loader {
    root: PathBuf,
    prefix: String,
    boundary: PathBuf,
    /// What `boundary` is, as messages name it: the agent directory, or the folder a
    /// linked skill leads to.
    within: &'static str,
    hasher: Sha256,
    problems: Vec<Diagnostic>,
}

impl AgentFiles {
    /// Reads the agent directory at `root`. Never fails: problems become diagnostics.
    pub fn load(root: &Path) -> AgentFiles {
        let boundary = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        Self::load_nested(root, String::new(), 0, &boundary)
    }

    fn load_nested(root: &Path, prefix: String, depth: usize, boundary: &Path) -> AgentFiles {
        let mut loader = Loader {
            root: root.to_path_buf(),
            prefix: prefix.clone(),
            boundary: boundary.to_path_buf(),
            within: AGENT_DIR,
            hasher: Sha256::new(),
            problems: Vec::new(),
        };
        // Its own listing: a first `tools/` or `instructions.md` shows as a change of it.
        cache::look(root);
        loader.hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
        loader
            .hasher
            .update(crate::manifest::SCHEMA_VERSION.to_le_bytes());

        let agent_toml = loader.agent_toml();
        let instructions = loader.instructions();
        let tools = loader.tools();
        let connections = loader.connections();
        let hooks = loader.hooks();
        let skills = loader.skills();
        let subagents = loader.subagents(depth);
        let evals = if depth == 0 {
            loader.evals("evals")
        } else {
            Vec::new()
        };

        let Loader {
            mut hasher,
            problems,
            ..
        } = loader;
        hash_problems(&mut hasher, &problems);
        AgentFiles {
            root: root.to_path_buf(),
            prefix,
            boundary: boundary.to_path_buf(),
            agent_toml,
            instructions,
            tools,
            connections,
            hooks,
            skills,
            subagents,
            evals,
            problems,
            hash: format!("sha256:{}", hex(&hasher.finalize())),
        }
    }
}

impl Loader {
    fn display(&self, rel: &str) -> String {
        if self.prefix.is_empty() {
            rel.to_string()
        } else {
            format!("{}/{rel}", self.prefix)
        }
    }

    fn problem(&mut self, rel: &str, code: &'static str, message: String) {
        let file = self.display(rel);
        self.problems
            .push(Diagnostic::error(code, message).file(file));
    }

    fn mark(&mut self, kind: &str, rel: &str) {
        self.hasher.update(kind.as_bytes());
        self.hasher.update((rel.len() as u64).to_le_bytes());
        self.hasher.update(rel.as_bytes());
    }

    /// Reads `agent.toml` if it exists; one that exists but cannot be read is a problem.
    fn agent_toml(&mut self) -> AgentToml {
        let path = self.root.join("agent.toml");
        cache::look(&path);
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => AgentToml::Missing,
            _ => self
                .read("agent.toml")
                .map_or(AgentToml::Unreadable, AgentToml::File),
        }
    }

    fn read(&mut self, rel: &str) -> Option<Loaded> {
        self.read_as(rel, false)
    }

    /// Reads the file `rel`; with `lossy` (a skill's file, which other clients load
    /// whatever its bytes), bytes that are not UTF-8 read as U+FFFD with a warning
    /// instead of refusing the file.
    fn read_as(&mut self, rel: &str, lossy: bool) -> Option<Loaded> {
        if let Some((link, message)) = self.escape(rel) {
            self.problem(&link, code::UNREADABLE, message);
            return None;
        }
        let path = self.root.join(rel);
        let read = if lossy {
            crate::textfile::read_text_lossy(&path)
        } else {
            crate::textfile::read_text_meta(&path).map(|(text, meta)| (text, meta, None))
        };
        match read {
            Ok((text, meta, replaced)) => {
                if let Some(bad) = replaced {
                    self.problems.push(
                        Diagnostic::warning(
                            code::SKILL_NOT_UTF8,
                            format!("{bad}; each bad byte reads as U+FFFD"),
                        )
                        .file(self.display(rel))
                        .note("Claude Code and Codex load such a file the same way")
                        .help("save the file as UTF-8"),
                    );
                }
                cache::note_meta(&path, &meta);
                self.mark("file", rel);
                self.hasher.update((text.len() as u64).to_le_bytes());
                self.hasher.update(text.as_bytes());
                Some(Loaded {
                    path: rel.to_string(),
                    display: self.display(rel),
                    text,
                })
            }
            Err(message) => {
                cache::look(&path);
                self.problem(rel, code::UNREADABLE, message);
                None
            }
        }
    }

    /// The first symbolic link on the way from this agent's directory to `rel` whose
    /// target is outside the top-level agent directory: its path, and what to say.
    fn escape(&self, rel: &str) -> Option<(String, String)> {
        let mut at = self.root.clone();
        let mut walked: Vec<&str> = Vec::new();
        for part in rel.split('/') {
            at.push(part);
            walked.push(part);
            if let Some(message) = leaves_boundary(&at, &self.boundary, self.within) {
                return Some((walked.join("/"), message));
            }
        }
        None
    }

    /// The entries of a folder of the agent, sorted by name, hidden ones left out;
    /// `None` when the folder exists but cannot be listed (already reported).
    fn list(&mut self, rel: &str) -> Option<Vec<(String, EntryKind)>> {
        let entries = self.list_with(rel, false)?;
        Some(entries.into_iter().map(|e| (e.name, e.kind)).collect())
    }

    /// [`Loader::list`]; with `links_out`, an entry that is a symbolic link to a folder
    /// outside the top-level agent directory is listed with where it leads (a skill
    /// installed as a link to a shared library) instead of being a problem. A link to a
    /// file outside stays a problem.
    fn list_with(&mut self, rel: &str, links_out: bool) -> Option<Vec<Entry>> {
        if let Some((link, message)) = self.escape(rel) {
            self.problem(&link, code::UNREADABLE, message);
            return None;
        }
        let dir = self.root.join(rel);
        cache::look(&dir);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Vec::new()),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                self.problem(rel, code::UNREADABLE, format!("`{rel}` must be a folder"));
                return None;
            }
            Err(e) => {
                self.problem(rel, code::UNREADABLE, format!("cannot read folder: {e}"));
                return None;
            }
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) => {
                    self.problem(rel, code::UNREADABLE, format!("cannot read folder: {e}"));
                    continue;
                }
            };
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                let shown = entry.file_name().to_string_lossy().into_owned();
                self.problem(
                    &format!("{rel}/{shown}"),
                    code::UNREADABLE,
                    "file name is not valid UTF-8".into(),
                );
                continue;
            };
            if name.starts_with('.') {
                continue;
            }
            let inner = format!("{rel}/{name}");
            // The entry's own type (no `lstat` where the folder listing says it already).
            let link = entry.file_type().map_or(true, |t| t.is_symlink());
            let mut linked = None;
            if let Some(message) = link
                .then(|| leaves_boundary(&entry.path(), &self.boundary, self.within))
                .flatten()
            {
                match fs::canonicalize(entry.path()) {
                    // Only a folder, and not one holding the agent: a skill's folder
                    // holds its `SKILL.md`, which a file of yours elsewhere
                    // (`~/.aws/credentials`) does not, and a folder above the agent
                    // holds far more than a skill.
                    Ok(real) if links_out && real.is_dir() && !self.boundary.starts_with(&real) => {
                        linked = Some(real);
                    }
                    _ => {
                        self.problem(&inner, code::UNREADABLE, message);
                        continue;
                    }
                }
            }
            // Follow symlinks: a link to a folder is a folder. A loop or a dangling link is a problem.
            let meta = fs::metadata(entry.path());
            cache::note(
                &entry.path(),
                meta.as_ref().ok().map(cache::Fingerprint::of),
            );
            let kind = match meta {
                Ok(m) if m.is_dir() => EntryKind::Dir,
                Ok(_) => EntryKind::File,
                Err(e) => {
                    let message = if e.raw_os_error() == Some(libc::ELOOP) {
                        "symbolic link loop".to_string()
                    } else if fs::symlink_metadata(entry.path()).is_ok_and(|m| m.is_symlink()) {
                        format!("broken symbolic link: {e}")
                    } else {
                        format!("cannot read: {e}")
                    };
                    self.problem(&inner, code::UNREADABLE, message);
                    continue;
                }
            };
            out.push(Entry { name, kind, linked });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Some(out)
    }

    fn instructions(&mut self) -> InstructionFiles {
        let file = self.root.join("instructions.md");
        let dir = self.root.join("instructions");
        match (fs::symlink_metadata(&file).is_ok(), dir.is_dir()) {
            (true, true) => InstructionFiles::Both,
            (true, false) => match self.read("instructions.md") {
                Some(loaded) => InstructionFiles::File(loaded),
                None => InstructionFiles::Unreadable,
            },
            (false, true) => {
                let Some(entries) = self.list("instructions") else {
                    return InstructionFiles::Unreadable;
                };
                let mut parts = Vec::new();
                for (name, kind) in entries {
                    if kind == EntryKind::File
                        && name.ends_with(".md")
                        && let Some(loaded) = self.read(&format!("instructions/{name}"))
                    {
                        parts.push(loaded);
                    }
                }
                InstructionFiles::Dir(parts)
            }
            (false, false) => InstructionFiles::Missing,
        }
    }

    fn tools(&mut self) -> Vec<Loaded> {
        let mut tools = Vec::new();
        for (name, kind) in self.list("tools").unwrap_or_default() {
            let rel = format!("tools/{name}");
            if kind == EntryKind::File && name.ends_with(".toml") {
                tools.extend(self.read(&rel));
            } else {
                self.mark("other", &rel);
                let what = if kind == EntryKind::Dir {
                    "folder"
                } else {
                    "file"
                };
                self.problems.push(
                    Diagnostic::warning(
                        code::NOT_A_TOOL_FILE,
                        format!("`{rel}` is not a tool file and is ignored"),
                    )
                    .file(self.display(&rel))
                    .note(format!(
                        "`tools/` holds one `<slug>.toml` file per tool; this is a {what}"
                    )),
                );
            }
        }
        tools
    }

    /// `hooks/*.toml`; anything else there is what the hooks run, part of the
    /// definition through their commands.
    fn hooks(&mut self) -> Vec<Loaded> {
        let mut hooks = Vec::new();
        for (name, kind) in self.list("hooks").unwrap_or_default() {
            let rel = format!("hooks/{name}");
            if kind == EntryKind::File && name.ends_with(".toml") {
                hooks.extend(self.read(&rel));
            } else {
                self.mark("other", &rel);
            }
        }
        hooks
    }

    fn connections(&mut self) -> Vec<Loaded> {
        let mut connections = Vec::new();
        for (name, kind) in self.list("connections").unwrap_or_default() {
            let rel = format!("connections/{name}");
            if kind == EntryKind::File && name.ends_with(".toml") {
                connections.extend(self.read(&rel));
            } else {
                self.mark("other", &rel);
                self.problems.push(
                    Diagnostic::warning(
                        code::NOT_A_CONNECTION_FILE,
                        format!("`{rel}` is not a connection file and is ignored"),
                    )
                    .file(self.display(&rel))
                    .note("`connections/` holds one `<name>.toml` file per MCP server"),
                );
            }
        }
        connections
    }

    fn skills(&mut self) -> Vec<skills::Unit> {
        // A skill may be a link to a shared library outside the agent directory, as
        // people install skills (see `skill`).
        let entries = self.list_with("skills", true).unwrap_or_default();
        let this = &*self;
        let units: Vec<skills::Unit> = if entries.len() >= PARALLEL_SKILLS {
            // The order of `entries` is kept: the build is the same on any number of cores.
            let seen = cache::current();
            entries
                .par_iter()
                .map(|entry| cache::within(seen.as_ref(), || this.skill(entry)))
                .collect()
        } else {
            entries.iter().map(|entry| this.skill(entry)).collect()
        };
        for (Entry { name, .. }, unit) in entries.iter().zip(&units) {
            self.mark("skill", &format!("skills/{name}"));
            self.hasher.update(unit.digest.as_bytes());
        }
        units
    }

    /// The entry `name` of `skills/`, read and compiled, or as the last build left it
    /// if none of the paths it looked at changed. An entry linked from outside the
    /// agent directory is read through its link, read-only, with what it holds kept
    /// inside the place it leads to (its own links may not leave it), and the manifest
    /// records where it leads.
    fn skill(&self, entry: &Entry) -> skills::Unit {
        let Entry { name, kind, linked } = entry;
        let (name, kind) = (name.as_str(), *kind);
        let boundary = linked.clone().unwrap_or_else(|| self.boundary.clone());
        let rel = format!("skills/{name}");
        let key = self.display(&rel);
        if let Some(unit) = cache::reuse(&key, |payload| skills::Unit::decode(payload, &key)) {
            return unit;
        }
        cache::unit(
            &key,
            || {
                // The entry itself, whatever it turns out to be: a unit never records
                // nothing (see `cache::check`).
                cache::look(&self.root.join(&rel));
                let mut part = Loader {
                    root: self.root.clone(),
                    prefix: self.prefix.clone(),
                    boundary: boundary.clone(),
                    within: if linked.is_some() {
                        "the linked skill's folder"
                    } else {
                        self.within
                    },
                    hasher: Sha256::new(),
                    problems: Vec::new(),
                };
                let linked = linked.as_deref().map(|p| p.to_string_lossy().into_owned());
                if let Some(target) = &linked {
                    part.mark("linked", target);
                }
                let file = part.skill_file(name, kind, &rel);
                let mut diagnostics = Diagnostics::default();
                let skill = file.as_ref().and_then(|file| {
                    skills::compile_entry(file, &self.prefix, &boundary, &mut diagnostics)
                });
                let skill = skill.map(|skill| crate::manifest::Skill { linked, ..skill });
                let Loader {
                    mut hasher,
                    problems,
                    ..
                } = part;
                hash_problems(&mut hasher, &problems);
                let mut all = problems;
                all.extend(diagnostics);
                skills::Unit {
                    key: key.clone(),
                    file: file.map(|f| f.file().display.clone()),
                    skill,
                    diagnostics: all,
                    digest: hex(&hasher.finalize()),
                }
            },
            skills::Unit::encode,
        )
    }

    /// Reads the entry `rel` (`skills/<name>`) of `skills/`: a skill, or a problem.
    fn skill_file(&mut self, name: &str, kind: EntryKind, rel: &str) -> Option<SkillFile> {
        let rel = rel.to_string();
        match kind {
            EntryKind::File => {
                if let Some(stem) = name.strip_suffix(".md") {
                    return self.read_as(&rel, true).map(|file| SkillFile::Flat {
                        name: stem.to_string(),
                        file,
                    });
                }
                self.mark("other", &rel);
                self.problems.push(
                    Diagnostic::warning(
                        code::NOT_A_SKILL,
                        format!("`{rel}` is not a skill and is ignored"),
                    )
                    .file(self.display(&rel))
                    .note("a skill is `skills/<name>.md` or a folder `skills/<name>/` holding `SKILL.md`"),
                );
                None
            }
            EntryKind::Dir => {
                let skill_md = format!("{rel}/SKILL.md");
                // The folder itself: what it holds shows as a change of it.
                cache::look(&self.root.join(&rel));
                if !cache::exists(&self.root.join(&skill_md)) {
                    self.mark("other", &rel);
                    let path = self.root.join(&skill_md);
                    let message = match cache::read_link(&path) {
                        // A link whose target is gone: say so, and where it pointed.
                        Ok(target) => format!(
                            "`{skill_md}` is a broken symbolic link to `{}`",
                            target.display()
                        ),
                        Err(_) => format!("skill folder `{rel}` has no `SKILL.md`"),
                    };
                    self.problem(&rel, code::PACKAGE_WITHOUT_SKILL_MD, message);
                    return None;
                }
                let resources = self.resources(&rel);
                let file = self.read_as(&skill_md, true)?;
                Some(SkillFile::Package {
                    name: name.to_string(),
                    file,
                    resources,
                })
            }
        }
    }

    /// Every file of a packaged skill except `SKILL.md`, following links that stay inside
    /// the agent directory. A file that cannot be listed is left out with a warning: the
    /// skill works without it.
    fn resources(&mut self, rel: &str) -> Vec<String> {
        let mut resources = Vec::new();
        let mut skipped: Vec<(PathBuf, String)> = Vec::new();
        let boundary = self.boundary.clone();
        let within = self.within;
        let mut outside: Vec<(PathBuf, String)> = Vec::new();
        let walk = walkdir::WalkDir::new(self.root.join(rel))
            .follow_links(true)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| {
                if e.depth() == 0 {
                    return true;
                }
                if e.file_name().to_string_lossy().starts_with('.') {
                    return false;
                }
                // Checked before walkdir descends: a link to `/usr` is never walked.
                match e
                    .path_is_symlink()
                    .then(|| leaves_boundary(e.path(), &boundary, within))
                {
                    Some(Some(message)) => {
                        outside.push((e.path().to_path_buf(), message));
                        false
                    }
                    _ => true,
                }
            });
        for entry in walk {
            // A resource's contents are not part of the build, only its name: the folder
            // holding a file changes when the file is added, removed, renamed or replaced,
            // so only folders (and links, whose targets may change) are recorded.
            if let Ok(entry) = &entry
                && (entry.file_type().is_dir() || entry.path_is_symlink())
                && cache::active()
            {
                match entry.metadata() {
                    Ok(meta) => cache::note_meta(entry.path(), &meta),
                    Err(_) => cache::note(entry.path(), None),
                }
            }
            match entry {
                Ok(entry) if entry.file_type().is_file() => {
                    let Ok(inner) = entry.path().strip_prefix(&self.root) else {
                        continue;
                    };
                    let inner = slash_path(inner);
                    if inner != format!("{rel}/SKILL.md") {
                        self.mark("resource", &inner);
                        resources.push(inner);
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    let path = e
                        .path()
                        .map_or_else(|| self.root.join(rel), Path::to_path_buf);
                    let message = if let Some(message) =
                        leaves_boundary(&path, &self.boundary, self.within)
                    {
                        // A link to `/` or another ancestor: walkdir calls it a loop,
                        // but what matters is where it leads.
                        message
                    } else if e.loop_ancestor().is_some() {
                        "symbolic link loop".to_string()
                    } else {
                        describe_link_error(&path).unwrap_or_else(|| {
                            format!(
                                "cannot read: {}",
                                e.io_error()
                                    .map_or_else(|| e.to_string(), ToString::to_string)
                            )
                        })
                    };
                    skipped.push((path, message));
                }
            }
        }
        outside.extend(skipped);
        for (path, message) in outside {
            let at = path
                .strip_prefix(&self.root)
                .map_or_else(|_| rel.to_string(), slash_path);
            self.mark("problem", &at);
            self.problems.push(
                Diagnostic::warning(
                    code::RESOURCE_SKIPPED,
                    format!("skill resource not listed: {message}"),
                )
                .file(self.display(&at))
                .note("the skill builds without it; `load_skill` does not list it"),
            );
        }
        resources
    }

    /// The `*.toml` files below `rel`, in path order. Other files are the cases' own
    /// (workspace folders, notes) and are left alone, and so are folders whose name starts
    /// with `_`, where workspace folders holding TOML files of their own can live.
    fn evals(&mut self, rel: &str) -> Vec<Loaded> {
        let mut out = Vec::new();
        for (name, kind) in self.list(rel).unwrap_or_default() {
            let inner = format!("{rel}/{name}");
            match kind {
                EntryKind::Dir if !name.starts_with('_') => out.extend(self.evals(&inner)),
                EntryKind::File if name.ends_with(".toml") => {
                    if let Some((link, message)) = self.escape(&inner) {
                        self.problem(&link, code::UNREADABLE, message);
                        continue;
                    }
                    match read_text(&self.root.join(&inner)) {
                        Ok(text) => out.push(Loaded {
                            path: inner.clone(),
                            display: self.display(&inner),
                            text,
                        }),
                        Err(message) => self.problem(&inner, code::UNREADABLE, message),
                    }
                }
                _ => {}
            }
        }
        out
    }

    fn subagents(&mut self, depth: usize) -> Vec<SubagentDir> {
        let mut subagents = Vec::new();
        for (name, kind) in self.list("subagents").unwrap_or_default() {
            let rel = format!("subagents/{name}");
            if kind != EntryKind::Dir {
                self.mark("other", &rel);
                self.problems.push(
                    Diagnostic::warning(
                        code::NOT_A_SUBAGENT,
                        format!("`{rel}` is not a subagent folder and is ignored"),
                    )
                    .file(self.display(&rel)),
                );
                continue;
            }
            if depth + 1 > MAX_SUBAGENT_DEPTH {
                self.mark("other", &rel);
                self.problem(
                    &rel,
                    code::SUBAGENTS_TOO_DEEP,
                    format!("subagents nest more than {MAX_SUBAGENT_DEPTH} levels deep"),
                );
                continue;
            }
            let files = AgentFiles::load_nested(
                &self.root.join(&rel),
                self.display(&rel),
                depth + 1,
                &self.boundary,
            );
            self.mark("subagent", &rel);
            self.hasher.update(files.hash.as_bytes());
            subagents.push(SubagentDir { name, files });
        }
        subagents
    }
}

/// Problems change the build: they are part of the hash.
fn hash_problems(hasher: &mut Sha256, problems: &[Diagnostic]) {
    for p in problems {
        hasher.update(p.code.as_bytes());
        hasher.update(p.file.as_deref().unwrap_or("").as_bytes());
    }
}

/// What to say about a symbolic link at `path` whose target is outside `boundary`;
/// `None` if it is not a link, leads inside, or leads nowhere (reported otherwise).
fn leaves_boundary(path: &Path, boundary: &Path, within: &str) -> Option<String> {
    if !fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
        return None;
    }
    // Where it leads: a link anywhere on the way that is pointed elsewhere changes it.
    cache::look(path);
    let real = fs::canonicalize(path).ok()?;
    if real.starts_with(boundary) {
        return None;
    }
    let target = fs::read_link(path)
        .map_or_else(|_| real.display().to_string(), |t| t.display().to_string());
    Some(format!(
        "symbolic link to `{target}` leads outside {within}"
    ))
}

/// Why a symbolic link at `path` cannot be followed, if it is one.
fn describe_link_error(path: &Path) -> Option<String> {
    if !fs::symlink_metadata(path).is_ok_and(|m| m.is_symlink()) {
        return None;
    }
    match fs::canonicalize(path) {
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => Some("symbolic link loop".into()),
        Err(e) => Some(format!("broken symbolic link: {e}")),
        Ok(_) => None,
    }
}

/// What messages call the top-level agent directory.
const AGENT_DIR: &str = "the agent directory";

/// An entry of a folder of the agent.
struct Entry {
    name: String,
    kind: EntryKind,
    /// Where it leads, if it is a symbolic link to a place outside the top-level agent
    /// directory (canonical); only [`Loader::list_with`] with `links_out` lists those.
    linked: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum EntryKind {
    File,
    Dir,
}

/// A relative path with `/` separators on every platform.
pub fn slash_path(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

pub use crate::text::hex;

#[cfg(test)]
mod tests {
    use super::*;

    fn agent(dir: &Path) {
        fs::write(dir.join("agent.toml"), "model = \"openai/gpt-4o\"\n").unwrap();
        fs::write(dir.join("instructions.md"), "Hi\n").unwrap();
    }

    #[test]
    fn the_hash_follows_contents_and_names_but_not_location() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        agent(a.path());
        agent(b.path());
        let first = AgentFiles::load(a.path()).hash;
        assert_eq!(first, AgentFiles::load(b.path()).hash);
        fs::write(a.path().join("instructions.md"), "Hi!\n").unwrap();
        let edited = AgentFiles::load(a.path()).hash;
        assert_ne!(first, edited);
        fs::create_dir(a.path().join("skills")).unwrap();
        fs::write(a.path().join("skills/x.txt"), "").unwrap();
        assert_ne!(
            edited,
            AgentFiles::load(a.path()).hash,
            "ignored files count too"
        );
    }

    #[test]
    fn lists_parts_in_file_name_order_and_skips_hidden_files() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("instructions")).unwrap();
        for name in ["b.md", "a.md", ".swp.md", "c.txt"] {
            fs::write(dir.path().join("instructions").join(name), name).unwrap();
        }
        let files = AgentFiles::load(dir.path());
        let InstructionFiles::Dir(parts) = files.instructions else {
            panic!("expected a folder of parts");
        };
        let names: Vec<&str> = parts.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(names, ["instructions/a.md", "instructions/b.md"]);
    }

    #[test]
    fn refuses_large_and_non_utf8_files() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        fs::File::create(&big)
            .unwrap()
            .set_len(MAX_FILE_BYTES + 1)
            .unwrap();
        assert!(
            read_text(&big)
                .unwrap_err()
                .starts_with("file is too large")
        );
        let bad = dir.path().join("bad");
        fs::write(&bad, b"ok\n\xff").unwrap();
        assert_eq!(
            read_text(&bad).unwrap_err(),
            "file is not valid UTF-8 (line 2, byte 3)"
        );
        assert_eq!(
            read_text(dir.path()).unwrap_err(),
            "expected a file, found a folder"
        );
    }

    #[cfg(unix)]
    #[test]
    fn fifos_and_sockets_are_problems_not_hangs() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let fifo = |path: &Path| {
            rustix::fs::mkfifoat(
                rustix::fs::CWD,
                path,
                rustix::fs::Mode::from_raw_mode(0o644),
            )
            .unwrap()
        };
        fs::write(root.join("agent.toml"), "model = \"openai/gpt-4o\"\n").unwrap();
        fifo(&root.join("instructions.md"));
        fs::create_dir_all(root.join("tools")).unwrap();
        fifo(&root.join("tools/x.toml"));
        fs::create_dir_all(root.join("skills")).unwrap();
        fifo(&root.join("skills/s.md"));
        let _socket = std::os::unix::net::UnixListener::bind(root.join("tools/y.toml")).unwrap();
        let files = AgentFiles::load(root);
        let mut problems: Vec<(String, String)> = files
            .problems
            .iter()
            .chain(files.skills.iter().flat_map(|s| &s.diagnostics))
            .map(|p| (p.file.clone().unwrap_or_default(), p.message.clone()))
            .collect();
        problems.sort();
        assert_eq!(
            problems,
            [
                (
                    "instructions.md".to_string(),
                    "expected a regular file, found a FIFO (named pipe)".to_string()
                ),
                (
                    "skills/s.md".to_string(),
                    "expected a regular file, found a FIFO (named pipe)".to_string()
                ),
                (
                    "tools/x.toml".to_string(),
                    "expected a regular file, found a FIFO (named pipe)".to_string()
                ),
                (
                    "tools/y.toml".to_string(),
                    "expected a regular file, found a socket".to_string()
                ),
            ]
        );
    }
}
