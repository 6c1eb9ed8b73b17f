//! From a streamed HTTP body to provider-neutral events: SSE framing, the API's decoder, and
//! the deadlines that end a stream that stalls, sends only keep-alives, or never finishes.

use std::collections::VecDeque;
use std::fmt::Display;
use std::pin::Pin;
use std::time::Duration;

use futures_util::{Stream, StreamExt};
use tokio::time::Instant;

use super::anthropic::AnthropicDecoder;
use super::error::ProviderError;
use super::event::{DecodeError, StreamEvent};
use super::openai::OpenAiDecoder;
use super::responses::ResponsesDecoder;
use super::sse::SseParser;

/// What a provider yields for one model call.
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, ProviderError>> + Send>>;

/// The decoder of one wire protocol.
#[derive(Debug)]
pub enum WireDecoder {
    Anthropic(AnthropicDecoder),
    OpenAi(OpenAiDecoder),
    Responses(ResponsesDecoder),
}

impl WireDecoder {
    fn on_event(&mut self, event: &str, data: &str) -> Result<Vec<StreamEvent>, DecodeError> {
        match self {
            WireDecoder::Anthropic(d) => d.on_event(event, data),
            // Chat Completions streams carry no event names: everything is `data:`.
            WireDecoder::OpenAi(d) => d.on_data(data),
            WireDecoder::Responses(d) => d.on_event(event, data),
        }
    }

    fn finish(self) -> Result<Vec<StreamEvent>, DecodeError> {
        match self {
            WireDecoder::Anthropic(d) => d.finish().map(|()| Vec::new()),
            WireDecoder::OpenAi(d) => d.finish(),
            WireDecoder::Responses(d) => d.finish(),
        }
    }
}

/// How long one model call may take, in three ways it can stall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// The longest wait for the response headers, then for each SSE event (pings included).
    pub idle: Duration,
    /// The longest time the stream may go without content: text, reasoning, a tool-call
    /// piece or the finish. Pings and usage counts do not count, so a server that only
    /// sends keep-alives is given up on.
    pub no_progress: Duration,
    /// The longest a whole call may take, from sending the request to the end of the stream.
    pub total: Duration,
}

/// The variable that sets [`StreamLimits::idle`], in seconds.
pub const IDLE_VAR: &str = "EVE_STREAM_IDLE_SECS";
/// The variable that sets [`StreamLimits::no_progress`], in seconds.
pub const NO_PROGRESS_VAR: &str = "EVE_STREAM_NO_PROGRESS_SECS";
/// The variable that sets [`StreamLimits::total`], in seconds.
pub const TOTAL_VAR: &str = "EVE_STREAM_TOTAL_SECS";
/// The longest any of them may be: a year.
const MAX_SECS: f64 = 365.0 * 86_400.0;

impl Default for StreamLimits {
    fn default() -> Self {
        StreamLimits {
            idle: Duration::from_secs(300),
            no_progress: Duration::from_secs(300),
            total: Duration::from_secs(3600),
        }
    }
}

impl StreamLimits {
    /// The defaults, with each variable that is set applied; `env` reads a variable.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Result<StreamLimits, String> {
        let mut limits = StreamLimits::default();
        for (var, field) in [
            (IDLE_VAR, &mut limits.idle),
            (NO_PROGRESS_VAR, &mut limits.no_progress),
            (TOTAL_VAR, &mut limits.total),
        ] {
            let Some(text) = env(var).filter(|v| !v.trim().is_empty()) else {
                continue;
            };
            *field = parse_secs(&text).ok_or_else(|| {
                format!(
                    "{var} must be a number of seconds greater than 0 and at most {MAX_SECS}, not `{text}`"
                )
            })?;
        }
        Ok(limits)
    }
}

/// Seconds, possibly fractional, greater than 0 and at most a year.
fn parse_secs(text: &str) -> Option<Duration> {
    let secs: f64 = text.trim().parse().ok()?;
    (secs > 0.0 && secs <= MAX_SECS).then(|| Duration::from_secs_f64(secs))
}

