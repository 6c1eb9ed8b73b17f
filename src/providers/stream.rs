//! From a streamed HTTP body to provider-neutral events: SSE framing, the API's decoder, an idle timeout.

use std::collections::VecDeque;
use std::fmt::Display;
use std::pin::Pin;
use std::time::Duration;

use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};

use super::anthropic::AnthropicDecoder;
use super::error::ProviderError;
use super::event::{DecodeError, StreamEvent};
use super::openai::OpenAiDecoder;

/// What a provider yields for one model call.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// The decoder of one wire protocol.
#[derive(Debug)]
pub enum WireDecoder {
    Anthropic(AnthropicDecoder),
    OpenAi(OpenAiDecoder),
}

impl WireDecoder {
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        match self {
            WireDecoder::Anthropic(d) => d.on_event(event, data),
            // Chat Completions streams carry no event names: everything is `data:`.
            WireDecoder::OpenAi(d) => d.on_data(data),
        }
    }

    fn finish(self) -> Result<Vec<StreamEvent>, DecodeError> {
        match self {
            WireDecoder::Anthropic(d) => d.finish().map(|()| Vec::new()),
            WireDecoder::OpenAi(d) => d.finish(),
        }
    }
}

struct State<S> {
    sse: Pin<Box<S>>,
    decoder: Option<WireDecoder>,
    pending: VecDeque<StreamEvent>,
    provider: String,
    idle: Duration,
}

