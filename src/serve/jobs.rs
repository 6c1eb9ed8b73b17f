//! What a session does when asked: a turn, a resumed turn, a compaction or closing a
//! parked turn. Each runs as a task that waits for one of the `--max-turns` places,
//! reopens the session from its log, drives the harness and lets go of everything
//! when it is done, so a settled session is only its index entry again.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use super::State;
use super::api::{Pending, SessionStatus};
use super::index::Index;
use super::live::{Live, LiveLog};
use crate::protocol::{EndReason, Journal, Resolution, TurnOutcome};
use crate::runner::{self, SessionChoice};
use crate::serve::log::log_line;

/// What a job does in its session.
#[derive(Debug, Clone)]
pub enum Job {
    /// A turn answering this message; `new`: the session is created for it.
    Turn {
        message: String,
        new: bool,
        /// The caller's W3C trace context: the turn's spans are its children.
        traceparent: Option<String>,
    },
    /// Resume the parked turn with this answer or decision to the request the client
    /// was shown: when the log waits for another by the time the job opens it, the job
    /// does nothing.
    Resume {
        request_id: String,
        resolution: Resolution,
    },
    /// Compact the history now.
    Compact,
    /// End the parked turn as aborted.
    CancelParked,
}

impl Job {
    /// The same request as `eve run` would make of it (closing a parked turn has none).
    fn action(&self) -> Option<runner::Action> {
        match self {
            Job::Turn { message, .. } => Some(runner::Action::Turn(message.clone())),
            Job::Resume { resolution, .. } => Some(runner::Action::Resume(resolution.clone())),
            Job::Compact => Some(runner::Action::Compact),
            Job::CancelParked => None,
        }
    }
}

/// Starts `job` in session `id`, whose entry is already `queued` with `cancel` and `live`.
pub fn spawn(state: &Arc<State>, id: String, job: Job, live: Arc<Live>, cancel: CancellationToken) {
    let task = run(state.clone(), id, job, live, cancel);
    state.tasks.spawn(task);
}

async fn run(state: Arc<State>, id: String, job: Job, live: Arc<Live>, cancel: CancellationToken) {
    // A cancelled or shut-down job needs no place: it ends before any model call.
    let permit = if matches!(job, Job::CancelParked) {
        None
    } else {
        tokio::select! {
            biased;
            permit = state.turns.clone().acquire_owned() => permit.ok(),
            () = cancel.cancelled() => None,
            () = state.shutdown.cancelled() => None,
        }
    };
    state.index.with(&id, |e| e.status = SessionStatus::Running);
    let new = matches!(job, Job::Turn { new: true, .. });
    let outcome = drive(&state, &id, job, &live, &cancel).await;
    drop(permit);
    state.changes.turn_ended();
    if let Err(error) = &outcome {
        log_line!("eve serve: session {id}: {error}");
    }
    live.end();
    if new && outcome.is_err() {
        // A session whose log could not even be created does not exist.
        state.index.remove(&id);
        return;
    }
    let events = live.next();
    let resume = state.index.with(&id, |e| {
        // A job that could not open the log changed nothing: the session waits as before.
        if let Ok(pending) = outcome {
            e.pending = pending;
        }
        e.events = events;
        e.cancel = None;
        e.settled += 1;
        // An answer that came while the turn was parking resumes it now.
        match (e.pending.as_ref(), e.answer.take()) {
            (Some(pending), Some((request, resolution))) if pending.request_id == request => {
                let cancel = state.abort.child_token();
                e.status = SessionStatus::Queued;
                e.cancel = Some(cancel.clone());
                return Some((request, resolution, Index::live_for_turn(e), cancel));
            }
            (_, Some((request, _))) => log_line!(
                "eve serve: session {id}: the answer to request {request} came as the turn ended without parking on it; it was not used"
            ),
            (_, None) => {}
        }
        e.status = if e.pending.is_some() {
            SessionStatus::Waiting
        } else {
            SessionStatus::Idle
        };
        None
    });
    if let Some((request_id, resolution, live, cancel)) = resume.flatten() {
        let job = Job::Resume {
            request_id,
            resolution,
        };
        spawn(&state, id, job, live, cancel);
    }
}

