//! The harness: drives a manifest through the model ↔ tool loop, one step per model call.
//!
//! A **step** is one model call plus the execution of the tool calls it produced; a
//! **turn** is all the steps that answer one input. After each step the harness
//! continues (tool results), ends the turn (text only) or stops at a limit. It emits
//! [`events`] on a channel and never prints.

pub mod compaction;
mod emitter;
pub mod prompt;
pub mod scheduler;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::manifest::{Manifest, Mode};
use crate::protocol::{
    Action, EndReason, EventKind, InputKind, InputRequest, Message, Record, Resolution,
    StampRecord, ToolCall, ToolResult, Usage,
};
use crate::providers::retry::RetryPolicy;
use crate::providers::{FinishReason, ModelRequest, Provider, ProviderError, StreamEvent};
use crate::tools::registry::parse_arguments;
use crate::tools::state::SessionState;
use crate::tools::{Registry, ToolContext, ToolOutput};
pub use emitter::Emitter;

/// Everything a harness needs besides the conversation.
#[derive(Debug, Clone)]
pub struct Config {
    pub manifest: Arc<Manifest>,
    /// The agent directory (absolute).
    pub agent_dir: PathBuf,
    /// Where tools act (absolute).
    pub workspace: PathBuf,
    pub provider: Arc<dyn Provider>,
    /// The id sent to the provider.
    pub model_id: String,
    /// The model reference as the person wrote it, for events and the prompt.
    pub model: String,
    /// Model calls allowed per turn.
    pub max_steps: u64,
    pub retry: RetryPolicy,
    /// Environment variables hidden from the processes tools start.
    pub hidden_env: Vec<String>,
    /// 0 for the top agent; a child agent runs one deeper.
    pub depth: u32,
    /// Where the session is logged (`.eve/sessions` of the agent); `None`: not logged.
    pub sessions_dir: Option<PathBuf>,
    /// Asks a person at a terminal; `None` when nobody is there.
    pub asker: Option<Arc<dyn Asker>>,
    /// `--yes`: approve every call that needs an approval.
    pub approve_all: bool,
}

/// Asks the person a question or for an approval, and waits for the answer.
pub trait Asker: Send + Sync + std::fmt::Debug {
    /// The person's answer; `None` when they could not answer (input closed).
    fn ask<'a>(
        &'a self,
        request: &'a InputRequest,
    ) -> futures_util::future::BoxFuture<'a, Option<Resolution>>;
}

/// How a turn ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnOutcome {
    pub turn_id: String,
    pub end_reason: EndReason,
    /// The assistant's final text.
    pub result: String,
    /// Set when `end_reason` is `error`.
    pub error: Option<String>,
    /// Model calls made (attempts that were retried count once).
    pub steps: u64,
    pub usage: Usage,
    /// What a parked turn waits for.
    pub pending: Option<InputRequest>,
}

/// Starts child agents for the `agent` tool and subagents: what they share with the
/// agent that starts them (provider, workspace, event channel, hidden variables).
#[derive(Debug)]
pub struct Spawner {
    config: Config,
    emitter: Emitter,
}

