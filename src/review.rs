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

/// A run in progress, as `.eve/running/<pid>.json` says: which definition it runs. The
/// check after a run ([`after_run`]) happens only when eve ends normally; an eve that
/// is killed first (a process it started signalled it, the out-of-memory killer) leaves
/// this marker behind, and the next start compares ([`recover`]).
#[derive(Debug)]
pub struct Running {
    path: PathBuf,
}

#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    inputs_hash: String,
    pid: u32,
    /// When the process started (`/proc/<pid>/stat`), so that a new process given the
    /// same pid is not taken for this run.
    start: Option<u64>,
}

fn running_dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join(".eve").join("running")
}

/// The start time of process `pid`, in clock ticks since boot (Linux).
fn start_time(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields count from the last `)`.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(19)?.parse().ok()
}

fn alive(marker: &Marker) -> bool {
    #[cfg(unix)]
    {
        // SAFETY: signal 0 only asks whether the process exists.
        let exists = unsafe { libc::kill(marker.pid as libc::pid_t, 0) } == 0
            || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        exists && (marker.start.is_none() || start_time(marker.pid) == marker.start)
    }
    #[cfg(not(unix))]
    {
        let _ = marker;
        true
    }
}

impl Running {
    /// Records that this process runs `ran`, built from `agent_dir`.
    pub fn start(agent_dir: &Path, ran: &Manifest) -> std::io::Result<Running> {
        let dir = running_dir(agent_dir);
        std::fs::create_dir_all(&dir)?;
        let pid = std::process::id();
        let marker = Marker {
            inputs_hash: ran.inputs_hash.clone(),
            pid,
            start: start_time(pid),
        };
        let path = dir.join(format!("{pid}.json"));
        let text = serde_json::to_string(&marker).map_err(std::io::Error::other)?;
        std::fs::write(&path, text)?;
        Ok(Running { path })
    }

    /// The run ended and its check was made.
    pub fn end(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The change waiting for a person before a run of the definition whose inputs hash is
/// `current`, counting runs that died before their check ([`recover`]).
pub fn waiting(agent_dir: &Path, current: &str) -> std::io::Result<Option<Pending>> {
    recover(agent_dir, current)?;
    Ok(pending(agent_dir))
}

/// Before a run of the definition whose inputs hash is `current`: a run that died
/// without its check and ran another definition leaves a change for the person, as
/// [`after_run`] would have. Markers of runs still going are left alone.
pub fn recover(agent_dir: &Path, current: &str) -> std::io::Result<()> {
    let Ok(entries) = std::fs::read_dir(running_dir(agent_dir)) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let marker_path = entry.path();
        // A marker that is not one (damaged, foreign) counts as a run that died.
        let marker: Option<Marker> = std::fs::read_to_string(&marker_path)
            .ok()
            .and_then(|text| serde_json::from_str(&text).ok());
        if marker.as_ref().is_some_and(alive) {
            continue;
        }
        let changed = marker.as_ref().is_none_or(|m| m.inputs_hash != current);
        if changed && pending(agent_dir).is_none() {
            let record = Pending {
                summary: "a run stopped before eve could check what it changed (eve was killed), and the definition is no longer the one it ran".into(),
                before: marker.map(|m| m.inputs_hash).unwrap_or_default(),
            };
            let text = serde_json::to_string(&record).map_err(std::io::Error::other)?;
            std::fs::write(path(agent_dir), text)?;
        }
        std::fs::remove_file(&marker_path)?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn markers_of_live_runs_stay_and_dead_ones_leave_a_change_only_if_the_definition_moved() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("agent.toml"), "model = \"openai/gpt-4.1\"\n").unwrap();
        std::fs::write(dir.join("instructions.md"), "Hi.").unwrap();
        let ran = crate::compiler::compile(dir, &crate::tools::builtin::CATALOG)
            .manifest
            .unwrap();
        // This process is alive: its marker stays, whatever the hash.
        let live = Running::start(dir, &ran).unwrap();
        recover(dir, "sha256:new").unwrap();
        assert_eq!(pending(dir), None);
        assert_eq!(std::fs::read_dir(running_dir(dir)).unwrap().count(), 1);
        live.end();
        // A process that is gone, with the same definition: the marker just goes.
        let gone = std::process::Command::new("true").spawn().unwrap();
        let pid = gone.id();
        let mut gone = gone;
        gone.wait().unwrap();
        let marker = |hash: &str| {
            let text = serde_json::json!({"inputs_hash": hash, "pid": pid, "start": null});
            std::fs::write(
                running_dir(dir).join(format!("{pid}.json")),
                text.to_string(),
            )
            .unwrap();
        };
        marker("sha256:same");
        recover(dir, "sha256:same").unwrap();
        assert_eq!(pending(dir), None);
        assert_eq!(std::fs::read_dir(running_dir(dir)).unwrap().count(), 0);
        // Gone, with another definition now: a change waits for the person.
        marker("sha256:old");
        recover(dir, "sha256:new").unwrap();
        assert_eq!(pending(dir).unwrap().before, "sha256:old");
        assert_eq!(std::fs::read_dir(running_dir(dir)).unwrap().count(), 0);
        // A damaged marker counts as a run that died.
        accept(dir).unwrap();
        std::fs::write(running_dir(dir).join("1.json"), "{not json").unwrap();
        recover(dir, "sha256:new").unwrap();
        assert!(pending(dir).is_some());
    }

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
