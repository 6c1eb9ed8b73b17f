//! Showing a run's events to a person (`--output text`), as one JSON object
//! (`--output json`) or as NDJSON (`--output stream-json`).

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::TurnOutcome;
use crate::protocol::Usage;
use crate::protocol::{EndReason, Event, EventKind, InputKind, InputRequest, Resolution};

/// How `eve run` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    Text,
    Json,
    StreamJson,
}

/// Turns events into output. Text goes to `out`, everything about the run to `err`.
pub struct Console<O: Write, E: Write> {
    mode: OutputMode,
    quiet: bool,
    out: O,
    err: E,
    /// Whether `out` is at the start of a line.
    out_line_start: bool,
    spinner: Option<indicatif::ProgressBar>,
    spinner_enabled: bool,
    started: Instant,
    session_id: String,
    /// Whether the current step has printed text (a retry then discards it).
    step_printed_text: bool,
    /// `eve run DIR`, for the commands printed when a turn parks.
    command: String,
    /// Whether to note the tools that are not offered (once per `eve dev` is enough).
    notes: bool,
}

impl<O: Write, E: Write> Console<O, E> {
    /// A console; `spinner` shows a spinner on stderr while the model works (text mode only).
    pub fn new(mode: OutputMode, quiet: bool, spinner: bool, out: O, err: E) -> Self {
        Console {
            mode,
            quiet,
            out,
            err,
            out_line_start: true,
            spinner: None,
            spinner_enabled: spinner && mode == OutputMode::Text && !quiet,
            started: Instant::now(),
            session_id: String::new(),
            step_printed_text: false,
            command: "eve run".into(),
            notes: true,
        }
    }

    /// Whether to print the `note:` lines about tools that are not offered.
    pub fn set_notes(&mut self, notes: bool) {
        self.notes = notes;
    }

    /// The command that runs this agent (`eve run my-agent`), shown in hints.
    pub fn set_command(&mut self, command: &str) {
        self.command = command.to_string();
    }

    /// Shows one event.
    pub fn event(&mut self, event: &Event) {
        if let EventKind::SessionStarted { session_id, .. } = &event.kind {
            self.session_id = session_id.clone();
        }
        match self.mode {
            OutputMode::StreamJson => {
                if let Ok(line) = serde_json::to_string(event) {
                    let _ = writeln!(self.out, "{line}");
                    let _ = self.out.flush();
                }
            }
            OutputMode::Json => {}
            OutputMode::Text if event.meta.session_id.is_some() => self.child_text(&event.kind),
            OutputMode::Text => self.text(&event.kind),
        }
    }

    /// A child agent's events: only its tool calls, indented; its text is its parent's result.
    fn child_text(&mut self, kind: &EventKind) {
        if self.quiet {
            return;
        }
        match kind {
            EventKind::SessionStarted { agent, model, .. } => {
                self.note(&format!("  ⤷ {agent} ({model}) started"));
            }
            EventKind::ActionsRequested { actions, .. } => {
                for action in actions {
                    self.note(&format!("  {}", action_line(action)));
                }
            }
            EventKind::ActionResult {
                name,
                output,
                is_error,
                duration_ms,
                ..
            } => self.note(&format!(
                "    {}",
                result_line(name, output, *is_error, *duration_ms)
            )),
            EventKind::StepFailed {
                error,
                retry_in_ms: Some(ms),
                ..
            } => {
                self.note(&format!(
                    "    ! {error}; retrying in {}",
                    format_duration(Duration::from_millis(*ms))
                ));
            }
            _ => {}
        }
    }

