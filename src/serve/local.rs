//! This server's own sessions ([`Sessions`] without Restate): the index of
//! sessions, and a job on this process for each turn.

use std::path::PathBuf;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::response::Response;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::api::{
    InputResponse, Refusal, SendBody, SessionStatus, busy, input_required, not_active, title,
};
use super::error::ApiError;
use super::index::{Entry, Index};
use super::jobs::{self, Job};
use super::live::Live;
use super::requests::{
    accepted, cancelled, check_text, failed, no_active_turn, readers, resolution, session_path,
};
use super::state::{Sessions, State};
use super::stream;

/// The sessions of this server.
#[derive(Debug)]
pub(super) struct Local;

impl Sessions for Local {
    fn create<'a>(
        &'a self,
        state: &'a Arc<State>,
        message: Option<String>,
        traceparent: Option<String>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        create(state, message, traceparent).boxed()
    }

    fn send<'a>(
        &'a self,
        state: &'a Arc<State>,
        id: &'a str,
        request: SendBody,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        send(state, id, request).boxed()
    }

    fn compact<'a>(
        &'a self,
        state: &'a Arc<State>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        start(
            state,
            id,
            |_| None,
            |entry| match entry.status {
                SessionStatus::Waiting => Err(input_required(id, entry.pending.as_ref())),
                _ => Ok(Job::Compact),
            },
        )
        .boxed()
    }

    fn cancel<'a>(
        &'a self,
        state: &'a Arc<State>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        cancel(state, id).boxed()
    }

    fn list<'a>(
        &'a self,
        state: &'a Arc<State>,
        limit: usize,
        before: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        let sessions = state.index.list(limit, before);
        async move { serde_json::to_value(sessions).map_err(|e| failed(e.to_string())) }.boxed()
    }

    fn stream<'a>(
        &'a self,
        state: &'a Arc<State>,
        id: &'a str,
        path: PathBuf,
        start: i64,
        follow: bool,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        async move {
            let live = state
                .index
                .with(id, |entry| entry.live.upgrade())
                .ok_or_else(|| ApiError::no_session(id))?;
            let permit = readers(state)?;
            stream::respond(path, live, start, follow, state.shutdown.clone(), permit).await
        }
        .boxed()
    }
}

/// A new session: its first turn queued when `message` is given, else its log created.
async fn create(
    state: &Arc<State>,
    message: Option<String>,
    traceparent: Option<String>,
) -> Result<Response, ApiError> {
    let max = state.config.max_sessions;
    if state.index.len() >= max {
        return Err(too_many_sessions(max));
    }
    let id = crate::ids::new_id("ses");
    match message {
        Some(message) => {
            check_text("message", &message)?;
            let cancel = state.abort.child_token();
            let live = Live::new(0);
            let mut entry = Entry::idle(0, title(&message), None);
            entry.status = SessionStatus::Queued;
            entry.live = Arc::downgrade(&live);
            entry.cancel = Some(cancel.clone());
            if !state.index.insert(id.clone(), entry, max) {
                return Err(too_many_sessions(max));
            }
            jobs::spawn(
                state,
                id.clone(),
                Job::Turn {
                    message,
                    new: true,
                    traceparent,
                },
                live,
                cancel,
            );
        }
        None => {
            let created = state.clone();
            let new_id = id.clone();
            tokio::task::spawn_blocking(move || jobs::create(&created, &new_id))
                .await
                .map_err(|e| failed(e.to_string()))?
                .map_err(failed)?;
            if !state
                .index
                .insert(id.clone(), Entry::idle(1, String::new(), None), max)
            {
                return Err(too_many_sessions(max));
            }
        }
    }
    Ok(accepted(&id))
}

/// A message starts a turn; answers resume the waiting one (or wait for the turn that
/// is parking on their request).
async fn send(state: &Arc<State>, id: &str, request: SendBody) -> Result<Response, ApiError> {
    match (request.message, request.input_responses) {
        (Some(message), None) => {
            check_text("message", &message)?;
            let job = Job::Turn {
                message,
                new: false,
                traceparent: request.traceparent,
            };
            start(
                state,
                id,
                |_| None,
                |entry| match entry.status {
                    SessionStatus::Waiting => Err(input_required(id, entry.pending.as_ref())),
                    _ => Ok(job),
                },
            )
            .await
        }
        (None, Some(responses)) => {
            // Either closure takes the responses, whichever the session's state calls.
            let responses = std::sync::Mutex::new(Some(responses));
            start(
                state,
                id,
                |entry| answer_while_parking(entry, &mut crate::sync::lock(&responses)),
                |entry| match (&entry.pending, crate::sync::lock(&responses).take()) {
                    (Some(pending), Some(responses)) if entry.status == SessionStatus::Waiting => {
                        resolution(pending, responses).map(|resolution| Job::Resume {
                            request_id: pending.request_id.clone(),
                            resolution,
                        })
                    }
                    _ => Err(not_active(id)),
                },
            )
            .await
        }
        (Some(_), Some(_)) => Err(ApiError::invalid(
            "send either `message` or `inputResponses`, not both",
        )),
        (None, None) => Err(ApiError::invalid(
            "the body needs `message` (a new turn) or `inputResponses` (answers for a waiting turn)",
        )),
    }
}

