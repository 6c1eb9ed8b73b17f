//! `--output stream-json`: every event as one NDJSON line, as it happens.

use std::io::Write;

use super::renderer::Renderer;
use crate::protocol::{Event, TurnOutcome};

/// Prints each event as a JSON line; errors before the run go to `err`.
pub struct StreamJsonRenderer<O: Write, E: Write> {
    out: O,
    err: E,
}

impl<O: Write, E: Write> StreamJsonRenderer<O, E> {
    /// A renderer writing events to `out`.
    pub fn new(out: O, err: E) -> Self {
        StreamJsonRenderer { out, err }
    }
}

impl<O: Write, E: Write> Renderer for StreamJsonRenderer<O, E> {
    fn event(&mut self, event: &Event) {
        if let Ok(line) = serde_json::to_string(event) {
            let _ = writeln!(self.out, "{line}");
            let _ = self.out.flush();
        }
    }

    fn finish(&mut self, _outcome: &TurnOutcome) {
        let _ = self.out.flush();
    }

    fn fail_early(&mut self, message: &str) {
        let _ = writeln!(self.err, "error: {message}");
        let _ = self.err.flush();
    }
}
