//! A session's events as OpenTelemetry spans, by the GenAI semantic conventions:
//! `invoke_agent AGENT` a turn (a child agent's nested under the call that started it),
//! `chat MODEL` a model call, `execute_tool TOOL` a tool call (`tools/call TOOL` inside
//! it for an MCP server's), `hook NAME` a hook, `compact` a compaction. Built from the
//! events alone, as the harness emits them: the harness knows nothing of telemetry.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::Ordering;
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{
    Span as _, SpanContext, SpanKind, Status, TraceContextExt as _, Tracer as _,
};
use opentelemetry::{Context, KeyValue};
use opentelemetry_sdk::trace::{SdkTracer, Span};

use super::pipeline::{Instruments, Pipeline};
use crate::protocol::{Event, EventKind, InputKind, Observer, Resolution, Usage};

/// The most of one piece of content (a message, a reply, a tool's input or output) a
/// span carries, in bytes.
pub const MAX_CONTENT: usize = 16 * 1024;

/// What a session's spans carry besides what eve always exports.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The agent and model reference, for a session whose `session.started` is not
    /// emitted again (one reopened from its log).
    pub agent: String,
    pub model: String,
    /// `[telemetry] capture_content`.
    pub capture_content: bool,
    /// `[telemetry] attributes`, on every span.
    pub attributes: Vec<KeyValue>,
    /// The caller's span (`traceparent`): each turn is its child.
    pub parent: Option<SpanContext>,
    /// Values masked in captured content (the provider keys).
    pub secrets: Vec<String>,
}

/// One session's observer (and its child agents').
#[derive(Debug)]
pub struct SessionSpans {
    pipeline: &'static Pipeline,
    options: Options,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    sessions: HashMap<String, Session>,
    /// Open tool calls in the order they started: (session, call id).
    open_calls: Vec<(String, String)>,
}

#[derive(Debug, Default)]
struct Session {
    /// The session's id, once an event said it.
    id: String,
    agent: String,
    model: String,
    /// The call of the parent session that started this child agent.
    parent: Option<SpanContext>,
    turn: Option<Span>,
    turn_id: String,
    steps: HashMap<u64, (Span, SystemTime)>,
    calls: HashMap<String, (Span, String)>,
    compaction: Option<Span>,
    /// The reply streamed in the current step (captured content only).
    reply: String,
}

impl SessionSpans {
    pub fn new(pipeline: &'static Pipeline, options: Options) -> SessionSpans {
        SessionSpans {
            pipeline,
            options,
            state: Mutex::new(State::default()),
        }
    }

    fn tracer(&self) -> Option<&SdkTracer> {
        self.pipeline.tracer.as_ref()
    }

    fn start(
        &self,
        name: String,
        kind: SpanKind,
        parent: Option<&SpanContext>,
        at: SystemTime,
        mut attributes: Vec<KeyValue>,
    ) -> Option<Span> {
        let tracer = self.tracer()?;
        attributes.extend(self.options.attributes.iter().cloned());
        let context = match parent {
            Some(parent) => Context::new().with_remote_span_context(parent.clone()),
            None => Context::new(),
        };
        Some(
            tracer
                .span_builder(name)
                .with_kind(kind)
                .with_start_time(at)
                .with_attributes(attributes)
                .start_with_context(tracer, &context),
        )
    }

    fn end(&self, mut span: Span, at: SystemTime) {
        span.end_with_timestamp(at);
        self.pipeline.ended.fetch_add(1, Ordering::Relaxed);
    }

    /// `text` as captured content: provider keys masked, cut at [`MAX_CONTENT`].
    fn content(&self, text: &str) -> String {
        let mut out = text.to_string();
        for secret in &self.options.secrets {
            if out.contains(secret.as_str()) {
                out = out.replace(secret.as_str(), crate::providers::redact::MASK);
            }
        }
        if out.len() > MAX_CONTENT {
            let mut end = MAX_CONTENT;
            while !out.is_char_boundary(end) {
                end -= 1;
            }
            out.truncate(end);
            out.push_str("…[cut]");
        }
        out
    }

    fn metrics(&self) -> Option<&Instruments> {
        self.pipeline.instruments.as_ref()
    }
}

