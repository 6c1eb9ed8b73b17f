//! Showing a run: one [`Renderer`] per output mode, fed the harness's events, plus the
//! terminal asker and the transcript of `eve sessions show`. Nothing below prints.

mod asker;
pub mod escape;
mod json;
pub mod lines;
mod stream_json;
mod text;
pub mod transcript;

use std::io::Write;

use crate::protocol::{Event, TurnOutcome};

pub use asker::TerminalAsker;
pub use json::JsonRenderer;
pub use stream_json::StreamJsonRenderer;
pub use text::TextRenderer;

/// How `eve run` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    Text,
    Json,
    StreamJson,
}

/// Turns a run's events into output.
pub trait Renderer {
    /// Shows one event as it happens.
    fn event(&mut self, event: &Event);
    /// Shows how the turn ended.
    fn finish(&mut self, outcome: &TurnOutcome);
    /// Reports a failure before any turn ran (bad model, missing key, build errors).
    fn fail_early(&mut self, message: &str);
}

/// What the text renderer needs to know besides its outputs.
#[derive(Debug, Clone)]
pub struct Options {
    /// `--quiet`: only the answer and errors.
    pub quiet: bool,
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

/// Whether stderr gets colour: a terminal, and `NO_COLOR` unset or empty (as build
/// diagnostics decide).
pub fn stderr_color(err_tty: bool) -> bool {
    err_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

impl Default for Options {
    fn default() -> Self {
        Options {
            quiet: false,
            spinner: false,
            command: "eve run".into(),
            notes: true,
            out_tty: false,
            err_tty: false,
            color: false,
        }
    }
}

/// The renderer for `mode`: the answer or the JSON to `out`, the rest to `err`.
pub fn renderer<'w, O: Write + 'w, E: Write + 'w>(
    mode: OutputMode,
    options: &Options,
    out: O,
    err: E,
) -> Box<dyn Renderer + 'w> {
    match mode {
        OutputMode::Text => Box::new(TextRenderer::new(options, out, err)),
        OutputMode::Json => Box::new(JsonRenderer::new(out, err)),
        OutputMode::StreamJson => Box::new(StreamJsonRenderer::new(out, err)),
    }
}
