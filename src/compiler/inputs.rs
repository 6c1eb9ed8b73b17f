//! Finds and reads the files of an agent directory, and hashes them.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::diagnostic::{Diagnostic, code};

/// Input files larger than this are refused without being read.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// How deep subagents may nest inside subagents.
pub const MAX_SUBAGENT_DEPTH: usize = 4;

/// A text file that was read successfully.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// Path relative to this agent's directory, with `/` separators.
    pub path: String,
    /// Path relative to the top-level agent directory (what diagnostics show).
    pub display: String,
    pub text: String,
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

/// One entry of `skills/`.
#[derive(Debug, Clone)]
pub enum SkillFile {
    /// `skills/<name>.md`
    Flat { name: String, file: Loaded },
    /// `skills/<name>/SKILL.md` and its other files (relative to the agent directory).
    Package {
        name: String,
        file: Loaded,
        resources: Vec<String>,
    },
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
    pub agent_toml: Option<Loaded>,
    pub instructions: InstructionFiles,
    pub tools: Vec<Loaded>,
    /// `connections/<name>.toml`, in file-name order.
    pub connections: Vec<Loaded>,
    pub skills: Vec<SkillFile>,
    pub subagents: Vec<SubagentDir>,
    /// Files that could not be read and entries that are not what their folder expects.
    pub problems: Vec<Diagnostic>,
    /// SHA-256 over every path and content read, and eve's version.
    pub hash: String,
}

struct Loader {
    root: PathBuf,
    prefix: String,
    hasher: Sha256,
    problems: Vec<Diagnostic>,
}

impl AgentFiles {
    /// Reads the agent directory at `root`. Never fails: problems become diagnostics.
    pub fn load(root: &Path) -> AgentFiles {
        Self::load_nested(root, String::new(), 0)
    }

