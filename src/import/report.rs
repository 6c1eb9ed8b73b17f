//! What an import did: each file or folder it wrote and where from, every field it
//! changed or dropped, what it left out, and what a person should check by hand.

use std::fmt::Write as _;

/// One thing said about an imported piece.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// Imported, but not as written.
    Changed(String),
    /// Not imported.
    Dropped(String),
    /// Read, but not as it should be (frontmatter read by hand).
    Warning(String),
}

/// A piece of the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Item {
    /// What was written, relative to the agent directory (`subagents/reviewer/`).
    pub written: String,
    /// Where it came from, relative to the imported folder.
    pub from: String,
    pub notes: Vec<Note>,
}

/// The whole import.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// What was imported: `the Claude Code plugin \`x\``.
    pub what: String,
    /// The agent directory, as the person named it.
    pub into: String,
    pub items: Vec<Item>,
    /// Entries of the imported folder that were not imported, and why.
    pub left_out: Vec<(String, String)>,
    /// Files that were there and were replaced (`--force`).
    pub replaced: Vec<String>,
    /// What a person should look at before running the agent.
    pub check: Vec<String>,
}

impl Report {
    pub fn item(&mut self, written: impl Into<String>, from: impl Into<String>, notes: Vec<Note>) {
        self.items.push(Item {
            written: written.into(),
            from: from.into(),
            notes,
        });
    }

    pub fn leave_out(&mut self, entry: impl Into<String>, why: impl Into<String>) {
        self.left_out.push((entry.into(), why.into()));
    }

    /// How many changed and dropped notes there are.
    pub fn counts(&self) -> (usize, usize) {
        let notes = self.items.iter().flat_map(|i| &i.notes);
        let changed = notes
            .clone()
            .filter(|n| matches!(n, Note::Changed(_)))
            .count();
        let dropped = notes.filter(|n| matches!(n, Note::Dropped(_))).count() + self.left_out.len();
        (changed, dropped)
    }

    /// The report as a person reads it (terminal escapes in names made visible).
    pub fn render(&self) -> String {
        let mut out = format!("imported {} into {}\n", self.what, self.into);
        let width = self
            .items
            .iter()
            .map(|i| i.written.chars().count())
            .max()
            .unwrap_or(0)
            .min(40);
        for item in &self.items {
            let _ = writeln!(out, "  {:<width$}  ← {}", item.written, item.from);
            for note in &item.notes {
                let (word, text) = match note {
                    Note::Changed(t) => ("changed", t),
                    Note::Dropped(t) => ("dropped", t),
                    Note::Warning(t) => ("warning", t),
                };
                let _ = writeln!(out, "      {word}: {text}");
            }
        }
        if !self.left_out.is_empty() {
            out.push_str("not imported:\n");
            for (entry, why) in &self.left_out {
                let _ = writeln!(out, "  {entry}: {why}");
            }
        }
        if !self.replaced.is_empty() {
            out.push_str("replaced (--force):\n");
            for path in &self.replaced {
                let _ = writeln!(out, "  {path}");
            }
        }
        if !self.check.is_empty() {
            out.push_str("check by hand:\n");
            for line in &self.check {
                let _ = writeln!(out, "  - {line}");
            }
        }
        crate::text::for_terminal(&out).into_owned()
    }
}

/// A value from an imported file, shown on one line of the report: line breaks and
/// control characters escaped, at most 80 characters.
pub fn shown(value: &str) -> String {
    let one_line: String = value
        .chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect();
    crate::text::shorten(&one_line, 80)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_from_files_stay_on_one_line() {
        assert_eq!(shown("a\nb\u{1b}[2J"), "a\\nb\\u{1b}[2J");
        let mut report = Report {
            what: "x".into(),
            into: "out".into(),
            ..Report::default()
        };
        report.item(
            "subagents/a/",
            "agents/a.md",
            vec![Note::Dropped(format!(
                "`color: {}`",
                shown("red\n  changed: fake")
            ))],
        );
        let text = report.render();
        assert_eq!(text.lines().count(), 3, "{text}");
        assert_eq!(report.counts(), (0, 1));
    }
}
