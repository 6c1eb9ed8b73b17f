//! `GET /eve/v1/session/:id/stream`: a session's events as NDJSON, from any index,
//! live while a turn runs.
//!
//! Lines below the turn's first come from the log; the turn's lines and pieces from
//! its [`Live`] state. A reader pulls: the next lines are made only when it is ready
//! for them, so a slow reader holds nothing but its place. A reader that falls behind
//! what the session keeps in memory during a turn is disconnected, and resumes from its
//! index.

use std::path::PathBuf;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::sync::{OwnedSemaphorePermit, watch};
use tokio_util::sync::CancellationToken;

use super::error::ApiError;
use super::live::{self, Cursor, Live, Read};
use crate::session::show::{self, Projector};

/// The query of a stream request.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StreamQuery {
    /// The first index; negative counts back from the end.
    pub start_index: Option<String>,
    /// `false`: only the lines there are now.
    pub follow: Option<String>,
}

impl StreamQuery {
    /// The start index and whether to follow, checked.
    pub fn parse(&self) -> Result<(i64, bool), ApiError> {
        let start = match &self.start_index {
            None => 0,
            Some(text) => text.trim().parse::<i64>().map_err(|_| {
                ApiError::invalid(format!(
                    "`startIndex` must be an integer (negative counts back from the end), not `{}`",
                    crate::text::shorten(text, 40)
                ))
            })?,
        };
        let follow = match self.follow.as_deref() {
            None | Some("true") | Some("1") => true,
            Some("false") | Some("0") => false,
            Some(other) => {
                return Err(ApiError::invalid(format!(
                    "`follow` must be `true` or `false`, not `{}`",
                    crate::text::shorten(other, 40)
                )));
            }
        };
        Ok((start, follow))
    }
}

/// The lines of the log at `path` from `from` up to `upto` (all when `None`); a log
/// that does not exist yet has none.
pub fn read_log(
    path: &std::path::Path,
    from: u64,
    upto: Option<u64>,
) -> Result<Vec<Arc<[u8]>>, String> {
    if !path.exists() {
        return Ok(Vec::new());
    }
    let replayed = show::read(path)?;
    let mut projector = Projector::default();
    Ok(replayed
        .records
        .iter()
        .flat_map(|r| projector.events(r))
        .enumerate()
        .map(|(i, e)| (i as u64, e))
        .skip_while(|(i, _)| *i < from)
        .take_while(|(i, _)| upto.is_none_or(|upto| *i < upto))
        .map(|(i, e)| live::line(i, &e))
        .collect())
}

/// One reader of one session.
struct Reader {
    path: PathBuf,
    live: Option<Arc<Live>>,
    version: Option<watch::Receiver<u64>>,
    cursor: Cursor,
    follow: bool,
    /// Lines read from the log, not sent yet.
    pending: Vec<Arc<[u8]>>,
    /// Whether it has had lines from memory (then falling behind disconnects it).
    live_started: bool,
    done: bool,
    shutdown: CancellationToken,
    _permit: OwnedSemaphorePermit,
}

impl Reader {
    async fn next_chunk(&mut self) -> Option<Bytes> {
        loop {
            if !self.pending.is_empty() {
                let mut out = Vec::new();
                for line in self.pending.drain(..) {
                    out.extend_from_slice(&line);
                }
                return Some(Bytes::from(out));
            }
            if self.done || self.shutdown.is_cancelled() {
                return None;
            }
            let Some(live) = self.live.clone() else {
                self.done = true;
                let (path, from) = (self.path.clone(), self.cursor.index);
                self.pending = tokio::task::spawn_blocking(move || read_log(&path, from, None))
                    .await
                    .ok()?
                    .ok()?;
                continue;
            };
            if let Some(version) = &mut self.version {
                version.borrow_and_update();
            }
            match live.read(&mut self.cursor, self.follow) {
                Read::Lines(bytes) => {
                    self.live_started = true;
                    if !self.follow && !live.is_active() {
                        self.done = true;
                    }
                    return Some(Bytes::from(bytes));
                }
                Read::FromDisk(upto) => {
                    if self.live_started && live.is_active() {
                        // Too far behind: what it missed is only in the log now.
                        return None;
                    }
                    let (path, from) = (self.path.clone(), self.cursor.index);
                    let lines =
                        tokio::task::spawn_blocking(move || read_log(&path, from, Some(upto)))
                            .await
                            .ok()?
                            .ok()?;
                    // Whatever the log holds, go on from the live state's first line.
                    self.cursor.index = upto;
                    self.pending = lines;
                }
                Read::End => return None,
                Read::Wait if !self.follow => return None,
                Read::Wait => {
                    let version = self.version.as_mut()?;
                    tokio::select! {
                        changed = version.changed() => changed.ok()?,
                        () = self.shutdown.cancelled() => return None,
                    }
                }
            }
        }
    }
}

