//! The plugin's files a stdio server runs, copied into the agent directory where its
//! connection file says `{{ agent_dir }}`: each entry at the top of the plugin that a
//! `${CLAUDE_PLUGIN_ROOT}/…` path of its command line or `cwd` lies in (`servers/`,
//! `scripts/`, `run.sh`), read beneath the imported folder like everything else. A
//! relative path naming a file of the plugin is made `${CLAUDE_PLUGIN_ROOT}/…` first
//! (Claude Code reads it in the folder it runs in; eve starts the server in its own).
//! What cannot be copied is a note on the server.

use std::collections::BTreeSet;

use super::copy;
use super::mcp::Server;
use super::report::{Note, shown};
use super::server_files::{EVE_ENTRIES, Named, PLUGIN_ROOT, named, plain, top_entry};
use super::slug::slug;
use super::source::{Kind, MAX_COPIED_BYTES, Source, join};
use super::tree::Tree;

/// One entry copied for a server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// `servers/` or `run.sh`.
    pub written: String,
    /// Where from, and which server runs it.
    pub from: String,
    pub notes: Vec<Note>,
}

/// What [`copy`] did for one server.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The entries copied for it now.
    pub copied: Vec<Copied>,
    /// The paths it names that the agent directory will not hold: until they are
    /// there, the build leaves the connection out and starts nothing.
    pub missing: Vec<String>,
}

/// Copies what `server` names of the plugin into `tree`; `done` holds the entries
/// copied already (several servers may share one).
pub fn copy(
    source: &Source,
    server: &mut Server,
    tree: &mut Tree,
    done: &mut BTreeSet<String>,
) -> anyhow::Result<Outcome> {
    let mut out = Outcome::default();
    for path in wanted(source, server) {
        let entry = top_entry(&path).to_string();
        let why = match refused(source, &path, &entry) {
            Some(why) => Some(why),
            None if entry != "skills" && done.insert(entry.clone()) => {
                match copy_entry(source, &entry, tree)? {
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
            server.notes.push(Note::Warning(format!(
                "`{}` is not in the plugin (a file it builds or downloads?): the build leaves the connection out until it is there",
                shown(&path)
            )));
        }
        if !there {
            out.missing.push(path);
        }
    }
    Ok(out)
}

/// The paths inside the plugin the server's command line and `cwd` name, relative
/// paths made `${CLAUDE_PLUGIN_ROOT}/…` on the way; notes for the others.
fn wanted(source: &Source, server: &mut Server) -> Vec<String> {
    let cwd_is_root = server
        .cwd()
        .is_some_and(|c| named(c).first() == Some(&Named::Whole));
    let mut paths = Vec::new();
    let mut notes = Vec::new();
    let mut rewrites = Vec::new();
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
                Named::Whole if index.is_some() && !cwd_is_root => notes.push(Note::Warning(
                    format!("`{PLUGIN_ROOT}` alone names the whole plugin, and becomes the agent directory, which holds only what eve imports: copy what the server reads there by hand"),
                )),
                Named::Whole | Named::Escaping(_) => {}
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
    paths
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
fn refused(source: &Source, path: &str, entry: &str) -> Option<String> {
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

/// Copies the top entry `entry` of the plugin, a file or a folder.
fn copy_entry(
    source: &Source,
    entry: &str,
    tree: &mut Tree,
) -> anyhow::Result<Result<Copied, String>> {
    let mut notes = Vec::new();
    let (written, from) = match source.kind(entry) {
        Kind::File => match source.read_file(entry, MAX_COPIED_BYTES) {
            Ok((bytes, executable)) => {
                tree.add_copy(entry, bytes, executable)?;
                (entry.to_string(), entry.to_string())
            }
            Err(why) => return Ok(Err(format!("`{}` {why}", shown(entry)))),
        },
        Kind::Dir(id) => {
            let mut seen = BTreeSet::from([id]);
            let files = copy::folder(source, entry, entry, 0, &mut seen, tree, &mut notes)?;
            let from = if files == 1 {
                format!("{entry}/")
            } else {
                format!("{entry}/ ({files} files)")
            };
            (format!("{entry}/"), from)
        }
        Kind::Missing => return Ok(Err("the plugin has no such file".into())),
        Kind::Refused(why) => return Ok(Err(why)),
        Kind::Special(what) => return Ok(Err(format!("{what}, not read"))),
    };
    Ok(Ok(Copied {
        written,
        from,
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
        let (mut tree, mut done) = (Tree::default(), BTreeSet::new());
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
}