/// Opens the session, does the job, closes the log. Returns what the session waits for
/// afterwards; `Err` when the session could not be opened (nothing was written).
async fn drive(
    state: &Arc<State>,
    id: &str,
    job: Job,
    live: &Arc<Live>,
    cancel: &CancellationToken,
) -> Result<Option<Pending>, String> {
    let mut options = state.config.options.clone();
    options.persist = true;
    if let Job::Turn { traceparent, .. } = &job {
        options.traceparent = traceparent.clone();
    }
    options.session = match &job {
        Job::Turn { new: true, .. } => SessionChoice::Create(id.to_string()),
        _ => SessionChoice::Id(id.to_string()),
    };
    let manifest = state.manifest.clone();
    let agent_dir = state.agent_dir.clone();
    let feed = live.clone();
    let prepared = tokio::task::spawn_blocking(move || {
        let journal = move |log, replayed: Option<&crate::session::replay::Replayed>| {
            feed.open(replayed.map_or(&[][..], |r| r.records.as_slice()));
            Arc::new(LiveLog::new(log, feed.clone())) as Arc<dyn Journal>
        };
        runner::prepare_with(manifest, &agent_dir, &options, &journal)
    })
    .await
    .map_err(|e| format!("opening the session stopped unexpectedly: {e}"))?
    .map_err(|e| e.to_string())?;
    // The log may have changed since the index saw it (`eve run --session` between two
    // turns): what it waits for decides, as for `eve run`.
    let waits_for = prepared.harness.pending().map(|p| p.request_id.as_str());
    let refused = match job.action() {
        _ if matches!(&job, Job::Resume { request_id, .. } if Some(request_id.as_str()) != waits_for) => {
            Some(runner::RunError::Usage(format!(
                "session {id} no longer waits for the request that was answered: it was settled elsewhere"
            )))
        }
        Some(action) => runner::check_action(&prepared, &action).err(),
        None if prepared.harness.pending().is_none() => Some(runner::RunError::Usage(format!(
            "session {id} is not waiting for an answer or an approval"
        ))),
        None => None,
    };
    if let Some(refused) = refused {
        log_line!("eve serve: session {id}: {refused}");
        let pending = prepared.harness.pending().map(Pending::of);
        tokio::task::spawn_blocking(move || drop(prepared))
            .await
            .map_err(|e| format!("closing the session stopped unexpectedly: {e}"))?;
        return Ok(pending);
    }
    let mut harness = prepared.harness;
    harness.wind_down_on(state.shutdown.clone());
    // The connections' servers start with each turn and stop at its end: between turns
    // a served session holds no process.
    let outcome = match (harness.start().await, job) {
        (Err(error), _) => TurnOutcome::failed(error),
        (Ok(()), job) => match job {
            Job::Turn { message, .. } => harness.run_turn(message, cancel.clone()).await,
            Job::Resume { resolution, .. } => harness
                .resume_turn(resolution, cancel.clone())
                .await
                .unwrap_or_else(TurnOutcome::failed),
            Job::Compact => match harness.compact_now().await {
                Ok(()) => TurnOutcome {
                    end_reason: EndReason::Completed,
                    error: None,
                    ..TurnOutcome::failed(String::new())
                },
                Err(error) => TurnOutcome::failed(error),
            },
            Job::CancelParked => harness.cancel_parked().unwrap_or_else(TurnOutcome::failed),
        },
    };
    harness.finish(&outcome);
    harness.stop().await;
    let pending = harness.pending().map(Pending::of);
    // Closing the log puts its last records on disk and lets go of its lock.
    tokio::task::spawn_blocking(move || drop(harness))
        .await
        .map_err(|e| format!("closing the session stopped unexpectedly: {e}"))?;
    Ok(pending)
}

/// Creates session `id` with no turn: its log holds `session.started`.
pub fn create(state: &State, id: &str) -> Result<(), String> {
    let mut options = state.config.options.clone();
    options.persist = true;
    options.session = SessionChoice::Create(id.to_string());
    let prepared = runner::prepare(state.manifest.clone(), &state.agent_dir, &options)
        .map_err(|e| e.to_string())?;
    prepared.harness.announce(Vec::new());
    Ok(())
}
