//! Changes to an agent's definition made while it ran, held until a person has seen
//! them.
//!
//! An agent may change its own definition when its author allows it (`[workspace]
//! agent_writable = true`); without that, file tools refuse and the sandbox keeps the
//! existing files read-only, but a process could still add a file the definition did not
//! have yet (a first `tools/` folder). So whatever the setting, when a run ends and the
//! agent directory no longer builds to the manifest the run started with, eve records
//! what changed in `.eve/agent-changes.json` (a file no tool and no sandboxed process can
//! write). The next `eve run` refuses to use the changed definition until the person has
//! seen it: `eve build` shows the change and accepts it, `eve run
//! --accept-agent-changes` shows it and goes on.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::manifest::Manifest;
use crate::manifest::diff::summarize;

/// A change waiting for a person.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pending {
    /// What changed, in one line (`tools +deploy ~bash; instructions changed`).
    pub summary: String,
    /// The inputs hash of the definition the run started with.
    pub before: String,
}

fn path(agent_dir: &Path) -> PathBuf {
    agent_dir.join(".eve").join("agent-changes.json")
}

/// The change waiting for a person, if any. A damaged record counts as a change.
pub fn pending(agent_dir: &Path) -> Option<Pending> {
    let text = std::fs::read_to_string(path(agent_dir)).ok()?;
    Some(serde_json::from_str(&text).unwrap_or(Pending {
        summary: "the record of the agent's changes is damaged".into(),
        before: String::new(),
    }))
}

/// The person has seen the change: forget it.
pub fn accept(agent_dir: &Path) -> std::io::Result<()> {
    match std::fs::remove_file(path(agent_dir)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Whether processes ran beside a session of `ran` on their own — the connections'
/// servers, top level or in a subagent — so that a run that called no tool could still
/// have changed the agent's definition. A run that called no tool and started no
/// server cannot have, and need not pay for the build [`after_run`] makes.
pub fn runs_servers(ran: &Manifest) -> bool {
    !ran.connections.is_empty() || ran.subagents.iter().any(|s| runs_servers(&s.manifest))
}

/// After a run of `ran` (built from `agent_dir`): records and returns what changed, if
/// the directory now builds to something else. A definition that no longer builds is a
/// change too.
pub fn after_run(agent_dir: &Path, ran: &Manifest) -> std::io::Result<Option<Pending>> {
    let build = crate::compiler::build(
        agent_dir,
        &crate::tools::builtin::CATALOG,
        crate::compiler::listing::Options::default(),
    );
    let summary = match &build.manifest {
        Some(now) if now.inputs_hash == ran.inputs_hash => return Ok(None),
        Some(now) => {
            let summary = summarize(ran, now);
            if summary.is_empty() {
                "files of the definition changed".to_string()
            } else {
                summary
            }
        }
        None => "the definition no longer builds".to_string(),
    };
    // A change already waiting keeps its starting point: everything since then is new.
    let before = pending(agent_dir).map_or_else(|| ran.inputs_hash.clone(), |p| p.before);
    let record = Pending { summary, before };
    let text = serde_json::to_string(&record).map_err(std::io::Error::other)?;
    std::fs::create_dir_all(agent_dir.join(".eve"))?;
    std::fs::write(path(agent_dir), text)?;
    Ok(Some(record))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn a_self_edit_is_recorded_until_accepted() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("agent.toml"), "model = \"openai/gpt-4.1\"\n").unwrap();
        std::fs::write(dir.join("instructions.md"), "Hi.").unwrap();
        let ran = crate::compiler::compile(dir, &crate::tools::builtin::CATALOG)
            .manifest
            .unwrap();
        assert_eq!(after_run(dir, &ran).unwrap(), None, "nothing changed");
        std::fs::create_dir(dir.join("tools")).unwrap();
        std::fs::write(dir.join("tools/bash.toml"), "approval = \"never\"\n").unwrap();
        let recorded = after_run(dir, &ran).unwrap().unwrap();
        assert_eq!(recorded.summary, "tools ~bash");
        assert_eq!(pending(dir), Some(recorded));
        accept(dir).unwrap();
        assert_eq!(pending(dir), None);
        accept(dir).unwrap();
    }
}
