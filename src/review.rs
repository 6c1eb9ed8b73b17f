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

use std::path::Path;

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

/// The record's name in `.eve/`.
const RECORD: &str = "agent-changes.json";

/// The largest record or marker read (a record is one line of summary).
const MAX_RECORD_BYTES: u64 = 1024 * 1024;

/// The change waiting for a person, if any. A damaged record (or something else in its
/// place) counts as a change; a `.eve` that is a link is an error
/// ([`crate::statedir`]).
fn pending(agent_dir: &Path) -> std::io::Result<Option<Pending>> {
    let Some(eve) = crate::statedir::open(agent_dir, &[])? else {
        return Ok(None);
    };
    let damaged = || Pending {
        summary: "the record of the agent's changes is damaged".into(),
        before: String::new(),
    };
    Ok(match eve.read(RECORD, MAX_RECORD_BYTES) {
        Ok(None) => None,
        Ok(Some(bytes)) => Some(serde_json::from_slice(&bytes).unwrap_or_else(|_| damaged())),
        Err(_) => Some(damaged()),
    })
}

/// The person has seen the change: forget it.
fn accept(agent_dir: &Path) -> std::io::Result<()> {
    if let Some(eve) = crate::statedir::open(agent_dir, &[])? {
        eve.remove(RECORD)?;
    }
    Ok(())
}

/// Writes `record` for the person, in the agent directory's own `.eve`.
fn record(agent_dir: &Path, record: &Pending) -> std::io::Result<()> {
    let text = serde_json::to_string(record).map_err(std::io::Error::other)?;
    crate::statedir::create(agent_dir, &[])?.write(RECORD, text.as_bytes())
}

/// Whether `event` says something of the model's ran: a call requested, or a parked
/// one settled. A run with no such event and no servers ([`runs_servers`]) cannot have
/// changed the agent's definition.
fn acted(event: &crate::protocol::Event) -> bool {
    use crate::protocol::EventKind;
    matches!(
        event.kind,
        EventKind::ActionsRequested { .. } | EventKind::ActionResult { .. }
    )
}

/// Whether processes ran beside a session of `ran` on their own — the connections'
/// servers, top level or in a subagent — so that a run that called no tool could still
/// have changed the agent's definition. A run that called no tool and started no
/// server cannot have, and need not pay for the build [`Guard::check`] makes.
fn runs_servers(ran: &Manifest) -> bool {
    !ran.connections.is_empty() || ran.subagents.iter().any(|s| runs_servers(&s.manifest))
}

/// After a run of `ran` (built from `agent_dir`): records and returns what changed, if
/// the directory now builds to something else. A definition that no longer builds is a
/// change too, and so is one eve could not check: the check fails closed, so a file
/// that makes the build stop (a bug the model found) cannot hide a change beside it.
fn after_run(agent_dir: &Path, ran: &Manifest) -> std::io::Result<Option<Pending>> {
    after_build(agent_dir, ran, || {
        crate::compiler::build(
            agent_dir,
            &crate::tools::builtin::CATALOG,
            crate::compiler::listing::Options::default(),
        )
    })
}

/// [`after_run`] with the build `build` makes.
fn after_build(
    agent_dir: &Path,
    ran: &Manifest,
    build: impl FnOnce() -> crate::compiler::Build,
) -> std::io::Result<Option<Pending>> {
    let summary = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(build)) {
        Ok(build) => match &build.manifest {
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
        },
        Err(panic) => format!(
            "eve could not check the definition (its build stopped unexpectedly: {}), so it counts as changed",
            panic_message(panic.as_ref())
        ),
    };
    // A change already waiting keeps its starting point: everything since then is new.
    let before = pending(agent_dir)?.map_or_else(|| ran.inputs_hash.clone(), |p| p.before);
    let change = Pending { summary, before };
    record(agent_dir, &change)?;
    Ok(Some(change))
}

/// What a panic said, on one short line.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "no message".into());
    crate::text::shorten(&text.split_whitespace().collect::<Vec<_>>().join(" "), 200)
}

