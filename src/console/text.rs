//! `--output text`: a run shown to a person. The answer streams to `out`; tool calls,
//! results and notes go to `err`; both escaped when they are terminals.

use std::io::Write;
use std::time::{Duration, Instant};

use super::escape::for_terminal;
use super::lines::{
    action_line, closing_line, end_reason_text, first_line, format_duration, hook_line,
    reasoning_block, result_line, thousands, waiting_text,
};
use super::renderer::Renderer;
use crate::protocol::{EndReason, Event, EventKind, Resolution, TurnOutcome, Unavailable};

/// What the text renderer needs to know besides its outputs.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--quiet`: only the answer and errors.
    pub quiet: bool,
    /// `--hide-reasoning`: the model's reasoning is not shown.
    pub hide_reasoning: bool,
    /// Show a spinner while the model works.
    pub spinner: bool,
    /// The command that runs this agent (`eve run my-agent`), shown in hints.
    pub command: String,
    /// Note the tools that are not offered (once per `eve dev` is enough).
    pub notes: bool,
    /// Whether stdout and stderr are terminals (control characters are then escaped).
    pub out_tty: bool,
    pub err_tty: bool,
    /// Colour the lines on stderr (a terminal, and `NO_COLOR` unset or empty): tool
    /// calls, results, warnings, the closing line. The model's text stays uncoloured.
    pub color: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            quiet: false,
            hide_reasoning: false,
            spinner: false,
            command: "eve run".into(),
            notes: true,
            out_tty: false,
            err_tty: false,
            color: false,
        }
    }
}

/// Turns events into text for a person.
pub struct TextRenderer<O: Write, E: Write> {
    quiet: bool,
    /// Not `--quiet` nor `--hide-reasoning`.
    show_reasoning: bool,
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
    /// Whether `out` / `err` are terminals, where control characters are escaped.
    out_tty: bool,
    err_tty: bool,
    color: bool,
    /// The model's reasoning of this step so far, shown on `err` when its reply or its
    /// tool calls begin (a stream of small pieces is one block, not a line each).
    reasoning: String,
}

/// The most lines of a step's reasoning shown; the rest is counted.
const REASONING_LINES: usize = 12;
/// The most of a step's reasoning kept to show, in bytes.
const REASONING_BYTES: usize = 16 * 1024;

/// How a line on stderr is coloured (when colour is on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tone {
    Plain,
    /// A tool call (`→ …`).
    Call,
    /// A tool's result (`  ← …`).
    Result,
    /// A failed call, an error, a turn that did not complete.
    Failed,
    Warning,
    /// A turn that completed.
    Done,
}

impl Tone {
    fn code(self) -> Option<&'static str> {
        match self {
            Tone::Plain => None,
            Tone::Call => Some("36"),
            Tone::Result => Some("2"),
            Tone::Failed => Some("31"),
            Tone::Warning => Some("33"),
            Tone::Done => Some("32"),
        }
    }
}

