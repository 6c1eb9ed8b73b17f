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
}