impl Observer for SessionSpans {
    fn traceparent(&self, session: &str, call_id: &str) -> Option<String> {
        let state = crate::sync::lock(&self.state);
        let (span, _) = state.sessions.get(session)?.calls.get(call_id)?;
        let context = span.span_context();
        context.is_valid().then(|| {
            format!(
                "00-{}-{}-{:02x}",
                context.trace_id(),
                context.span_id(),
                context.trace_flags().to_u8()
            )
        })
    }

    fn observe(&self, event: &Event) {
        let now = SystemTime::now();
        let mut state = crate::sync::lock(&self.state);
        // The top-level session is "" (a reopened one may emit no `session.started`);
        // a child agent's events carry its id.
        let key = event.meta.session_id.clone().unwrap_or_default();
        self.apply(&mut state, key, &event.kind, now);
    }
}

impl SessionSpans {
    fn apply(&self, state: &mut State, key: String, kind: &EventKind, now: SystemTime) {
        if let EventKind::SessionStarted {
            session_id,
            agent,
            model,
            ..
        } = kind
        {
            self.session_started(state, &key, session_id, agent, model);
            return;
        }
        let options = &self.options;
        let session = state
            .sessions
            .entry(key.clone())
            .or_insert_with(|| Session {
                id: key.clone(),
                agent: options.agent.clone(),
                model: options.model.clone(),
                ..Session::default()
            });
        if let EventKind::TurnStarted { session_id, .. } = kind {
            session.id = session_id.clone();
        }
        // A turn resumed in this process (an answered approval) goes on in a span of
        // its own.
        if session.turn.is_none()
            && let EventKind::StepStarted { turn_id, .. }
            | EventKind::ActionsRequested { turn_id, .. }
            | EventKind::InputResolved { turn_id, .. } = kind
        {
            self.turn_started(session, turn_id, true, now);
        }
        let id = session.id.clone();
        match kind {
            EventKind::TurnStarted { turn_id, .. } => {
                self.turn_started(session, turn_id, false, now);
            }
            EventKind::MessageReceived { text, .. } if options.capture_content => {
                self.user_message(session, text, now)
            }
            EventKind::StepStarted { step, .. } => self.step_started(session, &id, *step, now),
            EventKind::MessageAppended { text, .. }
                if options.capture_content && session.reply.len() < MAX_CONTENT =>
            {
                session.reply.push_str(text);
            }
            EventKind::StepFailed {
                step,
                attempt,
                error,
                retry_in_ms,
                ..
            } => self.step_failed(session, *step, *attempt, error, *retry_in_ms, now),
            EventKind::StepCompleted {
                step,
                finish_reason,
                usage,
                usage_reported,
                ..
            } => self.step_completed(session, *step, finish_reason, usage, *usage_reported, now),
            EventKind::ActionsRequested { .. } => {
                self.calls_requested(&mut state.open_calls, session, &key, &id, kind, now)
            }
            EventKind::InputRequested { .. } | EventKind::InputResolved { .. } => {
                self.input(session, kind, now)
            }
            EventKind::HookCompleted { .. } => self.hook_completed(session, &id, kind, now),
            EventKind::ActionResult { .. } => {
                self.call_ended(&mut state.open_calls, session, &key, kind, now)
            }
            EventKind::CompactionRequested { .. } | EventKind::CompactionCompleted { .. } => {
                self.compaction(session, &id, kind, now)
            }
            EventKind::TurnCompleted { .. } | EventKind::TurnFailed { .. } => {
                self.turn_finished(state, &key, kind, now)
            }
            // A child agent's session is over: nothing of it is needed again.
            EventKind::SessionCompleted { .. } | EventKind::SessionFailed { .. }
                if !key.is_empty() =>
            {
                state.sessions.remove(&key);
            }
            EventKind::TurnWaiting { .. } => {
                self.turn_ended(state, &key, "waiting", 0, &Usage::default(), None, now);
            }
            _ => {}
        }
    }

    fn user_message(&self, session: &mut Session, text: &str, now: SystemTime) {
        if let Some(turn) = &mut session.turn {
            let content = self.content(text);
            turn.add_event_with_timestamp(
                "gen_ai.user.message",
                now,
                vec![KeyValue::new("content", content)],
            );
        }
    }

