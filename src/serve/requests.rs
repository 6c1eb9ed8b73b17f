//! What the routes and both backends of the sessions share: reading a request's parts,
//! and the answers they make.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::api::{InputResponse, MAX_MESSAGE, Pending, Refusal};
use super::error::ApiError;
use super::state::State;
use crate::protocol::Resolution;
use crate::session::store;

/// `202 {ok, sessionId, status: "accepted"}` with `x-eve-session-id`.
pub(super) fn accepted(id: &str) -> Response {
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

/// A message is some text, not too long.
pub(super) fn check_text(field: &str, text: &str) -> Result<(), ApiError> {
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

pub(super) fn session_path(state: &State, id: &str) -> Result<std::path::PathBuf, ApiError> {
    if !store::is_valid_id(id) {
        return Err(ApiError::no_session(id));
    }
    Ok(store::path(&state.agent_dir, id))
}

pub(super) fn failed(message: String) -> ApiError {
    ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "session_failed", message)
}

/// The decision an `inputResponses` list makes for what the session waits for.
pub(super) fn resolution(
    pending: &Pending,
    responses: Vec<InputResponse>,
) -> Result<Resolution, ApiError> {
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

pub(super) fn cancelled() -> Response {
    (
        StatusCode::ACCEPTED,
        axum::Json(json!({"ok": true, "status": "accepted"})),
    )
        .into_response()
}

/// `200 {ok, status: "no_active_turn"}`: a cancel found nothing to cancel.
pub(super) fn no_active_turn() -> Response {
    axum::Json(json!({"ok": true, "status": "no_active_turn"})).into_response()
}

/// A place among the `--max-readers` stream readers.
pub(super) fn readers(state: &State) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
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
