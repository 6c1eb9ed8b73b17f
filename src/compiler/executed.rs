//! The files an agent's commands run: part of its definition.
//!
//! A command tool's `command` and a stdio connection's `command` and `cwd` name files
//! of the agent directory as `{{ agent_dir }}/…`. Each entry of the agent directory
//! they name this way (`servers/` of `{{ agent_dir }}/servers/stats.mjs`, `run.sh` of
//! `{{ agent_dir }}/run.sh`) is part of the definition like `tools/`: every file in it
//! is hashed into the manifest's `inputs_hash` (so a change is one the review shows),
//! and sessions keep it read-only to the model's processes and file tools
//! ([`crate::manifest::Manifest::definition_entries`]). An entry eve cannot make part
//! of the definition (missing, a link that leads out, too large, unreadable) leaves the
//! tool or connection out with a warning: a file the model could create or change
//! must never be what the author's command runs.

use std::path::{Component, Path};

use sha2::{Digest, Sha256};

use super::cache;

/// The most files an entry may hold.
pub const MAX_FILES: usize = 20_000;
/// The most bytes of its files together.
pub const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// The entries named by `templates`, a command's elements written in the agent
/// directory `prefix` (`""` for the top agent, `subagents/x` for a subagent), as
/// paths relative to the top agent directory: the first name below the deepest agent
/// directory on the way (`servers`, `subagents/x/scripts`). A path that names an agent
/// directory itself, its `.eve/`, or climbs out of the top one names nothing.
pub fn named<'a>(templates: impl IntoIterator<Item = &'a str>, prefix: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for template in templates {
        for suffix in after_agent_dir(template) {
            if let Some(entry) = entry_of(prefix, suffix)
                && !out.contains(&entry)
            {
                out.push(entry);
            }
        }
    }
    out.sort();
    out
}

/// The literal text after each `{{ agent_dir }}` of a template, up to the next tag.
fn after_agent_dir(template: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let inner = &rest[open + 2..];
        let Some(close) = inner.find("}}") else {
            break;
        };
        let expression = inner[..close].trim_matches(|c: char| c == '-' || c.is_whitespace());
        let after = &inner[close + 2..];
        if expression == "agent_dir" {
            let end = ["{{", "{%", "{#"]
                .iter()
                .filter_map(|tag| after.find(tag))
                .min()
                .unwrap_or(after.len());
            out.push(&after[..end]);
        }
        rest = after;
    }
    out
}

/// The entry `suffix` (`/servers/x.mjs`) names below the agent directory `prefix`.
fn entry_of(prefix: &str, suffix: &str) -> Option<String> {
    let rest = suffix.strip_prefix('/')?;
    let mut parts: Vec<String> = prefix
        .split('/')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    for component in Path::new(rest).components() {
        match component {
            Component::Normal(name) => parts.push(name.to_str()?.to_string()),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    // The deepest agent directory on the way: `subagents/<name>` pairs from the top.
    let mut owner = 0;
    while parts.len() > owner + 2 && parts[owner] == "subagents" {
        owner += 2;
    }
    // `subagents/<name>` itself is an agent directory, not an entry of one.
    if parts.len() == owner + 2 && parts[owner] == "subagents" {
        return None;
    }
    let name = parts.get(owner)?;
    if name == crate::manifest::STATE_DIR {
        return None;
    }
    Some(parts[..=owner].join("/"))
}

/// The entries one agent's commands name, each hashed once.
#[derive(Debug, Default)]
pub struct Entries {
    seen: std::collections::BTreeMap<String, Result<String, String>>,
    used: std::collections::BTreeSet<String>,
}

impl Entries {
    /// Why the command naming `named` cannot run, if one of them cannot be part of the
    /// definition; otherwise they are recorded as kept.
    pub fn refuse(&mut self, boundary: &Path, named: &[String]) -> Option<String> {
        for entry in named {
            let state = self
                .seen
                .entry(entry.clone())
                .or_insert_with(|| digest(boundary, boundary, entry));
            if let Err(why) = state {
                return Some(why.clone());
            }
        }
        self.used.extend(named.iter().cloned());
        None
    }

    /// The entries of the commands kept, in path order.
    pub fn kept(&self) -> Vec<crate::manifest::Executed> {
        self.used
            .iter()
            .filter_map(|path| match self.seen.get(path) {
                Some(Ok(hash)) => Some(crate::manifest::Executed {
                    path: path.clone(),
                    hash: hash.clone(),
                }),
                _ => None,
            })
            .collect()
    }

    /// The top-level names of the kept entries below the agent directory `prefix` that
    /// are not part of every definition already.
    pub fn names_below(&self, prefix: &str) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for path in &self.used {
            let rest = if prefix.is_empty() {
                Some(path.as_str())
            } else {
                path.strip_prefix(prefix).and_then(|r| r.strip_prefix('/'))
            };
            let Some(top) = rest.and_then(|r| r.split('/').next()) else {
                continue;
            };
            if !crate::manifest::DEFINITION_ENTRIES.contains(&top) && !out.iter().any(|o| o == top)
            {
                out.push(top.to_string());
            }
        }
        out
    }
}

/// The inputs hash of a build whose files hash to `files` and whose commands run
/// `executed`, with the hashes of its subagents that ran files of their own.
pub fn fold(files: &str, executed: &[crate::manifest::Executed], children: &[String]) -> String {
    if executed.is_empty() && children.is_empty() {
        return files.to_string();
    }
    let mut hasher = Sha256::new();
    hasher.update(b"executed");
    hasher.update(files.as_bytes());
    for entry in executed {
        hasher.update((entry.path.len() as u64).to_le_bytes());
        hasher.update(entry.path.as_bytes());
        hasher.update(entry.hash.as_bytes());
    }
    for child in children {
        hasher.update(child.as_bytes());
    }
    format!("sha256:{}", super::inputs::hex(&hasher.finalize()))
}

/// What an entry is, hashed: `Ok(digest)`, or why it cannot be part of the definition.
pub fn digest(top: &Path, boundary: &Path, entry: &str) -> Result<String, String> {
    let path = top.join(entry);
    let meta = match cache::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("`{entry}` is not in the agent directory"));
        }
        Err(e) => return Err(format!("`{entry}` cannot be read: {e}")),
    };
    let root = if meta.file_type().is_symlink() {
        let real = cache::canonicalize(&path)
            .map_err(|e| format!("`{entry}` is a broken symbolic link: {e}"))?;
        if !real.starts_with(boundary) {
            return Err(format!(
                "`{entry}` is a symbolic link that leads outside the agent directory"
            ));
        }
        real
    } else {
        path
    };
    let mut hasher = Sha256::new();
    let mut files = 0usize;
    let mut bytes = 0u64;
    for item in cache::walk(&root) {
        let item = item.map_err(|e| format!("`{entry}` cannot be read: {e}"))?;
        let inner = item.path().strip_prefix(&root).unwrap_or(item.path());
        let rel = super::inputs::slash_path(inner);
        let kind = item.file_type();
        hasher.update((rel.len() as u64).to_le_bytes());
        hasher.update(rel.as_bytes());
        files += 1;
        if files > MAX_FILES {
            return Err(format!(
                "`{entry}` holds more than {MAX_FILES} files, too many to keep as part of the definition"
            ));
        }
        if kind.is_dir() {
            hasher.update(b"d");
        } else if kind.is_symlink() {
            let target = cache::read_link(item.path())
                .map_err(|e| format!("`{entry}/{rel}` cannot be read: {e}"))?;
            hasher.update(b"l");
            hasher.update(target.as_os_str().as_encoded_bytes());
        } else if kind.is_file() {
            hasher.update(b"f");
            bytes += hash_file(item.path(), &mut hasher, MAX_BYTES.saturating_sub(bytes))
                .map_err(|e| format!("`{entry}/{rel}` cannot be read: {e}"))?;
            if bytes > MAX_BYTES {
                return Err(format!(
                    "`{entry}` holds more than {} MiB, too much to keep as part of the definition",
                    MAX_BYTES / (1024 * 1024)
                ));
            }
        } else {
            // A FIFO, socket or device is named, never opened.
            hasher.update(b"o");
        }
    }
    Ok(format!("sha256:{}", super::inputs::hex(&hasher.finalize())))
}

