//! The `/eve/v1` API of a Restate worker: the same routes, checks and answers as plain
//! `eve serve`, done by calling the session's virtual object through Restate's ingress.
//!
//! eve keeps the API in front of Restate rather than sending clients to the ingress:
//! the ingress has its own paths and no token, Host or Origin checks, and no NDJSON
//! stream; here every request is checked (by the same guard) and every body is
//! validated before anything is journaled. The ingress and the admin API stay on
//! loopback, reached only by the workers.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::sync::OwnedSemaphorePermit;
use tokio_util::sync::CancellationToken;

use super::object::{Answer, Job, ReadAnswer, Summary, Wake};
use super::store::{self, SessionStatus};
use crate::serve::api::{self, Pending, Refusal, Summary as ListEntry};
use crate::serve::error::ApiError;

/// How the front reaches Restate.
#[derive(Debug, Clone)]
pub struct Backend {
    client: reqwest::Client,
    /// `http://127.0.0.1:8080`, without a trailing slash.
    pub ingress: String,
    /// `http://127.0.0.1:9070`: listing sessions and registering need it.
    pub admin: Option<String>,
}

fn unavailable(message: String) -> ApiError {
    ApiError::new(
        StatusCode::SERVICE_UNAVAILABLE,
        "restate_unavailable",
        message,
    )
}

impl Backend {
    pub fn new(ingress: &str, admin: Option<&str>) -> Result<Backend, String> {
        let client = client()?;
        Ok(Backend {
            client,
            ingress: ingress.trim_end_matches('/').to_string(),
            admin: admin.map(|a| a.trim_end_matches('/').to_string()),
        })
    }

    /// Calls `handler` of session `id` and waits for its answer.
    async fn call<T: DeserializeOwned>(
        &self,
        id: &str,
        handler: &str,
        body: Option<Value>,
    ) -> Result<T, ApiError> {
        let url = format!("{}/{}/{id}/{handler}", self.ingress, store::OBJECT);
        let mut request = self.client.post(&url);
        if let Some(body) = body {
            request = request
                .header(header::CONTENT_TYPE, "application/json")
                .body(body.to_string());
        }
        let response = request.send().await.map_err(|e| {
            unavailable(format!(
                "cannot reach Restate's ingress at {}: {}",
                self.ingress,
                crate::net::error_chain(&e)
            ))
        })?;
        let code = response.status();
        let bytes = response.bytes().await.map_err(|e| {
            unavailable(format!(
                "Restate's answer could not be read: {}",
                crate::net::error_chain(&e)
            ))
        })?;
        if !code.is_success() {
            let said = serde_json::from_slice::<Value>(&bytes)
                .ok()
                .and_then(|v| v["message"].as_str().map(str::to_string))
                .unwrap_or_else(|| String::from_utf8_lossy(&bytes).into_owned());
            let said = crate::text::shorten(said.trim(), 300);
            if code == StatusCode::NOT_FOUND && said.contains("service") {
                return Err(unavailable(format!(
                    "Restate does not know `{}` yet: register this worker with Restate (see docs/restate.md): {said}",
                    store::OBJECT
                )));
            }
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "session_failed",
                format!("Restate answered {code}: {said}"),
            ));
        }
        serde_json::from_slice(&bytes).map_err(|e| {
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "session_failed",
                format!("Restate's answer is not what eve expects: {e}"),
            )
        })
    }

    /// The session as `summary` tells it, or `session_not_found`.
    pub async fn summary(&self, id: &str) -> Result<Summary, ApiError> {
        let summary: Summary = self.call(id, "summary", None).await?;
        if !summary.exists {
            return Err(ApiError::no_session(id));
        }
        Ok(summary)
    }

    /// Asks the session to take `job`; the error the API gives when it does not.
    pub async fn accept(&self, id: &str, job: Job, create: bool) -> Result<(), ApiError> {
        let body = json!({"job": job, "create": create});
        let answer: Answer = self.call(id, "accept", Some(body)).await?;
        refusal(id, &answer).map_or(Ok(()), Err)
    }

    /// Resolves what the parked turn waits for.
    pub async fn respond(&self, id: &str, request_id: &str, wake: Wake) -> Result<(), ApiError> {
        let body = json!({"requestId": request_id, "wake": wake});
        let answer: Answer = self.call(id, "respond", Some(body)).await?;
        refusal(id, &answer).map_or(Ok(()), Err)
    }

    /// Cancels the turn; `true` when there was one.
    pub async fn cancel(&self, id: &str) -> Result<bool, ApiError> {
        let answer: Answer = self.call(id, "cancel", None).await?;
        if let Some(error) = refusal(id, &answer) {
            return Err(error);
        }
        Ok(answer.status.as_deref() == Some("accepted"))
    }

    async fn read(&self, id: &str, from: i64) -> Result<ReadAnswer, ApiError> {
        self.call(id, "read", Some(json!({ "from": from }))).await
    }

    /// The sessions, newest first, from Restate's state through its admin SQL API.
    pub async fn list(
        &self,
        limit: usize,
        before: Option<&str>,
    ) -> Result<Vec<ListEntry>, ApiError> {
        let Some(admin) = &self.admin else {
            return Err(unavailable(
                "listing sessions in Restate mode needs Restate's admin API: start eve serve with --restate-admin URL".into(),
            ));
        };
        let query = format!(
            "SELECT service_key, value_utf8 FROM state WHERE service_name = '{}' AND key = 'meta'",
            store::OBJECT
        );
        let response = self
            .client
            .post(format!("{admin}/query"))
            .header(header::ACCEPT, "application/json")
            .header(header::CONTENT_TYPE, "application/json")
            .body(json!({ "query": query }).to_string())
            .send()
            .await
            .map_err(|e| {
                unavailable(format!(
                    "cannot reach Restate's admin API at {admin}: {}",
                    crate::net::error_chain(&e)
                ))
            })?;
        let code = response.status();
        let body: Value = response.json().await.map_err(|e| {
            unavailable(format!(
                "Restate's admin API answered {code} with something that is not JSON: {e}"
            ))
        })?;
        if !code.is_success() {
            return Err(unavailable(format!(
                "Restate's admin API answered {code}: {}",
                crate::text::shorten(&body.to_string(), 300)
            )));
        }
        let mut sessions: Vec<ListEntry> = body["rows"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
            .iter()
            .filter_map(|row| {
                let id = row["service_key"].as_str()?;
                if !crate::session::store::is_valid_id(id)
                    || before.is_some_and(|before| id >= before)
                {
                    return None;
                }
                let meta: store::Meta = serde_json::from_str(row["value_utf8"].as_str()?).ok()?;
                Some(ListEntry {
                    session_id: id.to_string(),
                    status: meta.status,
                    events: meta.events,
                    title: meta.title,
                    pending: meta.pending.as_ref().and_then(|p| p.pending()),
                })
            })
            .collect();
        sessions.sort_by(|a, b| b.session_id.cmp(&a.session_id));
        sessions.truncate(limit);
        Ok(sessions)
    }

    /// The streaming response for a reader of session `id` at `start`.
    pub async fn stream(
        &self,
        id: &str,
        start: i64,
        follow: bool,
        shutdown: CancellationToken,
        permit: OwnedSemaphorePermit,
    ) -> Result<Response, ApiError> {
        // The first read answers now, so a session that does not exist is a 404.
        self.summary(id).await?;
        let first = self.read(id, start).await?;
        let reader = Reader {
            backend: self.clone(),
            id: id.to_string(),
            next: first.next,
            first: Some(first),
            follow,
            shutdown,
            idle_reads: 0,
            _permit: permit,
        };
        let stream = futures_util::stream::unfold(reader, |mut reader| async move {
            reader
                .next_chunk()
                .await
                .map(|chunk| (Ok::<_, std::io::Error>(chunk), reader))
        });
        let mut response = Body::from_stream(stream).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-ndjson; charset=utf-8"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        headers.insert("x-eve-stream-format", HeaderValue::from_static("ndjson"));
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
        Ok(response)
    }
}

