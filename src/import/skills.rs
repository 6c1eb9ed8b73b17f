//! A plugin's skills copied unchanged: `skills/<name>/` folders (Agent Skills, which
//! eve builds as they are) and flat `skills/<name>.md` files. The copy keeps the
//! compiler's rules: hidden entries are skipped, a symbolic link is copied as what it
//! names only while that stays inside the imported folder, special files are not read,
//! and names eve cannot use are changed (and said so).

use std::collections::BTreeSet;

use super::copy;
use super::report::{Note, shown};
use super::slug::{slug, unique};
use super::source::{Kind, Source, join};
use super::tree::Tree;

pub use super::report::Copied;

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
    let mut out = CopiedSkills::default();
    let listing = match source.list(from) {
        Ok(listing) => listing,
        Err(why) => {
            out.left_out.push((format!("{from}/"), why));
            return Ok(out);
        }
    };
    for name in &listing.unreadable {
        out.left_out.push((
            format!("{from}/{}", shown(&name.to_string_lossy())),
            "its name is not UTF-8 text, or holds a control character".into(),
        ));
    }
    for entry in &listing.names {
        one(source, from, entry, tree, taken, &mut out)?;
    }
    Ok(out)
}

/// Copies the one skill at `rel` (a folder with `SKILL.md`, as a plugin's manifest may
/// list it: `"skills": ["./skills/xlsx"]`).
pub fn copy_one(
    source: &Source,
    rel: &str,
    tree: &mut Tree,
    taken: &mut BTreeSet<String>,
) -> anyhow::Result<CopiedSkills> {
    let mut out = CopiedSkills::default();
    let (from, entry) = rel.rsplit_once('/').unwrap_or(("", rel));
    one(source, from, entry, tree, taken, &mut out)?;
    Ok(out)
}

/// Copies the entry `entry` of the folder `from`, if it is a skill.
fn one(
    source: &Source,
    from: &str,
    entry: &str,
    tree: &mut Tree,
    taken: &mut BTreeSet<String>,
    out: &mut CopiedSkills,
) -> anyhow::Result<()> {
    let rel = join(from, entry);
    if entry.starts_with('.') {
        out.left_out.push((rel, "hidden (eve skips it too)".into()));
        return Ok(());
    }
    let (stem, flat) = match entry.strip_suffix(".md") {
        Some(stem) => (stem, true),
        None => (entry, false),
    };
    let kind = source.kind(&rel);
    if let Err(left) = check_skill(source, &rel, &kind, flat) {
        out.left_out.extend(left);
        return Ok(());
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
        let files = copy::folder(source, &rel, &target, 0, &mut seen, tree, &mut notes)?;
        (format!("{target}/"), files)
    } else {
        let target = format!("skills/{name}.md");
        match source.read_text(&rel) {
            Ok(text) => tree.add(&target, text)?,
            Err(why) => {
                out.left_out.push((rel, why));
                taken.remove(&name);
                return Ok(());
            }
        }
        (target, 1)
    };
    out.copied.push(Copied {
        written,
        from: if flat { rel } else { format!("{rel}/") },
        files,
        notes,
    });
    Ok(())
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
