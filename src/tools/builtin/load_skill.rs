//! `load_skill`: a skill's body and the list of its resource files.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::catalog::{Availability, BuiltinTool};
use crate::manifest::Skill;
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};

/// What the model is told about `load_skill`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "load_skill",
    description: "Loads one of this agent's skills by name and returns its instructions \
        together with the paths of its resource files. The available skills and when each \
        applies are listed in your instructions; when a task matches a skill's description, \
        load it before starting the work and follow what it says. Resource files are not \
        included in the result; read the ones the instructions point to with read_file. A \
        skill stays loaded for the rest of the conversation, so there is no need to load it \
        twice. An unknown name comes back as an error.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "name": {
                "type": "string",
                "pattern": "^[a-z0-9][a-z0-9_-]{0,63}$",
                "description": "The skill's name, exactly as listed in your instructions."
            }
        },
        "required": ["name"],
        "additionalProperties": false
    }"#,
    read_only: true,
    timeout_secs: 10,
    settings: &[],
    availability: Availability::WithSkills,
};

/// The most skill names an unknown name's error lists.
const MAX_NAMED: usize = 50;

#[derive(Debug, Deserialize)]
struct Input {
    name: String,
}

/// The `load_skill` tool over the manifest's skills. It shares the session's manifest
/// rather than copying its skills: an agent may have thousands.
#[derive(Debug, Clone)]
pub struct LoadSkill {
    pub manifest: std::sync::Arc<crate::manifest::Manifest>,
}

impl LoadSkill {
    fn load(&self, name: &str, ctx: &ToolContext) -> ToolOutput {
        let skills: &[Skill] = &self.manifest.skills;
        let Some(skill) = skills.iter().find(|s| s.name == name) else {
            let names: Vec<&str> = skills.iter().map(|s| s.name.as_str()).collect();
            let hint = crate::suggest::closest(name, names.iter().copied())
                .map(|near| format!(" Did you mean `{near}`?"))
                .unwrap_or_default();
            // A library of thousands is searched, not listed back in full.
            let rest = if names.len() <= MAX_NAMED {
                format!(" Available skills: {}.", names.join(", "))
            } else if skills.iter().any(|s| s.deferred) {
                " Find the skill with search_tools.".to_string()
            } else {
                " The skills are listed in your instructions.".to_string()
            };
            return ToolOutput::error(format!("There is no skill named `{name}`.{hint}{rest}"));
        };
        let file = ctx.agent_dir.join(&skill.path);
        // Like `eve build`: a regular file only, never opened in a way that blocks.
        // Read as the build read it: a stray byte that is not UTF-8 reads as U+FFFD.
        let text = match crate::textfile::read_text_lossy(&file) {
            Ok((text, _, _)) => text,
            Err(e) => {
                return ToolOutput::error(format!(
                    "cannot read skill `{name}` from `{}`: {e}",
                    skill.path
                ));
            }
        };
        let Some(body) = text.get(skill.body_offset..) else {
            return ToolOutput::error(format!(
                "skill `{name}` changed since the agent was built; rebuild it (eve build) and load it again"
            ));
        };
        let hash = format!(
            "sha256:{}",
            crate::text::hex(&Sha256::digest(body.as_bytes()))
        );
        if hash != skill.body_hash {
            return ToolOutput::error(format!(
                "skill `{name}` changed since the agent was built; rebuild it (eve build) and load it again"
            ));
        }
        let mut out = format!("<skill name=\"{name}\">\n{}\n</skill>", body.trim());
        // Skills written for other clients name their own folder with a placeholder
        // those clients expand; eve checks the links at build time and says here what
        // the placeholder stands for, so the model can read the files.
        let placeholders: Vec<&str> = crate::manifest::SKILL_DIR_PLACEHOLDERS
            .iter()
            .copied()
            .filter(|p| body.contains(p))
            .collect();
        if let (false, Some(folder)) = (
            placeholders.is_empty(),
            skill.path.strip_suffix("/SKILL.md"),
        ) {
            let folder = ctx.agent_dir.join(folder);
            let folder = folder.canonicalize().unwrap_or(folder);
            out.push_str(&format!(
                "\n\nIn these instructions, {} stand{} for this skill's folder: {}",
                placeholders
                    .iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(" and "),
                if placeholders.len() == 1 { "s" } else { "" },
                ctx.display(&folder)
            ));
        }
        if !skill.resources.is_empty() {
            out.push_str("\n\nResource files of this skill (read them with read_file when the instructions above refer to them):");
            for resource in &skill.resources {
                let path = ctx.agent_dir.join(resource);
                let path = path.canonicalize().unwrap_or(path);
                out.push_str(&format!("\n- {}", ctx.display(&path)));
            }
        }
        ToolOutput::ok(out)
    }
}

