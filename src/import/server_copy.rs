//! The plugin's files a stdio server runs, copied into the agent directory where its
//! connection file says `{{ agent_dir }}`: each entry at the top of the plugin that a
//! `${CLAUDE_PLUGIN_ROOT}/…` path of its command line or `cwd` lies in (`servers/`,
//! `scripts/`, `run.sh`), read beneath the imported folder like everything else. A
//! relative path naming a file of the plugin is made `${CLAUDE_PLUGIN_ROOT}/…` first
//! (Claude Code reads it in the folder it runs in; eve starts the server in its own).
//! A server run from the whole plugin (`--cwd ${CLAUDE_PLUGIN_ROOT}`) gets the plugin's
//! own files — all but the parts eve imports as its own — in `claude-plugin/`, which its
//! `${CLAUDE_PLUGIN_ROOT}` becomes. What cannot be copied is a note on the server.

use std::collections::BTreeSet;

use super::copy;
use super::mcp::Server;
use super::report::{Note, shown};
use super::server_files::{EVE_ENTRIES, Named, PLUGIN_ROOT, named, plain, top_entry};
use super::slug::slug;
use super::source::{Kind, MAX_COPIED_BYTES, Source, join};
use super::tree::Tree;

pub use super::report::Copied;

/// The folder of the agent directory that holds the plugin's own files for a server
/// run from the whole plugin.
pub const WHOLE: &str = "claude-plugin";

/// The entries at the top of a plugin that are its Claude Code parts (imported as
/// eve's own, or not at all), not files a server runs.
const CLAUDE_PARTS: &[&str] = &[
    ".claude-plugin",
    "agents",
    "commands",
    "skills",
    "hooks",
    ".mcp.json",
    "output-styles",
    "settings.json",
    "settings.local.json",
    "CLAUDE.md",
];

/// What [`copy`] did for one server.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The entries copied for it now.
    pub copied: Vec<Copied>,
    /// The paths it names that the agent directory will not hold: until they are
    /// there, the build leaves the connection out and starts nothing.
    pub missing: Vec<String>,
}

/// The entries of the plugin copied for its servers so far.
#[derive(Debug, Default)]
pub struct Done {
    /// Copied at the top of the agent directory.
    top: BTreeSet<String>,
    /// Copied into [`WHOLE`], once some server runs from the whole plugin.
    whole: Option<BTreeSet<String>>,
}

impl Done {
    /// Whether the entry `name` at the top of the plugin was copied for a server.
    pub fn copied(&self, name: &str) -> bool {
        self.top.contains(name) || self.whole.as_ref().is_some_and(|w| w.contains(name))
    }
}

/// Copies what `server` names of the plugin into `tree`; `done` holds the entries
/// copied already (several servers may share one).
pub fn copy(
    source: &Source,
    server: &mut Server,
    tree: &mut Tree,
    done: &mut Done,
) -> anyhow::Result<Outcome> {
    let (paths, whole) = wanted(source, server);
    if whole {
        return copy_for_whole(source, server, paths, tree, done);
    }
    let mut out = Outcome::default();
    for path in paths {
        let entry = top_entry(&path).to_string();
        let why = match refused(source, &path, &entry) {
            Some(why) => Some(why),
            None if entry != "skills" && done.top.insert(entry.clone()) => {
                match copy_entry(source, &entry, &entry, tree)? {
                    Ok(mut item) => {
                        item.from = format!("{}, which `{}` runs", item.from, server.name);
                        out.copied.push(item);
                        None
                    }
                    Err(why) => Some(why),
                }
            }
            None => None,
        };
        let there = entry == "skills" || tree.has(&path) || tree.has_below(&path);
        if let Some(why) = why {
            server.notes.push(Note::Dropped(format!(
                "`{}`: not copied: {why}; the build leaves the connection out until it is there",
                shown(&path)
            )));
        } else if !there {
            server.notes.push(missing(&path));
        }
        if !there {
            out.missing.push(path);
        }
    }
    Ok(out)
}

