//! `[telemetry]`: what the agent's exported spans carry (docs/telemetry.md). Where they
//! go is the process's `OTEL_*` environment, not the agent's.

use super::super::diagnostic::code;
use super::super::toml_reader::TableReader;
use crate::manifest::Agent;

/// The most attributes `[telemetry] attributes` may add to each span.
const MAX_ATTRIBUTES: usize = 64;

/// Reads `[telemetry]` into `agent`.
pub fn read(root: &mut TableReader<'_>, agent: &mut Agent) {
    let Some(mut table) = root.table("telemetry") else {
        return;
    };
    let toml = root.file();
    if let Some(capture) = table.bool("capture_content") {
        agent.telemetry.capture_content = capture.value;
    }
    if let Some(mut attributes) = table.table("attributes") {
        for (name, item) in attributes.entries() {
            match item.as_str() {
                Some(value) if !name.trim().is_empty() => {
                    agent
                        .telemetry
                        .attributes
                        .insert(name.to_string(), value.to_string());
                }
                Some(_) => toml.error(
                    code::INVALID_VALUE,
                    "a telemetry attribute needs a name".to_string(),
                    item.span(),
                ),
                None => toml.error(
                    code::WRONG_TYPE,
                    format!("telemetry attribute `{name}` must be a string"),
                    item.span(),
                ),
            }
        }
        if agent.telemetry.attributes.len() > MAX_ATTRIBUTES {
            toml.error(
                code::INVALID_VALUE,
                format!(
                    "`[telemetry] attributes` has {} entries; at most {MAX_ATTRIBUTES} are exported",
                    agent.telemetry.attributes.len()
                ),
                root.key_span("telemetry"),
            );
        }
        attributes.finish();
    }
    table.finish();
}
