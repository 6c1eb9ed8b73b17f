//! Showing a run: one [`Renderer`] per output mode, fed the harness's events, plus the
//! terminal asker and the transcript of `eve sessions show`. Nothing below prints.
// This module writes to the terminal (see `src/lib.rs`).
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod asker;
pub mod escape;
mod json;
pub mod lines;
mod renderer;
mod stream_json;
mod text;
pub mod transcript;

use std::io::Write;

pub use asker::TerminalAsker;
pub use json::JsonRenderer;
pub use renderer::Renderer;
pub use stream_json::StreamJsonRenderer;
pub use text::{Options, TextRenderer};

/// How `eve run` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputMode {
    Text,
    Json,
    StreamJson,
}

/// Whether stderr gets colour: a terminal, and `NO_COLOR` unset or empty (as build
/// diagnostics decide).
pub fn stderr_color(err_tty: bool) -> bool {
    err_tty && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
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
