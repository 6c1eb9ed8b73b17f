//! Claude Code's custom commands (`commands/*.md`) as eve skills. Claude Code has made
//! commands and skills one thing (a command is a skill a person can also start with
//! `/name`); eve has no slash commands, so a command becomes a flat skill the model
//! loads when its description fits the task.

use super::frontmatter::Front;
use super::report::{Note, shown};

/// The frontmatter keys of a command file.
pub const KEYS: &[&str] = &[
    "description",
    "argument-hint",
    "allowed-tools",
    "model",
    "disable-model-invocation",
    "name",
];

/// A command as a skill file, or why it is left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Converted {
    Skill { text: String, notes: Vec<Note> },
    LeftOut(String),
}

/// Converts a command file read as `front`.
pub fn convert(front: &Front) -> Converted {
    if matches!(
        front.get("disable-model-invocation"),
        Some(serde_yaml::Value::Bool(true))
    ) {
        return Converted::LeftOut(
            "`disable-model-invocation: true`: only a person starts it in Claude Code, and eve has no slash commands".into(),
        );
    }
    let mut notes = Vec::new();
    if let Some(why) = &front.lenient {
        notes.push(Note::Warning(format!(
            "{why}: its `description` was read line by line"
        )));
    }
    let description = front
        .text("description")
        .or_else(|| crate::compiler::skills::derive_description(&front.body));
    let Some(description) = description else {
        return Converted::LeftOut("it has neither a description nor a body".into());
    };
    for (key, _) in &front.fields {
        let why = match key.as_str() {
            "description" => continue,
            "argument-hint" => "eve has no slash commands to take arguments",
            "allowed-tools" => "a skill cannot change the agent's tools",
            "model" => "a skill runs on the agent's model",
            "name" => "the skill is named after the file",
            _ => "not a field eve knows",
        };
        notes.push(Note::Dropped(format!("`{}` ({why})", shown(key))));
    }
    if ["$ARGUMENTS", "$1", "$2", "$3"]
        .iter()
        .any(|a| front.body.contains(a))
    {
        notes.push(Note::Changed(
            "`$ARGUMENTS` and `$1`… stay as written: the model finds the request in the conversation".into(),
        ));
    }
    if front.body.lines().any(|l| l.trim_start().starts_with("!`")) {
        notes.push(Note::Changed(
            "lines starting with ``!`…` `` are not run before the skill is loaded: the model reads them".into(),
        ));
    }
    let yaml = serde_yaml::to_string(&serde_yaml::Mapping::from_iter([(
        serde_yaml::Value::String("description".into()),
        serde_yaml::Value::String(description),
    )]))
    .unwrap_or_default();
    Converted::Skill {
        text: format!("---\n{yaml}---\n{}", front.body.trim_start_matches('\n')),
        notes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::frontmatter::read;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_command_becomes_a_flat_skill() {
        let front = read(
            "---\ndescription: Commit: staged changes only\nargument-hint: [message]\nallowed-tools: Bash(git add:*)\n---\nCommit with $ARGUMENTS.\n!`git status`\n",
            KEYS,
        );
        let Converted::Skill { text, notes } = convert(&front) else {
            panic!("left out");
        };
        assert!(
            text.starts_with(
                "---\ndescription: 'Commit: staged changes only'\n---\nCommit with $ARGUMENTS.\n"
            ),
            "{text}"
        );
        assert_eq!(notes.len(), 5, "{notes:?}");
    }

    #[test]
    fn person_only_and_empty_commands_are_left_out() {
        let front = read("---\ndisable-model-invocation: true\n---\nDeploy.\n", KEYS);
        assert!(matches!(convert(&front), Converted::LeftOut(_)));
        let front = read("---\nargument-hint: x\n---\n\n", KEYS);
        assert!(matches!(convert(&front), Converted::LeftOut(_)));
    }
}
