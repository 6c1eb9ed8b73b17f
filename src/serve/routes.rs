//! The routes of the session API (`/eve/v1/…`) and the chat page, and what each checks
//! before a session does anything.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State as Extract};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;

use super::api::{
    MAX_BODY, MAX_MESSAGE, Pending, Refusal, SessionStatus, busy, input_required, not_active, title,
};
use super::error::{ApiError, parse};
use super::index::{Entry, Index};
use super::jobs::{self, Job};
use super::live::Live;
use super::restate::{Backend, Job as RestateJob, Summary, Wake, pending_of};
use super::{State, guard, page, stream};
use crate::protocol::Resolution;
use crate::session::store;

/// Every route, behind the checks of [`guard`].
pub fn router(state: Arc<State>) -> Router {
    Router::new()
        .route("/", get(page::index))
        .route("/page.js", get(page::script))
        .route("/page.css", get(page::style))
        .route("/eve/v1/health", get(health))
        .route("/eve/v1/login", post(page::login))
        .route("/eve/v1/info", get(info))
        .route("/eve/v1/sessions", get(list))
        .route("/eve/v1/session", post(create))
        .route("/eve/v1/session/{id}", post(send))
        .route("/eve/v1/session/{id}/stream", get(stream))
        .route("/eve/v1/session/{id}/cancel", post(cancel))
        .route("/eve/v1/session/{id}/compact", post(compact))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::check,
        ))
        .with_state(state)
}

async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "not_found",
        "no such route: the API is under /eve/v1 (see docs/serve.md)",
    )
}

async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
        "this route does not take that method",
    )
}

async fn health() -> Response {
    axum::Json(json!({"ok": true, "status": "ready"})).into_response()
}

async fn info(Extract(state): Extract<Arc<State>>) -> Response {
    axum::Json(state.info.clone()).into_response()
}

/// `202 {ok, sessionId, status: "accepted"}` with `x-eve-session-id`.
fn accepted(id: &str) -> Response {
    let mut response = (
        StatusCode::ACCEPTED,
        axum::Json(json!({"ok": true, "sessionId": id, "status": "accepted"})),
    )
        .into_response();
    if let Ok(value) = HeaderValue::from_str(id) {
        response.headers_mut().insert("x-eve-session-id", value);
    }
    response
}

/// The body, or `413 body_too_large`.
fn body(body: Result<Bytes, BytesRejection>) -> Result<Bytes, ApiError> {
    body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("the body is larger than {} bytes", MAX_BODY),
            )
        } else {
            ApiError::invalid(format!("the body could not be read: {}", e.body_text()))
        }
    })
}

/// A message is some text, not too long.
fn check_text(field: &str, text: &str) -> Result<(), ApiError> {
    if text.trim().is_empty() {
        return Err(ApiError::invalid(format!("`{field}` is empty")));
    }
    if text.len() > MAX_MESSAGE {
        return Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "message_too_long",
            format!(
                "`{field}` has {} bytes; at most {MAX_MESSAGE} are taken",
                text.len()
            ),
        ));
    }
    Ok(())
}

fn session_path(state: &State, id: &str) -> Result<std::path::PathBuf, ApiError> {
    if !store::is_valid_id(id) {
        return Err(ApiError::no_session(id));
    }
    Ok(store::path(&state.agent_dir, id))
}

fn too_many_sessions(max: usize) -> ApiError {
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "too_many_sessions",
        format!("this server holds its limit of {max} sessions (--max-sessions)"),
    )
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    message: Option<String>,
}

