//! `--output json`: one object when the run ends (the result, usage, the pending request).

use std::io::Write;

use serde_json::{Value, json};

use super::renderer::Renderer;
use crate::protocol::{Event, EventKind, TurnOutcome, Usage};

/// Prints nothing until the end, then one JSON object; an early failure is also said
/// on `err`, for the person watching.
pub struct JsonRenderer<O: Write, E: Write> {
    out: O,
    err: E,
    session_id: Option<String>,
}

impl<O: Write, E: Write> JsonRenderer<O, E> {
    /// A renderer writing the object to `out`.
    pub fn new(out: O, err: E) -> Self {
        JsonRenderer {
            out,
            err,
            session_id: None,
        }
    }
}

impl<O: Write, E: Write> Renderer for JsonRenderer<O, E> {
    fn event(&mut self, event: &Event) {
        if let EventKind::SessionStarted { session_id, .. } = &event.kind
            && event.meta.session_id.is_none()
        {
            self.session_id = Some(session_id.clone());
        }
    }

    fn finish(&mut self, outcome: &TurnOutcome) {
        let mut object = json!({
            "session_id": self.session_id.clone().unwrap_or_default(),
            "result": outcome.result,
            "end_reason": outcome.end_reason,
            "usage": outcome.usage,
            "steps": outcome.steps,
        });
        if !outcome.usage_reported {
            object["usage_reported"] = Value::Bool(false);
        }
        if let Some(error) = &outcome.error {
            object["error"] = Value::String(error.clone());
        }
        if let Some(pending) = &outcome.pending {
            object["pending"] = serde_json::to_value(pending).unwrap_or(Value::Null);
        }
        let _ = writeln!(self.out, "{object}");
        let _ = self.out.flush();
    }

    fn fail_early(&mut self, message: &str) {
        let _ = writeln!(self.err, "error: {message}");
        let object = json!({
            "session_id": null,
            "result": "",
            "end_reason": "error",
            "usage": Usage::default(),
            "steps": 0,
            "error": message,
        });
        let _ = writeln!(self.out, "{object}");
        let _ = self.out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{EndReason, Meta};

    #[test]
    fn one_object_at_the_end() {
        let mut out = Vec::new();
        {
            let mut renderer = JsonRenderer::new(&mut out, std::io::sink());
            renderer.event(&Event {
                kind: EventKind::SessionStarted {
                    session_id: "ses_1".into(),
                    agent: "a".into(),
                    model: "m".into(),
                    workspace: "/w".into(),
                    tools: vec![],
                    unavailable_tools: vec![],
                    deferred_tools: vec![],
                    warnings: vec![],
                },
                meta: Meta {
                    id: "evt_1".into(),
                    at: "2026-01-01T00:00:00.000Z".into(),
                    session_id: None,
                },
            });
            renderer.finish(&TurnOutcome {
                turn_id: "turn_1".into(),
                end_reason: EndReason::MaxSteps,
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
            });
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
}
