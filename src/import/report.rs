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

/// One entry of the source copied into the agent directory: a skill
/// (`skills/<name>/`, `skills/<name>.md`) or the files a server runs (`servers/`,
/// `run.sh`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Copied {
    /// What was written, relative to the agent directory.
    pub written: String,
    /// Where from (and, for a server's files, which server runs them).
    pub from: String,
    pub files: usize,
    pub notes: Vec<Note>,
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
    /// The commands the first `eve build` runs (stdio servers started to list tools).
    pub starts: Vec<Start>,
    /// The agent directory's real path, which `${CLAUDE_PLUGIN_ROOT}` becomes.
    pub root: String,
}

/// A stdio server the first `eve build` starts to list its tools: a command of the
/// plugin's, run on the person's machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Start {
    pub connection: String,
    /// As written in the plugin (`${CLAUDE_PLUGIN_ROOT}` in it).
    pub argv: Vec<String>,
    pub cwd: Option<String>,
    /// The subagents given a copy of the connection, each started as well.
    pub copies: Vec<String>,
}

impl Start {
    /// The command line as a shell would take it, `${CLAUDE_PLUGIN_ROOT}` made `root`.
    pub fn line(&self, root: &str) -> String {
        let words: Vec<String> = self
            .argv
            .iter()
            .map(|a| crate::text::shell_word(&a.replace(super::server_files::PLUGIN_ROOT, root)))
            .collect();
        let mut line = words.join(" ");
        if let Some(cwd) = &self.cwd {
            let cwd = cwd.replace(super::server_files::PLUGIN_ROOT, root);
            line = format!("(in {}) {line}", crate::text::shell_word(&cwd));
        }
        // One line whatever the plugin wrote: a line break or a control character in
        // an argument is shown escaped, as in the rest of the report.
        line.chars()
            .flat_map(|c| {
                if c.is_control() {
                    c.escape_default().collect::<Vec<_>>()
                } else {
                    vec![c]
                }
            })
            .collect()
    }
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
        self.render_starts(&mut out);
        if !self.check.is_empty() {
            out.push_str("check by hand:\n");
            for line in &self.check {
                let _ = writeln!(out, "  - {line}");
            }
        }
        crate::text::for_terminal(&out).into_owned()
    }
}

impl Report {
    /// The commands the first build runs, each on a line, escaped for a shell.
    fn render_starts(&self, out: &mut String) {
        if self.starts.is_empty() {
            return;
        }
        out.push_str(
            "the first `eve build` runs these commands on this machine, to list the servers' tools; each runs in the agent's sandbox, like `bash` (it writes only in the workspace and its own temp and cache folders, where this machine can confine it: `eve doctor` says):\n",
        );
        for start in &self.starts {
            let _ = writeln!(out, "  {}: {}", start.connection, start.line(&self.root));
            if !start.copies.is_empty() {
                let names: Vec<String> = start.copies.iter().map(|n| format!("`{n}`")).collect();
                let _ = writeln!(
                    out,
                    "      and once more for the copy of each subagent that has one: {}",
                    names.join(", ")
                );
            }
        }
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
    fn a_command_the_build_starts_is_shown_as_a_shell_takes_it() {
        let start = Start {
            connection: "db".into(),
            argv: vec![
                "node".into(),
                "${CLAUDE_PLUGIN_ROOT}/server.js".into(),
                "it's\n$HOME".into(),
            ],
            cwd: Some("${CLAUDE_PLUGIN_ROOT}".into()),
            copies: vec!["helper".into()],
        };
        assert_eq!(
            start.line("/a b"),
            "(in '/a b') node '/a b/server.js' 'it'\\''s\\n$HOME'"
        );
        let report = Report {
            starts: vec![start],
            root: "/x".into(),
            ..Report::default()
        };
        let text = report.render();
        assert!(
            text.contains("the first `eve build` runs these commands"),
            "{text}"
        );
        assert!(text.contains("  db: (in /x) node /x/server.js"), "{text}");
        assert!(text.contains("subagent that has one: `helper`"), "{text}");
    }

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