    fn text(&mut self, kind: &EventKind) {
        match kind {
            EventKind::SessionStarted {
                unavailable_tools, ..
            } if !self.quiet && self.notes => {
                for tool in unavailable_tools {
                    self.note(&format!(
                        "note: `{}` is not offered to the model: {}",
                        tool.name, tool.reason
                    ));
                }
            }
            EventKind::StepStarted { .. } => {
                self.end_text_line();
                self.step_printed_text = false;
                self.spin("thinking…");
            }
            EventKind::MessageAppended { text, .. } => {
                self.stop_spinner();
                let _ = write!(self.out, "{text}");
                let _ = self.out.flush();
                if !text.is_empty() {
                    self.out_line_start = text.ends_with('\n');
                    self.step_printed_text = true;
                }
            }
            EventKind::ActionsRequested { actions, .. } if !self.quiet => {
                for action in actions {
                    self.note(&action_line(action));
                }
                self.spin("running tools…");
            }
            EventKind::ActionResult {
                name,
                output,
                is_error,
                duration_ms,
                ..
            } if !self.quiet => self.note(&result_line(name, output, *is_error, *duration_ms)),
            EventKind::StepCompleted { .. } => self.stop_spinner(),
            EventKind::InputRequested { .. } => {
                self.stop_spinner();
                self.end_text_line();
            }
            EventKind::InputResolved { resolution, .. } if !self.quiet => {
                let line = match resolution {
                    Resolution::Answer { text } => {
                        format!("  ↳ answered: {}", first_line(text, 160))
                    }
                    Resolution::Approved { by: Some(by) } => format!("  ↳ approved ({by})"),
                    Resolution::Approved { by: None } => "  ↳ approved".to_string(),
                    Resolution::Denied {
                        reason: Some(reason),
                    } => format!("  ↳ denied: {reason}"),
                    Resolution::Denied { reason: None } => "  ↳ denied".to_string(),
                };
                self.note(&line);
            }
            EventKind::CompactionCompleted {
                tokens_before,
                tokens_after,
                summarised,
                ..
            } if !self.quiet => {
                let how = if *summarised {
                    "summarised older history"
                } else {
                    "shortened old tool results"
                };
                self.note(&format!(
                    "· compacted: {how}, about {} → {} tokens",
                    thousands(*tokens_before),
                    thousands(*tokens_after)
                ));
            }
            EventKind::StepFailed {
                error,
                retry_in_ms: Some(ms),
                ..
            } if !self.quiet => {
                let discarded = if self.step_printed_text {
                    " (the partial reply above is discarded)"
                } else {
                    ""
                };
                self.step_printed_text = false;
                self.note(&format!(
                    "! {error}; retrying in {}{discarded}",
                    format_duration(Duration::from_millis(*ms))
                ));
                self.spin("retrying…");
            }
            _ => {}
        }
    }

    /// Prints the end of the run: the closing line (text), the result object (json).
    pub fn finish(&mut self, outcome: &TurnOutcome) {
        self.stop_spinner();
        match self.mode {
            OutputMode::Json => {
                let mut object = json!({
                    "session_id": self.session_id,
                    "result": outcome.result,
                    "end_reason": outcome.end_reason,
                    "usage": outcome.usage,
                    "steps": outcome.steps,
                });
                if let Some(error) = &outcome.error {
                    object["error"] = Value::String(error.clone());
                }
                if let Some(pending) = &outcome.pending {
                    object["pending"] = serde_json::to_value(pending).unwrap_or(Value::Null);
                }
                let _ = writeln!(self.out, "{object}");
            }
            OutputMode::StreamJson => {}
            OutputMode::Text => {
                if !self.out_line_start {
                    let _ = writeln!(self.out);
                    self.out_line_start = true;
                }
                let _ = self.out.flush();
                if let Some(error) = &outcome.error {
                    let _ = writeln!(self.err, "error: {error}");
                } else if let Some(pending) = &outcome.pending {
                    let text = waiting_text(pending, &self.session_id, &self.command);
                    let _ = write!(self.err, "{text}");
                } else if !self.quiet {
                    let line = closing_line(outcome, self.started.elapsed());
                    let _ = writeln!(self.err, "{line}");
                } else if outcome.end_reason != EndReason::Completed {
                    let _ = writeln!(self.err, "stopped: {}", end_reason_text(outcome));
                }
            }
        }
        let _ = self.out.flush();
        let _ = self.err.flush();
    }

