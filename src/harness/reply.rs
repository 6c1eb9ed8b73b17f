//! A model's reply, built from its stream events by a pure fold; and the ids of its tool
//! calls made unique before anything runs.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::Usage;
use crate::protocol::message::REASONING_KEPT;
use crate::providers::{FinishReason, StreamEvent};

/// Why a model call produced no reply.
pub enum CallFailure {
    /// The turn was interrupted; `partial` is the text streamed so far.
    Aborted { partial: String },
    /// The call failed for good (not retryable, or out of retries).
    Failed(String),
}

/// A hosted tool call the provider ran within the reply (shown, never executed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerCall {
    pub id: String,
    pub name: String,
    pub input: Value,
    /// Its result, once the provider sent one: the summary and whether it failed.
    pub result: Option<(String, bool)>,
}

/// A tool call as streamed: its arguments are raw JSON text until the reply is complete.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RawCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// What one model call produced (journaled as JSON by a durable engine).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reply {
    pub text: String,
    pub calls: Vec<RawCall>,
    pub finish: Option<FinishReason>,
    /// `None` when the provider reported no token counts.
    pub usage: Option<Usage>,
    pub server_calls: Vec<ServerCall>,
    /// The reply in the provider's wire format, when it needs it back unchanged.
    pub opaque: Option<Vec<Value>>,
    /// The reasoning streamed before the reply, its first [`REASONING_KEPT`] bytes.
    pub reasoning: String,
}

impl Reply {
    /// Folds one stream event into the reply.
    pub fn apply(&mut self, event: StreamEvent) {
        match event {
            StreamEvent::TextDelta(text) => self.text.push_str(&text),
            StreamEvent::ReasoningDelta(text) => {
                let mut end = REASONING_KEPT
                    .saturating_sub(self.reasoning.len())
                    .min(text.len());
                while !text.is_char_boundary(end) {
                    end -= 1;
                }
                self.reasoning.push_str(&text[..end]);
            }
            StreamEvent::ToolCallEnd { .. } => {}
            StreamEvent::ToolCallStart { index, id, name } => {
                if self.calls.len() <= index {
                    self.calls.resize_with(index + 1, RawCall::default);
                }
                self.calls[index].id = id;
                self.calls[index].name = name;
            }
            StreamEvent::ToolCallArgsDelta { index, delta } => {
                if let Some(call) = self.calls.get_mut(index) {
                    call.arguments.push_str(&delta);
                }
            }
            StreamEvent::Usage(usage) => self.usage = Some(usage),
            StreamEvent::Finish(reason) => self.finish = Some(reason),
            StreamEvent::ServerToolCall { id, name, input } => self.server_calls.push(ServerCall {
                id,
                name,
                input,
                result: None,
            }),
            StreamEvent::ServerToolResult {
                call_id,
                output,
                is_error,
            } => {
                if let Some(call) = self.server_calls.iter_mut().find(|c| c.id == call_id) {
                    call.result = Some((output, is_error));
                }
            }
            StreamEvent::OpaqueReply(blocks) => self.opaque = Some(blocks),
        }
    }

    /// Why the model stopped: as reported, else judged from the tool calls.
    pub fn finish_reason(&self) -> FinishReason {
        self.finish.clone().unwrap_or(if self.calls.is_empty() {
            FinishReason::Stop
        } else {
            FinishReason::ToolUse
        })
    }

