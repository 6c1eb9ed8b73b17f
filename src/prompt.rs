//! The sections eve adds to the rendered instructions to make the system prompt: the
//! skills listing and the tool-catalog note. The run and the build's context budget make
//! them with these functions, so the budget measures what the model is sent.

use crate::manifest::Skill;
use crate::manifest::connection::Connection;

/// The listing of the skills the system prompt names (deferred skills are left out);
/// `None` when it names none.
pub fn skills_section(skills: &[Skill]) -> Option<String> {
    let mut listed = skills.iter().filter(|s| !s.deferred).peekable();
    listed.peek()?;
    let mut out = String::from(
        "\n\n# Skills\n\nSkills are procedures for particular tasks. When a task matches a skill's description, load the skill with the `load_skill` tool before you start, then follow it.\n",
    );
    for skill in listed {
        out.push_str(&format!("\n- `{}`: {}", skill.name, skill.description));
    }
    Some(out)
}

/// What the system prompt says about the skills: the listing of those it names and, when
/// some are deferred and `search_tools` is offered (`searchable`), where the rest are.
/// `None` when it says nothing.
pub fn skills_prompt(skills: &[Skill], searchable: bool) -> Option<String> {
    let mut out = skills_section(skills).unwrap_or_default();
    if searchable && skills.iter().any(|s| s.deferred) {
        out.push_str(DEFERRED_SKILLS);
    }
    (!out.is_empty()).then_some(out)
}

/// Told when some skills are deferred; like the tool catalog's note, its size does not
/// grow with their number.
const DEFERRED_SKILLS: &str = "\n\n# More skills\n\nMore skills are available than are listed in these instructions. Skills are procedures for particular tasks: when a task may match one, find it with `search_tools` (a few words about the task), then load it with the `load_skill` tool before you start, and follow it.";

/// Told only when something is deferred; its size does not grow with the number of
/// deferred tools, so the prompt stays small and the same.
pub fn catalog_section(connections: &[Connection]) -> String {
    let mut out = String::from(
        "\n\n# More tools\n\nMore tools are available than are in your tool list. When a task needs something your listed tools cannot do, find a tool with `search_tools` and run it with `call_tool`.",
    );
    let deferred: Vec<_> = connections.iter().filter(|c| c.defer).collect();
    if !deferred.is_empty() {
        out.push_str(" They include the tools of these connections:\n");
        for connection in deferred {
            match &connection.description {
                Some(d) => out.push_str(&format!("\n- `{}`: {d}", connection.name)),
                None => out.push_str(&format!("\n- `{}`", connection.name)),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(name: &str, deferred: bool) -> Skill {
        Skill {
            name: name.into(),
            description: format!("Does {name}"),
            path: format!("skills/{name}.md"),
            deferred,
            license: None,
            metadata: serde_json::json!({}),
            body_hash: String::new(),
            body_offset: 0,
            resources: Vec::new(),
            linked: None,
        }
    }

    #[test]
    fn deferred_skills_are_not_listed() {
        let section = skills_section(&[skill("plan", false), skill("ship", true)]).unwrap();
        assert!(section.ends_with("\n- `plan`: Does plan"), "{section}");
        assert!(!section.contains("ship"), "{section}");
        assert_eq!(skills_section(&[skill("ship", true)]), None);
        assert_eq!(skills_section(&[]), None);
    }

    #[test]
    fn deferred_skills_are_told_of_only_where_search_finds_them() {
        let both = [skill("plan", false), skill("ship", true)];
        let told = skills_prompt(&both, true).unwrap();
        assert!(told.starts_with(&skills_section(&both).unwrap()), "{told}");
        assert!(told.ends_with(DEFERRED_SKILLS), "{told}");
        assert_eq!(skills_prompt(&both, false), skills_section(&both));
        let deferred = [skill("ship", true)];
        assert_eq!(
            skills_prompt(&deferred, true).as_deref(),
            Some(DEFERRED_SKILLS)
        );
        assert_eq!(skills_prompt(&deferred, false), None);
        assert_eq!(
            skills_prompt(&[skill("plan", false)], true),
            skills_section(&[skill("plan", false)])
        );
    }
}