/// Whether an event is content, which shows the model is still producing its reply.
fn is_progress(event: &StreamEvent) -> bool {
    !matches!(event, StreamEvent::Usage(_))
}

struct State<S> {
    body: Pin<Box<S>>,
    sse: SseParser,
    /// When eve began waiting for the next event (reset by each event).
    waiting: Option<Instant>,
    decoder: Option<WireDecoder>,
    pending: VecDeque<StreamEvent>,
    provider: String,
    limits: StreamLimits,
    /// When the request was sent: the total deadline counts from here.
    started: Instant,
    /// When content last arrived (or the stream began).
    progress: Instant,
}

impl<S> State<S> {
    /// Ends the stream with this error of its body.
    fn failed(&mut self, message: String) -> ProviderError {
        self.decoder = None;
        ProviderError::Stream {
            provider: self.provider.clone(),
            message,
        }
    }

    /// The error for a wait that began at `waited_from` and ran out at `now`: the
    /// deadline that passed, the whole call's first.
    fn timed_out(&self, waited_from: Instant, now: Instant) -> ProviderError {
        let provider = self.provider.clone();
        if now >= self.started + self.limits.total {
            ProviderError::Deadline {
                provider,
                secs: self.limits.total.as_secs_f64(),
            }
        } else if now >= waited_from + self.limits.idle {
            ProviderError::Idle {
                provider,
                secs: self.limits.idle.as_secs_f64(),
            }
        } else {
            ProviderError::NoProgress {
                provider,
                secs: self.limits.no_progress.as_secs_f64(),
            }
        }
    }
}

