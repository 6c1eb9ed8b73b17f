//! The harness: drives a manifest through the model ↔ tool loop, one step per model call.
//!
//! A **step** is one model call plus the execution of the tool calls it produced; a
//! **turn** is all the steps that answer one input. After each step the harness
//! continues (tool results), ends the turn (text only) or stops at a limit. It emits
//! [`events`] on a channel and never prints.

pub mod events;
pub mod prompt;
pub mod scheduler;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use futures_util::StreamExt;
use tokio_util::sync::CancellationToken;

use crate::manifest::{Manifest, Mode};
use crate::providers::retry::RetryPolicy;
use crate::providers::{
    FinishReason, Message, ModelRequest, Provider, ProviderError, StreamEvent, ToolCall,
    ToolResult, Usage,
};
use crate::tools::registry::parse_arguments;
use crate::tools::state::SessionState;
use crate::tools::{Registry, ToolContext, ToolOutput};
use events::{Action, Emitter, EndReason, EventKind};

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

impl Harness {
    /// A new session. Fails when the instructions cannot be rendered.
    pub fn new(config: Config, emitter: Emitter) -> Result<Harness, String> {
        let session_id = crate::ids::new_id("ses");
        let emitter = if config.depth > 0 {
            emitter.for_child(&session_id)
        } else {
            emitter
        };
        let registry = Arc::new(Registry::for_provider(
            &config.manifest,
            config.provider.speaks_anthropic(),
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
        })
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

    /// Emits `session.started`.
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
    /// `session.waiting` in conversation mode, `session.completed` otherwise.
    pub fn finish(&self, outcome: &TurnOutcome) {
        let session_id = self.session_id.clone();
        let usage = self.usage.clone();
        let kind = if let Some(error) = &outcome.error {
            EventKind::SessionFailed {
                session_id,
                error: error.clone(),
                usage,
            }
        } else if self.config.manifest.agent.mode == Mode::Conversation {
            EventKind::SessionWaiting { session_id, usage }
        } else {
            EventKind::SessionCompleted { session_id, usage }
        };
        self.emitter.emit(kind);
    }

    /// Runs one turn answering `input`. Cancelling `cancel` aborts it cleanly: running
    /// tools are killed and every tool call still gets a result.
    pub async fn run_turn(&mut self, input: String, cancel: CancellationToken) -> TurnOutcome {
        let turn_id = crate::ids::new_id("turn");
        self.emitter.emit(EventKind::TurnStarted {
            session_id: self.session_id.clone(),
            turn_id: turn_id.clone(),
        });
        self.emitter.emit(EventKind::MessageReceived {
            turn_id: turn_id.clone(),
            text: input.clone(),
        });
        self.history.push(Message::User { text: input });
        let ctx = ToolContext {
            workspace: self.config.workspace.clone(),
            agent_dir: self.config.agent_dir.clone(),
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
        };
        let mut usage = Usage::default();
        let mut steps = 0;
        let mut hit_max_tokens = false;
        let mut result = String::new();
        let end = loop {
            if cancel.is_cancelled() {
                break Ok(EndReason::Aborted);
            }
            if steps >= self.config.max_steps {
                break Ok(EndReason::MaxSteps);
            }
            steps += 1;
            self.emitter.emit(EventKind::StepStarted {
                turn_id: turn_id.clone(),
                step: steps,
            });
            let reply = match self.call_model(&turn_id, steps, &cancel).await {
                Ok(reply) => reply,
                Err(CallFailure::Aborted { partial }) => {
                    if !partial.is_empty() {
                        result = partial.clone();
                        self.history.push(Message::Assistant {
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
            let finish = reply.finish.clone().unwrap_or(if reply.calls.is_empty() {
                FinishReason::Stop
            } else {
                FinishReason::ToolUse
            });
            hit_max_tokens |= finish == FinishReason::MaxTokens;
            result = reply.text.clone();
            // A long server-side tool turn paused: send the reply back as it is to go on.
            let paused = finish == FinishReason::Other("pause_turn".into());
            let had_calls = !reply.calls.is_empty() || paused;
            let step_usage = reply.usage.clone();
            self.run_calls(&turn_id, steps, reply, &finish, &ctx).await;
            self.emitter.emit(EventKind::StepCompleted {
                turn_id: turn_id.clone(),
                step: steps,
                finish_reason: finish.as_str().to_string(),
                usage: step_usage,
            });
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
        let outcome = match end {
            Ok(end_reason) => TurnOutcome {
                turn_id: turn_id.clone(),
                end_reason,
                result,
                error: None,
                steps,
                usage,
            },
            Err(error) => TurnOutcome {
                turn_id: turn_id.clone(),
                end_reason: EndReason::Error,
                result,
                error: Some(error),
                steps,
                usage,
            },
        };
        self.emitter.emit(match &outcome.error {
            None => EventKind::TurnCompleted {
                turn_id,
                end_reason: outcome.end_reason,
                result: outcome.result.clone(),
                steps: outcome.steps,
                usage: outcome.usage.clone(),
            },
            Some(error) => EventKind::TurnFailed {
                turn_id,
                end_reason: EndReason::Error,
                error: error.clone(),
                steps: outcome.steps,
                usage: outcome.usage.clone(),
            },
        });
        outcome
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

    /// Appends the assistant message, runs its tool calls through the scheduler and
    /// appends their results: every call gets one, in call order.
    async fn run_calls(
        &mut self,
        turn_id: &str,
        step: u64,
        reply: Reply,
        finish: &FinishReason,
        ctx: &ToolContext,
    ) {
        let mut calls = Vec::with_capacity(reply.calls.len());
        let mut early: Vec<Option<ToolOutput>> = Vec::with_capacity(reply.calls.len());
        for pending in reply.calls {
            let (input, problem) = match parse_arguments(&pending.arguments) {
                Ok(input) => (input, None),
                Err(e) => {
                    let cut = if *finish == FinishReason::MaxTokens {
                        " The reply was cut off at the output token limit: make smaller calls."
                    } else {
                        ""
                    };
                    (
                        serde_json::Value::Object(Default::default()),
                        Some(ToolOutput::error(format!(
                            "Could not call `{}`: {e}.{cut}",
                            pending.name
                        ))),
                    )
                }
            };
            calls.push(ToolCall {
                id: pending.id,
                name: pending.name,
                input,
            });
            early.push(problem);
        }
        if let Some(blocks) = &reply.provider_content {
            self.report_server_tools(turn_id, step, blocks);
        }
        self.history.push(Message::Assistant {
            text: reply.text,
            tool_calls: calls.clone(),
            anthropic_blocks: reply.provider_content,
        });
        if calls.is_empty() {
            return;
        }
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
        let registry = self.registry.clone();
        let max_parallel = self.config.manifest.agent.limits.max_parallel_tools as usize;
        let emitter = self.emitter.clone();
        let items: Vec<(ToolCall, Option<ToolOutput>)> = calls.into_iter().zip(early).collect();
        let results = scheduler::run(
            items,
            max_parallel,
            |(call, early)| early.is_none() && !registry.runs_in_parallel(&call.name),
            |_, (call, early)| {
                let registry = registry.clone();
                async move {
                    let started = Instant::now();
                    let output = match early {
                        Some(output) => output,
                        None => registry.call(&call, ctx).await,
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
        self.history.push(Message::Tool {
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