/// The review of one run (or served agent, or `eve dev` session), from before anything
/// of the definition runs to the check after it: the only way to the review's steps.
///
/// Made by `Agent::guard` (`src/agent.rs`), it leaves a marker, `.eve/running/<pid>.json`,
/// naming the definition this process runs; [`Guard::observe`] sees the run's events,
/// [`Guard::after_turn`] checks the directory when something could have changed it, and
/// [`Guard::finish`] checks and ends. The marker goes only when a run ends after a check
/// that succeeded: a guard dropped unfinished leaves it, as an eve that is killed first
/// does (a process it started signalled it, the out-of-memory killer), and the next
/// start compares ([`recover`]).
#[derive(Debug)]
pub struct Guard {
    dir: crate::statedir::StateDir,
    agent_dir: std::path::PathBuf,
    name: String,
    /// A check could not be made or recorded: the marker stays when the run ends, so
    /// the next start counts a change ([`recover`]).
    unchecked: std::sync::atomic::AtomicBool,
    /// Whether the model had anything run since the last check: a call requested, or a
    /// parked one settled.
    acted: std::sync::atomic::AtomicBool,
}

#[derive(Debug, Serialize, Deserialize)]
struct Marker {
    inputs_hash: String,
    pid: u32,
    /// When the process started (`/proc/<pid>/stat`), so that a new process given the
    /// same pid is not taken for this run.
    start: Option<u64>,
}

/// The markers' folder in `.eve/`.
const RUNNING: &str = "running";

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

impl Guard {
    /// Records that this process runs `ran`, built from `agent_dir`.
    pub(crate) fn start(agent_dir: &Path, ran: &Manifest) -> std::io::Result<Guard> {
        let dir = crate::statedir::create(agent_dir, &[RUNNING])?;
        let guard = Guard {
            dir,
            agent_dir: agent_dir.to_path_buf(),
            name: format!("{}.json", std::process::id()),
            unchecked: std::sync::atomic::AtomicBool::new(false),
            acted: std::sync::atomic::AtomicBool::new(false),
        };
        guard.now_runs(ran)?;
        Ok(guard)
    }

    /// This process runs `ran` from now on (`eve dev` applied another build): a kill
    /// from here is compared with it. The marker is replaced whole, by a rename, so a
    /// kill in the middle leaves the old one or the new one.
    pub fn now_runs(&self, ran: &Manifest) -> std::io::Result<()> {
        let pid = std::process::id();
        let marker = Marker {
            inputs_hash: ran.inputs_hash.clone(),
            pid,
            start: start_time(pid),
        };
        let text = serde_json::to_string(&marker).map_err(std::io::Error::other)?;
        self.dir.write(&self.name, text.as_bytes())
    }