impl ToolExec for LoadSkill {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            match parse_input::<Input>(input) {
                Ok(input) => self.load(&input.name, ctx),
                Err(e) => e,
            }
        }
        .boxed()
    }
}

/// `load_skill` for an agent, configured by its manifest entry.
pub fn build(
    _tool: &crate::manifest::Tool,
    manifest: &std::sync::Arc<crate::manifest::Manifest>,
) -> Result<std::sync::Arc<dyn ToolExec>, String> {
    Ok(std::sync::Arc::new(LoadSkill {
        manifest: manifest.clone(),
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn a_skill_comes_with_its_body_and_resource_paths() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("example-agent")
            .canonicalize()
            .unwrap();
        let manifest = crate::compiler::compile(&dir, &crate::tools::builtin::CATALOG)
            .manifest
            .unwrap();
        let tool = LoadSkill {
            manifest: std::sync::Arc::new(manifest),
        };
        // The workspace is the repository: resources show relative to it.
        let ctx = ToolContext::new(dir.parent().unwrap().to_path_buf(), dir.clone());
        let out = tool
            .call(&json!({"name": "write-release-notes"}), &ctx)
            .await;
        assert!(!out.is_error, "{out:?}");
        assert!(
            out.content
                .starts_with("<skill name=\"write-release-notes\">\n"),
            "{}",
            out.content
        );
        assert!(
            !out.content.contains("\n---\n"),
            "the frontmatter is not part of the body"
        );
        assert!(
            out.content
                .ends_with("\n- example-agent/skills/write-release-notes/template.md"),
            "{}",
            out.content
        );

        let unknown = tool.call(&json!({"name": "review-change"}), &ctx).await;
        assert!(unknown.is_error);
        assert_eq!(
            unknown.content,
            "There is no skill named `review-change`. Did you mean `review-changes`? Available skills: review-changes, write-release-notes."
        );
    }

    #[tokio::test]
    async fn a_skill_edited_after_the_build_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(dir.join("skills")).unwrap();
        std::fs::write(
            dir.join("agent.toml"),
            "name = \"s\"\nmodel = \"openai/gpt-4.1\"\n",
        )
        .unwrap();
        std::fs::write(dir.join("instructions.md"), "Hi.\n").unwrap();
        std::fs::write(
            dir.join("skills/fix.md"),
            "---\ndescription: Fix things\n---\nStep one.\n",
        )
        .unwrap();
        let manifest = crate::compiler::compile(&dir, &crate::tools::builtin::CATALOG)
            .manifest
            .unwrap();
        let tool = LoadSkill {
            manifest: std::sync::Arc::new(manifest),
        };
        let ctx = ToolContext::new(dir.clone(), dir.clone());
        assert_eq!(
            tool.call(&json!({"name": "fix"}), &ctx).await.content,
            "<skill name=\"fix\">\nStep one.\n</skill>"
        );
        std::fs::write(
            dir.join("skills/fix.md"),
            "---\ndescription: Fix things\n---\nStep two.\n",
        )
        .unwrap();
        assert!(
            tool.call(&json!({"name": "fix"}), &ctx)
                .await
                .content
                .contains("changed since the agent was built")
        );
    }
}
