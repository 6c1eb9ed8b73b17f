//! What the handlers of one eve worker share: the agent, how its sessions' harnesses
//! are built, and the test hook that holds a worker still after a journal entry.

use std::path::PathBuf;
use std::sync::Arc;

use super::super::changes::Changes;
use super::buffer::Buffer;
use crate::harness::Harness;
use crate::manifest::Manifest;
use crate::protocol::{Journal, Snapshot};
use crate::runner::{self, RunOptions};
use crate::serve::log::log_line;

/// `EVE_RESTATE_HOLD_AFTER`: a part of a journal entry's name (`step 2 call`). The
/// first entry whose name holds it and whose work this worker ran makes the worker
/// write the entry's name to `EVE_RESTATE_HOLD_FILE` and stop there, for ever: a test
/// (or a person trying the recovery) then kills it at a known point of a turn.
pub const HOLD_AFTER_VAR: &str = "EVE_RESTATE_HOLD_AFTER";
/// Where a held worker writes the name of the entry it holds after.
pub const HOLD_FILE_VAR: &str = "EVE_RESTATE_HOLD_FILE";

/// One eve worker.
#[derive(Debug)]
pub struct Worker {
    pub manifest: Arc<Manifest>,
    pub agent_dir: PathBuf,
    pub options: RunOptions,
    /// Records changes a turn on this worker makes to the agent's definition.
    pub changes: Arc<Changes>,
    hold: Option<(String, Option<PathBuf>)>,
}

impl Worker {
    pub fn new(
        manifest: Manifest,
        agent_dir: PathBuf,
        options: RunOptions,
        changes: Arc<Changes>,
    ) -> Worker {
        let hold = std::env::var(HOLD_AFTER_VAR)
            .ok()
            .filter(|h| !h.is_empty())
            .map(|h| (h, std::env::var_os(HOLD_FILE_VAR).map(PathBuf::from)));
        Worker {
            manifest: Arc::new(manifest),
            agent_dir,
            options,
            changes,
            hold,
        }
    }

    /// The harness of session `id`, journaling into `buffer`, rebuilt from `snapshot`.
    pub fn harness(
        &self,
        id: &str,
        buffer: Arc<Buffer>,
        snapshot: Option<Snapshot>,
    ) -> Result<(Harness, Vec<String>), String> {
        runner::prepare_journaled(
            self.manifest.clone(),
            &self.agent_dir,
            &self.options,
            id,
            buffer as Arc<dyn Journal>,
            snapshot,
        )
        .map_err(|e| e.to_string())
    }

    /// Holds this worker for ever when `name` is the entry `EVE_RESTATE_HOLD_AFTER`
    /// names (see [`HOLD_AFTER_VAR`]).
    pub async fn hold_after(&self, name: &str) {
        let Some((pattern, file)) = &self.hold else {
            return;
        };
        if !name.contains(pattern.as_str()) {
            return;
        }
        log_line!("eve serve: holding after `{name}` ({HOLD_AFTER_VAR})");
        if let Some(file) = file {
            let _ = std::fs::write(file, format!("{name}\n"));
        }
        std::future::pending::<()>().await;
    }
}
