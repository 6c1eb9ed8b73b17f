//! Changes a served agent makes to its own definition, recorded for a person as `eve run`
//! records them ([`crate::review`]).
//!
//! A server keeps serving the manifest it started with, but a restart would build the
//! directory afresh: without a record, a model that added a `tools/` file (or edited one
//! with `agent_writable = true`) would widen its own permissions at the next start, with
//! nobody having seen the change. So after turns end the directory is checked against
//! the manifest being served, and a change is recorded in `.eve/agent-changes.json`,
//! which `eve serve` and `eve run` refuse to start past until `eve build` has shown it.
//!
//! Checks are coalesced: a turn's end asks for one ([`Changes::turn_ended`]), one task
//! runs them one at a time, so a thousand turns ending together cost one or two builds,
//! and the last turn's end is always followed by a check. Shutdown checks once more.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::manifest::Manifest;
use crate::review::Guard;
use crate::serve::log::log_line;

/// The checker's state, shared by the turns and the task that checks.
#[derive(Debug)]
pub struct Changes {
    wake: Notify,
    /// The change has been reported on stderr once.
    reported: AtomicBool,
    /// This server's marker in `.eve/running/`, which makes every check
    /// ([`Guard::check`]); taken when the server ends.
    running: Mutex<Option<Guard>>,
}

impl Changes {
    /// The checks of a server whose marker is `running`.
    pub fn new(running: Guard) -> Changes {
        Changes {
            wake: Notify::new(),
            reported: AtomicBool::new(false),
            running: Mutex::new(Some(running)),
        }
    }

    /// A turn ended: the directory is checked soon.
    pub fn turn_ended(&self) {
        self.wake.notify_one();
    }

    /// Checks after turns until `shutdown`.
    pub fn spawn(
        self: &Arc<Self>,
        agent_dir: PathBuf,
        manifest: Arc<Manifest>,
        shutdown: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        let changes = self.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    () = shutdown.cancelled() => break,
                    () = changes.wake.notified() => {}
                }
                changes.check(&agent_dir, &manifest).await;
            }
        })
    }

    /// Checks now: records and reports a change. A check that fails is reported and
    /// keeps the marker for the next start (it fails closed, see [`Guard::check`]).
    pub async fn check(self: &Arc<Self>, agent_dir: &Path, manifest: &Arc<Manifest>) {
        let served = manifest.clone();
        let changes = self.clone();
        let checked = tokio::task::spawn_blocking(move || {
            match crate::sync::lock(&changes.running).as_ref() {
                Some(running) => running.check(&served),
                None => Err(std::io::Error::other("the server has ended")),
            }
        })
        .await;
        match checked {
            Ok(Ok(Some(change))) => {
                if !self.reported.swap(true, Ordering::Relaxed) {
                    log_line!(
                        "eve serve: note: the agent's definition changed while it was served ({}); this server goes on with the definition it started with, and the next start needs `eve build {}` to show the change first",
                        crate::text::for_terminal(&change.summary),
                        crate::text::shell_word(&agent_dir.to_string_lossy())
                    );
                }
            }
            Ok(Ok(None)) => {}
            Ok(Err(error)) => log_line!(
                "eve serve: could not record the changes to the agent's definition: {error}; the next start counts the definition as changed"
            ),
            Err(error) => {
                if let Some(running) = crate::sync::lock(&self.running).as_ref() {
                    running.keep();
                }
                log_line!(
                    "eve serve: checking the agent's definition stopped unexpectedly: {error}; the next start counts the definition as changed"
                )
            }
        }
    }

    /// The server ended after its last check: its marker goes, unless a check failed.
    pub fn end(&self) {
        if let Some(running) = crate::sync::lock(&self.running).take() {
            running.end();
        }
    }
}
