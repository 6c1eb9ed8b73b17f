//! The replies of a scripted model: what `scripted:<file.yaml>` and an eval case's
//! `[[reply]]` entries hold (serde types, and the checks serde cannot express).

use serde::Deserialize;
use serde_json::Value;

/// One reply of the script: text and/or tool calls, or an injected error.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    #[serde(default)]
    pub text: String,
    #[serde(default)]
    pub reasoning: String,
    #[serde(default)]
    pub tool_calls: Vec<ScriptedCall>,
    pub usage: Option<ScriptedUsage>,
    /// `stop`, `tool_use` or `max_tokens`; by default `tool_use` when there are tool calls, else `stop`.
    pub finish: Option<String>,
    pub error: Option<ScriptedError>,
}

/// The fields of a reply, as written in a script.
pub const REPLY_FIELDS: &[&str] = &[
    "text",
    "reasoning",
    "tool_calls",
    "usage",
    "finish",
    "error",
];

/// A tool call in a reply.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedCall {
    pub id: Option<String>,
    pub name: String,
    #[serde(default = "empty_object")]
    pub input: Value,
}

/// The values of a reply's `finish`.
pub const FINISH_REASONS: &[&str] = &["stop", "tool_use", "max_tokens"];

/// The fields of a tool call in a reply.
pub const CALL_FIELDS: &[&str] = &["id", "name", "input"];

fn empty_object() -> Value {
    Value::Object(Default::default())
}

/// Token counts a reply reports; missing ones are estimated at 4 characters a token.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedUsage {
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    #[serde(default)]
    pub cache_read_tokens: u64,
    #[serde(default)]
    pub cache_write_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
}

/// An injected failure: the model call fails as an HTTP error with this status would.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    pub status: u16,
    #[serde(default)]
    pub body: String,
    /// Seconds, as a `retry-after` header.
    pub retry_after: Option<f64>,
}

impl Reply {
    /// What is wrong with a reply beyond its shape: an error with text, a status that is
    /// not an HTTP error, a tool input that is not a mapping, an unknown finish reason.
    pub fn check(&self) -> Result<(), String> {
        if let Some(error) = &self.error {
            if !self.text.is_empty() || !self.tool_calls.is_empty() {
                return Err("`error` cannot be combined with `text` or `tool_calls`".into());
            }
            if !(400..600).contains(&error.status) {
                return Err(format!(
                    "error status {} is not an HTTP error status (400–599)",
                    error.status
                ));
            }
        }
        for call in &self.tool_calls {
            if !call.input.is_object() {
                return Err(format!(
                    "the input of tool call `{}` must be a mapping",
                    call.name
                ));
            }
        }
        if let Some(finish) = &self.finish
            && !FINISH_REASONS.contains(&finish.as_str())
        {
            return Err(format!(
                "finish `{finish}` is not one of stop, tool_use, max_tokens"
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_field_lists_are_the_fields_serde_knows() {
        let err = serde_json::from_value::<Reply>(serde_json::json!({"zz": 1}))
            .unwrap_err()
            .to_string();
        for field in REPLY_FIELDS {
            assert!(err.contains(&format!("`{field}`")), "{field}: {err}");
        }
        let err = serde_json::from_value::<ScriptedCall>(serde_json::json!({"zz": 1}))
            .unwrap_err()
            .to_string();
        for field in CALL_FIELDS {
            assert!(err.contains(&format!("`{field}`")), "{field}: {err}");
        }
    }
}
