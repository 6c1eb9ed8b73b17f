//! The API's errors: a status and `{ok: false, code, message}`, never an empty body.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// An error answer of the API.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    /// A stable, machine-readable code: `session_busy`, `invalid_json`…
    pub code: &'static str,
    /// What went wrong, for a person.
    pub message: String,
    /// More fields for the body (`pending` for `input_required`).
    pub extra: Option<(&'static str, Value)>,
}

impl ApiError {
    /// An error with this status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            extra: None,
        }
    }

    /// A `400 invalid_request`.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, "invalid_request", message)
    }

    /// A `404 session_not_found`.
    pub fn no_session(id: &str) -> ApiError {
        ApiError::new(
            StatusCode::NOT_FOUND,
            "session_not_found",
            format!("no session `{id}` (GET /eve/v1/sessions lists them)"),
        )
    }

    /// The same error with one more field in its body.
    pub fn with(mut self, key: &'static str, value: Value) -> ApiError {
        self.extra = Some((key, value));
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({"ok": false, "code": self.code, "message": self.message});
        if let (Some((key, value)), Some(object)) = (self.extra, body.as_object_mut()) {
            object.insert(key.to_string(), value);
        }
        (self.status, axum::Json(body)).into_response()
    }
}

/// Parses a JSON body into `T`: malformed JSON is `invalid_json`, a wrong shape (an
/// unknown field, a wrong type, a missing field) is `invalid_request` naming the field.
pub fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let not_json = |e: serde_json::Error| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "invalid_json",
            format!("the body is not valid JSON: {e}"),
        )
    };
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if !inner.is_data() {
            return not_json(inner);
        }
        let at = if path == "." {
            String::new()
        } else {
            format!("`{path}`: ")
        };
        ApiError::invalid(format!("{at}{inner}"))
    })?;
    deserializer.end().map_err(not_json)?;
    Ok(value)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body {
        #[allow(dead_code)]
        message: Option<String>,
    }

    #[test]
    fn json_errors_say_what_and_where() {
        assert_eq!(
            parse::<Body>(b"{\"message\":").unwrap_err().code,
            "invalid_json"
        );
        assert_eq!(parse::<Body>(b"{} x").unwrap_err().code, "invalid_json");
        let e = parse::<Body>(b"{\"message\":3}").unwrap_err();
        assert_eq!(e.code, "invalid_request");
        assert!(
            e.message.starts_with("`message`: invalid type: integer"),
            "{}",
            e.message
        );
        let e = parse::<Body>(b"{\"mesage\":\"hi\"}").unwrap_err();
        assert!(
            e.message.contains("unknown field `mesage`"),
            "{}",
            e.message
        );
    }
}
