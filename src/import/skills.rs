//! A plugin's skills copied unchanged: `skills/<name>/` folders (Agent Skills, which
//! eve builds as they are) and flat `skills/<name>.md` files. The copy keeps the
//! compiler's rules: hidden entries are skipped, a symbolic link is copied as what it
//! names only while that stays inside the imported folder, special files are not read,
//! and names eve cannot use are changed (and said so).

use std::collections::BTreeSet;

use super::report::{Note, shown};
use super::slug::{slug, unique};
use super::source::{Kind, MAX_COPIED_BYTES, Source, join};
use super::tree::Tree;

/// How deep a skill's folders may go.
const MAX_DEPTH: usize = 16;

/// One copied skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// `skills/<name>/` or `skills/<name>.md`.
    pub written: String,
    pub from: String,
    pub files: usize,
    pub notes: Vec<Note>,
}

/// What [`copy`] did: the skills copied, and the entries left out with why.
#[derive(Debug, Default)]
pub struct CopiedSkills {
    pub copied: Vec<Copied>,
    pub left_out: Vec<(String, String)>,
}

/// Copies the skills in the folder `from` of `source` into `tree` under `skills/`; a
/// name in `taken` is not used again. Entries that are not skills come back with why.
pub fn copy(
    source: &Source,
    from: &str,
    tree: &mut Tree,
    taken: &mut BTreeSet<String>,
) -> anyhow::Result<CopiedSkills> {
    let mut copied = Vec::new();
    let mut left_out = Vec::new();
    let listing = match source.list(from) {
        Ok(listing) => listing,
        Err(why) => {
            left_out.push((format!("{from}/"), why));
            return Ok(CopiedSkills { copied, left_out });
        }
    };
    for name in &listing.unreadable {
        left_out.push((
            format!("{from}/{}", shown(&name.to_string_lossy())),
            "its name is not UTF-8 text, or holds a control character".into(),
        ));
    }
    for entry in &listing.names {
        let rel = join(from, entry);
        if entry.starts_with('.') {
            left_out.push((rel, "hidden (eve skips it too)".into()));
            continue;
        }
        let (stem, flat) = match entry.strip_suffix(".md") {
            Some(stem) => (stem, true),
            None => (entry.as_str(), false),
        };
        let kind = source.kind(&rel);
        if let Err(left) = check_skill(source, &rel, &kind, flat) {
            left_out.extend(left);
            continue;
        }
        let mut notes = Vec::new();
        let base = slug(stem).unwrap_or_else(|| "skill".to_string());
        let name = unique(&base, &|n| taken.contains(n));
        if name != stem {
            notes.push(Note::Changed(format!(
                "named `{name}` (skill names are lowercase letters, digits, `-` and `_`, and each is used once)"
            )));
        }
        taken.insert(name.clone());
        let (written, files) = if let Kind::Dir(id) = kind {
            let target = format!("skills/{name}");
            let mut seen = BTreeSet::from([id]);
            let files = copy_folder(source, &rel, &target, 0, &mut seen, tree, &mut notes)?;
            (format!("{target}/"), files)
        } else {
            let target = format!("skills/{name}.md");
            match source.read_text(&rel) {
                Ok(text) => tree.add(&target, text)?,
                Err(why) => {
                    left_out.push((rel, why));
                    taken.remove(&name);
                    continue;
                }
            }
            (target, 1)
        };
        copied.push(Copied {
            written,
            from: if flat { rel } else { format!("{rel}/") },
            files,
            notes,
        });
    }
    Ok(CopiedSkills { copied, left_out })
}

/// Whether the entry `rel` (of `kind`; `flat`: a `.md` file) is a skill eve can copy:
/// `Err` with the entry left out and why, or `None` for one to skip without a word.
fn check_skill(
    source: &Source,
    rel: &str,
    kind: &Kind,
    flat: bool,
) -> Result<(), Option<(String, String)>> {
    match (kind, flat) {
        (Kind::Dir(_), _) => {
            if source.kind(&join(rel, "SKILL.md")) != Kind::File {
                return Err(Some((
                    format!("{rel}/"),
                    "a folder without `SKILL.md` is not a skill".into(),
                )));
            }
            // The skill is its `SKILL.md`: one eve cannot build from (too large for
            // the compiler, not UTF-8) leaves out the whole folder, not an empty copy.
            if let Err(why) = source.read_text(&join(rel, "SKILL.md")) {
                return Err(Some((format!("{rel}/"), format!("its `SKILL.md` {why}"))));
            }
        }
        (Kind::File, true) => {}
        (Kind::File, false) => {
            return Err(Some((
                rel.to_string(),
                "not a skill (a skill is a folder with `SKILL.md`, or a `.md` file)".into(),
            )));
        }
        (Kind::Refused(why), _) => {
            return Err(Some((rel.to_string(), why.clone())));
        }
        (Kind::Special(what), _) => {
            return Err(Some((rel.to_string(), format!("{what}, not read"))));
        }
        (Kind::Missing, _) => return Err(None),
    }
    Ok(())
}

/// Copies the folder `from` to `to`, entry by entry; what is not copied is a note.
fn copy_folder(
    source: &Source,
    from: &str,
    to: &str,
    depth: usize,
    seen: &mut BTreeSet<(u64, u64)>,
    tree: &mut Tree,
    notes: &mut Vec<Note>,
) -> anyhow::Result<usize> {
    if depth > MAX_DEPTH {
        notes.push(Note::Dropped(format!(
            "`{}/`: folders deeper than {MAX_DEPTH} levels are not copied",
            shown(from)
        )));
        return Ok(0);
    }
    let listing = match source.list(from) {
        Ok(listing) => listing,
        Err(why) => {
            notes.push(Note::Dropped(format!("`{}/`: {why}", shown(from))));
            return Ok(0);
        }
    };
    for name in &listing.unreadable {
        notes.push(Note::Dropped(format!(
            "`{from}/{}`: its name is not UTF-8 text, or holds a control character",
            shown(&name.to_string_lossy())
        )));
    }
    let mut files = 0;
    for name in &listing.names {
        let rel = join(from, name);
        if name.starts_with('.') {
            notes.push(Note::Dropped(format!(
                "`{}`: hidden (eve skips it too)",
                shown(&rel)
            )));
            continue;
        }
        let target = join(to, name);
        match source.kind(&rel) {
            Kind::File => match source.read(&rel, MAX_COPIED_BYTES) {
                Ok(bytes) => {
                    tree.add(&target, bytes)?;
                    files += 1;
                }
                Err(why) => notes.push(Note::Dropped(format!("`{}`: {why}", shown(&rel)))),
            },
            Kind::Dir(id) => {
                if !seen.insert(id) {
                    notes.push(Note::Dropped(format!(
                        "`{}/`: a link back to a folder already copied",
                        shown(&rel)
                    )));
                    continue;
                }
                files += copy_folder(source, &rel, &target, depth + 1, seen, tree, notes)?;
                seen.remove(&id);
            }
            Kind::Refused(why) => notes.push(Note::Dropped(format!("`{}`: {why}", shown(&rel)))),
            Kind::Special(what) => notes.push(Note::Dropped(format!(
                "`{}`: {what}, not read",
                shown(&rel)
            ))),
            Kind::Missing => {}
        }
    }
    Ok(files)
}