/// Decodes an SSE body (any stream of byte chunks) with `decoder`. Each wait for the
/// next SSE event is bounded by `idle`; after the first error the stream ends.
pub fn decode_sse<S, B, E>(
    body: S,
    decoder: WireDecoder,
    provider: &str,
    idle: Duration,
) -> EventStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Display + Send + 'static,
{
    let state = State {
        sse: Box::pin(body.eventsource()),
        decoder: Some(decoder),
        pending: VecDeque::new(),
        provider: provider.to_string(),
        idle,
    };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(event) = st.pending.pop_front() {
                return Some((Ok(event), st));
            }
            let decoder = st.decoder.as_mut()?;
            let next = match tokio::time::timeout(st.idle, st.sse.next()).await {
                Ok(next) => next,
                Err(_) => {
                    st.decoder = None;
                    let error = ProviderError::Idle {
                        provider: st.provider.clone(),
                        secs: st.idle.as_secs(),
                    };
                    return Some((Err(error), st));
                }
            };
            let decoded = match next {
                Some(Ok(event)) => decoder.on_event(&event.event, &event.data),
                Some(Err(error)) => {
                    st.decoder = None;
                    let error = ProviderError::Stream {
                        provider: st.provider.clone(),
                        message: error.to_string(),
                    };
                    return Some((Err(error), st));
                }
                None => match st.decoder.take() {
                    Some(decoder) => decoder.finish(),
                    None => return None,
                },
            };
            match decoded {
                Ok(events) => st.pending.extend(events),
                Err(source) => {
                    st.decoder = None;
                    let error = ProviderError::Decode {
                        provider: st.provider.clone(),
                        source,
                    };
                    return Some((Err(error), st));
                }
            }
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::event::{FinishReason, Usage};

    async fn collect(
        chunks: Vec<Vec<u8>>,
        decoder: WireDecoder,
    ) -> Vec<Result<StreamEvent, String>> {
        let body =
            futures_util::stream::iter(chunks.into_iter().map(Ok::<_, std::convert::Infallible>));
        decode_sse(body, decoder, "test", Duration::from_secs(5))
            .map(|r| r.map_err(|e| e.to_string()))
            .collect()
            .await
    }

    const ANTHROPIC: &str = "event: message_start\r\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"model\":\"claude\",\"stop_reason\":null,\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":5,\"output_tokens\":1}}}\r\n\r\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n\
event: ping\ndata: {\"type\": \"ping\"}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Héllo 👋\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"grep\",\"input\":{}}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"pattern\\\":\"}}\n\n\
event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\" \\\"fn\\\"}\"}}\n\n\
event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n\
event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\"},\"usage\":{\"output_tokens\":20}}\n\n\
event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

    fn expected_anthropic() -> Vec<Result<StreamEvent, String>> {
        vec![
            Ok(StreamEvent::TextDelta("Héllo 👋".into())),
            Ok(StreamEvent::ToolCallStart {
                index: 0,
                id: "toolu_1".into(),
                name: "grep".into(),
            }),
            Ok(StreamEvent::ToolCallArgsDelta {
                index: 0,
                delta: "{\"pattern\":".into(),
            }),
            Ok(StreamEvent::ToolCallArgsDelta {
                index: 0,
                delta: " \"fn\"}".into(),
            }),
            Ok(StreamEvent::ToolCallEnd { index: 0 }),
            Ok(StreamEvent::Usage(Usage {
                input_tokens: 15,
                output_tokens: 20,
                cache_read_tokens: 5,
                cache_write_tokens: 0,
            })),
            Ok(StreamEvent::Finish(FinishReason::ToolUse)),
        ]
    }

    /// Merges consecutive text deltas, which a split may cut differently.
    fn merged(events: Vec<Result<StreamEvent, String>>) -> Vec<Result<StreamEvent, String>> {
        let mut out: Vec<Result<StreamEvent, String>> = Vec::new();
        for event in events {
            if let (Some(Ok(StreamEvent::TextDelta(prev))), Ok(StreamEvent::TextDelta(next))) =
                (out.last_mut(), &event)
            {
                prev.push_str(next);
                continue;
            }
            out.push(event);
        }
        out
    }

    #[tokio::test]
    async fn anthropic_body_split_at_every_byte_boundary_decodes_the_same() {
        let body = ANTHROPIC.as_bytes();
        let whole = collect(
            vec![body.to_vec()],
            WireDecoder::Anthropic(AnthropicDecoder::new()),
        )
        .await;
        // The order of usage and finish inside `message_delta` is the decoder's; compare as a set of facts.
        let mut expected = expected_anthropic();
        let mut got = whole.clone();
        expected.sort_by_key(|e| format!("{e:?}"));
        got.sort_by_key(|e| format!("{e:?}"));
        assert_eq!(got, expected);
        for split in 1..body.len() {
            let parts = vec![body[..split].to_vec(), body[split..].to_vec()];
            let events = collect(parts, WireDecoder::Anthropic(AnthropicDecoder::new())).await;
            assert_eq!(
                merged(events),
                merged(whole.clone()),
                "split at byte {split}"
            );
        }
    }

    #[tokio::test]
    async fn openai_body_split_at_every_byte_boundary_decodes_the_same() {
        let body = "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hi \"}}]}\n\n\
data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"thére\"}}]}\n\n\
data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"glob\",\"arguments\":\"\"}}]}}]}\n\n\
data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"pattern\\\": \\\"*.rs\\\"}\"}}]}}]}\n\n\
data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n\
data: {\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":3}}\n\n\
data: [DONE]\n\n";
        let whole = openai_split_everywhere(body).await;
        assert!(whole.contains(&Ok(StreamEvent::ToolCallEnd { index: 0 })));
    }

    /// Decodes a Chat Completions body whole and split at every byte boundary; every
    /// split must decode the same. Returns the events of the whole body.
    async fn openai_split_everywhere(body: &str) -> Vec<Result<StreamEvent, String>> {
        let bytes = body.as_bytes();
        let whole = collect(
            vec![bytes.to_vec()],
            WireDecoder::OpenAi(OpenAiDecoder::new()),
        )
        .await;
        assert!(whole.iter().all(|e| e.is_ok()), "{whole:?}");
        assert!(whole.contains(&Ok(StreamEvent::Finish(FinishReason::ToolUse))));
        for split in 1..bytes.len() {
            let parts = vec![bytes[..split].to_vec(), bytes[split..].to_vec()];
            let events = collect(parts, WireDecoder::OpenAi(OpenAiDecoder::new())).await;
            assert_eq!(
                merged(events),
                merged(whole.clone()),
                "split at byte {split}"
            );
        }
        whole
    }

    #[tokio::test]
    async fn ollama_calls_sharing_index_0_split_at_every_byte_boundary_stay_two_calls() {
        let whole = openai_split_everywhere(crate::providers::openai::OLLAMA_SHARED_INDEX).await;
        let starts: Vec<_> = whole
            .iter()
            .filter_map(|e| match e {
                Ok(StreamEvent::ToolCallStart { index, id, .. }) => Some((*index, id.as_str())),
                _ => None,
            })
            .collect();
        assert_eq!(starts, [(0, "call_k2x8n1qa"), (1, "call_7vz3m0pd")]);
        assert!(whole.contains(&Ok(StreamEvent::ToolCallEnd { index: 1 })));
    }

    #[tokio::test]
    async fn a_body_cut_before_message_stop_is_a_retryable_error() {
        let cut = ANTHROPIC
            .split("event: message_delta")
            .next()
            .unwrap_or_default();
        let body = futures_util::stream::iter(vec![Ok::<_, std::convert::Infallible>(
            cut.as_bytes().to_vec(),
        )]);
        let events: Vec<_> = decode_sse(
            body,
            WireDecoder::Anthropic(AnthropicDecoder::new()),
            "anthropic",
            Duration::from_secs(5),
        )
        .collect()
        .await;
        let Some(Err(error)) = events.last() else {
            panic!("expected an error at the end: {events:?}");
        };
        assert!(error.is_retryable());
        assert!(error.to_string().contains("message_stop"), "{error}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_silent_stream_times_out() {
        let body = futures_util::stream::pending::<Result<Vec<u8>, std::convert::Infallible>>();
        let mut events = decode_sse(
            body,
            WireDecoder::OpenAi(OpenAiDecoder::new()),
            "ollama",
            Duration::from_secs(30),
        );
        let first = events.next().await;
        assert!(
            matches!(first, Some(Err(ProviderError::Idle { secs: 30, .. }))),
            "{first:?}"
        );
        assert!(events.next().await.is_none());
    }
}