fn missing(path: &str) -> Note {
    Note::Warning(format!(
        "`{}` is not in the plugin (a file it builds or downloads?): the build leaves the connection out until it is there",
        shown(path)
    ))
}

/// A server run from the whole plugin: its `${CLAUDE_PLUGIN_ROOT}` is [`WHOLE`], which
/// holds the plugin's own files (copied once for every such server).
fn copy_for_whole(
    source: &Source,
    server: &mut Server,
    paths: Vec<String>,
    tree: &mut Tree,
    done: &mut Done,
) -> anyhow::Result<Outcome> {
    let mut out = Outcome::default();
    server.set_root(WHOLE);
    let said = format!("`{PLUGIN_ROOT}` → ");
    server
        .notes
        .retain(|n| !matches!(n, Note::Changed(text) if text.starts_with(&said)));
    server.notes.push(Note::Changed(format!(
        "`{PLUGIN_ROOT}` → `{{{{ agent_dir }}}}/{WHOLE}`: it runs from the whole plugin, whose own files (all but the parts eve imports as its own) are copied there"
    )));
    if done.whole.is_none() {
        let mut item = copy_whole(source, tree, done)?;
        item.from = format!("{}, which `{}` runs", item.from, server.name);
        out.copied.push(item);
    }
    for path in paths {
        let at = join(WHOLE, &path);
        if !tree.has(&at) && !tree.has_below(&at) {
            server.notes.push(missing(&path));
            out.missing.push(path);
        }
    }
    Ok(out)
}

/// Copies the plugin's own files (its top entries but hidden ones and its Claude Code
/// parts) into [`WHOLE`].
fn copy_whole(source: &Source, tree: &mut Tree, done: &mut Done) -> anyhow::Result<Copied> {
    let mut notes = Vec::new();
    let mut names = BTreeSet::new();
    let mut shown_names = Vec::new();
    let mut files = 0;
    let listing = match source.list("") {
        Ok(listing) => listing,
        Err(why) => {
            notes.push(Note::Dropped(format!("the plugin's folder: {why}")));
            Default::default()
        }
    };
    for name in &listing.names {
        if name.starts_with('.') || CLAUDE_PARTS.contains(&name.as_str()) {
            continue;
        }
        match copy_entry(source, name, &join(WHOLE, name), tree)? {
            Ok(item) => {
                files += item.files;
                notes.extend(item.notes);
                names.insert(name.clone());
                let dir = if item.written.ends_with('/') { "/" } else { "" };
                shown_names.push(format!("{}{dir}", shown(name)));
            }
            Err(why) => notes.push(Note::Dropped(format!("`{}`: {why}", shown(name)))),
        }
    }
    let more = if shown_names.len() > 4 { ", …" } else { "" };
    shown_names.truncate(4);
    done.whole = Some(names);
    Ok(Copied {
        written: format!("{WHOLE}/"),
        from: format!(
            "the plugin's own files ({files} file{}: {}{more})",
            if files == 1 { "" } else { "s" },
            shown_names.join(", ")
        ),
        files,
        notes,
    })
}

/// The paths inside the plugin the server's command line and `cwd` name, relative
/// paths made `${CLAUDE_PLUGIN_ROOT}/…` on the way; notes for the others.
fn wanted(source: &Source, server: &mut Server) -> (Vec<String>, bool) {
    let cwd_is_root = server
        .cwd()
        .is_some_and(|c| named(c).first() == Some(&Named::Whole));
    let mut paths = Vec::new();
    let mut notes = Vec::new();
    let mut rewrites = Vec::new();
    let mut whole = false;
    let cwd = server.cwd().map(str::to_string);
    let parts = server
        .argv()
        .iter()
        .enumerate()
        .map(|(i, a)| (Some(i), a.clone()));
    for (index, part) in parts.chain(cwd.map(|c| (None, c))) {
        for found in named(&part) {
            match found {
                Named::Inside(path) => paths.push(path),
                Named::Whole => whole = true,
                Named::Escaping(_) => {}
                Named::Absolute(path) => notes.push(Note::Warning(format!(
                    "`{}` is an absolute path, not a file of the plugin: not copied; it must exist on the machine that runs the agent",
                    shown(&path)
                ))),
                Named::Relative(path) => match relative(source, &path) {
                    Relative::Here(rel) => {
                        if let (Some(i), false) = (index, cwd_is_root) {
                            rewrites.push((i, path, rel.clone()));
                        }
                        paths.push(rel);
                    }
                    Relative::Flag(note) => notes.push(note),
                    Relative::Word => {}
                },
            }
        }
    }
    for (i, written, rel) in rewrites {
        server.rewrite(
            i,
            format!("{PLUGIN_ROOT}/{rel}"),
            Note::Changed(format!(
                "`{}` → `{{{{ agent_dir }}}}/{}`: Claude Code reads a relative path in the folder it runs in, and eve starts the server in a folder of its own; this one names the plugin's file, which is copied",
                shown(&written),
                shown(&rel)
            )),
        );
    }
    server.notes.extend(notes);
    (paths, whole)
}

