//! The system prompt of a run: the rendered instructions, then the sections of
//! [`crate::prompt`] for what the registry offers.

use std::collections::BTreeMap;
use std::path::Path;

use crate::manifest::Manifest;
use crate::template::{self, Context};
use crate::tools::Registry;

/// Renders the instructions for a run and appends the skills list when `load_skill` is offered.
/// `env` reads the variables allowed by `[instructions] env` (unset ones render empty).
pub fn system_prompt(
    manifest: &Manifest,
    registry: &Registry,
    model: &str,
    workspace: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let offered = registry.names();
    let context = Context::new(
        &manifest.agent,
        model,
        registry.tools().filter(|t| !t.defer),
        &manifest.skills,
        workspace.display().to_string(),
        crate::ids::now_rfc3339().chars().take(10).collect(),
        manifest
            .instructions
            .env
            .iter()
            .map(|name| (name.clone(), env(name).unwrap_or_default()))
            .collect::<BTreeMap<_, _>>(),
    );
    let mut prompt = template::render(&manifest.instructions, &context)
        .map_err(|e| format!("cannot render the instructions: {e}"))?;
    let searchable = offered.iter().any(|t| t == "search_tools");
    if registry.offers(crate::tools::builtin::Builtin::LoadSkill)
        && let Some(section) = crate::prompt::skills_prompt(&manifest.skills, searchable)
    {
        prompt.push_str(&section);
    }
    if offered.iter().any(|t| t == "search_tools") && !registry.deferred().is_empty() {
        prompt.push_str(&crate::prompt::catalog_section(&manifest.connections));
    }
    Ok(prompt)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_is_the_rendered_instructions_with_only_offered_tools() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("agent.toml"),
            "name = \"t\"\nmodel = \"openai/gpt-4.1\"\ndefault_tools = false\n[instructions]\nenv = [\"EVE_T_VAR\"]\n",
        )
        .unwrap();
        std::fs::create_dir(dir.path().join("tools")).unwrap();
        std::fs::write(
            dir.path().join("tools/hello.toml"),
            "description = \"Says hello\"\ncommand = [\"echo\", \"hello\"]\n[input_schema]\ntype = \"object\"\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("instructions.md"),
            "You are {{ agent.name }} on {{ agent.model }} in {{ workspace }} ({{ env.EVE_T_VAR }}).\n{% for t in tools %}- {{ t.name }}: {{ t.description }}\n{% endfor %}",
        )
        .unwrap();
        let manifest = crate::compiler::compile(dir.path(), &crate::tools::builtin::CATALOG)
            .manifest
            .unwrap();
        let registry = Registry::from_manifest(&manifest);
        let prompt = system_prompt(
            &manifest,
            &registry,
            "scripted:x.yaml",
            Path::new("/w"),
            &|v| (v == "EVE_T_VAR").then(|| "set".to_string()),
        )
        .unwrap();
        assert_eq!(
            prompt,
            "You are t on scripted:x.yaml in /w (set).\n- hello: Says hello"
        );
    }
}