/// Decodes an SSE body (any stream of byte chunks) with `decoder`, within `limits`
/// counted from `started` (when the request was sent). After the first error the stream ends.
pub fn decode_sse<S, B, E>(
    body: S,
    decoder: WireDecoder,
    provider: &str,
    limits: StreamLimits,
    started: Instant,
) -> EventStream
where
    S: Stream<Item = Result<B, E>> + Send + 'static,
    B: AsRef<[u8]> + Send + 'static,
    E: Display + Send + 'static,
{
    let state = State {
        body: Box::pin(body),
        sse: SseParser::default(),
        waiting: None,
        decoder: Some(decoder),
        pending: VecDeque::new(),
        provider: provider.to_string(),
        limits,
        started,
        progress: Instant::now(),
    };
    Box::pin(futures_util::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(event) = st.pending.pop_front() {
                return Some((Ok(event), st));
            }
            let decoder = st.decoder.as_mut()?;
            let decoded = if let Some(event) = st.sse.next_event() {
                st.waiting = None;
                decoder.on_event(&event.event, &event.data)
            } else {
                // The idle deadline is per event: a body that trickles bytes without
                // ever finishing an event is idle all the same.
                let waited_from = *st.waiting.get_or_insert_with(Instant::now);
                let deadline = (waited_from + st.limits.idle)
                    .min(st.progress + st.limits.no_progress)
                    .min(st.started + st.limits.total);
                let next = match tokio::time::timeout_at(deadline, st.body.next()).await {
                    Ok(next) => next,
                    Err(_) => {
                        st.decoder = None;
                        let error = st.timed_out(waited_from, Instant::now());
                        return Some((Err(error), st));
                    }
                };
                match next {
                    Some(Ok(chunk)) => match st.sse.push(chunk.as_ref()) {
                        Ok(()) => continue,
                        Err(message) => {
                            let error = st.failed(message);
                            return Some((Err(error), st));
                        }
                    },
                    Some(Err(error)) => {
                        let error = st.failed(error.to_string());
                        return Some((Err(error), st));
                    }
                    None => match st.decoder.take() {
                        Some(decoder) => decoder.finish(),
                        None => return None,
                    },
                }
            };
            match decoded {
                Ok(events) => {
                    if events.iter().any(is_progress) {
                        st.progress = Instant::now();
                    }
                    st.pending.extend(events);
                }
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
        decode_sse(
            body,
            decoder,
            "test",
            StreamLimits::default(),
            Instant::now(),
        )
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
                reasoning_tokens: 0,
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
    async fn a_reply_of_thousands_of_tool_calls_fails_instead_of_growing_without_bound() {
        let mut body = b"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[".to_vec();
        for i in 0..5_000 {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(format!("{{\"index\":{i}}}").as_bytes());
        }
        body.extend_from_slice(b"]}}]}\n\ndata: [DONE]\n\n");
        let events = collect(vec![body], WireDecoder::OpenAi(OpenAiDecoder::new())).await;
        let error = events.last().unwrap().clone().unwrap_err();
        assert!(error.contains("more than 1024 tool calls"), "{error}");
        // The stream stopped at the error: no more than the first 1,024 calls came out.
        assert!(events.len() <= 2 * 1024 + 1, "{} events", events.len());
    }

    #[tokio::test]
    async fn a_reply_of_thousands_of_content_blocks_fails_instead_of_growing_without_bound() {
        let mut body = String::from(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1,\"output_tokens\":1}}}\n\n",
        );
        for i in 0..2_000 {
            body.push_str(&format!("event: content_block_start\ndata: {{\"type\":\"content_block_start\",\"index\":{i},\"content_block\":{{\"type\":\"text\",\"text\":\"\"}}}}\n\n"));
        }
        let events = collect(
            vec![body.into_bytes()],
            WireDecoder::Anthropic(AnthropicDecoder::new()),
        )
        .await;
        let error = events.last().unwrap().clone().unwrap_err();
        assert!(error.contains("more than 1024 content blocks"), "{error}");
    }

    #[tokio::test]
    async fn a_line_that_never_ends_fails_the_stream_instead_of_filling_memory() {
        // A hostile provider: `data: xxxx…` with no line end, a megabyte a chunk. The
        // stream ends with the reason once the event passes its limit; the rest of the
        // body is never read.
        let mut chunks = vec![b"event: content_block_delta\ndata: ".to_vec()];
        chunks.extend((0..64).map(|_| vec![b'x'; 1 << 20]));
        let events = collect(chunks, WireDecoder::Anthropic(AnthropicDecoder::new())).await;
        assert_eq!(
            events.len(),
            1,
            "{:?}",
            events.iter().map(|e| e.is_ok()).collect::<Vec<_>>()
        );
        let error = events[0].clone().unwrap_err();
        assert!(error.contains("larger than 16 MiB"), "{error}");
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
            StreamLimits::default(),
            Instant::now(),
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
            StreamLimits {
                idle: Duration::from_secs(30),
                ..StreamLimits::default()
            },
            Instant::now(),
        );
        let first = events.next().await;
        let Some(Err(error @ ProviderError::Idle { .. })) = first else {
            panic!("expected an idle error: {first:?}");
        };
        assert_eq!(
            error.to_string(),
            "ollama sent nothing for 30 s; giving up on this stream"
        );
        assert!(events.next().await.is_none());
    }

    /// An endless body: `head` first, then `tick` again and again, one a second.
    fn endless(
        head: &'static str,
        tick: &'static str,
    ) -> impl Stream<Item = Result<Vec<u8>, std::convert::Infallible>> + Send + 'static {
        let first = futures_util::stream::iter([Ok(head.as_bytes().to_vec())]);
        let rest = futures_util::stream::unfold((), move |()| async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Some((Ok(tick.as_bytes().to_vec()), ()))
        });
        first.chain(rest)
    }

    const ANTHROPIC_HEAD: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n\
