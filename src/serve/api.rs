//! The session API's wire types, limits and refusals: what plain `eve serve`
//! (`routes.rs`, `index.rs`) and the API in front of Restate (`restate/`) both answer.

use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::error::ApiError;
use crate::protocol::{InputKind, InputRequest};

/// The largest request body taken, in bytes.
pub const MAX_BODY: usize = 1024 * 1024;
/// The longest message or answer taken, in bytes.
pub const MAX_MESSAGE: usize = 256 * 1024;

/// Where a session stands: in the API's answers, and in a Restate session's `meta`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// It takes a message.
    #[default]
    Idle,
    /// A turn was accepted and waits for one of the `--max-turns` places.
    Queued,
    /// A turn runs.
    Running,
    /// A turn is parked on a question or an approval (`inputResponses` resumes it).
    Waiting,
}

/// What a parked turn waits for, as much as answering it needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pending {
    pub request_id: String,
    /// `question` or `approval`.
    pub kind: &'static str,
    pub tool: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub question: Option<String>,
    /// The answers a question offers, or `approve` and `deny`.
    pub options: Vec<String>,
}

impl Pending {
    /// The part of a request the index keeps.
    pub fn of(request: &InputRequest) -> Pending {
        let (kind, question, options) = match &request.kind {
            InputKind::Question { question, options } => {
                ("question", Some(question.clone()), options.clone())
            }
            InputKind::Approval => ("approval", None, vec!["approve".into(), "deny".into()]),
        };
        Pending {
            request_id: request.request_id.clone(),
            kind,
            tool: request.tool.clone(),
            question,
            options,
        }
    }
}

/// A session as `GET /eve/v1/sessions` lists it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub session_id: String,
    pub status: SessionStatus,
    /// The number of lines in its stream (the next `startIndex`).
    pub events: u64,
    pub title: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<Pending>,
}

/// A session's title, as the list shows it: its first message on one line, shortened.
pub fn title(message: &str) -> String {
    let line = message.split_whitespace().collect::<Vec<_>>().join(" ");
    crate::text::shorten(&line, 80)
}

/// `409 session_busy`: a turn runs.
pub fn busy(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        Refusal::SessionBusy.code(),
        format!(
            "session {id} is running a turn: wait for it to end (its stream ends then), or cancel it"
        ),
    )
}

/// `409 input_required`: the session waits for an answer or an approval first.
pub fn input_required(id: &str, pending: Option<&Pending>) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        Refusal::InputRequired.code(),
        format!("session {id} waits for an answer or an approval: send `inputResponses` first"),
    )
    .with("pending", json!(pending))
}

/// `409 session_not_active`: the session waits for no answer.
pub fn not_active(id: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        Refusal::SessionNotActive.code(),
        format!("session {id} is not waiting for an answer or an approval"),
    )
}

/// Why a Restate session's handler refused a request: the code its answer carries,
/// which is also the code of the API error the front answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    SessionNotFound,
    SessionExists,
    SessionFull,
    SessionBusy,
    InputRequired,
    SessionNotActive,
    RequestNotPending,
}

impl Refusal {
    const ALL: [Refusal; 7] = [
        Refusal::SessionNotFound,
        Refusal::SessionExists,
        Refusal::SessionFull,
        Refusal::SessionBusy,
        Refusal::InputRequired,
        Refusal::SessionNotActive,
        Refusal::RequestNotPending,
    ];

    /// The code, as the answer and the API error carry it.
    pub const fn code(self) -> &'static str {
        match self {
            Refusal::SessionNotFound => "session_not_found",
            Refusal::SessionExists => "session_exists",
            Refusal::SessionFull => "session_full",
            Refusal::SessionBusy => "session_busy",
            Refusal::InputRequired => "input_required",
            Refusal::SessionNotActive => "session_not_active",
            Refusal::RequestNotPending => "request_not_pending",
        }
    }

    /// The refusal a code names (`None` for one eve does not know).
    pub fn of_code(code: &str) -> Option<Refusal> {
        Refusal::ALL.into_iter().find(|r| r.code() == code)
    }
}

/// The body of `POST /eve/v1/session/:id`: a message, or the answers for a waiting turn.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct SendBody {
    pub(super) message: Option<String>,
    pub(super) input_responses: Option<Vec<InputResponse>>,
    /// The request's W3C `traceparent` header, not its body: a turn it starts is a
    /// child of the caller's span (docs/telemetry.md).
    #[serde(skip)]
    pub(super) traceparent: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(super) struct InputResponse {
    pub(super) request_id: String,
    pub(super) option_id: Option<String>,
    pub(super) text: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_is_read_back_from_its_code() {
        for refusal in Refusal::ALL {
            assert_eq!(Refusal::of_code(refusal.code()), Some(refusal));
        }
        assert_eq!(Refusal::SessionBusy.code(), "session_busy");
        assert_eq!(Refusal::of_code("no_such_code"), None);
    }
}
