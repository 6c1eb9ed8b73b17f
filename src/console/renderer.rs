//! What every output mode of `eve run` is: a renderer fed the harness's events.

use crate::protocol::{Event, TurnOutcome};

/// Turns a run's events into output.
pub trait Renderer {
    /// Shows one event as it happens.
    fn event(&mut self, event: &Event);
    /// Shows how the turn ended.
    fn finish(&mut self, outcome: &TurnOutcome);
    /// Reports a failure before any turn ran (bad model, missing key, build errors).
    fn fail_early(&mut self, message: &str);
}
