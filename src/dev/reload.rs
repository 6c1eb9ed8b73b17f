//! What a rebuild changes, decided without timers or files: a pure function over the
//! active manifest and the new build.

use crate::compiler::{Build, Diagnostic};
use crate::manifest::Manifest;
use crate::manifest::diff::summarize;

/// What to do with a new build.
#[derive(Debug, Clone, PartialEq)]
pub enum Reload {
    /// The build succeeded and differs: make it active at the next turn.
    Apply {
        manifest: Box<Manifest>,
        /// One line saying what changed, e.g. `tools: +deploy, ~bash; instructions changed`.
        summary: String,
    },
    /// The build succeeded and nothing that matters changed.
    Unchanged,
    /// The build failed: keep the active manifest, show these diagnostics.
    Failed { diagnostics: Vec<Diagnostic> },
}

/// Compares the active manifest with a new build.
pub fn decide(active: &Manifest, build: Build) -> Reload {
    let Some(new) = build.manifest else {
        return Reload::Failed {
            diagnostics: build.diagnostics.iter().cloned().collect(),
        };
    };
    if new == *active {
        return Reload::Unchanged;
    }
    let summary = summarize(active, &new);
    Reload::Apply {
        manifest: Box::new(new),
        summary: if summary.is_empty() {
            "settings changed".into()
        } else {
            summary
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn build(files: &[(&str, &str)]) -> (tempfile::TempDir, Build) {
        let tmp = tempfile::tempdir().unwrap();
        for (path, text) in files {
            let path = tmp.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let build = crate::compiler::compile(tmp.path(), &crate::tools::builtin::CATALOG);
        (tmp, build)
    }

    const AGENT: (&str, &str) = ("agent.toml", "name = \"d\"\nmodel = \"openai/gpt-4.1\"\n");
    const TOOL: &str =
        "description = \"X\"\ncommand = [\"true\"]\n[input_schema]\ntype = \"object\"\n";

    #[test]
    fn additions_changes_and_removals_are_named_in_one_line() {
        let (_a, old) = build(&[
            AGENT,
            ("instructions.md", "Hi."),
            ("tools/x.toml", TOOL),
            ("skills/s.md", "---\ndescription: S\n---\nDo.\n"),
        ]);
        let old = old.manifest.unwrap();
        let (_b, new) = build(&[
            (
                "agent.toml",
                "name = \"d\"\nmodel = \"anthropic/claude-haiku-4-5\"\n",
            ),
            ("instructions.md", "Hello."),
            ("tools/y.toml", TOOL),
            ("tools/bash.toml", "approval = \"always\"\n"),
        ]);
        let Reload::Apply { summary, manifest } = decide(&old, new) else {
            panic!()
        };
        assert_eq!(
            summary,
            "model openai/gpt-4.1 → anthropic/claude-haiku-4-5; instructions changed; tools ~bash +y -load_skill -x; skills -s"
        );
        assert_eq!(manifest.agent.model, "anthropic/claude-haiku-4-5");
    }

    #[test]
    fn a_failed_build_keeps_the_active_manifest_and_an_identical_one_is_unchanged() {
        let (_a, old) = build(&[AGENT, ("instructions.md", "Hi.")]);
        let old = old.manifest.unwrap();
        let (_b, same) = build(&[AGENT, ("instructions.md", "Hi.")]);
        assert_eq!(decide(&old, same), Reload::Unchanged);
        let (_c, broken) = build(&[
            ("agent.toml", "name = \"d\"\nmodle = \"x\"\n"),
            ("instructions.md", "Hi."),
        ]);
        let Reload::Failed { diagnostics } = decide(&old, broken) else {
            panic!()
        };
        assert!(!diagnostics.is_empty());
    }
}