/// A running or queued turn is cancelled; a waiting one ends without its calls.
async fn cancel(state: &Arc<State>, id: &str) -> Result<Response, ApiError> {
    let running = state
        .index
        .with(id, |entry| match entry.status {
            SessionStatus::Queued | SessionStatus::Running => {
                if let Some(cancel) = &entry.cancel {
                    cancel.cancel();
                }
                Some(true)
            }
            SessionStatus::Waiting => Some(false),
            SessionStatus::Idle => None,
        })
        .ok_or_else(|| ApiError::no_session(id))?;
    match running {
        Some(true) => Ok(cancelled()),
        Some(false) => {
            start(state, id, |_| None, |_| Ok(Job::CancelParked)).await?;
            Ok(cancelled())
        }
        None => Ok(no_active_turn()),
    }
}

fn too_many_sessions(max: usize) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_sessions",
        format!("this server holds its limit of {max} sessions (--max-sessions)"),
    )
}

/// What a request made of a session.
enum Started {
    /// A job was started.
    Job(Job, Arc<Live>, tokio_util::sync::CancellationToken),
    /// An answer was kept for the turn that is parking on its request.
    Queued,
}

/// Starts `job` in session `id` when its entry allows it (`check`), or says why not. While
/// a turn is queued or running, the session is busy unless `while_running` takes the
/// request (an answer for the request the turn parks on).
async fn start(
    state: &Arc<State>,
    id: &str,
    while_running: impl FnOnce(&mut Entry) -> Option<Result<(), ApiError>>,
    check: impl FnOnce(&Entry) -> Result<Job, ApiError>,
) -> Result<Response, ApiError> {
    let path = session_path(state, id)?;
    let (mut while_running, mut check) = (Some(while_running), Some(check));
    // Whether another eve process holds the log is asked outside the index's lock; it
    // counts only when no job of this server held it meanwhile (one settling in
    // between is asked again), or this server's own turn would be taken for another's.
    for _ in 0..3 {
        let (settled, running) = state
            .index
            .with(id, |e| {
                (
                    e.settled,
                    matches!(e.status, SessionStatus::Queued | SessionStatus::Running),
                )
            })
            .ok_or_else(|| ApiError::no_session(id))?;
        let in_use = if running {
            false
        } else {
            let path = path.clone();
            tokio::task::spawn_blocking(move || crate::session::in_use(&path))
                .await
                .unwrap_or(false)
        };
        let started = state
            .index
            .with(id, |entry| {
                if entry.settled != settled {
                    return Ok(None);
                }
                if matches!(entry.status, SessionStatus::Queued | SessionStatus::Running) {
                    let taken = while_running.take().and_then(|take| take(entry));
                    return match taken {
                        Some(taken) => taken.map(|()| Some(Started::Queued)),
                        None => Err(busy(id)),
                    };
                }
                let Some(check) = check.take() else {
                    return Err(busy(id));
                };
                let job = check(entry)?;
                if in_use {
                    return Err(ApiError::new(
                        StatusCode::CONFLICT,
                        Refusal::SessionBusy.code(),
                        format!("another eve process is using session {id}; wait for it to end"),
                    ));
                }
                let cancel = state.abort.child_token();
                entry.status = SessionStatus::Queued;
                entry.cancel = Some(cancel.clone());
                Ok(Some(Started::Job(job, Index::live_for_turn(entry), cancel)))
            })
            .ok_or_else(|| ApiError::no_session(id))??;
        match started {
            None => continue,
            Some(Started::Queued) => return Ok(accepted(id)),
            Some(Started::Job(job, live, cancel)) => {
                jobs::spawn(state, id.to_string(), job, live, cancel);
                return Ok(accepted(id));
            }
        }
    }
    Err(busy(id))
}

/// While a turn runs: an answer for the request its stream said it waits for is kept,
/// and the turn resumes with it once it has parked. Anything else is busy.
fn answer_while_parking(
    entry: &mut Entry,
    responses: &mut Option<Vec<InputResponse>>,
) -> Option<Result<(), ApiError>> {
    if entry.answer.is_some() {
        return None;
    }
    let pending = entry.live.upgrade()?.requested()?;
    let resolution = responses
        .take()
        .map(|responses| resolution(&pending, responses))?;
    Some(resolution.map(|resolution| {
        entry.answer = Some((pending.request_id, resolution));
    }))
}
