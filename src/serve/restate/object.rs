//! The session as a Restate virtual object, keyed by its id: what an eve worker runs
//! when Restate invokes it.
//!
//! A turn is one invocation of the exclusive `turn` handler. It rebuilds the harness
//! from the session's folded state and drives it; every model call and tool call goes
//! through the [`Bridge`] into a `ctx.run` of its own, and the records the harness
//! wrote before each of them are journaled too (a `ctx.run` that returns them), so a
//! worker that replays the invocation after a crash writes exactly the records, lines
//! and state the first one did, and runs no finished call again. A parked turn waits
//! on an awakeable that `respond` resolves; the invocation suspends meanwhile and
//! continues, replayed, on whichever worker Restate invokes next.
//!
//! Everything that arrives here (the handlers' input, the journal's values, the state)
//! is read as untrusted: a shape eve does not know is a terminal error, never a panic.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use restate_sdk::context::RequestTarget;
use restate_sdk::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::buffer::Buffer;
use super::store::{self, Meta, PendingState, SessionStatus};
use super::worker::Worker;
use crate::harness::durable::Durable;
use crate::protocol::{EndReason, Record, Resolution, TurnOutcome};
use crate::serve::api::{MAX_MESSAGE, Pending, Refusal, title};
use crate::serve::live::line;
use crate::serve::log::log_line;
use crate::session::replay::{self, Replayed};

/// What a turn invocation does.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "job", rename_all = "snake_case", deny_unknown_fields)]
pub enum Job {
    /// A session created with no message: `session.started` only.
    Announce,
    /// A turn answering `message`.
    Turn { message: String },
    /// Compact the history now.
    Compact,
}

impl Job {
    /// Refuses a job eve's API would not have sent: a session id that is not one, an
    /// empty message or one longer than plain `eve serve` takes.
    fn check(&self, key: &str) -> Result<(), HandlerError> {
        if !crate::session::store::is_valid_id(key) {
            return Err(terminal("not a session id"));
        }
        if let Job::Turn { message } = self
            && (message.trim().is_empty() || message.len() > MAX_MESSAGE)
        {
            return Err(terminal("the message is empty or too long"));
        }
        Ok(())
    }

    fn name(&self) -> &'static str {
        match self {
            Job::Announce => "new session",
            Job::Turn { .. } => "turn",
            Job::Compact => "compaction",
        }
    }
}

/// The body of `accept`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Accept {
    pub job: Job,
    /// The session is new: create it.
    #[serde(default)]
    pub create: bool,
}

/// The answer of `accept`, `respond` and `cancel`: `ok`, or why not (an API error code).
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Answer {
    pub ok: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<PendingState>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

impl Answer {
    fn ok() -> Answer {
        Answer {
            ok: true,
            ..Answer::default()
        }
    }

    fn refused(refusal: Refusal, meta: &Meta) -> Answer {
        Answer {
            ok: false,
            code: Some(refusal.code().to_string()),
            pending: meta.pending.clone(),
            status: None,
        }
    }
}

/// What a parked turn's awakeable is resolved with.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "snake_case", deny_unknown_fields)]
pub enum Wake {
    Resolve { resolution: Resolution },
    Cancel,
}

/// The body of `respond`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Respond {
    pub request_id: String,
    pub wake: Wake,
}

/// The body of `read`: lines from `from` (negative: from the end).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReadQuery {
    pub from: i64,
}

/// What `read` returns.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct ReadAnswer {
    /// NDJSON lines, from `start`.
    pub lines: String,
    pub start: u64,
    /// The index after the last line returned.
    pub next: u64,
    /// The index of the next line the session will write.
    pub events: u64,
    pub status: SessionStatus,
}

/// What `summary` returns: a session as `GET /eve/v1/sessions` lists it.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct Summary {
    pub exists: bool,
    pub status: SessionStatus,
    pub events: u64,
    pub title: String,
    pub pending: Option<PendingState>,
    pub full: Option<String>,
}

/// The virtual object.
pub struct EveSession {
    pub worker: Arc<Worker>,
}

fn terminal(message: impl Into<String>) -> HandlerError {
    TerminalError::new(message.into()).into()
}

/// The session's `meta`, as read from its state.
fn meta_of(value: Option<Json<Value>>) -> Result<Option<Meta>, HandlerError> {
    let Some(Json(value)) = value else {
        return Ok(None);
    };
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| terminal(format!("this session's `meta` state is damaged: {e}")))
}