    /// Ends the assistant's current line of text on stdout, if one is open.
    fn end_text_line(&mut self) {
        if !self.out_line_start {
            let _ = writeln!(self.out);
            let _ = self.out.flush();
            self.out_line_start = true;
        }
    }

    /// Reports a failure before any turn ran (bad model, missing key, build errors):
    /// on stderr, and in json mode also as the usual object with `end_reason: "error"`.
    pub fn fail_early(&mut self, message: &str) {
        let _ = writeln!(self.err, "error: {message}");
        if self.mode == OutputMode::Json {
            let object = json!({
                "session_id": null,
                "result": "",
                "end_reason": "error",
                "usage": Usage::default(),
                "steps": 0,
                "error": message,
            });
            let _ = writeln!(self.out, "{object}");
        }
        let _ = self.out.flush();
    }

    fn note(&mut self, line: &str) {
        let spinning = self.spinner.is_some();
        self.stop_spinner();
        self.end_text_line();
        let _ = writeln!(self.err, "{line}");
        if spinning {
            self.spin("working…");
        }
    }

    fn spin(&mut self, message: &str) {
        if !self.spinner_enabled || !self.out_line_start {
            return;
        }
        match &self.spinner {
            Some(spinner) => spinner.set_message(message.to_string()),
            None => {
                let spinner = indicatif::ProgressBar::new_spinner();
                spinner.set_message(message.to_string());
                spinner.enable_steady_tick(Duration::from_millis(100));
                self.spinner = Some(spinner);
            }
        }
    }

    fn stop_spinner(&mut self) {
        if let Some(spinner) = self.spinner.take() {
            spinner.finish_and_clear();
        }
    }
}

/// What a parked turn waits for, and the commands that answer it.
pub fn waiting_text(request: &InputRequest, session_id: &str, command: &str) -> String {
    let resume = format!("{command} --session {session_id}");
    match &request.kind {
        InputKind::Question { question, options } => {
            let mut out = format!(
                "waiting: the agent asks a question (session {session_id}):
  {question}
"
            );
            for (i, option) in options.iter().enumerate() {
                out.push_str(&format!(
                    "    {}. {option}
",
                    i + 1
                ));
            }
            out.push_str(&format!(
                "answer with:
  {resume} --answer \"…\"
"
            ));
            out
        }
        InputKind::Approval => {
            let input = serde_json::to_string_pretty(&request.input).unwrap_or_default();
            let mut out = format!(
                "waiting: `{}` needs your approval (session {session_id}):
",
                request.tool
            );
            for line in input.lines() {
                out.push_str(&format!(
                    "  {line}
"
                ));
            }
            out.push_str(&format!(
                "approve or deny with:
  {resume} --approve
  {resume} --deny --reason \"…\"
"
            ));
            out
        }
    }
}

/// Asks the person at the terminal: questions with numbered options, approvals as y/n.
#[derive(Debug, Clone, Copy)]
pub struct TerminalAsker;

impl crate::harness::Asker for TerminalAsker {
    fn ask<'a>(
        &'a self,
        request: &'a InputRequest,
    ) -> futures_util::future::BoxFuture<'a, Option<Resolution>> {
        let request = request.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || ask_on_terminal(&request))
                .await
                .ok()
                .flatten()
        })
    }
}