impl Spawner {
    /// Runs one turn of a new child session at `depth` answering `task`. A child whose
    /// model is the parent's (the `agent` tool, a subagent that inherits it) uses the
    /// parent's provider, `--model` override included; another model is resolved anew.
    pub async fn run_child(
        &self,
        manifest: Arc<Manifest>,
        agent_dir: PathBuf,
        depth: u32,
        task: String,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, String> {
        let (provider, model_id, model) =
            if manifest.agent.model == self.config.manifest.agent.model {
                (
                    self.config.provider.clone(),
                    self.config.model_id.clone(),
                    self.config.model.clone(),
                )
            } else {
                let resolved = crate::providers::resolve(
                    &manifest.agent.model,
                    &manifest.agent.providers,
                    &agent_dir,
                    &|name| std::env::var(name).ok(),
                )?;
                (resolved.provider, resolved.model_id, resolved.reference)
            };
        let config = Config {
            max_steps: manifest.agent.limits.max_steps,
            manifest,
            agent_dir,
            workspace: self.config.workspace.clone(),
            provider,
            model_id,
            model,
            retry: self.config.retry,
            hidden_env: self.config.hidden_env.clone(),
            depth,
            sessions_dir: None,
            asker: self.config.asker.clone(),
            approve_all: self.config.approve_all,
        };
        let mut child = Harness::new(config, self.emitter.clone())?;
        child.start();
        let outcome = Box::pin(child.run_turn(task, cancel)).await;
        child.finish(&outcome);
        Ok(outcome)
    }
}

/// One session: a system prompt, the tools, and the history of its turns.
#[derive(Debug)]
pub struct Harness {
    config: Config,
    registry: Arc<Registry>,
    system: String,
    emitter: Emitter,
    session_id: String,
    history: Vec<Message>,
    usage: Usage,
    /// Read stamps and the todo list.
    state: Arc<SessionState>,
    /// The todo list as last written to the log.
    logged_todos: Vec<crate::protocol::Todo>,
    /// The read stamps as last written to the log.
    logged_stamps: Vec<(PathBuf, crate::tools::state::Stamp)>,
    /// A parked turn and the request it waits for.
    waiting: Option<crate::session::replay::Waiting>,
    /// Answers given in the current turn, by tool call id.
    resolutions: HashMap<String, Resolution>,
    /// Errors found before a call could run (arguments that are not JSON), by call id.
    early: HashMap<String, ToolOutput>,
    /// The input tokens the provider reported for the last model call.
    last_input_tokens: u64,
    /// Characters appended to the history since that call.
    appended_chars: usize,
    /// Steps the parked turn had taken when the session was reopened.
    resumed_steps: u64,
    /// The tokens the parked turn had used when the session was reopened.
    resumed_usage: Usage,
}

/// What one model call produced.
struct Reply {
    text: String,
    calls: Vec<PendingCall>,
    finish: Option<FinishReason>,
    usage: Usage,
    /// Anthropic content blocks, when a server tool (web search) ran in the reply.
    provider_content: Option<Vec<serde_json::Value>>,
}

struct PendingCall {
    id: String,
    name: String,
    arguments: String,
}

enum CallFailure {
    Aborted { partial: String },
    Failed(String),
}

/// How a step's tool calls ended.
enum CallsEnd {
    Done,
    Parked(InputRequest),
}

/// The characters of a message, for token estimates (4 characters a token).
pub fn message_chars(message: &Message) -> usize {
    message.chars()
}

impl Harness {
    /// A new session. Fails when the instructions cannot be rendered or its log cannot
    /// be created. With `config.sessions_dir`, the session is logged there.
    pub fn new(config: Config, emitter: Emitter) -> Result<Harness, String> {
        let session_id = crate::ids::new_id("ses");
        Harness::build(config, emitter, session_id)
    }

    fn build(config: Config, emitter: Emitter, session_id: String) -> Result<Harness, String> {
        let mut emitter = if config.depth > 0 {
            emitter.for_child(&session_id)
        } else {
            emitter
        };
        if let Some(dir) = &config.sessions_dir {
            config.provider.bind_session(dir, &session_id);
            let path = dir.join(format!("{session_id}.jsonl"));
            let log = crate::session::SessionLog::open(&path)
                .map_err(|e| format!("cannot open the session log `{}`: {e}", path.display()))?;
            emitter = emitter.with_journal(Arc::new(log));
        }
        let can_ask = config.depth == 0
            && (config.sessions_dir.is_some() || config.asker.is_some())
            || config.asker.is_some();
        let registry = Arc::new(Registry::for_provider(
            &config.manifest,
            config.provider.speaks_anthropic(),
            can_ask,
        ));
        let system = prompt::system_prompt(
            &config.manifest,
            &registry,
            &config.model,
            &config.workspace,
            &|name| std::env::var(name).ok(),
        )?;
        Ok(Harness {
            config,
            registry,
            system,
            emitter,
            session_id,
            history: Vec::new(),
            usage: Usage::default(),
            state: Arc::new(SessionState::default()),
            logged_todos: Vec::new(),
            logged_stamps: Vec::new(),
            waiting: None,
            resolutions: HashMap::new(),
            early: HashMap::new(),
            last_input_tokens: 0,
            appended_chars: 0,
            resumed_steps: 0,
            resumed_usage: Usage::default(),
        })
    }