/// State is written as a JSON value, whose maps are sorted: the same state is the same
/// bytes in every process, as a replay must write them.
fn set_json<T: Serialize>(ctx: &ObjectContext<'_>, key: &str, value: &T) {
    ctx.set(
        key,
        Json(serde_json::to_value(value).unwrap_or(Value::Null)),
    );
}

#[restate_sdk::object]
impl EveSession {
    /// Takes a job for the session if it can run now (the session exists, or `create`;
    /// it is idle), marks it queued and sends the `turn` invocation that runs it.
    #[handler]
    async fn accept(
        &self,
        ctx: ObjectContext<'_>,
        Json(accept): Json<Accept>,
    ) -> Result<Json<Answer>, HandlerError> {
        accept.job.check(ctx.key())?;
        let mut meta = match (
            meta_of(ctx.get::<Json<Value>>("meta").await?)?,
            accept.create,
        ) {
            (Some(_), true) => {
                return Ok(Json(Answer::refused(
                    Refusal::SessionExists,
                    &Meta::default(),
                )));
            }
            (None, false) => {
                return Ok(Json(Answer::refused(
                    Refusal::SessionNotFound,
                    &Meta::default(),
                )));
            }
            (None, true) => Meta::default(),
            (Some(meta), false) => meta,
        };
        if meta.full.is_some() {
            return Ok(Json(Answer::refused(Refusal::SessionFull, &meta)));
        }
        match meta.status {
            SessionStatus::Queued | SessionStatus::Running => {
                return Ok(Json(Answer::refused(Refusal::SessionBusy, &meta)));
            }
            SessionStatus::Waiting => {
                return Ok(Json(Answer::refused(Refusal::InputRequired, &meta)));
            }
            SessionStatus::Idle => {}
        }
        if let (Job::Turn { message }, true) = (&accept.job, meta.title.is_empty()) {
            meta.title = title(message);
        }
        let handle = ctx
            .request::<Json<Job>, ()>(
                RequestTarget::object(store::OBJECT, ctx.key(), "turn"),
                Json(accept.job),
            )
            .send()
            .await?;
        meta.status = SessionStatus::Queued;
        meta.invocation = Some(handle.invocation_id().to_string());
        set_json(&ctx, "meta", &meta);
        Ok(Json(Answer::ok()))
    }

    /// Runs a job: a turn (with its parks), a compaction, or the announcement of a new
    /// session. Only `accept` invokes it: it is private to Restate's ingress (see
    /// `mod.rs`), and checks its job again all the same.
    #[handler]
    async fn turn(&self, ctx: ObjectContext<'_>, Json(job): Json<Job>) -> Result<(), HandlerError> {
        job.check(ctx.key())?;
        let Some(meta) = meta_of(ctx.get::<Json<Value>>("meta").await?)? else {
            return Err(terminal("no such session"));
        };
        log_line!(
            "eve serve: session {}: {} on this worker (invocation {})",
            ctx.key(),
            job.name(),
            ctx.invocation_id()
        );
        let fold = match ctx.get::<Json<Value>>("fold").await? {
            Some(Json(value)) => serde_json::from_value::<Replayed>(value)
                .map_err(|e| terminal(format!("this session's `fold` state is damaged: {e}")))?,
            None => Replayed::default(),
        };
        // The time the turn's ids are minted from, the same in a replay.
        let Json(millis) = ctx
            .run(|| async { Ok(Json(now_millis())) })
            .name("start")
            .await?;
        let seed = ctx.random_seed();
        let mut run = Run::new(&ctx, meta, fold, &self.worker);
        run.meta.status = SessionStatus::Running;
        run.meta.invocation = Some(ctx.invocation_id().to_string());
        set_json(&ctx, "meta", &run.meta);
        let result = run.job(job, millis, seed).await;
        self.worker.changes.turn_ended();
        run.meta.status = SessionStatus::Idle;
        run.meta.pending = None;
        run.meta.awakeable = None;
        run.meta.invocation = None;
        if let Err(error) = &result {
            log_line!("eve serve: session {}: {error}", ctx.key());
        }
        let fold = serde_json::to_value(&run.fold).unwrap_or(Value::Null);
        if fold.to_string().len() > store::MAX_FOLD_BYTES {
            run.meta.full.get_or_insert_with(|| {
                format!(
                    "the session's history is larger than {} MiB, what eve keeps in Restate for one session: start a new session",
                    store::MAX_FOLD_BYTES >> 20
                )
            });
        } else {
            ctx.set("fold", Json(fold));
        }
        set_json(&ctx, "meta", &run.meta);
        result.map_err(terminal)
    }