fn ask_on_terminal(request: &InputRequest) -> Option<Resolution> {
    let mut err = std::io::stderr();
    let stdin = std::io::stdin();
    match &request.kind {
        InputKind::Question { question, options } => {
            let _ = writeln!(err, "? {question}");
            for (i, option) in options.iter().enumerate() {
                let _ = writeln!(err, "  {}. {option}", i + 1);
            }
            loop {
                let _ = write!(err, "> ");
                let _ = err.flush();
                let mut line = String::new();
                if stdin.read_line(&mut line).ok()? == 0 {
                    return None;
                }
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                let text = line
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| options.get(n.wrapping_sub(1)))
                    .map_or_else(|| line.to_string(), Clone::clone);
                return Some(Resolution::Answer { text });
            }
        }
        InputKind::Approval => {
            let input = serde_json::to_string_pretty(&request.input).unwrap_or_default();
            let _ = writeln!(err, "? `{}` wants to run with:", request.tool);
            for line in input.lines() {
                let _ = writeln!(err, "    {line}");
            }
            loop {
                let _ = write!(err, "  allow it? [y/n] ");
                let _ = err.flush();
                let mut line = String::new();
                if stdin.read_line(&mut line).ok()? == 0 {
                    return None;
                }
                match line.trim().to_lowercase().as_str() {
                    "y" | "yes" => return Some(Resolution::Approved { by: None }),
                    "n" | "no" => return Some(Resolution::Denied { reason: None }),
                    _ => {}
                }
            }
        }
    }
}

/// `→ name {input}`: a tool call.
fn action_line(action: &crate::protocol::Action) -> String {
    match compact_input(&action.input) {
        input if input.is_empty() => format!("→ {}", action.name),
        input => format!("→ {} {input}", action.name),
    }
}

/// `  ← name: 3 lines (12 ms)` or `  ✗ name failed (3 ms): …`: a tool result.
fn result_line(name: &str, output: &str, is_error: bool, duration_ms: u64) -> String {
    let took = format_duration(Duration::from_millis(duration_ms));
    if is_error {
        format!("  ✗ {name} failed ({took}): {}", first_line(output, 160))
    } else {
        format!("  ← {name}: {} ({took})", summary(output))
    }
}

fn compact_input(input: &Value) -> String {
    let text = input.to_string();
    if text == "{}" {
        return String::new();
    }
    crate::text::shorten(&text, 200)
}

fn first_line(text: &str, max: usize) -> String {
    crate::text::shorten(text.lines().next().unwrap_or_default(), max)
}

fn summary(output: &str) -> String {
    let lines = output.lines().count();
    match lines {
        0 => "no output".to_string(),
        1 => format!("\"{}\"", first_line(output, 100)),
        n => format!("{n} lines"),
    }
}