/// What a relative path of a command line is.
enum Relative {
    /// A file or folder of the plugin, as plain names.
    Here(String),
    /// A path that names nothing of the plugin: said so.
    Flag(Note),
    /// A word that only looked like a path (`org/package`).
    Word,
}

fn relative(source: &Source, path: &str) -> Relative {
    let explicit = path.starts_with("./") || path.starts_with("../");
    let Some(rel) = plain(path).filter(|p| !p.is_empty()) else {
        return Relative::Flag(Note::Warning(format!(
            "`{}` is a relative path that leads out of the plugin: not copied; eve starts the server in a folder of its own, where it names nothing",
            shown(path)
        )));
    };
    match source.kind(&rel) {
        Kind::Missing if explicit => Relative::Flag(Note::Warning(format!(
            "`{}` is a relative path, and the plugin has no such file: not copied; eve starts the server in a folder of its own, where it names nothing",
            shown(path)
        ))),
        Kind::Missing => Relative::Word,
        _ => Relative::Here(rel),
    }
}

/// Why the path inside the plugin `path` (in its top entry `entry`) is not copied.
pub(super) fn refused(source: &Source, path: &str, entry: &str) -> Option<String> {
    if EVE_ENTRIES.contains(&entry) {
        return Some(format!(
            "`{entry}` is a part of eve's agent directory; move the server's files elsewhere and change its command"
        ));
    }
    if entry == "skills" {
        // A skill copied unchanged keeps its files where they were.
        let skill = path.split('/').nth(1).unwrap_or("");
        let kept = slug(skill).as_deref() == Some(skill)
            && source.kind(&join(&join("skills", skill), "SKILL.md")) == Kind::File;
        if !kept {
            return Some(
                "it is not in a skill the import copies unchanged (a folder with `SKILL.md` and an eve name)".into(),
            );
        }
    }
    None
}