/// The streaming response for a reader of `path` at `start` (negative: from the end).
pub async fn respond(
    path: PathBuf,
    live: Option<Arc<Live>>,
    start: i64,
    follow: bool,
    shutdown: CancellationToken,
    permit: OwnedSemaphorePermit,
) -> Result<Response, ApiError> {
    let unreadable = |e: String| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "session_unreadable",
            format!("the session log cannot be read: {e}"),
        )
    };
    let mut pending = Vec::new();
    let index = match &live {
        Some(live) => {
            let next = live.next() as i64;
            (if start < 0 { next + start } else { start }).max(0) as u64
        }
        None => {
            // Read the log now, so a damaged one is an error status, not a cut stream.
            let path = path.clone();
            let lines = tokio::task::spawn_blocking(move || read_log(&path, 0, None))
                .await
                .map_err(|e| unreadable(e.to_string()))?
                .map_err(unreadable)?;
            let len = lines.len() as i64;
            let from = (if start < 0 { len + start } else { start }).clamp(0, len) as usize;
            pending = lines[from..].to_vec();
            0
        }
    };
    let done = live.is_none();
    let version = live.as_ref().map(|l| l.subscribe());
    let reader = Reader {
        path,
        cursor: Cursor {
            index,
            ..Cursor::default()
        },
        version,
        live,
        follow,
        pending,
        live_started: false,
        done,
        shutdown,
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
    // Proxies that buffer responses (nginx) pass this one through as it comes.
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    Ok(response)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::protocol::{EventKind, Message, Meta, Record};
    use tokio::sync::Semaphore;

    fn step(n: u64) -> Record {
        Record::Event {
            event: crate::protocol::Event {
                kind: EventKind::StepStarted {
                    turn_id: "turn_1".into(),
                    step: n,
                },
                meta: Meta {
                    id: format!("evt_{n}"),
                    at: "2026-01-01T00:00:00.000Z".into(),
                    session_id: None,
                },
            },
        }
    }

    #[tokio::test]
    async fn a_reader_that_falls_behind_a_running_turn_is_disconnected() {
        let live = Live::new(0);
        live.open(&[]);
        live.record(&step(1));
        let mut reader = Reader {
            path: PathBuf::from("/nonexistent/ses_1.jsonl"),
            version: Some(live.subscribe()),
            live: Some(live.clone()),
            cursor: Cursor::default(),
            follow: true,
            pending: Vec::new(),
            live_started: false,
            done: false,
            shutdown: CancellationToken::new(),
            _permit: Arc::new(Semaphore::new(1)).try_acquire_owned().unwrap(),
        };
        let first = reader.next_chunk().await.unwrap();
        assert!(first.starts_with(b"{\"index\":0,"));
        // The turn writes more than the server keeps in memory, and it reaches the log.
        live.record(&Record::Message {
            message: Message::Assistant {
                text: "x".repeat(live::MEMORY_CAP + 1),
                tool_calls: Vec::new(),
                provider_blocks: None,
                reasoning: String::new(),
            },
        });
        live.record(&step(2));
        live.synced();
        assert!(
            reader.next_chunk().await.is_none(),
            "a reader behind what memory holds is disconnected"
        );
    }
}