async fn create(
    Extract(state): Extract<Arc<State>>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let raw = body(raw)?;
    let request: CreateBody = if raw.iter().all(u8::is_ascii_whitespace) {
        CreateBody::default()
    } else {
        parse(&raw)?
    };
    if let Some(backend) = &state.restate {
        let job = match request.message {
            Some(message) => {
                check_text("message", &message)?;
                RestateJob::Turn { message }
            }
            None => RestateJob::Announce,
        };
        let id = crate::ids::new_id("ses");
        backend.accept(&id, job, true).await?;
        return Ok(accepted(&id));
    }
    let max = state.config.max_sessions;
    if state.index.len() >= max {
        return Err(too_many_sessions(max));
    }
    let id = crate::ids::new_id("ses");
    match request.message {
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
                &state,
                id.clone(),
                Job::Turn { message, new: true },
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

fn failed(message: String) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "session_failed", message)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SendBody {
    message: Option<String>,
    input_responses: Option<Vec<InputResponse>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct InputResponse {
    request_id: String,
    option_id: Option<String>,
    text: Option<String>,
}

/// The decision an `inputResponses` list makes for what the session waits for.
fn resolution(pending: &Pending, responses: Vec<InputResponse>) -> Result<Resolution, ApiError> {
    let mut responses = responses.into_iter();
    let (Some(response), None) = (responses.next(), responses.next()) else {
        return Err(ApiError::invalid(
            "`inputResponses` holds one response: the session waits for one request at a time",
        ));
    };
    if response.request_id != pending.request_id {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            Refusal::RequestNotPending.code(),
            format!(
                "the session waits for request `{}`, not `{}`",
                pending.request_id,
                crate::text::shorten(&response.request_id, 60)
            ),
        )
        .with("pending", json!(pending)));
    }
    if let Some(text) = &response.text {
        check_text("text", text)?;
    }
    let choices = pending.options.join("`, `");
    match (pending.kind, response.option_id, response.text) {
        ("approval", Some(option), text) if option == "approve" && text.is_none() => {
            Ok(Resolution::Approved { by: None })
        }
        ("approval", Some(option), reason) if option == "deny" => Ok(Resolution::Denied { reason }),
        ("approval", _, _) => Err(ApiError::invalid(
            "an approval takes `optionId`: `approve`, or `deny` (with an optional `text`: the reason)",
        )),
        (_, Some(option), None) if pending.options.contains(&option) => {
            Ok(Resolution::Answer { text: option })
        }
        (_, Some(option), None) => Err(ApiError::invalid(format!(
            "`optionId` `{}` is not one of the question's options: `{choices}`",
            crate::text::shorten(&option, 60)
        ))),
        (_, None, Some(text)) => Ok(Resolution::Answer { text }),
        _ => Err(ApiError::invalid(
            "an answer to a question takes `text`, or `optionId` (one of its options), not both",
        )),
    }
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

async fn send(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let request: SendBody = parse(&body(raw)?)?;
    session_path(&state, &id)?;
    if let Some(backend) = &state.restate {
        return restate_send(backend, &id, request).await;
    }
    match (request.message, request.input_responses) {
        (Some(message), None) => {
            check_text("message", &message)?;
            let job = Job::Turn {
                message,
                new: false,
            };
            start(
                &state,
                &id,
                |_| None,
                |entry| match entry.status {
                    SessionStatus::Waiting => Err(input_required(&id, entry.pending.as_ref())),
                    _ => Ok(job),
                },
            )
            .await
        }
        (None, Some(responses)) => {
            // Either closure takes the responses, whichever the session's state calls.
            let responses = std::sync::Mutex::new(Some(responses));
            start(
                &state,
                &id,
                |entry| answer_while_parking(entry, &mut crate::sync::lock(&responses)),
                |entry| match (&entry.pending, crate::sync::lock(&responses).take()) {
                    (Some(pending), Some(responses)) if entry.status == SessionStatus::Waiting => {
                        resolution(pending, responses).map(Job::Resume)
                    }
                    _ => Err(not_active(&id)),
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

async fn compact(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    if let Some(backend) = &state.restate {
        session_path(&state, &id)?;
        let summary = backend.summary(&id).await?;
        refuse_unless_idle(&id, &summary)?;
        backend.accept(&id, RestateJob::Compact, false).await?;
        return Ok(accepted(&id));
    }
    start(
        &state,
        &id,
        |_| None,
        |entry| match entry.status {
            SessionStatus::Waiting => Err(input_required(&id, entry.pending.as_ref())),
            _ => Ok(Job::Compact),
        },
    )
    .await
}

async fn cancel(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    session_path(&state, &id)?;
    if let Some(backend) = &state.restate {
        // A turn that is queued has no invocation to cancel until it starts, a moment later.
        for _ in 0..100 {
            let summary = backend.summary(&id).await?;
            if summary.status != SessionStatus::Queued {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        return Ok(match backend.cancel(&id).await? {
            true => cancelled(),
            false => axum::Json(json!({"ok": true, "status": "no_active_turn"})).into_response(),
        });
    }
    let running = state
        .index
        .with(&id, |entry| match entry.status {
            SessionStatus::Queued | SessionStatus::Running => {
                if let Some(cancel) = &entry.cancel {
                    cancel.cancel();
                }
                Some(true)
            }
            SessionStatus::Waiting => Some(false),
            SessionStatus::Idle => None,
        })
        .ok_or_else(|| ApiError::no_session(&id))?;
    match running {
        Some(true) => Ok(cancelled()),
        Some(false) => {
            start(&state, &id, |_| None, |_| Ok(Job::CancelParked)).await?;
            Ok(cancelled())
        }
        None => Ok(axum::Json(json!({"ok": true, "status": "no_active_turn"})).into_response()),
    }
}

fn cancelled() -> Response {
    (
        StatusCode::ACCEPTED,
        axum::Json(json!({"ok": true, "status": "accepted"})),
    )
        .into_response()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<usize>,
    before: Option<String>,
}

async fn list(
    Extract(state): Extract<Arc<State>>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::invalid(e.body_text()))?;
    let limit = query.limit.unwrap_or(100);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::invalid("`limit` is from 1 to 1000"));
    }
    let sessions = match &state.restate {
        Some(backend) => backend.list(limit, query.before.as_deref()).await?,
        None => state.index.list(limit, query.before.as_deref()),
    };
    Ok(axum::Json(json!({"ok": true, "sessions": sessions})).into_response())
}

async fn stream(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
    query: Result<Query<stream::StreamQuery>, QueryRejection>,
) -> Result<Response, ApiError> {
    let Query(query) = query.map_err(|e| ApiError::invalid(e.body_text()))?;
    let (start, follow) = query.parse()?;
    let path = session_path(&state, &id)?;
    if let Some(backend) = &state.restate {
        let permit = readers(&state)?;
        return backend
            .stream(&id, start, follow, state.shutdown.clone(), permit)
            .await;
    }
    let live = state
        .index
        .with(&id, |entry| entry.live.upgrade())
        .ok_or_else(|| ApiError::no_session(&id))?;
    let permit = readers(&state)?;
    stream::respond(path, live, start, follow, state.shutdown.clone(), permit).await
}

/// A place among the `--max-readers` stream readers.
fn readers(state: &State) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    state.readers.clone().try_acquire_owned().map_err(|_| {
        ApiError::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_readers",
            format!(
                "this server has its limit of {} stream readers open (--max-readers)",
                state.config.max_readers
            ),
        )
    })
}

/// A message or compaction needs an idle session: checked before `accept`, whose
/// invocation would otherwise wait behind the running turn.
fn refuse_unless_idle(id: &str, summary: &Summary) -> Result<(), ApiError> {
    match summary.status {
        SessionStatus::Waiting => Err(input_required(id, pending_of(summary).as_ref())),
        SessionStatus::Queued | SessionStatus::Running => Err(busy(id)),
        SessionStatus::Idle => Ok(()),
    }
}

/// `POST /eve/v1/session/:id` in Restate mode.
async fn restate_send(
    backend: &Backend,
    id: &str,
    request: SendBody,
) -> Result<Response, ApiError> {
    match (request.message, request.input_responses) {
        (Some(message), None) => {
            check_text("message", &message)?;
            let summary = backend.summary(id).await?;
            refuse_unless_idle(id, &summary)?;
            backend
                .accept(id, RestateJob::Turn { message }, false)
                .await?;
            Ok(accepted(id))
        }
        (None, Some(responses)) => {
            let summary = backend.summary(id).await?;
            let pending = match pending_of(&summary) {
                Some(pending) if summary.status == SessionStatus::Waiting => pending,
                _ => return Err(not_active(id)),
            };
            let request_id = pending.request_id.clone();
            let resolution = resolution(&pending, responses)?;
            backend
                .respond(id, &request_id, Wake::Resolve { resolution })
                .await?;
            Ok(accepted(id))
        }
        (Some(_), Some(_)) => Err(ApiError::invalid(
            "send either `message` or `inputResponses`, not both",
        )),
        (None, None) => Err(ApiError::invalid(
            "the body needs `message` (a new turn) or `inputResponses` (answers for a waiting turn)",
        )),
    }
}