/// Copies the top entry `entry` of the plugin, a file or a folder, to `target`.
pub(super) fn copy_entry(
    source: &Source,
    entry: &str,
    target: &str,
    tree: &mut Tree,
) -> anyhow::Result<Result<Copied, String>> {
    let mut notes = Vec::new();
    let (written, from, files) = match source.kind(entry) {
        Kind::File => match source.read_file(entry, MAX_COPIED_BYTES) {
            Ok((bytes, executable)) => {
                tree.add_copy(target, bytes, executable)?;
                (target.to_string(), entry.to_string(), 1)
            }
            Err(why) => return Ok(Err(format!("`{}` {why}", shown(entry)))),
        },
        Kind::Dir(id) => {
            let mut seen = BTreeSet::from([id]);
            let files = copy::folder(source, entry, target, 0, &mut seen, tree, &mut notes)?;
            let from = if files == 1 {
                format!("{entry}/")
            } else {
                format!("{entry}/ ({files} files)")
            };
            (format!("{target}/"), from, files)
        }
        Kind::Missing => return Ok(Err("the plugin has no such file".into())),
        Kind::Refused(why) => return Ok(Err(why)),
        Kind::Special(what) => return Ok(Err(format!("{what}, not read"))),
    };
    Ok(Ok(Copied {
        written,
        from,
        files,
        notes,
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn server(config: serde_json::Value) -> Server {
        let read = super::super::mcp::read(&json!({ "mcpServers": { "s": config } }), &|_| false);
        read.servers.into_iter().next().unwrap()
    }

    #[test]
    fn the_entries_a_server_names_are_copied_once_and_the_rest_is_said() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("servers/lib")).unwrap();
        std::fs::write(dir.path().join("servers/main.js"), "main").unwrap();
        std::fs::write(dir.path().join("servers/lib/a.js"), "a").unwrap();
        std::fs::write(dir.path().join("start.mjs"), "start").unwrap();
        std::fs::create_dir(dir.path().join("tools")).unwrap();
        std::fs::write(dir.path().join("tools/x.py"), "x").unwrap();
        let source = Source::open(dir.path()).unwrap();
        let (mut tree, mut done) = (Tree::default(), Done::default());
        let mut first = server(json!({
            "command": "node",
            "args": ["${CLAUDE_PLUGIN_ROOT}/servers/main.js", "./start.mjs", "${CLAUDE_PLUGIN_ROOT}/tools/x.py", "${CLAUDE_PLUGIN_ROOT}/dist/x.js"]
        }));
        let outcome = copy(&source, &mut first, &mut tree, &mut done).unwrap();
        let written: Vec<&str> = outcome.copied.iter().map(|c| c.written.as_str()).collect();
        assert_eq!(written, ["servers/", "start.mjs"]);
        assert_eq!(outcome.missing, ["tools/x.py", "dist/x.js"]);
        assert!(tree.has("servers/lib/a.js") && tree.has("start.mjs"));
        assert!(!tree.has("tools/x.py"));
        assert_eq!(first.argv()[2], "${CLAUDE_PLUGIN_ROOT}/start.mjs");
        let notes = format!("{:?}", first.notes);
        assert!(
            notes.contains("`tools` is a part of eve's agent directory"),
            "{notes}"
        );
        assert!(
            notes.contains("`dist/x.js`: not copied: the plugin has no such file"),
            "{notes}"
        );
        // A second server of the same folder copies nothing again.
        let mut second = server(
            json!({ "command": "node", "args": ["${CLAUDE_PLUGIN_ROOT}/servers/lib/a.js"] }),
        );
        let outcome = copy(&source, &mut second, &mut tree, &mut done).unwrap();
        assert!(outcome.copied.is_empty() && outcome.missing.is_empty());
    }

    #[test]
    fn a_server_run_from_the_whole_plugin_gets_its_own_files_in_one_folder() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("agents")).unwrap();
        std::fs::write(dir.path().join("agents/a.md"), "a").unwrap();
        std::fs::write(dir.path().join("package.json"), "{}").unwrap();
        std::fs::write(dir.path().join(".env"), "SECRET=1").unwrap();
        let source = Source::open(dir.path()).unwrap();
        let (mut tree, mut done) = (Tree::default(), Done::default());
        let mut first = server(json!({
            "command": "bun", "args": ["run", "--cwd", "${CLAUDE_PLUGIN_ROOT}", "start"]
        }));
        let outcome = copy(&source, &mut first, &mut tree, &mut done).unwrap();
        assert_eq!(outcome.copied.len(), 1);
        assert!(tree.has("claude-plugin/package.json"));
        assert!(!tree.has_below("claude-plugin/agents") && !tree.has("claude-plugin/.env"));
        assert!(done.copied("package.json") && !done.copied("agents"));
        assert!(
            first
                .file("x", 0, None, &[])
                .contains("\"--cwd\", \"{{ agent_dir }}/claude-plugin\"")
        );
        assert_eq!(
            first.resolved("${CLAUDE_PLUGIN_ROOT}/a", "/d"),
            "/d/claude-plugin/a"
        );
        let mut second = server(json!({ "command": "node", "cwd": "${CLAUDE_PLUGIN_ROOT}" }));
        let outcome = copy(&source, &mut second, &mut tree, &mut done).unwrap();
        assert!(outcome.copied.is_empty() && outcome.missing.is_empty());
    }
}