    fn load_nested(root: &Path, prefix: String, depth: usize) -> AgentFiles {
        let mut loader = Loader {
            root: root.to_path_buf(),
            prefix: prefix.clone(),
            hasher: Sha256::new(),
            problems: Vec::new(),
        };
        loader.hasher.update(env!("CARGO_PKG_VERSION").as_bytes());
        loader
            .hasher
            .update(crate::manifest::SCHEMA_VERSION.to_le_bytes());

        let agent_toml = loader.read_optional("agent.toml");
        let instructions = loader.instructions();
        let tools = loader.tools();
        let connections = loader.connections();
        let skills = loader.skills();
        let subagents = loader.subagents(depth);

        let Loader {
            mut hasher,
            problems,
            ..
        } = loader;
        for p in &problems {
            hasher.update(p.code.as_bytes());
            hasher.update(p.file.as_deref().unwrap_or("").as_bytes());
        }
        AgentFiles {
            root: root.to_path_buf(),
            prefix,
            agent_toml,
            instructions,
            tools,
            connections,
            skills,
            subagents,
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

    /// Reads `rel` if it exists; a file that exists but cannot be read is a problem.
    fn read_optional(&mut self, rel: &str) -> Option<Loaded> {
        let path = self.root.join(rel);
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            _ => self.read(rel),
        }
    }

    fn read(&mut self, rel: &str) -> Option<Loaded> {
        let path = self.root.join(rel);
        match read_text(&path) {
            Ok(text) => {
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
                self.problem(rel, code::UNREADABLE, message);
                None
            }
        }
    }

    /// The entries of a folder of the agent, sorted by name, hidden ones left out.
    fn list(&mut self, rel: &str) -> Vec<(String, EntryKind)> {
        let dir = self.root.join(rel);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => {
                self.problem(rel, code::UNREADABLE, format!("`{rel}` must be a folder"));
                return Vec::new();
            }
            Err(e) => {
                self.problem(rel, code::UNREADABLE, format!("cannot read folder: {e}"));
                return Vec::new();
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
            // Follow symlinks: a link to a folder is a folder. A loop or a dangling link is a problem.
            let kind = match fs::metadata(entry.path()) {
                Ok(m) if m.is_dir() => EntryKind::Dir,
                Ok(_) => EntryKind::File,
                Err(e) => {
                    let message = if e.raw_os_error() == Some(40) {
                        "symbolic link loop".to_string()
                    } else if fs::symlink_metadata(entry.path()).is_ok_and(|m| m.is_symlink()) {
                        format!("broken symbolic link: {e}")
                    } else {
                        format!("cannot read: {e}")
                    };
                    self.problem(&format!("{rel}/{name}"), code::UNREADABLE, message);
                    continue;
                }
            };
            out.push((name, kind));
        }
        out.sort();
        out
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
                let mut parts = Vec::new();
                for (name, kind) in self.list("instructions") {
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
        for (name, kind) in self.list("tools") {
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

    fn connections(&mut self) -> Vec<Loaded> {
        let mut connections = Vec::new();
        for (name, kind) in self.list("connections") {
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

    fn skills(&mut self) -> Vec<SkillFile> {
        let mut skills = Vec::new();
        for (name, kind) in self.list("skills") {
            let rel = format!("skills/{name}");
            match kind {
                EntryKind::File => {
                    if let Some(stem) = name.strip_suffix(".md") {
                        if let Some(file) = self.read(&rel) {
                            skills.push(SkillFile::Flat {
                                name: stem.to_string(),
                                file,
                            });
                        }
                    } else {
                        self.mark("other", &rel);
                        self.problems.push(
                            Diagnostic::warning(
                                code::NOT_A_SKILL,
                                format!("`{rel}` is not a skill and is ignored"),
                            )
                            .file(self.display(&rel))
                            .note("a skill is `skills/<name>.md` or a folder `skills/<name>/` holding `SKILL.md`"),
                        );
                    }
                }
                EntryKind::Dir => {
                    let skill_md = format!("{rel}/SKILL.md");
                    if !self.root.join(&skill_md).exists() {
                        self.mark("other", &rel);
                        self.problem(
                            &rel,
                            code::PACKAGE_WITHOUT_SKILL_MD,
                            format!("skill folder `{rel}` has no `SKILL.md`"),
                        );
                        continue;
                    }
                    let resources = self.resources(&rel);
                    if let Some(file) = self.read(&skill_md) {
                        skills.push(SkillFile::Package {
                            name,
                            file,
                            resources,
                        });
                    }
                }
            }
        }
        skills
    }

    /// Every file of a packaged skill except `SKILL.md`, following links, refusing loops.
    fn resources(&mut self, rel: &str) -> Vec<String> {
        let mut resources = Vec::new();
        let walk = walkdir::WalkDir::new(self.root.join(rel))
            .follow_links(true)
            .sort_by_file_name()
            .into_iter()
            .filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
        for entry in walk {
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
                    let at = e
                        .path()
                        .and_then(|p| p.strip_prefix(&self.root).ok())
                        .map_or_else(|| rel.to_string(), slash_path);
                    let message = if e.loop_ancestor().is_some() {
                        "symbolic link loop".to_string()
                    } else {
                        format!(
                            "cannot read: {}",
                            e.io_error()
                                .map_or_else(|| e.to_string(), ToString::to_string)
                        )
                    };
                    self.mark("problem", &at);
                    self.problem(&at, code::UNREADABLE, message);
                }
            }
        }
        resources
    }

    fn subagents(&mut self, depth: usize) -> Vec<SubagentDir> {
        let mut subagents = Vec::new();
        for (name, kind) in self.list("subagents") {
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
            let files =
                AgentFiles::load_nested(&self.root.join(&rel), self.display(&rel), depth + 1);
            self.mark("subagent", &rel);
            self.hasher.update(files.hash.as_bytes());
            subagents.push(SubagentDir { name, files });
        }
        subagents
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum EntryKind {
    File,
    Dir,
}

/// Reads a UTF-8 text file of at most [`MAX_FILE_BYTES`], never loading a larger one.
pub fn read_text(path: &Path) -> Result<String, String> {
    let describe = |e: std::io::Error| match e.raw_os_error() {
        Some(40) => "symbolic link loop".to_string(),
        _ => format!("cannot read: {e}"),
    };
    let meta = fs::metadata(path).map_err(describe)?;
    if meta.is_dir() {
        return Err("expected a file, found a folder".into());
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(format!(
            "file is too large ({} bytes; the limit is {} bytes)",
            meta.len(),
            MAX_FILE_BYTES
        ));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(describe)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(format!("file is too large (over {MAX_FILE_BYTES} bytes)"));
    }
    String::from_utf8(bytes).map_err(|e| {
        let offset = e.utf8_error().valid_up_to();
        let line = e.as_bytes()[..offset]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1;
        format!("file is not valid UTF-8 (line {line}, byte {offset})")
    })
}

/// A relative path with `/` separators on every platform.
pub fn slash_path(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

pub use crate::text::hex;

/// `sha256:<hex>` of a text.
pub fn sha256(text: &str) -> String {
    format!("sha256:{}", hex(&Sha256::digest(text.as_bytes())))
}

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
}