    /// The session as the session list shows it.
    #[handler]
    async fn summary(&self, ctx: SharedObjectContext<'_>) -> Result<Json<Summary>, HandlerError> {
        Ok(Json(
            match meta_of(ctx.get::<Json<Value>>("meta").await?)? {
                Some(meta) => Summary {
                    exists: true,
                    status: meta.status,
                    events: meta.events,
                    title: meta.title,
                    pending: meta.pending,
                    full: meta.full,
                },
                None => Summary::default(),
            },
        ))
    }

    /// Stream lines from `from`, at most [`store::READ_BYTES`] of them (whole lines).
    #[handler]
    async fn read(
        &self,
        ctx: SharedObjectContext<'_>,
        Json(query): Json<ReadQuery>,
    ) -> Result<Json<ReadAnswer>, HandlerError> {
        let Some(meta) = meta_of(ctx.get::<Json<Value>>("meta").await?)? else {
            return Err(terminal("no such session"));
        };
        let from = if query.from < 0 {
            meta.events.saturating_sub(query.from.unsigned_abs())
        } else {
            (query.from as u64).min(meta.events)
        };
        let mut answer = ReadAnswer {
            start: from,
            next: from,
            events: meta.events,
            status: meta.status,
            lines: String::new(),
        };
        let Some(mut chunk) = store::chunk_of(&meta.chunks, from) else {
            return Ok(Json(answer));
        };
        while chunk < meta.chunks.len() && answer.lines.len() < store::READ_BYTES {
            let Some(Json(text)) = ctx.get::<Json<String>>(store::chunk_key(chunk)).await? else {
                break;
            };
            for (index, line) in (meta.chunks[chunk]..).zip(text.split_inclusive('\n')) {
                if index < answer.next {
                    continue;
                }
                if answer.lines.len() + line.len() > store::READ_BYTES && !answer.lines.is_empty() {
                    return Ok(Json(answer));
                }
                answer.lines.push_str(line);
                answer.next = index + 1;
            }
            chunk += 1;
        }
        Ok(Json(answer))
    }

    /// Resolves the parked turn's awakeable when the session waits for `request_id`.
    #[handler]
    async fn respond(
        &self,
        ctx: SharedObjectContext<'_>,
        Json(respond): Json<Respond>,
    ) -> Result<Json<Answer>, HandlerError> {
        let Some(meta) = meta_of(ctx.get::<Json<Value>>("meta").await?)? else {
            return Ok(Json(Answer::refused(
                Refusal::SessionNotFound,
                &Meta::default(),
            )));
        };
        let (SessionStatus::Waiting, Some(pending), Some(awakeable)) =
            (meta.status, &meta.pending, &meta.awakeable)
        else {
            return Ok(Json(Answer::refused(Refusal::SessionNotActive, &meta)));
        };
        if pending.request_id != respond.request_id {
            return Ok(Json(Answer::refused(Refusal::RequestNotPending, &meta)));
        }
        // An answer of the other kind would leave the turn parked with nobody able to
        // wake it again: refused here, where the request is known.
        if let Wake::Resolve { resolution } = &respond.wake {
            let fits = match resolution {
                Resolution::Answer { .. } => pending.kind == "question",
                Resolution::Approved { .. } | Resolution::Denied { .. } => {
                    pending.kind == "approval"
                }
            };
            if !fits {
                return Err(terminal(format!(
                    "request `{}` is a {}: answer it as one",
                    pending.request_id, pending.kind
                )));
            }
        }
        // Every string of the answer goes into the session's records and stream.
        if let Wake::Resolve {
            resolution:
                Resolution::Answer { text }
                | Resolution::Denied { reason: Some(text) }
                | Resolution::Approved { by: Some(text) },
        } = &respond.wake
            && text.len() > MAX_MESSAGE
        {
            return Err(terminal("the answer is too long"));
        }
        ctx.resolve_awakeable(awakeable, Json(respond.wake));
        Ok(Json(Answer::ok()))
    }

    /// Cancels the running turn, or ends the parked one.
    #[handler]
    async fn cancel(&self, ctx: SharedObjectContext<'_>) -> Result<Json<Answer>, HandlerError> {
        let Some(meta) = meta_of(ctx.get::<Json<Value>>("meta").await?)? else {
            return Ok(Json(Answer::refused(
                Refusal::SessionNotFound,
                &Meta::default(),
            )));
        };
        let status = match (meta.status, &meta.awakeable, &meta.invocation) {
            (SessionStatus::Waiting, Some(awakeable), _) => {
                ctx.resolve_awakeable(awakeable, Json(Wake::Cancel));
                "accepted"
            }
            (SessionStatus::Queued | SessionStatus::Running, _, Some(invocation)) => {
                ctx.invocation_handle(invocation.clone()).cancel();
                "accepted"
            }
            _ => "no_active_turn",
        };
        Ok(Json(Answer {
            ok: true,
            status: Some(status.to_string()),
            ..Answer::default()
        }))
    }
}

fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}

/// A model call or tool call the harness asks the handler to run in `ctx.run`.
struct Effect {
    name: String,
    work: BoxFuture<'static, Value>,
    done: oneshot::Sender<Value>,
}

/// The harness's side of the seam: each effect goes to the handler that holds `ctx`.
#[derive(Debug)]
struct Bridge {
    tx: mpsc::UnboundedSender<Effect>,
}

impl Durable for Bridge {
    fn run(&self, name: String, work: BoxFuture<'static, Value>) -> BoxFuture<'static, Value> {
        let (done, answer) = oneshot::channel();
        let sent = self.tx.send(Effect { name, work, done }).is_ok();
        async move {
            if !sent {
                return Value::Null;
            }
            answer.await.unwrap_or(Value::Null)
        }
        .boxed()
    }
}

/// One invocation of `turn`: the session's state as it goes, and the harness's inbox.
struct Run<'a, 'ctx> {
    ctx: &'a ObjectContext<'ctx>,
    worker: &'a Worker,
    meta: Meta,
    fold: Replayed,
    buffer: Arc<Buffer>,
    cancel: CancellationToken,
}

impl<'a, 'ctx> Run<'a, 'ctx> {
    fn new(ctx: &'a ObjectContext<'ctx>, meta: Meta, fold: Replayed, worker: &'a Worker) -> Self {
        Run {
            ctx,
            worker,
            meta,
            fold,
            buffer: Arc::new(Buffer::default()),
            cancel: CancellationToken::new(),
        }
    }

    async fn job(&mut self, job: Job, millis: u64, seed: u64) -> Result<(), String> {
        let key = self.ctx.key().to_string();
        let snapshot = (!self.fold.session_id.is_empty()).then(|| self.fold.snapshot());
        let (mut harness, _warnings) = self.worker.harness(&key, self.buffer.clone(), snapshot)?;
        let (tx, mut rx) = mpsc::unbounded_channel();
        harness.durable_on(Arc::new(Bridge { tx }));
        let cancel = self.cancel.clone();
        // Each part of the invocation mints its ids from its own seed.
        let part = |n: u64| seed.wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let outcome = match job {
            Job::Announce => {
                harness.announce(Vec::new());
                self.flush("announce".into()).await?;
                return Ok(());
            }
            Job::Turn { message } => {
                let work = crate::ids::seeded(millis, part(0), async {
                    match harness.start().await {
                        Err(error) => TurnOutcome::failed(error),
                        Ok(()) => harness.run_turn(message, cancel.clone()).await,
                    }
                });
                self.drive(&mut rx, work).await?
            }
            Job::Compact => {
                let work = crate::ids::seeded(millis, part(0), async {
                    let compacted = match harness.start().await {
                        Err(error) => Err(error),
                        Ok(()) => harness.compact_now().await,
                    };
                    match compacted {
                        Ok(()) => TurnOutcome {
                            end_reason: EndReason::Completed,
                            error: None,
                            ..TurnOutcome::failed(String::new())
                        },
                        Err(error) => TurnOutcome::failed(error),
                    }
                });
                self.drive(&mut rx, work).await?
            }
        };
        let mut outcome = outcome;
        let mut parks = 0;
        while outcome.end_reason == EndReason::Waiting && outcome.error.is_none() {
            parks += 1;
            let Some(request) = harness.pending().cloned() else {
                break;
            };
            let label = format!("turn {} parked {parks}", outcome.turn_id);
            self.flush(label).await?;
            let (awakeable, woken) = self.ctx.awakeable::<Json<Value>>();
            self.meta.status = SessionStatus::Waiting;
            self.meta.pending = Some(PendingState::of(&Pending::of(&request)));
            self.meta.awakeable = Some(awakeable);
            set_json(self.ctx, "meta", &self.meta);
            let wake = match woken.await {
                Ok(Json(value)) => serde_json::from_value::<Wake>(value).unwrap_or(Wake::Cancel),
                // A cancelled invocation: the parked turn ends as cancelled.
                Err(_) => Wake::Cancel,
            };
            self.meta.status = SessionStatus::Running;
            self.meta.pending = None;
            self.meta.awakeable = None;
            set_json(self.ctx, "meta", &self.meta);
            let cancel = cancel.clone();
            let work = crate::ids::seeded(millis, part(parks), async {
                match wake {
                    Wake::Resolve { resolution } => harness
                        .resume_turn(resolution, cancel)
                        .await
                        .unwrap_or_else(TurnOutcome::failed),
                    Wake::Cancel => harness.cancel_parked().unwrap_or_else(TurnOutcome::failed),
                }
            });
            outcome = self.drive(&mut rx, work).await?;
        }
        harness.finish(&outcome);
        // Its `session_end` hooks are journaled like every effect of the invocation.
        let stopped = crate::ids::seeded(millis, part(parks + 1), harness.stop());
        self.drive(&mut rx, stopped).await?;
        self.flush(format!("turn {} end", outcome.turn_id)).await?;
        Ok(())
    }