impl<O: Write, E: Write> TextRenderer<O, E> {
    /// A renderer writing the answer to `out` and the rest to `err`.
    pub fn new(options: &Options, out: O, err: E) -> Self {
        TextRenderer {
            quiet: options.quiet,
            show_reasoning: !options.quiet && !options.hide_reasoning,
            out,
            err,
            out_line_start: true,
            spinner: None,
            spinner_enabled: options.spinner && !options.quiet,
            started: Instant::now(),
            session_id: String::new(),
            step_printed_text: false,
            command: options.command.clone(),
            notes: options.notes,
            out_tty: options.out_tty,
            err_tty: options.err_tty,
            color: options.color,
            reasoning: String::new(),
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
                    self.note(&format!("  {}", action_line(&action.name, &action.input)));
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
                unavailable_tools,
                warnings,
                ..
            } if !self.quiet => self.started(warnings, unavailable_tools),
            EventKind::ToolsChanged {
                connection,
                added,
                removed,
                ..
            } if !self.quiet => {
                let mut parts: Vec<String> = added.iter().map(|n| format!("+{n}")).collect();
                parts.extend(removed.iter().map(|n| format!("-{n}")));
                self.note(&format!(
                    "· connection `{connection}` changed its tools: {}",
                    parts.join(" ")
                ));
            }
            EventKind::StepStarted { .. } => {
                self.end_text_line();
                self.step_printed_text = false;
                self.reasoning.clear();
                self.spin("thinking…");
            }
            EventKind::ReasoningAppended { text, .. }
                if self.show_reasoning && self.reasoning.len() < REASONING_BYTES =>
            {
                self.reasoning.push_str(text);
            }
            EventKind::MessageAppended { text, .. } => {
                self.show_reasoning();
                self.message(text);
            }
            EventKind::ActionsRequested { actions, .. } if !self.quiet => {
                self.show_reasoning();
                for action in actions {
                    self.note_in(Tone::Call, &action_line(&action.name, &action.input));
                }
                self.spin("running tools…");
            }
            EventKind::ActionResult {
                name,
                output,
                is_error,
                duration_ms,
                ..
            } if !self.quiet => self.note_in(
                if *is_error {
                    Tone::Failed
                } else {
                    Tone::Result
                },
                &result_line(name, output, *is_error, *duration_ms),
            ),
            EventKind::HookCompleted {
                hook,
                decision,
                reason,
                failed,
                updated_input,
                ..
            } if !self.quiet => {
                let rewrote = updated_input.is_some();
                if let Some(line) = hook_line(hook, decision, reason.as_deref(), *failed, rewrote) {
                    let refused = *failed || decision == "deny" || decision == "block";
                    self.note_in(if refused { Tone::Failed } else { Tone::Result }, &line);
                }
            }
            EventKind::StepCompleted { .. } => {
                self.show_reasoning();
                self.stop_spinner();
            }
            EventKind::InputRequested { .. } => {
                self.stop_spinner();
                self.end_text_line();
            }
            EventKind::InputResolved { resolution, .. } if !self.quiet => {
                self.note(&resolved_line(resolution));
            }
            EventKind::CompactionCompleted {
                tokens_before,
                tokens_after,
                summarised,
                ..
            } if !self.quiet => {
                self.note(&compacted_line(*tokens_before, *tokens_after, *summarised));
            }
            EventKind::StepFailed {
                error,
                retry_in_ms: Some(ms),
                ..
            } if !self.quiet => self.retrying(error, *ms),
            _ => {}
        }
    }

    /// The build's warnings and, when asked, the tools the model is not offered.
    fn started(&mut self, warnings: &[String], unavailable_tools: &[Unavailable]) {
        for warning in warnings {
            self.note_in(Tone::Warning, &format!("warning: {warning}"));
        }
        if self.notes {
            for tool in unavailable_tools {
                self.note(&format!(
                    "note: `{}` is not offered to the model: {}",
                    tool.name, tool.reason
                ));
            }
        }
    }

    /// The step's reasoning so far, once, dim on `err` (`✻ ` then `│ ` before each
    /// line; at most [`REASONING_LINES`] lines, the rest counted): never on `out`, which
    /// holds the answer alone.
    fn show_reasoning(&mut self) {
        let reasoning = std::mem::take(&mut self.reasoning);
        if let Some(block) = reasoning_block(&reasoning, REASONING_LINES) {
            self.note_in(Tone::Result, &block);
        }
    }

    /// A piece of the model's reply, to `out`.
    fn message(&mut self, text: &str) {
        self.stop_spinner();
        let shown = if self.out_tty {
            for_terminal(text)
        } else {
            std::borrow::Cow::Borrowed(text)
        };
        let _ = write!(self.out, "{shown}");
        let _ = self.out.flush();
        if !text.is_empty() {
            self.out_line_start = text.ends_with('\n');
            self.step_printed_text = true;
        }
    }

    /// A step failed and is retried in `ms`: what it printed is discarded.
    fn retrying(&mut self, error: &str, ms: u64) {
        let discarded = if self.step_printed_text {
            " (the partial reply above is discarded)"
        } else {
            ""
        };
        self.step_printed_text = false;
        self.reasoning.clear();
        self.note_in(
            Tone::Warning,
            &format!(
                "! {error}; retrying in {}{discarded}",
                format_duration(Duration::from_millis(ms))
            ),
        );
        self.spin("retrying…");
    }

    fn finish_text(&mut self, outcome: &TurnOutcome) {
        self.stop_spinner();
        if !self.out_line_start {
            let _ = writeln!(self.out);
            self.out_line_start = true;
        }
        let _ = self.out.flush();
        if let Some(error) = &outcome.error {
            let line = format!("error: {error}");
            self.write_err_in(Tone::Failed, &line);
        } else if let Some(pending) = &outcome.pending {
            let text = waiting_text(pending, &self.session_id, &self.command);
            self.write_err_in(Tone::Warning, text.trim_end());
        } else if !self.quiet {
            let line = closing_line(outcome, self.started.elapsed());
            let tone = if outcome.end_reason == EndReason::Completed {
                Tone::Done
            } else {
                Tone::Failed
            };
            self.write_err_in(tone, &line);
        } else if outcome.end_reason != EndReason::Completed {
            let line = format!("stopped: {}", end_reason_text(outcome));
            self.write_err_in(Tone::Failed, &line);
        }
        let _ = self.out.flush();
        let _ = self.err.flush();
    }

    /// One or more lines on `err`, escaped when it is a terminal.
    fn write_err(&mut self, text: &str) {
        self.write_err_in(Tone::Plain, text);
    }

    /// [`Self::write_err`], coloured by `tone` when colour is on. The colour wraps the
    /// escaped text: what a tool or the model wrote can never open or close it.
    fn write_err_in(&mut self, tone: Tone, text: &str) {
        let shown = if self.err_tty {
            for_terminal(text)
        } else {
            std::borrow::Cow::Borrowed(text)
        };
        match tone.code().filter(|_| self.color) {
            Some(code) => {
                for line in shown.lines() {
                    let _ = writeln!(self.err, "\x1b[{code}m{line}\x1b[0m");
                }
            }
            None => {
                let _ = writeln!(self.err, "{shown}");
            }
        }
    }

    /// Ends the assistant's current line of text on stdout, if one is open.
    fn end_text_line(&mut self) {
        if !self.out_line_start {
            let _ = writeln!(self.out);
            let _ = self.out.flush();
            self.out_line_start = true;
        }
    }

    fn note(&mut self, line: &str) {
        self.note_in(Tone::Plain, line);
    }

    fn note_in(&mut self, tone: Tone, line: &str) {
        let spinning = self.spinner.is_some();
        self.stop_spinner();
        self.end_text_line();
        self.write_err_in(tone, line);
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

/// How a question or an approval was settled, under its request.
fn resolved_line(resolution: &Resolution) -> String {
    match resolution {
        Resolution::Answer { text } => {
            format!("  ↳ answered: {}", first_line(text, 160))
        }
        Resolution::Approved { by: Some(by) } => format!("  ↳ approved ({by})"),
        Resolution::Approved { by: None } => "  ↳ approved".to_string(),
        Resolution::Denied {
            reason: Some(reason),
        } => format!("  ↳ denied: {reason}"),
        Resolution::Denied { reason: None } => "  ↳ denied".to_string(),
    }
}

/// What a compaction did, and the history's size before and after.
fn compacted_line(tokens_before: u64, tokens_after: u64, summarised: bool) -> String {
    let how = if summarised {
        "summarised older history"
    } else {
        "shortened old tool results"
    };
    format!(
        "· compacted: {how}, about {} → {} tokens",
        thousands(tokens_before),
        thousands(tokens_after)
    )
}

impl<O: Write, E: Write> Renderer for TextRenderer<O, E> {
    fn event(&mut self, event: &Event) {
        if let EventKind::SessionStarted { session_id, .. } = &event.kind
            && event.meta.session_id.is_none()
        {
            self.session_id = session_id.clone();
        }
        if event.meta.session_id.is_some() {
            self.child_text(&event.kind);
        } else {
            self.text(&event.kind);
        }
    }

    fn finish(&mut self, outcome: &TurnOutcome) {
        self.finish_text(outcome);
    }

    fn fail_early(&mut self, message: &str) {
        let line = format!("error: {message}");
        self.write_err(&line);
        let _ = self.err.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Action, Meta, Usage};
    use serde_json::json;

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
                reasoning_tokens: 0,
            },
            usage_reported: true,
            pending: None,
        }
    }

    #[test]
    fn reasoning_shows_once_a_step_on_stderr_before_the_reply_and_never_on_stdout() {
        let reasoning = |text: &str| {
            event(EventKind::ReasoningAppended {
                turn_id: "t".into(),
                step: 1,
                text: text.into(),
            })
        };
        let render = |quiet: bool, pieces: &[&str]| {
            let (mut out, mut err) = (Vec::new(), Vec::new());
            {
                let options = Options {
                    quiet,
                    err_tty: true,
                    ..Options::default()
                };
                let mut console = TextRenderer::new(&options, &mut out, &mut err);
                for piece in pieces {
                    console.event(&reasoning(piece));
                }
                for text in ["The answer", "."] {
                    console.event(&event(EventKind::MessageAppended {
                        turn_id: "t".into(),
                        step: 1,
                        text: text.into(),
                    }));
                }
            }
            (
                String::from_utf8(out).unwrap(),
                String::from_utf8(err).unwrap(),
            )
        };
        let (out, err) = render(false, &["The user", " wants X.\n\nCheck", " Y\u{1b}[2J."]);
        assert_eq!(out, "The answer.");
        assert_eq!(
            err, "✻ The user wants X.\n│ Check Y\\u{1b}[2J.\n",
            "one block, escaped"
        );
        let (out, err) = render(true, &["hidden"]);
        assert_eq!((out.as_str(), err.as_str()), ("The answer.", ""));
        let long: Vec<String> = (1..=20).map(|i| format!("line {i}\n")).collect();
        let long: Vec<&str> = long.iter().map(String::as_str).collect();
        let (_, err) = render(false, &long);
        assert_eq!(err.lines().count(), REASONING_LINES + 1);
        assert!(err.ends_with("│ … 8 more lines of reasoning\n"), "{err}");
    }

    #[test]
    fn text_mode_streams_text_to_stdout_and_tool_lines_to_stderr() {
        let mut out = Vec::new();
        let mut err = Vec::new();
        {
            let mut console = TextRenderer::new(&Options::default(), &mut out, &mut err);
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
                connection: None,
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
    fn with_colour_tool_lines_are_coloured_around_their_escaped_text_and_the_answer_is_not() {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let options = Options {
            out_tty: true,
            err_tty: true,
            color: true,
            ..Options::default()
        };
        {
            let mut console = TextRenderer::new(&options, &mut out, &mut err);
            console.event(&event(EventKind::MessageAppended {
                turn_id: "t".into(),
                step: 1,
                text: "plain answer".into(),
            }));
            console.event(&event(EventKind::ActionResult {
                turn_id: "t".into(),
                step: 1,
                call_id: "c".into(),
                name: "bash".into(),
                output: "boom\u{1b}[0m".into(),
                is_error: true,
                duration_ms: 1,
                connection: None,
            }));
        }
        assert_eq!(String::from_utf8(out).unwrap(), "plain answer\n");
        let err = String::from_utf8(err).unwrap();
        assert!(err.starts_with("\u{1b}[31m  ✗ bash failed"), "{err:?}");
        assert!(err.trim_end().ends_with("\u{1b}[0m"), "{err:?}");
        // The tool's own reset is escaped, not sent: one reset, at the end.
        assert_eq!(err.matches('\u{1b}').count(), 2, "{err:?}");
        // Without colour (NO_COLOR, or a pipe), no escape at all.
        let mut plain = Vec::new();
        {
            let options = Options {
                err_tty: true,
                ..Options::default()
            };
            let mut console = TextRenderer::new(&options, std::io::sink(), &mut plain);
            console.event(&event(EventKind::ActionResult {
                turn_id: "t".into(),
                step: 1,
                call_id: "c".into(),
                name: "bash".into(),
                output: "ok".into(),
                is_error: false,
                duration_ms: 1,
                connection: None,
            }));
        }
        assert!(!String::from_utf8(plain).unwrap().contains('\u{1b}'));
    }

    #[test]
    fn on_a_terminal_model_text_and_tool_lines_cannot_drive_it() {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let options = Options {
            out_tty: true,
            err_tty: true,
            ..Options::default()
        };
        {
            let mut console = TextRenderer::new(&options, &mut out, &mut err);
            console.event(&event(EventKind::MessageAppended {
                turn_id: "t".into(),
                step: 1,
                text: "hi\u{1b}]52;c;Y3VybA==\u{7}\u{1b}[2J".into(),
            }));
            console.event(&event(EventKind::ActionResult {
                turn_id: "t".into(),
                step: 1,
                call_id: "c".into(),
                name: "bash".into(),
                output: "x\u{202e}gnigats\u{1b}[31m".into(),
                is_error: true,
                duration_ms: 1,
                connection: None,
            }));
        }
        let out = String::from_utf8(out).unwrap();
        let err = String::from_utf8(err).unwrap();
        assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
        assert!(out.starts_with("hi\\u{1b}]52;c;"), "{out:?}");
        assert!(
            !err.contains('\u{1b}') && !err.contains('\u{202e}'),
            "{err:?}"
        );
        assert!(err.contains("\\u{202e}gnigats"), "{err:?}");

        // Piped output is the model's text as it is.
        let mut piped = Vec::new();
        {
            let mut console = TextRenderer::new(&Options::default(), &mut piped, std::io::sink());
            console.event(&event(EventKind::MessageAppended {
                turn_id: "t".into(),
                step: 1,
                text: "raw\u{1b}[1m".into(),
            }));
        }
        assert_eq!(String::from_utf8(piped).unwrap(), "raw\u{1b}[1m");
    }
}