    /// Reopens a logged session: its history, todo list, usage and parked request come
    /// from the log (already repaired), and new records are appended to it.
    pub fn resume(
        config: Config,
        emitter: Emitter,
        replayed: crate::session::replay::Replayed,
    ) -> Result<Harness, String> {
        let mut harness = Harness::build(config, emitter, replayed.session_id.clone())?;
        harness.history = replayed.history;
        harness.usage = replayed.usage;
        harness.state.set_todos(replayed.todos.clone());
        harness.logged_todos = replayed.todos;
        let stamps: Vec<_> = replayed.stamps.iter().filter_map(|s| s.stamp()).collect();
        harness.state.set_stamps(stamps.clone());
        harness.logged_stamps = stamps;
        harness.waiting = replayed.waiting;
        harness.resolutions = replayed.resolutions;
        harness.last_input_tokens = replayed.last_input_tokens;
        harness.resumed_steps = replayed.turns.last().map_or(0, |t| t.steps);
        harness.resumed_usage = replayed.turn_usage;
        Ok(harness)
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The rendered system prompt.
    pub fn system_prompt(&self) -> &str {
        &self.system
    }

    /// The tools offered to the model, and those left out.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The request a parked turn waits for.
    pub fn pending(&self) -> Option<&InputRequest> {
        self.waiting.as_ref().map(|w| &w.request)
    }

    /// Emits `session.started` (at every start of a process, new session or not).
    pub fn start(&self) {
        self.emitter.emit(EventKind::SessionStarted {
            session_id: self.session_id.clone(),
            agent: self.config.manifest.agent.name.clone(),
            model: self.config.model.clone(),
            workspace: self.config.workspace.display().to_string(),
            tools: self.registry.names(),
            unavailable_tools: self.registry.unavailable().to_vec(),
        });
    }

    /// Emits how the session stands after a turn: `session.failed` after an error,
    /// `session.waiting` when parked or in conversation mode, `session.completed`
    /// otherwise; and puts the log on disk.
    pub fn finish(&self, outcome: &TurnOutcome) {
        let session_id = self.session_id.clone();
        let usage = self.usage.clone();
        let kind = if let Some(error) = &outcome.error {
            EventKind::SessionFailed {
                session_id,
                error: error.clone(),
                usage,
            }
        } else if outcome.end_reason == EndReason::Waiting
            || self.config.manifest.agent.mode == Mode::Conversation
        {
            EventKind::SessionWaiting { session_id, usage }
        } else {
            EventKind::SessionCompleted { session_id, usage }
        };
        self.emitter.emit(kind);
        self.sync();
    }

    fn sync(&self) {
        if let Some(log) = self.emitter.journal() {
            log.sync();
        }
    }

    fn log_error(&self) -> Option<String> {
        self.emitter.journal().and_then(|log| log.error())
    }

    /// Appends a message to the history and to the log.
    fn push(&mut self, message: Message) {
        self.appended_chars += message_chars(&message);
        self.emitter.record(&Record::Message {
            message: message.clone(),
        });
        self.history.push(message);
    }

    fn save_todos(&mut self) {
        let todos = self.state.todos();
        if todos != self.logged_todos {
            self.emitter.record(&Record::Todos {
                todos: todos.clone(),
            });
            self.logged_todos = todos;
        }
        let stamps = self.state.stamps();
        if stamps != self.logged_stamps {
            self.emitter.record(&Record::Stamps {
                stamps: stamps
                    .iter()
                    .map(|(path, stamp)| StampRecord::new(path, stamp))
                    .collect(),
            });
            self.logged_stamps = stamps;
        }
    }

    fn tool_context(&self, cancel: &CancellationToken) -> ToolContext {
        ToolContext {
            workspace: self.config.workspace.clone(),
            agent_dir: self.config.agent_dir.clone(),
            agent_writable: self.config.manifest.agent.workspace.agent_writable,
            cancel: cancel.clone(),
            hidden_env: Arc::new(self.config.hidden_env.clone()),
            state: self.state.clone(),
            depth: self.config.depth,
            read_roots: Arc::new(
                self.config
                    .agent_dir
                    .join("skills")
                    .canonicalize()
                    .into_iter()
                    .collect(),
            ),
            spawner: Some(Arc::new(Spawner {
                config: self.config.clone(),
                emitter: self.emitter.clone(),
            })),
        }
    }

    /// Runs one turn answering `input`. Cancelling `cancel` aborts it cleanly: running
    /// tools are killed and every tool call still gets a result.
    pub async fn run_turn(&mut self, input: String, cancel: CancellationToken) -> TurnOutcome {
        let turn_id = crate::ids::new_id("turn");
        self.resolutions.clear();
        self.waiting = None;
        self.emitter.emit(EventKind::TurnStarted {
            session_id: self.session_id.clone(),
            turn_id: turn_id.clone(),
        });
        self.emitter.emit(EventKind::MessageReceived {
            turn_id: turn_id.clone(),
            text: input.clone(),
        });
        self.push(Message::User { text: input });
        self.drive(turn_id, 0, cancel).await
    }

    /// Resumes a parked turn with the person's answer to the request it waits for.
    pub async fn resume_turn(
        &mut self,
        resolution: Resolution,
        cancel: CancellationToken,
    ) -> Result<TurnOutcome, String> {
        let Some(waiting) = self.waiting.take() else {
            return Err("this session is not waiting for an answer".into());
        };
        let fits = matches!(
            (&waiting.request.kind, &resolution),
            (InputKind::Question { .. }, Resolution::Answer { .. })
                | (
                    InputKind::Approval,
                    Resolution::Approved { .. } | Resolution::Denied { .. }
                )
        );
        if !fits {
            let wanted = match waiting.request.kind {
                InputKind::Question { .. } => "an answer (--answer \"…\")",
                InputKind::Approval => "an approval (--approve, or --deny)",
            };
            self.waiting = Some(waiting);
            return Err(format!("the session waits for {wanted}"));
        }
        self.emitter.emit(EventKind::InputResolved {
            turn_id: waiting.turn_id.clone(),
            request_id: waiting.request.request_id.clone(),
            call_id: waiting.request.call_id.clone(),
            resolution: resolution.clone(),
        });
        self.resolutions
            .insert(waiting.request.call_id.clone(), resolution);
        let steps = self.resumed_steps;
        Ok(self.drive(waiting.turn_id, steps, cancel).await)
    }

    /// The loop of a turn from where it stands: unanswered tool calls first (a resumed
    /// turn), then model calls until the model answers without tools or a limit stops it.
    async fn drive(
        &mut self,
        turn_id: String,
        mut steps: u64,
        cancel: CancellationToken,
    ) -> TurnOutcome {
        let ctx = self.tool_context(&cancel);
        // A resumed turn goes on counting from where it stopped.
        let mut usage = if steps > 0 {
            std::mem::take(&mut self.resumed_usage)
        } else {
            Usage::default()
        };
        let mut hit_max_tokens = false;
        let mut result = String::new();
        let end: Result<EndReason, String> = loop {
            let unanswered = crate::session::replay::unanswered_calls(&self.history);
            if !unanswered.is_empty() {
                match self
                    .run_calls(&turn_id, steps, unanswered, &ctx, false)
                    .await
                {
                    CallsEnd::Parked(request) => {
                        self.park(&turn_id, request);
                        break Ok(EndReason::Waiting);
                    }
                    CallsEnd::Done => {}
                }
                self.resumed_steps = steps;
                self.save_todos();
                self.sync();
                if let Some(error) = self.log_error() {
                    break Err(error);
                }
            }
            if cancel.is_cancelled() {
                break Ok(EndReason::Aborted);
            }
            if steps >= self.config.max_steps {
                break Ok(EndReason::MaxSteps);
            }
            if let Some(limit) = self
                .config
                .manifest
                .agent
                .limits
                .max_input_tokens_per_session
                && self.usage.input_tokens >= limit
            {
                result = format!(
                    "The session used {} input tokens, reaching max_input_tokens_per_session ({limit}).",
                    self.usage.input_tokens
                );
                break Ok(EndReason::MaxInputTokens);
            }
            if let Err(error) = self.maybe_compact(&turn_id, false).await {
                break Err(error);
            }
            steps += 1;
            self.resumed_steps = steps;
            self.emitter.emit(EventKind::StepStarted {
                turn_id: turn_id.clone(),
                step: steps,
            });
            // A step boundary: what the model is about to see is on disk.
            self.sync();
            let reply = match self.call_model(&turn_id, steps, &cancel).await {
                Ok(reply) => reply,
                Err(CallFailure::Aborted { partial }) => {
                    if !partial.is_empty() {
                        result = partial.clone();
                        self.push(Message::Assistant {
                            text: partial,
                            tool_calls: Vec::new(),
                            anthropic_blocks: None,
                        });
                    }
                    break Ok(EndReason::Aborted);
                }
                Err(CallFailure::Failed(error)) => break Err(error),
            };
            usage.add(&reply.usage);
            self.usage.add(&reply.usage);
            self.last_input_tokens = reply.usage.input_tokens;
            self.appended_chars = 0;
            let finish = reply.finish.clone().unwrap_or(if reply.calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolUse
            });
            hit_max_tokens |= finish == FinishReason::MaxTokens;
            result = reply.text.clone();
            // A long server-side tool turn paused: send the reply back as it is to go on.
            let paused = finish == FinishReason::Other("pause_turn".into());
            let step_usage = reply.usage.clone();
            let calls = self.commit_reply(&turn_id, steps, reply, &finish);
            let had_calls = !calls.is_empty() || paused;
            let completed = EventKind::StepCompleted {
                turn_id: turn_id.clone(),
                step: steps,
                finish_reason: finish.as_str().to_string(),
                usage: step_usage,
            };
            if calls.is_empty() {
                self.emitter.emit(completed);
            } else {
                // The reply is on disk before any of its tools runs.
                self.sync();
                match self.run_calls(&turn_id, steps, calls, &ctx, true).await {
                    CallsEnd::Parked(request) => {
                        self.emitter.emit(completed);
                        self.park(&turn_id, request);
                        break Ok(EndReason::Waiting);
                    }
                    CallsEnd::Done => self.emitter.emit(completed),
                }
            }
            self.save_todos();
            self.sync();
            if let Some(error) = self.log_error() {
                break Err(error);
            }
            if cancel.is_cancelled() {
                break Ok(EndReason::Aborted);
            }
            if !had_calls {
                break Ok(if hit_max_tokens {
                    EndReason::MaxTokens
                } else {
                    EndReason::Completed
                });
            }
        };
        let pending = self.waiting.as_ref().map(|w| w.request.clone());
        let outcome = match end {
            Ok(end_reason) => TurnOutcome {
                turn_id: turn_id.clone(),
                end_reason,
                result,
                error: None,
                steps,
                usage,
                pending,
            },
            Err(error) => TurnOutcome {
                turn_id: turn_id.clone(),
                end_reason: EndReason::Error,
                result,
                error: Some(error),
                steps,
                usage,
                pending: None,
            },
        };
        if outcome.end_reason == EndReason::Aborted {
            self.emitter.emit(EventKind::TurnCancelled {
                turn_id: turn_id.clone(),
            });
        }
        match (&outcome.error, outcome.end_reason) {
            (None, EndReason::Waiting) => {}
            (None, end_reason) => self.emitter.emit(EventKind::TurnCompleted {
                turn_id,
                end_reason,
                result: outcome.result.clone(),
                steps: outcome.steps,
                usage: outcome.usage.clone(),
            }),
            (Some(error), _) => self.emitter.emit(EventKind::TurnFailed {
                turn_id,
                end_reason: EndReason::Error,
                error: error.clone(),
                steps: outcome.steps,
                usage: outcome.usage.clone(),
            }),
        }
        if outcome.end_reason != EndReason::Waiting {
            self.resolutions.clear();
            self.early.clear();
        }
        self.sync();
        outcome
    }