/// The HTTP client for Restate's ingress and admin API: no proxy of the environment
/// is used, since Restate is reached on this machine or the operator's network.
pub fn client() -> Result<reqwest::Client, String> {
    // Err means another provider is already installed, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .no_proxy()
        .connect_timeout(Duration::from_secs(10))
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// The API's error for an answer that refused, if it did.
fn refusal(id: &str, answer: &Answer) -> Option<ApiError> {
    if answer.ok {
        return None;
    }
    let pending = answer.pending.as_ref().and_then(|p| p.pending());
    let code = answer.code.as_deref();
    Some(match code.and_then(Refusal::of_code) {
        Some(Refusal::SessionNotFound) => ApiError::no_session(id),
        Some(Refusal::SessionBusy) => api::busy(id),
        Some(Refusal::InputRequired) => api::input_required(id, pending.as_ref()),
        Some(Refusal::SessionNotActive) => api::not_active(id),
        Some(Refusal::RequestNotPending) => ApiError::new(
            StatusCode::CONFLICT,
            Refusal::RequestNotPending.code(),
            format!("session {id} waits for another request"),
        )
        .with("pending", json!(pending)),
        Some(Refusal::SessionFull) => ApiError::new(
            StatusCode::CONFLICT,
            Refusal::SessionFull.code(),
            format!(
                "session {id} holds as much as eve keeps in Restate for one session: start a new session"
            ),
        ),
        Some(Refusal::SessionExists) | None => ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "session_failed",
            format!(
                "the session refused: {}",
                crate::text::shorten(code.unwrap_or("no reason"), 60)
            ),
        ),
    })
}

/// What the session waits for, in the API's form.
pub fn pending_of(summary: &Summary) -> Option<Pending> {
    summary.pending.as_ref().and_then(|p| p.pending())
}

/// Whether a session in `status` has a turn running or coming.
fn active(status: SessionStatus) -> bool {
    matches!(status, SessionStatus::Queued | SessionStatus::Running)
}

/// One reader of a session's stream: it reads the lines Restate holds and, while a
/// turn runs, asks again after a short wait.
struct Reader {
    backend: Backend,
    id: String,
    next: u64,
    first: Option<ReadAnswer>,
    follow: bool,
    shutdown: CancellationToken,
    /// Reads in a row that found nothing new (the wait grows with them).
    idle_reads: u32,
    _permit: OwnedSemaphorePermit,
}

impl Reader {
    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            let read = match self.first.take() {
                Some(first) => first,
                None => {
                    let wait = Duration::from_millis(20u64 << self.idle_reads.min(3));
                    tokio::select! {
                        () = tokio::time::sleep(wait) => {}
                        () = self.shutdown.cancelled() => return None,
                    }
                    self.backend.read(&self.id, self.next as i64).await.ok()?
                }
            };
            if !read.lines.is_empty() {
                self.next = read.next;
                self.idle_reads = 0;
                return Some(Bytes::from(read.lines));
            }
            // Caught up: the stream ends unless a turn runs or is about to.
            if !self.follow || (!active(read.status) && read.next >= read.events) {
                return None;
            }
            self.idle_reads += 1;
        }
    }
}
