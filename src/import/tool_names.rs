//! Claude Code's tool names and eve's: which built-in does the same work, and why the
//! others have none.

/// What a Claude Code tool name becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mapped {
    /// The eve built-in that does the same work.
    Builtin(&'static str),
    /// No eve equivalent; why.
    Dropped(&'static str),
}

/// Every Claude Code tool name eve knows, and what it becomes.
pub const TOOLS: &[(&str, Mapped)] = &[
    ("Read", Mapped::Builtin("read_file")),
    ("Write", Mapped::Builtin("write_file")),
    ("Edit", Mapped::Builtin("edit_file")),
    ("MultiEdit", Mapped::Builtin("edit_file")),
    ("Bash", Mapped::Builtin("bash")),
    ("Glob", Mapped::Builtin("glob")),
    ("Grep", Mapped::Builtin("grep")),
    ("WebFetch", Mapped::Builtin("web_fetch")),
    ("WebSearch", Mapped::Builtin("web_search")),
    ("TodoWrite", Mapped::Builtin("todo")),
    ("Task", Mapped::Builtin("agent")),
    ("Agent", Mapped::Builtin("agent")),
    ("AskUserQuestion", Mapped::Builtin("ask_question")),
    ("LS", Mapped::Dropped("`glob` and `bash` list folders")),
    (
        "NotebookRead",
        Mapped::Dropped("eve has no notebook tools; `read_file` reads the JSON"),
    ),
    ("NotebookEdit", Mapped::Dropped("eve has no notebook tools")),
    (
        "BashOutput",
        Mapped::Dropped(
            "eve's `bash` runs each command to its end; there are no background shells",
        ),
    ),
    (
        "KillShell",
        Mapped::Dropped(
            "eve's `bash` runs each command to its end; there are no background shells",
        ),
    ),
    (
        "KillBash",
        Mapped::Dropped(
            "eve's `bash` runs each command to its end; there are no background shells",
        ),
    ),
    (
        "Skill",
        Mapped::Dropped(
            "a subagent loads its own skills: copy them into its `skills/` (then `load_skill` is offered)",
        ),
    ),
    ("SlashCommand", Mapped::Dropped("eve has no slash commands")),
    ("ExitPlanMode", Mapped::Dropped("eve has no plan mode")),
    (
        "ToolSearch",
        Mapped::Dropped("eve offers `search_tools` by itself when some tool is deferred"),
    ),
];

/// What the Claude Code tool `name` becomes; `None` for a name eve does not know.
pub fn map(name: &str) -> Option<Mapped> {
    TOOLS.iter().find(|(n, _)| *n == name).map(|(_, m)| *m)
}

/// A tool entry split into its name and the rule in parentheses, if any:
/// `Bash(git diff:*)` is `Bash` and `git diff:*`.
pub fn split_rule(entry: &str) -> (&str, Option<&str>) {
    match entry.split_once('(') {
        Some((name, rule)) if entry.ends_with(')') => (name.trim(), Some(&rule[..rule.len() - 1])),
        _ => (entry.trim(), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_named_exists() {
        for (claude, mapped) in TOOLS {
            if let Mapped::Builtin(name) = mapped {
                assert!(
                    crate::tools::builtin::CATALOG.find(name).is_some(),
                    "{claude} → {name}"
                );
            }
        }
        assert_eq!(map("Read"), Some(Mapped::Builtin("read_file")));
        assert_eq!(map("Frobnicate"), None);
        assert_eq!(split_rule("Bash(git diff:*)"), ("Bash", Some("git diff:*")));
        assert_eq!(split_rule(" Read "), ("Read", None));
    }

    #[test]
    fn the_hooks_claude_names_are_the_importers() {
        for (eve, claude) in crate::manifest::hook::CLAUDE_TOOL_NAMES {
            let mapped = TOOLS
                .iter()
                .find(|(name, _)| name == claude)
                .map(|(_, m)| *m);
            assert_eq!(mapped, Some(Mapped::Builtin(eve)), "{claude}");
        }
    }
}
