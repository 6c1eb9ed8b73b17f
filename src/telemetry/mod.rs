//! OpenTelemetry export (docs/telemetry.md): a session's events become GenAI spans and
//! metrics, sent over OTLP/HTTP by the OpenTelemetry SDK's batch processor, on threads
//! of its own. Off unless `OTEL_EXPORTER_OTLP_ENDPOINT` (or a signal's endpoint) is set:
//! then no session has an observer and nothing of this module runs.

mod pipeline;
mod spans;

use std::collections::HashMap;
use std::sync::Arc;

use opentelemetry::KeyValue;
use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{SpanContext, TraceContextExt as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;

pub use pipeline::{Config, parse_headers, shutdown};
pub use spans::MAX_CONTENT;

use crate::manifest::Manifest;
use crate::protocol::Observer;

/// What a session's observer needs to know of it.
#[derive(Debug, Clone, Copy)]
pub struct Session<'a> {
    pub manifest: &'a Manifest,
    /// The model reference the session runs on.
    pub model: &'a str,
    /// The caller's W3C `traceparent` (`TRACEPARENT`, an HTTP request's header).
    pub traceparent: Option<&'a str>,
    /// Variables whose values are masked in captured content (the provider keys).
    pub secret_variables: &'a [String],
}

/// The observer that exports `session`'s spans, or `None` when telemetry is off. The
/// lines are for the person: the pipeline's warnings the first time, a `traceparent`
/// that is not one.
pub fn observer(session: Session<'_>) -> (Option<Arc<dyn Observer>>, Vec<String>) {
    let (pipeline, mut warnings) = pipeline::get();
    let Some(pipeline) = pipeline else {
        return (None, warnings);
    };
    let parent = match session.traceparent.map(parse_traceparent) {
        Some(Some(parent)) => Some(parent),
        Some(None) => {
            warnings.push(
                "telemetry: the traceparent is not a W3C trace context (`00-<32 hex>-<16 hex>-<2 hex>`): the turn starts a trace of its own".into(),
            );
            None
        }
        None => None,
    };
    let telemetry = &session.manifest.agent.telemetry;
    let secrets = session
        .secret_variables
        .iter()
        .filter_map(|name| crate::secrets::var(name))
        .filter(|value| value.chars().count() >= crate::providers::redact::MIN_SECRET_CHARS)
        .collect();
    let options = spans::Options {
        agent: session.manifest.agent.name.clone(),
        model: session.model.to_string(),
        capture_content: telemetry.capture_content,
        attributes: telemetry
            .attributes
            .iter()
            .map(|(k, v)| KeyValue::new(k.clone(), v.clone()))
            .collect(),
        parent,
        secrets,
    };
    (
        Some(Arc::new(spans::SessionSpans::new(pipeline, options))),
        warnings,
    )
}

/// `TRACEPARENT` from the environment, as CI systems pass a trace context on.
pub fn traceparent_from_env() -> Option<String> {
    std::env::var("TRACEPARENT")
        .ok()
        .filter(|v| !v.trim().is_empty())
}

/// The span a W3C `traceparent` names, if it is one.
pub fn parse_traceparent(traceparent: &str) -> Option<SpanContext> {
    let carrier = HashMap::from([("traceparent".to_string(), traceparent.trim().to_string())]);
    let context = TraceContextPropagator::new().extract(&carrier);
    let span = context.span().span_context().clone();
    span.is_valid().then_some(span)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_traceparent_is_read_by_the_w3c_rules() {
        let span = parse_traceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
            .expect("a valid traceparent");
        assert_eq!(
            span.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert!(span.is_remote() && span.is_sampled());
        for bad in [
            "",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "garbage",
        ] {
            assert!(parse_traceparent(bad).is_none(), "{bad}");
        }
    }
}