/// `1.2 s`, `340 ms`.
pub fn format_duration(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn usage_text(usage: &Usage) -> String {
    let mut text = format!("{} tokens in", thousands(usage.input_tokens));
    if usage.cache_read_tokens > 0 {
        text.push_str(&format!(" ({} cached)", thousands(usage.cache_read_tokens)));
    }
    text.push_str(&format!(", {} out", thousands(usage.output_tokens)));
    text
}

fn end_reason_text(outcome: &TurnOutcome) -> String {
    match outcome.end_reason {
        EndReason::MaxSteps => {
            format!("the turn reached max_steps ({} model calls)", outcome.steps)
        }
        EndReason::MaxTokens => "a reply reached the output token limit (max_output_tokens)".into(),
        EndReason::Aborted => "interrupted".into(),
        EndReason::MaxInputTokens => {
            "the session reached [limits] max_input_tokens_per_session".into()
        }
        other => other.as_str().into(),
    }
}

/// `completed · 3 steps · 1,234 tokens in (800 cached), 56 out · 2.1 s`.
pub fn closing_line(outcome: &TurnOutcome, elapsed: Duration) -> String {
    let head = match outcome.end_reason {
        EndReason::Completed => "completed".to_string(),
        _ => format!("stopped: {}", end_reason_text(outcome)),
    };
    format!(
        "{head} · {} {} · {} · {}",
        outcome.steps,
        if outcome.steps == 1 { "step" } else { "steps" },
        usage_text(&outcome.usage),
        format_duration(elapsed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Action, Meta};

    fn event(kind: EventKind) -> Event {
        Event {
            kind,
            meta: Meta {
                id: "evt_1".into(),
                at: "2026-01-01T00:00:00.000Z".into(),
                session_id: None,
            },
        }
    }

    fn outcome(end_reason: EndReason) -> TurnOutcome {
        TurnOutcome {
            turn_id: "turn_1".into(),
            end_reason,
            result: "Done.".into(),
            error: None,
            steps: 2,
            usage: Usage {
                input_tokens: 12345,
                output_tokens: 67,
                cache_read_tokens: 10000,
                cache_write_tokens: 0,
            },
            pending: None,
        }
    }

    #[test]
    fn text_mode_streams_text_to_stdout_and_tool_lines_to_stderr() {
        let mut out = Vec::new();
        let mut err = Vec::new();
        {
            let mut console = Console::new(OutputMode::Text, false, false, &mut out, &mut err);
            console.event(&event(EventKind::MessageAppended {
                turn_id: "t".into(),
                step: 1,
                text: "Let me".into(),
            }));
            console.event(&event(EventKind::MessageAppended {
                turn_id: "t".into(),
                step: 1,
                text: " look.".into(),
            }));
            console.event(&event(EventKind::ActionsRequested {
                turn_id: "t".into(),
                step: 1,
                actions: vec![Action {
                    call_id: "c".into(),
                    name: "git_history".into(),
                    input: json!({"limit": 2}),
                }],
            }));
            console.event(&event(EventKind::ActionResult {
                turn_id: "t".into(),
                step: 1,
                call_id: "c".into(),
                name: "git_history".into(),
                output: "a1 one\nb2 two\n".into(),
                is_error: false,
                duration_ms: 12,
            }));
            console.event(&event(EventKind::MessageAppended {
                turn_id: "t".into(),
                step: 2,
                text: "Done.".into(),
            }));
            console.finish(&outcome(EndReason::Completed));
        }
        assert_eq!(String::from_utf8(out).unwrap(), "Let me look.\nDone.\n");
        let err = String::from_utf8(err).unwrap();
        let lines: Vec<&str> = err.lines().collect();
        assert_eq!(lines[0], "→ git_history {\"limit\":2}");
        assert_eq!(lines[1], "  ← git_history: 2 lines (12 ms)");
        assert!(
            lines[2]
                .starts_with("completed · 2 steps · 12,345 tokens in (10,000 cached), 67 out · "),
            "{}",
            lines[2]
        );
    }

    #[test]
    fn json_mode_prints_one_object_at_the_end() {
        let mut out = Vec::new();
        {
            let mut console =
                Console::new(OutputMode::Json, false, false, &mut out, std::io::sink());
            console.event(&event(EventKind::SessionStarted {
                session_id: "ses_1".into(),
                agent: "a".into(),
                model: "m".into(),
                workspace: "/w".into(),
                tools: vec![],
                unavailable_tools: vec![],
            }));
            console.event(&event(EventKind::MessageAppended {
                turn_id: "t".into(),
                step: 1,
                text: "x".into(),
            }));
            console.finish(&outcome(EndReason::MaxSteps));
        }
        let value: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            value,
            json!({
                "session_id": "ses_1",
                "result": "Done.",
                "end_reason": "max_steps",
                "usage": {"input_tokens": 12345, "output_tokens": 67, "cache_read_tokens": 10000, "cache_write_tokens": 0},
                "steps": 2,
            })
        );
    }

    #[test]
    fn closing_lines_say_why_a_turn_stopped() {
        let line = closing_line(&outcome(EndReason::MaxSteps), Duration::from_millis(2500));
        assert_eq!(
            line,
            "stopped: the turn reached max_steps (2 model calls) · 2 steps · 12,345 tokens in (10,000 cached), 67 out · 2.5 s"
        );
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
    }
}