event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"Hi\"}}\n\n";

    #[tokio::test(start_paused = true)]
    async fn a_stream_of_only_pings_ends_with_a_retryable_no_progress_error() {
        let limits = StreamLimits {
            idle: Duration::from_secs(30),
            no_progress: Duration::from_secs(60),
            total: Duration::from_secs(3600),
        };
        let ping = "event: ping\ndata: {\"type\": \"ping\"}\n\n";
        let stream = decode_sse(
            endless(ANTHROPIC_HEAD, ping),
            WireDecoder::Anthropic(AnthropicDecoder::new()),
            "anthropic",
            limits,
            Instant::now(),
        );
        // The clock is paused: a day passes at once if the stream never ends.
        let events: Vec<_> = tokio::time::timeout(Duration::from_secs(86_400), stream.collect())
            .await
            .expect("the stream ends");
        let [Ok(StreamEvent::TextDelta(text)), Err(error)] = events.as_slice() else {
            panic!("expected the text, then one error: {events:?}");
        };
        assert_eq!(text, "Hi");
        assert!(matches!(error, ProviderError::NoProgress { .. }), "{error}");
        assert!(error.is_retryable());
        assert_eq!(
            error.to_string(),
            "anthropic sent no content for 60 s (keep-alives do not count); giving up on this stream"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn empty_chat_completions_chunks_are_not_progress() {
        let limits = StreamLimits {
            no_progress: Duration::from_secs(10),
            ..StreamLimits::default()
        };
        let empty = "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"\"}}],\"usage\":{\"prompt_tokens\":1}}\n\n";
        let events: Vec<_> = decode_sse(
            endless(empty, empty),
            WireDecoder::OpenAi(OpenAiDecoder::new()),
            "ollama",
            limits,
            Instant::now(),
        )
        .filter_map(|e| async move { e.err() })
        .collect()
        .await;
        assert!(
            matches!(events.as_slice(), [ProviderError::NoProgress { .. }]),
            "{events:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_never_finishes_ends_at_the_call_deadline() {
        let limits = StreamLimits {
            idle: Duration::from_secs(30),
            no_progress: Duration::from_secs(60),
            total: Duration::from_secs(600),
        };
        let text = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"more \"}}\n\n";
        let events: Vec<_> = decode_sse(
            endless(ANTHROPIC_HEAD, text),
            WireDecoder::Anthropic(AnthropicDecoder::new()),
            "anthropic",
            limits,
            Instant::now(),
        )
        .collect()
        .await;
        let Some((Err(error), before)) = events.split_last() else {
            panic!("expected events: {events:?}");
        };
        // Text kept coming, so neither the idle nor the no-progress deadline ended it.
        assert!(before.len() > 100, "{}", before.len());
        assert!(
            before
                .iter()
                .all(|e| matches!(e, Ok(StreamEvent::TextDelta(_))))
        );
        assert!(matches!(error, ProviderError::Deadline { .. }), "{error}");
        assert!(error.is_retryable());
        assert_eq!(
            error.to_string(),
            "anthropic did not finish its reply within 600 s; giving up on this call"
        );
    }

    #[test]
    fn limits_come_from_the_environment_and_bad_values_are_refused() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |var: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == var)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            StreamLimits::from_env(&env(&[])).unwrap(),
            StreamLimits::default()
        );
        assert_eq!(
            StreamLimits::from_env(&env(&[
                (IDLE_VAR, "5"),
                (NO_PROGRESS_VAR, "0.5"),
                (TOTAL_VAR, " 90 ")
            ]))
            .unwrap(),
            StreamLimits {
                idle: Duration::from_secs(5),
                no_progress: Duration::from_millis(500),
                total: Duration::from_secs(90),
            }
        );
        for bad in ["0", "-1", "soon", "NaN", "inf", "1e12"] {
            let pairs: &'static [(&'static str, &'static str)] =
                Box::leak(Box::new([(NO_PROGRESS_VAR, bad)]));
            assert_eq!(
                StreamLimits::from_env(&env(pairs)).unwrap_err(),
                format!(
                    "EVE_STREAM_NO_PROGRESS_SECS must be a number of seconds greater than 0 and at most 31536000, not `{bad}`"
                )
            );
        }
    }
}