    /// Polls the harness's `work` and runs each effect it asks for in `ctx.run`, in the
    /// order asked, with the records written before it journaled first.
    async fn drive<T>(
        &mut self,
        rx: &mut mpsc::UnboundedReceiver<Effect>,
        work: impl Future<Output = T>,
    ) -> Result<T, String> {
        let mut work = std::pin::pin!(work);
        loop {
            let effect = tokio::select! {
                biased;
                done = &mut work => return Ok(done),
                effect = rx.recv() => effect,
            };
            let Some(effect) = effect else {
                return Ok(work.await);
            };
            self.flush(format!("{}: records before", effect.name))
                .await?;
            let ran = Arc::new(AtomicBool::new(false));
            let flag = ran.clone();
            let job = effect.work;
            let result = self
                .ctx
                .run(|| async move {
                    flag.store(true, Ordering::SeqCst);
                    Ok(Json(job.await))
                })
                .name(effect.name.clone())
                .await;
            let value = match result {
                Ok(Json(value)) => value,
                Err(error) => {
                    // Restate cancelled the invocation: the turn ends at this step.
                    log_line!(
                        "eve serve: session {}: {}: {error}; the turn ends",
                        self.ctx.key(),
                        effect.name
                    );
                    self.cancel.cancel();
                    Value::Null
                }
            };
            if ran.load(Ordering::SeqCst) {
                self.worker.hold_after(&effect.name).await;
            }
            let _ = effect.done.send(value);
        }
    }

    /// Journals the records written since the last flush and adds them to the state:
    /// the fold, and the stream lines they make, as one chunk.
    async fn flush(&mut self, name: String) -> Result<(), String> {
        let batch = serde_json::to_value(self.buffer.take()).unwrap_or(Value::Null);
        let saved = {
            let batch = batch.clone();
            self.ctx
                .run(|| async move { Ok(Json(batch)) })
                .name(name.clone())
                .await
        };
        let saved = match saved {
            Ok(Json(saved)) => saved,
            Err(error) => {
                // Cancelled while journaling: the turn stops; journal them once more.
                log_line!("eve serve: session {}: {name}: {error}", self.ctx.key());
                self.cancel.cancel();
                let Json(saved) = self
                    .ctx
                    .run(|| async move { Ok(Json(batch)) })
                    .name(format!("{name} (again)"))
                    .await
                    .map_err(|e| format!("{name}: {e}"))?;
                saved
            }
        };
        let records: Vec<Record> = serde_json::from_value(saved)
            .map_err(|e| format!("the journal's entry `{name}` is not records: {e}"))?;
        self.apply(&records);
        Ok(())
    }

    fn apply(&mut self, records: &[Record]) {
        replay::apply_all(&mut self.fold, records);
        self.fold.records.clear();
        let start = self.meta.events;
        let mut chunk = String::new();
        let mut count = 0;
        for record in records {
            for event in self.meta.projector.events(record) {
                let bytes = line(start + count, &event);
                chunk.push_str(&String::from_utf8_lossy(&bytes));
                count += 1;
            }
        }
        if chunk.is_empty() || self.meta.full.is_some() {
            return;
        }
        let over = store::over_limit(self.meta.bytes, self.meta.chunks.len(), chunk.len());
        if let Some(full) = over {
            log_line!("eve serve: session {}: {full}", self.ctx.key());
            self.meta.full = Some(full);
            self.cancel.cancel();
            return;
        }
        self.ctx.set(
            store::chunk_key(self.meta.chunks.len()),
            Json(chunk.clone()),
        );
        self.meta.chunks.push(start);
        self.meta.events = start + count;
        self.meta.bytes += chunk.len() as u64;
        set_json(self.ctx, "meta", &self.meta);
    }
}
