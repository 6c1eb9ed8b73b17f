//! Restate's sessions ([`Sessions`] on `eve serve --restate`): each a virtual object,
//! reached through the ingress and the admin API ([`Backend`]).

use std::path::PathBuf;
use std::sync::Arc;

use axum::response::Response;
use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::front::{Backend, pending_of};
use super::object::{Job, Summary, Wake};
use crate::serve::api::{SendBody, SessionStatus, busy, input_required, not_active};
use crate::serve::error::ApiError;
use crate::serve::requests::{
    accepted, cancelled, check_text, failed, no_active_turn, readers, resolution, session_path,
};
use crate::serve::state::{Sessions, State};

impl Sessions for Backend {
    fn create<'a>(
        &'a self,
        _state: &'a Arc<State>,
        message: Option<String>,
        // Restate's workers start each turn's trace themselves (docs/telemetry.md).
        _traceparent: Option<String>,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        async move {
            let job = match message {
                Some(message) => {
                    check_text("message", &message)?;
                    Job::Turn { message }
                }
                None => Job::Announce,
            };
            let id = crate::ids::new_id("ses");
            self.accept(&id, job, true).await?;
            Ok(accepted(&id))
        }
        .boxed()
    }

    fn send<'a>(
        &'a self,
        _state: &'a Arc<State>,
        id: &'a str,
        request: SendBody,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        send(self, id, request).boxed()
    }

    fn compact<'a>(
        &'a self,
        state: &'a Arc<State>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        async move {
            session_path(state, id)?;
            let summary = self.summary(id).await?;
            refuse_unless_idle(id, &summary)?;
            self.accept(id, Job::Compact, false).await?;
            Ok(accepted(id))
        }
        .boxed()
    }

    fn cancel<'a>(
        &'a self,
        _state: &'a Arc<State>,
        id: &'a str,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        async move {
            // A turn that is queued has no invocation to cancel until it starts, a moment later.
            for _ in 0..100 {
                let summary = self.summary(id).await?;
                if summary.status != SessionStatus::Queued {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
            Ok(match Backend::cancel(self, id).await? {
                true => cancelled(),
                false => no_active_turn(),
            })
        }
        .boxed()
    }

    fn list<'a>(
        &'a self,
        _state: &'a Arc<State>,
        limit: usize,
        before: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Value, ApiError>> {
        async move {
            let sessions = Backend::list(self, limit, before).await?;
            serde_json::to_value(sessions).map_err(|e| failed(e.to_string()))
        }
        .boxed()
    }

    fn stream<'a>(
        &'a self,
        state: &'a Arc<State>,
        id: &'a str,
        _path: PathBuf,
        start: i64,
        follow: bool,
    ) -> BoxFuture<'a, Result<Response, ApiError>> {
        async move {
            let permit = readers(state)?;
            Backend::stream(self, id, start, follow, state.shutdown.clone(), permit).await
        }
        .boxed()
    }
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

/// `POST /eve/v1/session/:id`: a message starts a turn in an idle session, an answer
/// resolves the one the session waits for.
async fn send(backend: &Backend, id: &str, request: SendBody) -> Result<Response, ApiError> {
    match (request.message, request.input_responses) {
        (Some(message), None) => {
            check_text("message", &message)?;
            let summary = backend.summary(id).await?;
            refuse_unless_idle(id, &summary)?;
            backend.accept(id, Job::Turn { message }, false).await?;
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