    /// Records a parked request: `input.requested` was emitted; now `turn.waiting`.
    fn park(&mut self, turn_id: &str, request: InputRequest) {
        self.emitter.emit(EventKind::TurnWaiting {
            turn_id: turn_id.to_string(),
            request_id: request.request_id.clone(),
        });
        self.waiting = Some(crate::session::replay::Waiting {
            turn_id: turn_id.to_string(),
            request,
        });
        self.sync();
    }
    /// One model call, retried as a whole while the error is retryable.
    async fn call_model(
        &self,
        turn_id: &str,
        step: u64,
        cancel: &CancellationToken,
    ) -> Result<Reply, CallFailure> {
        let request = ModelRequest {
            model: self.config.model_id.clone(),
            system: self.system.clone(),
            messages: self.history.clone(),
            tools: self.registry.specs(),
            max_output_tokens: self.config.manifest.agent.limits.max_output_tokens,
            temperature: None,
        };
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let error = match self.stream_once(&request, turn_id, step, cancel).await {
                Ok(reply) => return Ok(reply),
                Err(Attempt::Aborted(partial)) => return Err(CallFailure::Aborted { partial }),
                Err(Attempt::Failed(error)) => error,
            };
            let retries_used = attempt - 1;
            let retry = error.is_retryable() && retries_used < self.config.retry.max_retries;
            let delay = retry.then(|| self.config.retry.delay(retries_used, error.retry_after()));
            self.emitter.emit(EventKind::StepFailed {
                turn_id: turn_id.to_string(),
                step,
                attempt,
                error: error.to_string(),
                retry_in_ms: delay.map(|d| d.as_millis() as u64),
            });
            let Some(delay) = delay else {
                let mut message = error.to_string();
                if error.is_retryable() && attempt > 1 {
                    message.push_str(&format!(" (gave up after {attempt} attempts)"));
                }
                return Err(CallFailure::Failed(message));
            };
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = cancel.cancelled() => return Err(CallFailure::Aborted { partial: String::new() }),
            }
        }
    }

    async fn stream_once(
        &self,
        request: &ModelRequest,
        turn_id: &str,
        step: u64,
        cancel: &CancellationToken,
    ) -> Result<Reply, Attempt> {
        let opened = tokio::select! {
            opened = self.config.provider.stream(request) => opened,
            () = cancel.cancelled() => return Err(Attempt::Aborted(String::new())),
        };
        let mut stream = opened.map_err(Attempt::Failed)?;
        let mut reply = Reply {
            text: String::new(),
            calls: Vec::new(),
            finish: None,
            usage: Usage::default(),
            provider_content: None,
        };
        loop {
            let next = tokio::select! {
                next = stream.next() => next,
                () = cancel.cancelled() => return Err(Attempt::Aborted(reply.text)),
            };
            let Some(event) = next else {
                return Ok(reply);
            };
            match event.map_err(Attempt::Failed)? {
                StreamEvent::TextDelta(text) => {
                    reply.text.push_str(&text);
                    self.emitter.emit(EventKind::MessageAppended {
                        turn_id: turn_id.to_string(),
                        step,
                        text,
                    });
                }
                StreamEvent::ReasoningDelta(text) => {
                    self.emitter.emit(EventKind::ReasoningAppended {
                        turn_id: turn_id.to_string(),
                        step,
                        text,
                    });
                }
                StreamEvent::ToolCallStart { index, id, name } => {
                    while reply.calls.len() <= index {
                        reply.calls.push(PendingCall {
                            id: String::new(),
                            name: String::new(),
                            arguments: String::new(),
                        });
                    }
                    let call = &mut reply.calls[index];
                    call.id = if id.is_empty() {
                        crate::ids::new_id("call")
                    } else {
                        id
                    };
                    call.name = name;
                }
                StreamEvent::ToolCallArgsDelta { index, delta } => {
                    if let Some(call) = reply.calls.get_mut(index) {
                        call.arguments.push_str(&delta);
                    }
                }
                StreamEvent::ToolCallEnd { .. } => {}
                StreamEvent::Usage(usage) => reply.usage = usage,
                StreamEvent::Finish(reason) => reply.finish = Some(reason),
                StreamEvent::ProviderContent(blocks) => reply.provider_content = Some(blocks),
            }
        }
    }

    /// Emits `actions.requested` and `action.result` for the server-side tool calls (web
    /// searches) the provider already ran within its reply.
    fn report_server_tools(&self, turn_id: &str, step: u64, blocks: &[serde_json::Value]) {
        let mut names = std::collections::HashMap::new();
        let actions: Vec<Action> = blocks
            .iter()
            .filter(|b| b["type"] == "server_tool_use")
            .map(|b| {
                let call_id = b["id"].as_str().unwrap_or_default().to_string();
                let name = b["name"].as_str().unwrap_or("server_tool").to_string();
                names.insert(call_id.clone(), name.clone());
                Action {
                    call_id,
                    name,
                    input: b["input"].clone(),
                }
            })
            .collect();
        if actions.is_empty() {
            return;
        }
        self.emitter.emit(EventKind::ActionsRequested {
            turn_id: turn_id.to_string(),
            step,
            actions,
        });
        for block in blocks.iter().filter(|b| {
            b["type"]
                .as_str()
                .is_some_and(|t| t.ends_with("_tool_result"))
        }) {
            let call_id = block["tool_use_id"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let (output, is_error) = server_result_summary(&block["content"]);
            self.emitter.emit(EventKind::ActionResult {
                turn_id: turn_id.to_string(),
                step,
                name: names
                    .get(&call_id)
                    .cloned()
                    .unwrap_or_else(|| "web_search".into()),
                call_id,
                output,
                is_error,
                duration_ms: 0,
            });
        }
    }

    /// Appends the model's reply to the history and returns its tool calls; arguments
    /// that are not a JSON object become an error result kept for the call.
    fn commit_reply(
        &mut self,
        turn_id: &str,
        step: u64,
        reply: Reply,
        finish: &FinishReason,
    ) -> Vec<ToolCall> {
        let mut calls = Vec::with_capacity(reply.calls.len());
        for pending in reply.calls {
            let input = match parse_arguments(&pending.arguments) {
                Ok(input) => input,
                Err(e) => {
                    let cut = if *finish == FinishReason::MaxTokens {
                        " The reply was cut off at the output token limit: make smaller calls."
                    } else {
                        ""
                    };
                    self.early.insert(
                        pending.id.clone(),
                        ToolOutput::error(format!("Could not call `{}`: {e}.{cut}", pending.name)),
                    );
                    serde_json::Value::Object(Default::default())
                }
            };
            calls.push(ToolCall {
                id: pending.id,
                name: pending.name,
                input,
            });
        }
        if let Some(blocks) = &reply.provider_content {
            self.report_server_tools(turn_id, step, blocks);
        }
        self.push(Message::Assistant {
            text: reply.text,
            tool_calls: calls.clone(),
            anthropic_blocks: reply.provider_content,
        });
        calls
    }

    /// Settles what the calls need from a person: answers and approvals already given,
    /// `--yes`, a person at the terminal, or parking the turn. Returns the calls that
    /// nobody can settle here, with the result they get instead.
    async fn settle_inputs(
        &mut self,
        turn_id: &str,
        calls: &[ToolCall],
    ) -> Result<HashMap<String, ToolOutput>, InputRequest> {
        let mut refused = HashMap::new();
        for call in calls {
            if self.early.contains_key(&call.id) || self.resolutions.contains_key(&call.id) {
                continue;
            }
            let Some(kind) = self.registry.needs_input(call) else {
                continue;
            };
            if kind == InputKind::Approval && self.config.approve_all {
                let resolution = Resolution::Approved {
                    by: Some("--yes".into()),
                };
                self.emitter.emit(EventKind::InputResolved {
                    turn_id: turn_id.to_string(),
                    request_id: crate::ids::new_id("req"),
                    call_id: call.id.clone(),
                    resolution: resolution.clone(),
                });
                self.resolutions.insert(call.id.clone(), resolution);
                continue;
            }
            let request = InputRequest {
                request_id: crate::ids::new_id("req"),
                call_id: call.id.clone(),
                tool: call.name.clone(),
                input: call.input.clone(),
                kind: kind.clone(),
            };
            if let Some(asker) = self.config.asker.clone() {
                self.emitter.emit(EventKind::InputRequested {
                    turn_id: turn_id.to_string(),
                    request: request.clone(),
                });
                // Let the console show the request before the question is asked.
                tokio::task::yield_now().await;
                if let Some(resolution) = asker.ask(&request).await {
                    self.emitter.emit(EventKind::InputResolved {
                        turn_id: turn_id.to_string(),
                        request_id: request.request_id.clone(),
                        call_id: call.id.clone(),
                        resolution: resolution.clone(),
                    });
                    self.resolutions.insert(call.id.clone(), resolution);
                    continue;
                }
                if self.can_park() {
                    return Err(request);
                }
            } else if self.can_park() {
                self.emitter.emit(EventKind::InputRequested {
                    turn_id: turn_id.to_string(),
                    request: request.clone(),
                });
                return Err(request);
            }
            let text = match kind {
                InputKind::Question { .. } => "Nobody can answer questions in this run; decide yourself and say what you assumed.".to_string(),
                InputKind::Approval => format!(
                    "Refused: `{}` needs a person's approval for every call (approval = \"always\"), and nobody can approve calls in this run. Do the task without it, or say what you would run.",
                    call.name
                ),
            };
            refused.insert(call.id.clone(), ToolOutput::error(text));
        }
        Ok(refused)
    }

    /// Whether this harness can park a turn: the top agent of a logged session.
    fn can_park(&self) -> bool {
        self.config.depth == 0 && self.emitter.journal().is_some()
    }

    /// Runs a step's tool calls through the scheduler and appends their results: every
    /// call gets one, in call order. Parks instead when a call needs a person nobody
    /// here can ask.
    async fn run_calls(
        &mut self,
        turn_id: &str,
        step: u64,
        calls: Vec<ToolCall>,
        ctx: &ToolContext,
        announce: bool,
    ) -> CallsEnd {
        if announce {
            self.emitter.emit(EventKind::ActionsRequested {
                turn_id: turn_id.to_string(),
                step,
                actions: calls
                    .iter()
                    .map(|c| Action {
                        call_id: c.id.clone(),
                        name: c.name.clone(),
                        input: c.input.clone(),
                    })
                    .collect(),
            });
        }
        let refused = match self.settle_inputs(turn_id, &calls).await {
            Ok(refused) => refused,
            Err(request) => return CallsEnd::Parked(request),
        };
        let registry = self.registry.clone();
        let max_parallel = self.config.manifest.agent.limits.max_parallel_tools as usize;
        let emitter = self.emitter.clone();
        enum Plan {
            Result(ToolOutput),
            Run,
            RunApproved,
        }
        let items: Vec<(ToolCall, Plan)> = calls
            .into_iter()
            .map(|call| {
                let plan = if let Some(output) = self.early.remove(&call.id) {
                    Plan::Result(output)
                } else if let Some(output) = refused.get(&call.id) {
                    Plan::Result(output.clone())
                } else {
                    match self.resolutions.get(&call.id) {
                        Some(Resolution::Answer { text }) => {
                            Plan::Result(ToolOutput::ok(text.clone()))
                        }
                        Some(Resolution::Denied { reason }) => {
                            Plan::Result(ToolOutput::error(match reason {
                                Some(reason) => format!("The user denied this call: {reason}"),
                                None => "The user denied this call.".to_string(),
                            }))
                        }
                        Some(Resolution::Approved { .. }) => Plan::RunApproved,
                        None => Plan::Run,
                    }
                };
                (call, plan)
            })
            .collect();
        let results = scheduler::run(
            items,
            max_parallel,
            |(call, plan)| {
                matches!(plan, Plan::Run | Plan::RunApproved)
                    && !registry.runs_in_parallel(&call.name)
            },
            |_, (call, plan)| {
                let registry = registry.clone();
                async move {
                    let started = Instant::now();
                    let output = match plan {
                        Plan::Result(output) => output,
                        Plan::Run => registry.call(&call, ctx).await,
                        Plan::RunApproved => registry.call_approved(&call, ctx).await,
                    };
                    (call, output, started.elapsed())
                }
            },
            |_, (call, output, elapsed)| {
                emitter.emit(EventKind::ActionResult {
                    turn_id: turn_id.to_string(),
                    step,
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    output: output.content.clone(),
                    is_error: output.is_error,
                    duration_ms: elapsed.as_millis() as u64,
                });
            },
        )
        .await;
        self.push(Message::Tool {
            results: results
                .into_iter()
                .map(|(call, output, _)| ToolResult {
                    call_id: call.id,
                    name: call.name,
                    content: output.content,
                    is_error: output.is_error,
                })
                .collect(),
        });
        // Answers belong to the calls of this step only.
        self.resolutions.clear();
        CallsEnd::Done
    }
}

/// A web search result block as a short text: one `title — url` line per page, or the error.
fn server_result_summary(content: &serde_json::Value) -> (String, bool) {
    match content {
        serde_json::Value::Array(results) => {
            let lines: Vec<String> = results
                .iter()
                .map(|r| {
                    format!(
                        "{} — {}",
                        r["title"].as_str().unwrap_or("(untitled)"),
                        r["url"].as_str().unwrap_or_default()
                    )
                })
                .collect();
            (lines.join("\n"), false)
        }
        other => (
            format!(
                "search failed: {}",
                other["error_code"].as_str().unwrap_or("unknown error")
            ),
            true,
        ),
    }
}

enum Attempt {
    Aborted(String),
    Failed(ProviderError),
}