    fn step_started(&self, session: &mut Session, id: &str, step: u64, now: SystemTime) {
        let (provider, _) = provider_and_model(&session.model);
        let attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider),
            KeyValue::new("gen_ai.request.model", model_id(&session.model)),
            KeyValue::new("eve.session.id", id.to_string()),
            KeyValue::new("eve.turn.id", session.turn_id.clone()),
            KeyValue::new("eve.step", step as i64),
        ];
        let parent = session.turn.as_ref().map(|t| t.span_context().clone());
        let name = format!("chat {}", model_id(&session.model));
        if let Some(span) = self.start(name, SpanKind::Client, parent.as_ref(), now, attributes) {
            session.steps.insert(step, (span, now));
        }
        session.reply.clear();
    }

    /// A question or an approval of a call, asked and resolved: events on its span.
    fn input(&self, session: &mut Session, kind: &EventKind, now: SystemTime) {
        match kind {
            EventKind::InputRequested { request, .. } => {
                if let Some((span, _)) = session.calls.get_mut(&request.call_id) {
                    let kind = match request.kind {
                        InputKind::Question { .. } => "question",
                        InputKind::Approval => "approval",
                    };
                    span.add_event_with_timestamp(
                        "eve.input.requested",
                        now,
                        vec![
                            KeyValue::new("eve.input.kind", kind),
                            KeyValue::new("eve.input.request_id", request.request_id.clone()),
                        ],
                    );
                }
            }
            EventKind::InputResolved {
                call_id,
                resolution,
                ..
            } => {
                if let Some((span, _)) = session.calls.get_mut(call_id) {
                    let answer = match resolution {
                        Resolution::Answer { .. } => "answered",
                        Resolution::Approved { .. } => "approved",
                        Resolution::Denied { .. } => "denied",
                    };
                    span.add_event_with_timestamp(
                        "eve.input.resolved",
                        now,
                        vec![KeyValue::new("eve.input.resolution", answer)],
                    );
                }
            }
            _ => {}
        }
    }

    fn compaction(&self, session: &mut Session, id: &str, kind: &EventKind, now: SystemTime) {
        match kind {
            EventKind::CompactionRequested {
                tokens_before,
                threshold,
                ..
            } => {
                let parent = session.turn.as_ref().map(|t| t.span_context().clone());
                let attributes = vec![
                    KeyValue::new("eve.compaction.tokens_before", *tokens_before as i64),
                    KeyValue::new("eve.compaction.threshold", *threshold as i64),
                    KeyValue::new("eve.session.id", id.to_string()),
                ];
                session.compaction = self.start(
                    "compact".into(),
                    SpanKind::Internal,
                    parent.as_ref(),
                    now,
                    attributes,
                );
            }
            EventKind::CompactionCompleted {
                tokens_after,
                summarised,
                ..
            } => {
                if let Some(mut span) = session.compaction.take() {
                    span.set_attribute(KeyValue::new(
                        "eve.compaction.tokens_after",
                        *tokens_after as i64,
                    ));
                    span.set_attribute(KeyValue::new("eve.compaction.summarised", *summarised));
                    self.end(span, now);
                }
            }
            _ => {}
        }
    }

    fn calls_requested(
        &self,
        open_calls: &mut Vec<(String, String)>,
        session: &mut Session,
        key: &str,
        id: &str,
        kind: &EventKind,
        now: SystemTime,
    ) {
        let EventKind::ActionsRequested { actions, .. } = kind else {
            return;
        };
        let parent = session.turn.as_ref().map(|t| t.span_context().clone());
        for action in actions {
            let mut attributes = vec![
                KeyValue::new("gen_ai.operation.name", "execute_tool"),
                KeyValue::new("gen_ai.tool.name", action.name.clone()),
                KeyValue::new("gen_ai.tool.call.id", action.call_id.clone()),
                KeyValue::new("gen_ai.tool.type", "function"),
                KeyValue::new("eve.session.id", id.to_string()),
                KeyValue::new("eve.turn.id", session.turn_id.clone()),
            ];
            if self.options.capture_content {
                attributes.push(KeyValue::new(
                    "gen_ai.tool.call.arguments",
                    self.content(&action.input.to_string()),
                ));
            }
            let name = format!("execute_tool {}", action.name);
            if let Some(span) =
                self.start(name, SpanKind::Internal, parent.as_ref(), now, attributes)
            {
                session
                    .calls
                    .insert(action.call_id.clone(), (span, action.name.clone()));
                open_calls.push((key.to_string(), action.call_id.clone()));
            }
        }
    }

    fn hook_completed(&self, session: &mut Session, id: &str, kind: &EventKind, now: SystemTime) {
        let EventKind::HookCompleted {
            hook,
            event,
            call_id,
            decision,
            failed,
            duration_ms,
            ..
        } = kind
        else {
            return;
        };
        let parent = call_id
            .as_ref()
            .and_then(|id| session.calls.get(id))
            .map(|(span, _)| span.span_context().clone())
            .or_else(|| session.turn.as_ref().map(|t| t.span_context().clone()));
        let started = now - Duration::from_millis(*duration_ms);
        let attributes = vec![
            KeyValue::new("eve.hook.name", hook.clone()),
            KeyValue::new("eve.hook.event", event.clone()),
            KeyValue::new("eve.hook.decision", decision.clone()),
            KeyValue::new("eve.hook.failed", *failed),
            KeyValue::new("eve.session.id", id.to_string()),
        ];
        if let Some(mut span) = self.start(
            format!("hook {hook}"),
            SpanKind::Internal,
            parent.as_ref(),
            started,
            attributes,
        ) {
            if *failed {
                span.set_status(Status::error("the hook failed"));
            }
            self.end(span, now);
        }
    }

    fn call_ended(
        &self,
        open_calls: &mut Vec<(String, String)>,
        session: &mut Session,
        key: &str,
        kind: &EventKind,
        now: SystemTime,
    ) {
        let EventKind::ActionResult {
            call_id,
            output,
            is_error,
            duration_ms,
            connection,
            ..
        } = kind
        else {
            return;
        };
        open_calls.retain(|(s, c)| !(s == key && c == call_id));
        let Some((mut span, name)) = session.calls.remove(call_id) else {
            return;
        };
        let outcome = if *is_error { "error" } else { "ok" };
        span.set_attribute(KeyValue::new("eve.tool.outcome", outcome));
        if self.options.capture_content {
            span.set_attribute(KeyValue::new(
                "gen_ai.tool.call.result",
                self.content(output),
            ));
        }
        if *is_error {
            span.set_attribute(KeyValue::new("error.type", "tool_error"));
            span.set_status(Status::error("the tool call failed"));
        }
        if let Some(connection) = connection {
            span.set_attribute(KeyValue::new("eve.connection", connection.clone()));
            let started = now - Duration::from_millis(*duration_ms);
            let attributes = vec![
                KeyValue::new("mcp.method.name", "tools/call"),
                KeyValue::new("gen_ai.tool.name", name.clone()),
                KeyValue::new("eve.connection", connection.clone()),
            ];
            let parent = span.span_context().clone();
            if let Some(mcp) = self.start(
                format!("tools/call {name}"),
                SpanKind::Client,
                Some(&parent),
                started,
                attributes,
            ) {
                self.end(mcp, now);
            }
        }
        self.end(span, now);
        if let Some(metrics) = self.metrics() {
            let attributes = [
                KeyValue::new("gen_ai.tool.name", name),
                KeyValue::new("eve.tool.outcome", outcome),
            ];
            metrics
                .tool_duration
                .record(*duration_ms as f64 / 1000.0, &attributes);
            if *is_error {
                metrics.tool_errors.add(1, &attributes);
            }
        }
    }

    fn turn_finished(&self, state: &mut State, key: &str, kind: &EventKind, now: SystemTime) {
        match kind {
            EventKind::TurnCompleted {
                end_reason,
                steps,
                usage,
                ..
            } => {
                let reason = reason_name(end_reason);
                self.turn_ended(state, key, &reason, *steps, usage, None, now);
            }
            EventKind::TurnFailed {
                end_reason,
                error,
                steps,
                usage,
                ..
            } => {
                let reason = reason_name(end_reason);
                self.turn_ended(state, key, &reason, *steps, usage, Some(error), now);
            }
            _ => {}
        }
    }

    fn turn_started(&self, session: &mut Session, turn_id: &str, resumed: bool, now: SystemTime) {
        let parent = session
            .parent
            .clone()
            .or_else(|| self.options.parent.clone());
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "invoke_agent"),
            KeyValue::new("gen_ai.agent.name", session.agent.clone()),
            KeyValue::new("gen_ai.conversation.id", session.id.clone()),
            KeyValue::new("eve.session.id", session.id.clone()),
            KeyValue::new("eve.turn.id", turn_id.to_string()),
        ];
        if resumed {
            attributes.push(KeyValue::new("eve.turn.resumed", true));
        }
        let name = format!("invoke_agent {}", session.agent);
        session.turn = self.start(name, SpanKind::Internal, parent.as_ref(), now, attributes);
        session.turn_id = turn_id.to_string();
    }

    fn session_started(&self, state: &mut State, key: &str, id: &str, agent: &str, model: &str) {
        // A child agent runs inside the call that started it: the latest call of
        // another session still open.
        let parent = state
            .open_calls
            .iter()
            .rev()
            .find(|(session, _)| session != key)
            .and_then(|(session, call)| state.sessions.get(session)?.calls.get(call))
            .map(|(span, _)| span.span_context().clone());
        let session = state.sessions.entry(key.to_string()).or_default();
        session.id = id.to_string();
        session.agent = agent.to_string();
        session.model = model.to_string();
        session.parent = parent;
        if let Some(metrics) = self.metrics() {
            metrics
                .sessions
                .add(1, &[KeyValue::new("gen_ai.agent.name", agent.to_string())]);
        }
    }

    fn step_failed(
        &self,
        session: &mut Session,
        step: u64,
        attempt: u32,
        error: &str,
        retry_in_ms: Option<u64>,
        now: SystemTime,
    ) {
        let Some((span, _)) = session.steps.get_mut(&step) else {
            return;
        };
        let mut attributes = vec![
            KeyValue::new("eve.attempt", attempt as i64),
            KeyValue::new("error.type", "provider_error"),
            KeyValue::new("exception.message", self.content(error)),
        ];
        if let Some(ms) = retry_in_ms {
            attributes.push(KeyValue::new("eve.retry_in_ms", ms as i64));
        }
        span.add_event_with_timestamp("eve.model_call.retry", now, attributes);
        if retry_in_ms.is_none()
            && let Some((mut span, started)) = session.steps.remove(&step)
        {
            span.set_attribute(KeyValue::new("error.type", "provider_error"));
            span.set_status(Status::error("the model call failed"));
            self.record_call(session, started, now, None, Some("provider_error"));
            self.end(span, now);
        }
    }

    fn step_completed(
        &self,
        session: &mut Session,
        step: u64,
        finish_reason: &str,
        usage: &Usage,
        usage_reported: bool,
        now: SystemTime,
    ) {
        let Some((mut span, started)) = session.steps.remove(&step) else {
            return;
        };
        span.set_attribute(KeyValue::new(
            "gen_ai.response.finish_reasons",
            opentelemetry::Value::Array(
                vec![opentelemetry::StringValue::from(finish_reason.to_string())].into(),
            ),
        ));
        if usage_reported {
            span.set_attributes([
                KeyValue::new("gen_ai.usage.input_tokens", usage.input_tokens as i64),
                KeyValue::new("gen_ai.usage.output_tokens", usage.output_tokens as i64),
                KeyValue::new(
                    "gen_ai.usage.cache_read.input_tokens",
                    usage.cache_read_tokens as i64,
                ),
                KeyValue::new(
                    "gen_ai.usage.cache_creation.input_tokens",
                    usage.cache_write_tokens as i64,
                ),
            ]);
            if usage.reasoning_tokens > 0 {
                span.set_attribute(KeyValue::new(
                    "gen_ai.usage.reasoning.output_tokens",
                    usage.reasoning_tokens as i64,
                ));
            }
        }
        if self.options.capture_content && !session.reply.is_empty() {
            let reply = self.content(&std::mem::take(&mut session.reply));
            span.add_event_with_timestamp(
                "gen_ai.assistant.message",
                now,
                vec![KeyValue::new("content", reply)],
            );
        }
        self.record_call(session, started, now, usage_reported.then_some(usage), None);
        self.end(span, now);
    }

    /// A model call's metrics.
    fn record_call(
        &self,
        session: &Session,
        started: SystemTime,
        now: SystemTime,
        usage: Option<&Usage>,
        error: Option<&'static str>,
    ) {
        let Some(metrics) = self.metrics() else {
            return;
        };
        let (provider, _) = provider_and_model(&session.model);
        let mut attributes = vec![
            KeyValue::new("gen_ai.operation.name", "chat"),
            KeyValue::new("gen_ai.provider.name", provider),
            KeyValue::new("gen_ai.request.model", model_id(&session.model)),
        ];
        if let Some(error) = error {
            attributes.push(KeyValue::new("error.type", error));
        }
        let seconds = now
            .duration_since(started)
            .unwrap_or_default()
            .as_secs_f64();
        metrics.operation_duration.record(seconds, &attributes);
        if let Some(usage) = usage {
            for (kind, tokens) in [
                ("input", usage.input_tokens),
                ("output", usage.output_tokens),
            ] {
                let mut attributes = attributes.clone();
                attributes.push(KeyValue::new("gen_ai.token.type", kind));
                metrics.token_usage.record(tokens, &attributes);
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn turn_ended(
        &self,
        state: &mut State,
        key: &str,
        reason: &str,
        steps: u64,
        usage: &Usage,
        error: Option<&str>,
        now: SystemTime,
    ) {
        state.open_calls.retain(|(s, _)| s != key);
        let Some(session) = state.sessions.get_mut(key) else {
            return;
        };
        // What the turn left open ends with it (an interrupted call, a cancelled step).
        for (_, (mut span, _)) in session.steps.drain() {
            span.set_status(Status::error("the turn ended first"));
            self.end(span, now);
        }
        for (_, (mut span, _)) in session.calls.drain() {
            span.set_status(Status::error("the turn ended first"));
            self.end(span, now);
        }
        if let Some(span) = session.compaction.take() {
            self.end(span, now);
        }
        let Some(mut turn) = session.turn.take() else {
            return;
        };
        turn.set_attribute(KeyValue::new("eve.end_reason", reason.to_string()));
        if reason != "waiting" {
            turn.set_attributes([
                KeyValue::new("eve.steps", steps as i64),
                KeyValue::new("gen_ai.usage.input_tokens", usage.input_tokens as i64),
                KeyValue::new("gen_ai.usage.output_tokens", usage.output_tokens as i64),
            ]);
        }
        if let Some(error) = error {
            turn.set_attribute(KeyValue::new("error.type", reason.to_string()));
            turn.set_status(Status::error(self.content(error)));
        }
        self.end(turn, now);
    }
}

/// The provider of a model reference, by the GenAI conventions' names where they have
/// one (`anthropic`, `openai`), else the reference's own (`ollama`, `scripted`).
fn provider_and_model(reference: &str) -> (String, String) {
    if let Some(path) = reference.strip_prefix("scripted:") {
        return ("scripted".into(), path.to_string());
    }
    match reference.split_once('/') {
        Some((provider, model)) => (provider.to_string(), model.to_string()),
        None => ("unknown".into(), reference.to_string()),
    }
}

/// An end reason's name as the events write it (`completed`, `max_steps`, …).
fn reason_name(reason: &crate::protocol::EndReason) -> String {
    serde_json::to_value(reason)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

fn model_id(reference: &str) -> String {
    provider_and_model(reference).1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_and_models_are_read_from_the_reference() {
        assert_eq!(
            provider_and_model("anthropic/claude-sonnet-4-5"),
            ("anthropic".into(), "claude-sonnet-4-5".into())
        );
        assert_eq!(
            provider_and_model("scripted:replies.yaml"),
            ("scripted".into(), "replies.yaml".into())
        );
        assert_eq!(provider_and_model("x").0, "unknown");
    }
}
