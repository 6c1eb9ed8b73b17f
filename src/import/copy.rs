//! A folder of the imported one copied into the plan, entry by entry and unchanged (a
//! skill's folder, the folder a server runs from): hidden entries are skipped, a
//! symbolic link is copied as what it names only while that stays inside the imported
//! folder, special files are not read, executable files stay executable, and each thing
//! not copied is a note.

use std::collections::BTreeSet;

use super::report::{Note, shown};
use super::source::{Kind, MAX_COPIED_BYTES, Source, join};
use super::tree::Tree;

/// How deep a copied folder may go.
const MAX_DEPTH: usize = 16;

/// Copies the folder `from` to `to`, entry by entry; what is not copied is a note.
/// `seen` holds the folders on the way (a link back to one is not followed again).
pub fn folder(
    source: &Source,
    from: &str,
    to: &str,
    depth: usize,
    seen: &mut BTreeSet<(u64, u64)>,
    tree: &mut Tree,
    notes: &mut Vec<Note>,
) -> anyhow::Result<usize> {
    Copier {
        source,
        seen,
        tree,
        notes,
    }
    .folder(from, to, depth)
}

/// One copy under way.
struct Copier<'a> {
    source: &'a Source,
    seen: &'a mut BTreeSet<(u64, u64)>,
    tree: &'a mut Tree,
    notes: &'a mut Vec<Note>,
}

impl Copier<'_> {
    fn drop_note(&mut self, text: String) {
        self.notes.push(Note::Dropped(text));
    }

    fn folder(&mut self, from: &str, to: &str, depth: usize) -> anyhow::Result<usize> {
        if depth > MAX_DEPTH {
            self.drop_note(format!(
                "`{}/`: folders deeper than {MAX_DEPTH} levels are not copied",
                shown(from)
            ));
            return Ok(0);
        }
        let listing = match self.source.list(from) {
            Ok(listing) => listing,
            Err(why) => {
                self.drop_note(format!("`{}/`: {why}", shown(from)));
                return Ok(0);
            }
        };
        for name in &listing.unreadable {
            self.drop_note(format!(
                "`{from}/{}`: its name is not UTF-8 text, or holds a control character",
                shown(&name.to_string_lossy())
            ));
        }
        let mut files = 0;
        for name in &listing.names {
            let rel = join(from, name);
            if name.starts_with('.') {
                self.drop_note(format!("`{}`: hidden (eve skips it too)", shown(&rel)));
                continue;
            }
            files += self.entry(&rel, &join(to, name), depth)?;
        }
        Ok(files)
    }

    /// Copies the entry `rel` to `target`; returns how many files that made.
    fn entry(&mut self, rel: &str, target: &str, depth: usize) -> anyhow::Result<usize> {
        match self.source.kind(rel) {
            Kind::File => match self.source.read_file(rel, MAX_COPIED_BYTES) {
                Ok((bytes, executable)) => {
                    self.tree.add_copy(target, bytes, executable)?;
                    return Ok(1);
                }
                Err(why) => self.drop_note(format!("`{}`: {why}", shown(rel))),
            },
            Kind::Dir(id) => {
                if !self.seen.insert(id) {
                    self.drop_note(format!(
                        "`{}/`: a link back to a folder already copied",
                        shown(rel)
                    ));
                    return Ok(0);
                }
                let files = self.folder(rel, target, depth + 1)?;
                self.seen.remove(&id);
                return Ok(files);
            }
            Kind::Refused(why) => self.drop_note(format!("`{}`: {why}", shown(rel))),
            Kind::Special(what) => self.drop_note(format!("`{}`: {what}, not read", shown(rel))),
            Kind::Missing => {}
        }
        Ok(0)
    }
}