    /// Sees one event of the run: whether the model had something run.
    pub fn observe(&self, event: &crate::protocol::Event) {
        if acted(event) {
            self.acted.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// After a turn of `ran`: the check, when the turn could have changed the
    /// definition — it had something run, or servers ran beside it. A turn that ran
    /// nothing is not checked: an edit the person saves the moment it ends is theirs.
    pub fn after_turn(&self, ran: &Manifest) -> std::io::Result<Option<Pending>> {
        let acted = self.acted.swap(false, std::sync::atomic::Ordering::Relaxed);
        if acted || runs_servers(ran) {
            self.check(ran)
        } else {
            Ok(None)
        }
    }

    /// The check after a run or a turn of `ran`: records and returns what changed.
    /// Every check is this one, and it fails closed: a build that stops is a change,
    /// recorded; a change that cannot be recorded keeps the marker when the run ends,
    /// so the next start records it.
    pub fn check(&self, ran: &Manifest) -> std::io::Result<Option<Pending>> {
        let checked = after_run(&self.agent_dir, ran);
        if checked.is_err() {
            self.keep();
        }
        checked
    }

    /// A check could not be made: the marker stays when the run ends.
    pub fn keep(&self) {
        self.unchecked
            .store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// The run of `ran` ended: [`Guard::after_turn`], then [`Guard::end`]. A check that
    /// fails leaves the marker.
    pub fn finish(self, ran: &Manifest) -> std::io::Result<Option<Pending>> {
        let change = self.after_turn(ran)?;
        self.end();
        Ok(change)
    }

    /// The run ended. Its marker goes, unless a check failed ([`Guard::check`]): then
    /// it stays for the next start, as a kill leaves it.
    pub fn end(self) {
        if !self.unchecked.load(std::sync::atomic::Ordering::SeqCst) {
            let _ = self.dir.remove(&self.name);
        }
    }

    /// Before a turn of `current` (`eve dev`): the change that waits for the person,
    /// counting the runs that died before their check.
    pub fn waiting(&self, current: &Manifest) -> std::io::Result<Option<Pending>> {
        waiting(&self.agent_dir, &current.inputs_hash)
    }

    /// The person accepts the change that waits (`/accept` in `eve dev`), if one does.
    pub fn accept(&self) -> std::io::Result<Option<Pending>> {
        let change = pending(&self.agent_dir)?;
        if change.is_some() {
            accept(&self.agent_dir)?;
        }
        Ok(change)
    }
}

/// What a build may do with a change that waits for the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Refuse to run it (`eve run`, `eve serve`, `eve dev`, `eve eval`).
    Refuse,
    /// The person sees it now and it is accepted (`eve build`, `eve run
    /// --accept-agent-changes`).
    Accept,
}

/// Before anything of the definition whose inputs hash is `current` runs: the change
/// waiting for the person (counting runs that died before their check), and, under
/// [`Policy::Accept`], accepted. `Ok(None)`: nothing waits.
pub(crate) fn admit(
    agent_dir: &Path,
    current: &str,
    policy: Policy,
) -> std::io::Result<Option<Pending>> {
    let change = waiting(agent_dir, current)?;
    if change.is_some() && policy == Policy::Accept {
        accept(agent_dir)?;
    }
    Ok(change)
}

/// The change waiting for a person before a run of the definition whose inputs hash is
/// `current`, counting runs that died before their check ([`recover`]).
fn waiting(agent_dir: &Path, current: &str) -> std::io::Result<Option<Pending>> {
    recover(agent_dir, current)?;
    pending(agent_dir)
}

/// Decides, before anything of the definition in `agent_dir` runs (a server listed at
/// build time included), whether a change waits for the person: recorded, or left by a
/// run that died before its check ([`recover`]). `current` gives the inputs hash of the
/// definition as it is now (`None`: it does not build); it is asked only when a dead
/// run's marker needs comparing. Every build that may start a server asks this first
/// (`connections::reviewed`).
pub fn unseen(
    agent_dir: &Path,
    current: impl FnOnce() -> Option<String>,
) -> std::io::Result<Option<Pending>> {
    recover_with(agent_dir, &mut Lazy::new(current))?;
    pending(agent_dir)
}

/// [`unseen`], failing closed: when eve cannot tell, that stands in the way too.
pub fn held(agent_dir: &Path, current: impl FnOnce() -> Option<String>) -> Option<Pending> {
    unseen(agent_dir, current).unwrap_or_else(|e| {
        Some(Pending {
            summary: format!("eve cannot tell whether it changed: {e}"),
            before: String::new(),
        })
    })
}

/// What a person is told when a change waits: `base` is the agent directory as they
/// wrote it.
pub fn describe(change: &Pending, base: &str) -> String {
    format!(
        "the agent's definition changed while it ran ({}): review it with `eve build {}` first",
        change.summary,
        crate::text::shell_word(base)
    )
}

/// A value computed the first time it is asked for.
struct Lazy<F: FnOnce() -> Option<String>> {
    make: Option<F>,
    value: Option<String>,
}

impl<F: FnOnce() -> Option<String>> Lazy<F> {
    fn new(make: F) -> Self {
        Lazy {
            make: Some(make),
            value: None,
        }
    }

    fn get(&mut self) -> Option<&str> {
        if let Some(make) = self.make.take() {
            self.value = make();
        }
        self.value.as_deref()
    }
}

/// Before a run of the definition whose inputs hash is `current`: a run that died
/// without its check and ran another definition leaves a change for the person, as
/// [`after_run`] would have. Markers of runs still going are left alone.
fn recover(agent_dir: &Path, current: &str) -> std::io::Result<()> {
    let current = current.to_string();
    recover_with(agent_dir, &mut Lazy::new(move || Some(current)))
}

fn recover_with<F: FnOnce() -> Option<String>>(
    agent_dir: &Path,
    current: &mut Lazy<F>,
) -> std::io::Result<()> {
    let Some(dir) = crate::statedir::open(agent_dir, &[RUNNING])? else {
        return Ok(());
    };
    // A name starting with a dot is a marker being written (see `StateDir::write`).
    for name in dir.names()?.into_iter().filter(|n| !n.starts_with('.')) {
        // A marker that is not one (damaged, foreign, a link) counts as a run that died.
        let marker: Option<Marker> = dir
            .read(&name, MAX_RECORD_BYTES)
            .ok()
            .flatten()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        if marker.as_ref().is_some_and(alive) {
            continue;
        }
        let changed = match &marker {
            Some(m) => current.get() != Some(m.inputs_hash.as_str()),
            None => true,
        };
        if changed && pending(agent_dir)?.is_none() {
            let change = Pending {
                summary: "a run stopped before eve could check what it changed (eve was killed), and the definition is no longer the one it ran".into(),
                before: marker.map(|m| m.inputs_hash).unwrap_or_default(),
            };
            record(agent_dir, &change)?;
        }
        dir.remove(&name)?;
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
        let live = Guard::start(dir, &ran).unwrap();
        recover(dir, "sha256:new").unwrap();
        assert_eq!(pending(dir).unwrap(), None);
        assert_eq!(
            std::fs::read_dir(dir.join(".eve/running")).unwrap().count(),
            1
        );
        live.end();
        // A process that is gone, with the same definition: the marker just goes.
        let gone = std::process::Command::new("true").spawn().unwrap();
        let pid = gone.id();
        let mut gone = gone;
        gone.wait().unwrap();
        let marker = |hash: &str| {
            let text = serde_json::json!({"inputs_hash": hash, "pid": pid, "start": null});
            std::fs::write(
                dir.join(".eve/running").join(format!("{pid}.json")),
                text.to_string(),
            )
            .unwrap();
        };
        marker("sha256:same");
        recover(dir, "sha256:same").unwrap();
        assert_eq!(pending(dir).unwrap(), None);
        assert_eq!(
            std::fs::read_dir(dir.join(".eve/running")).unwrap().count(),
            0
        );
        // Gone, with another definition now: a change waits for the person.
        marker("sha256:old");
        recover(dir, "sha256:new").unwrap();
        assert_eq!(pending(dir).unwrap().unwrap().before, "sha256:old");
        assert_eq!(
            std::fs::read_dir(dir.join(".eve/running")).unwrap().count(),
            0
        );
        // A damaged marker counts as a run that died.
        accept(dir).unwrap();
        std::fs::write(dir.join(".eve/running").join("1.json"), "{not json").unwrap();
        recover(dir, "sha256:new").unwrap();
        assert!(pending(dir).unwrap().is_some());
    }

    #[test]
    fn a_check_whose_build_stops_counts_as_a_change_and_one_not_recorded_keeps_the_marker() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(dir.join("agent.toml"), "model = \"openai/gpt-4.1\"\n").unwrap();
        std::fs::write(dir.join("instructions.md"), "Hi.").unwrap();
        let ran = crate::compiler::compile(dir, &crate::tools::builtin::CATALOG)
            .manifest
            .unwrap();
        let recorded = after_build(dir, &ran, || panic!("a file the model wrote"))
            .unwrap()
            .unwrap();
        assert!(
            recorded.summary.contains("could not check")
                && recorded.summary.contains("a file the model wrote"),
            "{}",
            recorded.summary
        );
        assert_eq!(pending(dir).unwrap(), Some(recorded));
        accept(dir).unwrap();
        // The change cannot be recorded (something else stands at the record's name):
        // the check is an error, and the run's marker outlives it.
        let running = Guard::start(dir, &ran).unwrap();
        std::fs::write(dir.join("instructions.md"), "Changed.").unwrap();
        std::fs::create_dir_all(dir.join(".eve/agent-changes.json/x")).unwrap();
        assert!(running.check(&ran).is_err());
        running.end();
        assert_eq!(
            std::fs::read_dir(dir.join(".eve/running")).unwrap().count(),
            1,
            "the marker stays for the next start"
        );
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
        assert_eq!(pending(dir).unwrap(), Some(recorded));
        accept(dir).unwrap();
        assert_eq!(pending(dir).unwrap(), None);
        accept(dir).unwrap();
    }
}