    /// Gives every tool call an id that no other call of this reply or of the session
    /// (`used`) has: an empty or repeated id from the provider is replaced before any
    /// call runs, so one decision, one result, one `tool_result` answers one call.
    /// The new ids are added to `used`; the opaque reply is rewritten to match.
    pub fn make_ids_unique(&mut self, used: &mut HashSet<String>, new_id: impl Fn() -> String) {
        let mut renamed = Vec::new();
        for (position, call) in self.calls.iter_mut().enumerate() {
            if call.id.is_empty() || used.contains(&call.id) {
                let mut id = new_id();
                while used.contains(&id) {
                    id = new_id();
                }
                renamed.push((position, id.clone()));
                call.id = id;
            }
            used.insert(call.id.clone());
        }
        if let Some(blocks) = &mut self.opaque {
            crate::providers::event::rename_kept_calls(blocks, &renamed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn reply_of(events: Vec<StreamEvent>) -> Reply {
        let mut reply = Reply::default();
        for event in events {
            reply.apply(event);
        }
        reply
    }

    #[test]
    fn reasoning_is_kept_up_to_its_cap_on_a_character_boundary() {
        let reply = reply_of(vec![
            StreamEvent::ReasoningDelta("Think".into()),
            StreamEvent::ReasoningDelta("é".repeat(REASONING_KEPT)),
            StreamEvent::ReasoningDelta("éé".into()),
            StreamEvent::TextDelta("Done.".into()),
        ]);
        assert!(reply.reasoning.starts_with("Thinké"));
        // 5 bytes of `Think`, then whole two-byte characters: one byte is left over.
        assert_eq!(reply.reasoning.len(), REASONING_KEPT - 1);
        assert_eq!(reply.text, "Done.");
    }

    fn start(index: usize, id: &str, name: &str) -> StreamEvent {
        StreamEvent::ToolCallStart {
            index,
            id: id.into(),
            name: name.into(),
        }
    }

    fn args(index: usize, delta: &str) -> StreamEvent {
        StreamEvent::ToolCallArgsDelta {
            index,
            delta: delta.into(),
        }
    }

    #[test]
    fn the_reply_is_the_fold_of_its_events() {
        let reply = reply_of(vec![
            StreamEvent::TextDelta("Let me ".into()),
            StreamEvent::ReasoningDelta("hmm".into()),
            StreamEvent::TextDelta("look.".into()),
            start(0, "a", "read_file"),
            args(0, "{\"path\":"),
            start(1, "b", "grep"),
            args(1, "{}"),
            args(0, "\"x\"}"),
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::Usage(Usage {
                input_tokens: 5,
                ..Usage::default()
            }),
            StreamEvent::Finish(FinishReason::ToolUse),
        ]);
        assert_eq!(reply.text, "Let me look.");
        assert_eq!(
            reply.calls,
            vec![
                RawCall {
                    id: "a".into(),
                    name: "read_file".into(),
                    arguments: "{\"path\":\"x\"}".into()
                },
                RawCall {
                    id: "b".into(),
                    name: "grep".into(),
                    arguments: "{}".into()
                },
            ]
        );
        assert_eq!(reply.usage.as_ref().map(|u| u.input_tokens), Some(5));
        assert_eq!(reply.finish_reason(), FinishReason::ToolUse);
        assert_eq!(reply_of(vec![]).usage, None);
        assert_eq!(reply_of(vec![]).finish_reason(), FinishReason::Stop);
    }

    #[test]
    fn empty_repeated_and_reused_ids_are_replaced_before_anything_runs() {
        let mut reply = reply_of(vec![
            start(0, "dup", "deploy"),
            start(1, "dup", "deploy"),
            start(2, "", "deploy"),
            start(3, "old", "deploy"),
            start(4, "fresh", "deploy"),
        ]);
        reply.opaque = Some(vec![
            json!({"type": "text", "text": "x"}),
            json!({"type": "tool_use", "id": "dup"}),
            json!({"type": "tool_use", "id": "dup"}),
            json!({"type": "server_tool_use", "id": "srv"}),
            json!({"type": "tool_use", "id": ""}),
            json!({"type": "tool_use", "id": "old"}),
            json!({"type": "tool_use", "id": "fresh"}),
        ]);
        let mut used = HashSet::from(["old".to_string()]);
        let counter = std::cell::Cell::new(0);
        reply.make_ids_unique(&mut used, || {
            counter.set(counter.get() + 1);
            format!("call_{}", counter.get())
        });
        let ids: Vec<&str> = reply.calls.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["dup", "call_1", "call_2", "call_3", "fresh"]);
        let wire: Vec<&str> = reply
            .opaque
            .as_ref()
            .unwrap()
            .iter()
            .filter(|b| b["type"] == "tool_use")
            .map(|b| b["id"].as_str().unwrap())
            .collect();
        assert_eq!(wire, ids);
        assert_eq!(used.len(), 6);
    }
}