/// Adds the file's length and bytes to `hasher` (opened without following a link and
/// without blocking), reading at most `room + 1` bytes; returns how many it read.
fn hash_file(path: &Path, hasher: &mut Sha256, room: u64) -> std::io::Result<u64> {
    use std::io::Read;
    let file = cache::open_file(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut limited = file.take(room.saturating_add(1));
    let mut buf = vec![0u8; 64 * 1024];
    let mut read = 0u64;
    loop {
        let n = limited.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        read += n as u64;
    }
    hasher.update(read.to_le_bytes());
    Ok(read)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_entries_a_command_names_through_agent_dir() {
        let named = |templates: &[&str], prefix: &str| named(templates.iter().copied(), prefix);
        assert_eq!(
            named(&["node", "{{ agent_dir }}/servers/stats.mjs"], ""),
            ["servers"]
        );
        assert_eq!(
            named(
                &[
                    "{{agent_dir}}/run.sh",
                    "--config={{ agent_dir }}/conf/a.json",
                    "{{- agent_dir -}}/./servers/../lib/x/{{ input.name }}.py",
                ],
                ""
            ),
            ["conf", "lib", "run.sh"]
        );
        // Nothing named: the folder itself, its state, a climb out, a path of the input.
        assert!(
            named(
                &[
                    "{{ agent_dir }}",
                    "{{ agent_dir }}/",
                    "{{ agent_dir }}/.eve/sessions/x",
                    "{{ agent_dir }}/../elsewhere",
                    "{{ agent_dir }}/{{ input.path }}",
                    "{{ workspace }}/x",
                    "scripts/x.py",
                ],
                ""
            )
            .is_empty()
        );
        // A subagent's own files, and its parent's.
        assert_eq!(
            named(
                &[
                    "{{ agent_dir }}/scripts/a.py",
                    "{{ agent_dir }}/../../servers/db"
                ],
                "subagents/x"
            ),
            ["servers", "subagents/x/scripts"]
        );
    }

    #[test]
    fn an_entry_is_hashed_by_its_files_and_refused_when_it_cannot_be_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(top.join("servers/lib")).unwrap();
        std::fs::write(top.join("servers/a.mjs"), "one").unwrap();
        std::fs::write(top.join("servers/lib/b.mjs"), "two").unwrap();
        let first = digest(&top, &top, "servers").unwrap();
        assert_eq!(digest(&top, &top, "servers").unwrap(), first);
        std::fs::write(top.join("servers/lib/b.mjs"), "tw0").unwrap();
        assert_ne!(digest(&top, &top, "servers").unwrap(), first);
        assert_eq!(
            digest(&top, &top, "scripts").unwrap_err(),
            "`scripts` is not in the agent directory"
        );
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), top.join("out")).unwrap();
        assert!(
            digest(&top, &top, "out")
                .unwrap_err()
                .contains("leads outside the agent directory")
        );
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            top.join("servers/pipe"),
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .unwrap();
        assert!(
            digest(&top, &top, "servers").is_ok(),
            "a FIFO is not opened"
        );
    }
}
