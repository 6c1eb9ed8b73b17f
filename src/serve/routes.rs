//! The routes of the session API (`/eve/v1/…`) and the chat page, and what each checks
//! before a session does anything.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, QueryRejection};
use axum::extract::{DefaultBodyLimit, Path, Query, State as Extract};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde::Deserialize;
use serde_json::json;

use super::api::{MAX_BODY, SendBody};
use super::error::{ApiError, parse};
use super::requests::session_path;
use super::{State, guard, page, stream};

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

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    message: Option<String>,
}

/// The request's W3C `traceparent` header, if it has a readable one.
fn traceparent(headers: &axum::http::HeaderMap) -> Option<String> {
    headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

async fn create(
    Extract(state): Extract<Arc<State>>,
    headers: axum::http::HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let raw = body(raw)?;
    let request: CreateBody = if raw.iter().all(u8::is_ascii_whitespace) {
        CreateBody::default()
    } else {
        parse(&raw)?
    };
    state
        .sessions
        .create(&state, request.message, traceparent(&headers))
        .await
}

async fn send(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
    headers: axum::http::HeaderMap,
    raw: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let mut request: SendBody = parse(&body(raw)?)?;
    request.traceparent = traceparent(&headers);
    session_path(&state, &id)?;
    state.sessions.send(&state, &id, request).await
}

async fn compact(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    state.sessions.compact(&state, &id).await
}

async fn cancel(
    Extract(state): Extract<Arc<State>>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    session_path(&state, &id)?;
    state.sessions.cancel(&state, &id).await
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
    let sessions = state
        .sessions
        .list(&state, limit, query.before.as_deref())
        .await?;
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
    state
        .sessions
        .stream(&state, &id, path, start, follow)
        .await
}
