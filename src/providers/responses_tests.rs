//! The Responses decoder over stream bodies written from the documented wire format,
//! whole and a byte at a time; and the request body that sends reasoning back.

use super::*;
use crate::manifest::{Effort, Reasoning};
use crate::protocol::message::Image;
use crate::providers::event::{rename_kept_calls, tool_arguments};
use crate::providers::request::ToolSpec;
use crate::providers::sse::SseParser;
use pretty_assertions::assert_eq;

const TOOLS: &str = include_str!("fixtures/responses-tools.sse");
const INCOMPLETE: &str = include_str!("fixtures/responses-incomplete.sse");
const FAILED: &str = include_str!("fixtures/responses-failed.sse");
const ERROR: &str = include_str!("fixtures/responses-error.sse");
/// Where the requests of these tests go, as kept reasoning is marked.
const ORIGIN: &str = "a1b2c3d4e5f60718";

/// Decodes a body through the SSE parser, fed `chunk` bytes at a time; the error, if
/// any, is the first one met.
fn decode_in(body: &str, chunk: usize) -> (Vec<StreamEvent>, Result<(), DecodeError>) {
    let mut parser = SseParser::default();
    let mut decoder = ResponsesDecoder::new();
    let mut events = Vec::new();
    for piece in body.as_bytes().chunks(chunk) {
        parser.push(piece).unwrap();
        while let Some(event) = parser.next_event() {
            match decoder.on_event(&event.event, &event.data) {
                Ok(more) => events.extend(more),
                Err(e) => return (events, Err(e)),
            }
        }
    }
    (
        events.clone(),
        decoder.finish().map(|more| assert!(more.is_empty())),
    )
}

fn decode(body: &str) -> (Vec<StreamEvent>, Result<(), DecodeError>) {
    let whole = decode_in(body, body.len());
    let bytewise = decode_in(body, 1);
    assert_eq!(
        format!("{whole:?}"),
        format!("{bytewise:?}"),
        "a byte at a time"
    );
    whole
}

#[test]
fn reasoning_text_and_two_parallel_calls_in_fragments() {
    let (events, end) = decode(TOOLS);
    end.unwrap();
    let reasoning: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ReasoningDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(
        reasoning,
        "**Reading both files**\n\nThe user wants a comparison.\n\nBoth at once."
    );
    let text: String = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::TextDelta(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, "Reading both files.");
    let starts: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolCallStart { index, id, name } => {
                Some((*index, id.as_str(), name.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        starts,
        [(0, "call_Xa1", "read_file"), (1, "call_Yb2", "read_file")]
    );
    assert_eq!(
        tool_arguments(&events),
        [(0, json!({"path": "a.txt"})), (1, json!({"path": "b.txt"}))].into()
    );
    let ends = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallEnd { .. }))
        .count();
    assert_eq!(ends, 2, "each call ends once");
    let tail: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::Usage(_) | StreamEvent::Finish(_)))
        .cloned()
        .collect();
    assert_eq!(
        tail,
        [
            StreamEvent::Usage(Usage {
                input_tokens: 1820,
                output_tokens: 412,
                cache_read_tokens: 1536,
                cache_write_tokens: 0,
                reasoning_tokens: 256,
            }),
            StreamEvent::Finish(FinishReason::ToolUse),
        ]
    );
    // The reply is kept as the API sent its items, the encrypted reasoning first.
    let Some(StreamEvent::OpaqueReply(items)) = events.last() else {
        panic!("no kept reply: {events:?}");
    };
    let kinds: Vec<_> = items.iter().map(|i| i["type"].as_str().unwrap()).collect();
    assert_eq!(
        kinds,
        ["reasoning", "message", "function_call", "function_call"]
    );
    assert_eq!(
        items[0]["encrypted_content"],
        "gAAAAABor9X1c2lnbmVkLXJlYXNvbmluZy1ibG9iLW9uZQ=="
    );
}

#[test]
fn an_incomplete_response_is_cut_at_max_tokens_and_keeps_no_reply_without_reasoning() {
    let (events, end) = decode(INCOMPLETE);
    end.unwrap();
    assert_eq!(
        events,
        [
            StreamEvent::TextDelta("The list goes on and".into()),
            StreamEvent::Usage(Usage {
                input_tokens: 90,
                output_tokens: 16,
                ..Usage::default()
            }),
            StreamEvent::Finish(FinishReason::MaxTokens),
        ]
    );
}

#[test]
fn a_failed_response_and_a_mid_stream_error_are_provider_errors() {
    let (_, end) = decode(FAILED);
    let error = end.unwrap_err();
    assert!(error.is_retryable(), "server_error is retryable");
    assert_eq!(
        error.to_string(),
        "provider error (server_error): The server had an error while processing your request."
    );
    let (events, end) = decode(ERROR);
    assert_eq!(events, [StreamEvent::TextDelta("Hel".into())]);
    let error = end.unwrap_err();
    assert!(error.is_retryable());
    assert!(
        error
            .to_string()
            .starts_with("provider error (rate_limit_exceeded): Rate limit reached"),
        "{error}"
    );
}

#[test]
fn a_stream_cut_before_its_end_is_truncated() {
    let cut = TOOLS.split("event: response.completed").next().unwrap();
    let (_, end) = decode(cut);
    let error = end.unwrap_err();
    assert!(matches!(
        error,
        DecodeError::Truncated {
            expected: "response.completed"
        }
    ));
    assert!(error.is_retryable());
}

#[test]
fn a_reply_of_more_items_than_any_model_sends_is_refused() {
    let mut decoder = ResponsesDecoder::new();
    let item = r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"message","content":[]}}"#;
    let mut refused = None;
    for _ in 0..=MAX_REPLY_PARTS {
        if let Err(e) = decoder.on_event("response.output_item.done", item) {
            refused = Some(e);
            break;
        }
    }
    assert!(matches!(refused, Some(DecodeError::TooMany { .. })));
}

#[test]
fn a_server_that_sends_calls_only_whole_and_no_event_names_still_decodes() {
    let mut decoder = ResponsesDecoder::new();
    let mut events = decoder
        .on_event(
            "",
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c1","name":"glob","arguments":"{\"pattern\":\"*.rs\"}"}}"#,
        )
        .unwrap();
    events.extend(
        decoder
            .on_event(
                "",
                r#"{"type":"response.completed","response":{"status":"completed","output":[]}}"#,
            )
            .unwrap(),
    );
    assert_eq!(
        events,
        [
            StreamEvent::ToolCallStart {
                index: 0,
                id: "c1".into(),
                name: "glob".into()
            },
            StreamEvent::ToolCallArgsDelta {
                index: 0,
                delta: r#"{"pattern":"*.rs"}"#.into()
            },
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::Finish(FinishReason::ToolUse),
        ]
    );
}

#[test]
fn a_hosted_search_is_shown_and_its_item_kept() {
    let mut decoder = ResponsesDecoder::new();
    let mut events = decoder
        .on_event(
            "response.output_item.done",
            r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"ws_1","type":"web_search_call","status":"completed","action":{"type":"search","query":"rust 2024 edition"}}}"#,
        )
        .unwrap();
    events.extend(
        decoder
            .on_event(
                "response.completed",
                r#"{"type":"response.completed","response":{"status":"completed"}}"#,
            )
            .unwrap(),
    );
    assert_eq!(
        events[..2],
        [
            StreamEvent::ServerToolCall {
                id: "ws_1".into(),
                name: "web_search".into(),
                input: json!({"query": "rust 2024 edition"}),
            },
            StreamEvent::ServerToolResult {
                call_id: "ws_1".into(),
                output: "searched the web for `rust 2024 edition`".into(),
                is_error: false,
            },
        ]
    );
    assert!(matches!(events.last(), Some(StreamEvent::OpaqueReply(items)) if items.len() == 1));
}

/// A request after the fixture's step: the kept reply, then both calls' results.
fn next_request(model: &str, reasoning: Option<Reasoning>) -> ModelRequest {
    let (events, _) = decode(TOOLS);
    let Some(StreamEvent::OpaqueReply(mut items)) = events.last().cloned() else {
        panic!("no kept reply");
    };
    mark_origin(&mut items, ORIGIN);
    let call = |id: &str, path: &str| ToolCall {
        id: id.into(),
        name: "read_file".into(),
        input: json!({"path": path}),
    };
    let result = |id: &str, content: &str| ToolResult {
        call_id: id.into(),
        name: "read_file".into(),
        content: content.into(),
        is_error: false,
        images: Vec::new(),
    };
    ModelRequest {
        model: model.into(),
        system: "Be brief.".into(),
        messages: vec![
            Message::User {
                text: "Compare a and b".into(),
            },
            Message::Assistant {
                text: "Reading both files.".into(),
                tool_calls: vec![call("call_Xa1", "a.txt"), call("call_Yb2", "b.txt")],
                provider_blocks: Some(items),
                reasoning: String::new(),
            },
            Message::Tool {
                results: vec![result("call_Xa1", "alpha"), result("call_Yb2", "")],
            },
        ],
        tools: vec![
            ToolSpec {
                name: "read_file".into(),
                description: "Reads a file".into(),
                input_schema: json!({"type": "object"}),
                kind: ToolKind::Function,
            },
            ToolSpec {
                name: "web_search".into(),
                description: String::new(),
                input_schema: json!({}),
                kind: ToolKind::HostedWebSearch,
            },
        ],
        max_output_tokens: 8192,
        temperature: None,
        reasoning,
        cache_key: Some("ses_1".into()),
    }
}

#[test]
fn the_next_request_carries_the_encrypted_reasoning_and_the_call_outputs() {
    let reasoning = Reasoning {
        effort: Effort::High,
        budget_tokens: None,
    };
    let body = request_body(&next_request("gpt-5", Some(reasoning)), ORIGIN);
    assert_eq!(
        body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Compare a and b"}]},
            // As received, without the ids a `store: false` request cannot refer to.
            {"type": "reasoning", "encrypted_content": "gAAAAABor9X1c2lnbmVkLXJlYXNvbmluZy1ibG9iLW9uZQ==", "summary": [
                {"type": "summary_text", "text": "**Reading both files**\n\nThe user wants a comparison."},
                {"type": "summary_text", "text": "Both at once."},
            ]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Reading both files."}]},
            {"type": "function_call", "call_id": "call_Xa1", "name": "read_file", "arguments": "{\"path\":\"a.txt\"}"},
            {"type": "function_call", "call_id": "call_Yb2", "name": "read_file", "arguments": "{\"path\":\"b.txt\"}"},
            {"type": "function_call_output", "call_id": "call_Xa1", "output": "alpha"},
            {"type": "function_call_output", "call_id": "call_Yb2", "output": "(no output)"},
        ])
    );
    assert_eq!(body["instructions"], "Be brief.");
    assert_eq!(body["store"], false);
    assert_eq!(body["stream"], true);
    assert_eq!(body["include"], json!(["reasoning.encrypted_content"]));
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(body["prompt_cache_key"], "ses_1");
    // Raised by the effort's budget: the reasoning counts in it.
    assert_eq!(body["max_output_tokens"], 8192 + 32_000);
    assert_eq!(
        body["tools"],
        json!([
            {"type": "function", "name": "read_file", "description": "Reads a file", "parameters": {"type": "object"}, "strict": false},
            {"type": "web_search"},
        ])
    );
}

#[test]
fn a_model_that_does_not_reason_gets_no_reasoning_back() {
    let body = request_body(&next_request("gpt-4.1", None), ORIGIN);
    let kinds: Vec<_> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "message",
            "message",
            "function_call",
            "function_call",
            "function_call_output",
            "function_call_output"
        ]
    );
    assert!(body.get("include").is_none() && body.get("reasoning").is_none());
    // GPT-5 reasons without being asked: its reasoning goes back all the same.
    let body = request_body(&next_request("gpt-5-mini", None), ORIGIN);
    assert_eq!(body["input"][1]["type"], "reasoning");
    assert!(
        body.get("reasoning").is_none(),
        "the model's default effort"
    );
    assert!(!reasons_by_default("gpt-5-chat-latest") && reasons_by_default("o4-mini"));
}

#[test]
fn another_providers_kept_blocks_are_rebuilt_and_images_go_as_input_images() {
    let mut request = next_request("gpt-5", None);
    request.messages[1] = Message::Assistant {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: "toolu_A".into(),
            name: "read_file".into(),
            input: json!({"path": "a.txt"}),
        }],
        provider_blocks: Some(vec![
            json!({"type": "thinking", "thinking": "hm", "signature": "sig"}),
            json!({"type": "tool_use", "id": "toolu_A", "name": "read_file", "input": {"path": "a.txt"}}),
        ]),
        reasoning: String::new(),
    };
    request.messages[2] = Message::Tool {
        results: vec![ToolResult {
            call_id: "toolu_A".into(),
            name: "read_file".into(),
            content: "a chart".into(),
            is_error: true,
            images: vec![Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into(),
            }],
        }],
    };
    let body = request_body(&request, ORIGIN);
    assert_eq!(
        body["input"].as_array().unwrap()[1..],
        [
            json!({"type": "function_call", "call_id": "toolu_A", "name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}),
            json!({"type": "function_call_output", "call_id": "toolu_A", "output": [
                {"type": "input_text", "text": "Error: a chart"},
                {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="},
            ]}),
        ]
    );
}

#[test]
fn renamed_calls_are_renamed_in_the_kept_items() {
    let (events, _) = decode(TOOLS);
    let Some(StreamEvent::OpaqueReply(mut items)) = events.last().cloned() else {
        panic!("no kept reply");
    };
    rename_kept_calls(&mut items, &[(1, "call_eve_2".into())]);
    assert_eq!(items[2]["call_id"], "call_Xa1");
    assert_eq!(items[3]["call_id"], "call_eve_2");
}

#[test]
fn reasoning_from_another_origin_or_without_its_encrypted_content_is_not_sent() {
    let request = next_request("gpt-5", None);
    let body = request_body(&request, "another-endpoint");
    let kinds: Vec<_> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["type"].as_str().unwrap())
        .collect();
    assert!(!kinds.contains(&"reasoning"), "{kinds:?}");
    let mut request = next_request("gpt-5", None);
    if let Message::Assistant {
        provider_blocks: Some(items),
        ..
    } = &mut request.messages[1]
    {
        items[0]["encrypted_content"] = Value::Null;
    }
    let body = request_body(&request, ORIGIN);
    assert_ne!(body["input"][1]["type"], "reasoning");
}

#[test]
fn the_calls_sent_back_are_the_ones_eve_ran_whatever_the_kept_items_say() {
    let mut request = next_request("gpt-5", None);
    if let Message::Assistant {
        provider_blocks: Some(items),
        ..
    } = &mut request.messages[1]
    {
        // A server whose done items disagree with what it streamed, and a third call
        // item that eve never ran.
        items[2]["arguments"] = json!("{\"path\":\"/etc/shadow\"}");
        items.push(json!({"type": "function_call", "call_id": "call_Zz", "name": "bash", "arguments": "{}"}));
        // A reasoning item left with nothing after it.
        items.push(json!({"type": "reasoning", "encrypted_content": "x", "eve_origin": ORIGIN}));
    }
    let body = request_body(&request, ORIGIN);
    let calls: Vec<_> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "function_call")
        .map(|i| {
            (
                i["call_id"].as_str().unwrap(),
                i["arguments"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            ("call_Xa1", "{\"path\":\"a.txt\"}"),
            ("call_Yb2", "{\"path\":\"b.txt\"}")
        ]
    );
    let reasoning = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["type"] == "reasoning")
        .count();
    assert_eq!(reasoning, 1, "the trailing one is dropped");
}

#[test]
fn a_call_cut_off_by_the_output_limit_ends_once_and_is_kept() {
    let body = concat!(
        "event: response.output_item.added\n",
        r#"data: {"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}"#,
        "\n\n",
        "event: response.output_item.done\n",
        r#"data: {"type":"response.output_item.done","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"enc"}}"#,
        "\n\n",
        "event: response.output_item.added\n",
        r#"data: {"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","call_id":"call_1","name":"write_file","arguments":""}}"#,
        "\n\n",
        "event: response.function_call_arguments.delta\n",
        r#"data: {"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"path\":\"a"}"#,
        "\n\n",
        "event: response.incomplete\n",
        r#"data: {"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"id":"rs_1","type":"reasoning","summary":[],"encrypted_content":"enc"},{"id":"fc_1","type":"function_call","status":"incomplete","call_id":"call_1","name":"write_file","arguments":"{\"path\":\"a"}]}}"#,
        "\n\n",
    );
    let (events, end) = decode(body);
    end.unwrap();
    let args: Vec<_> = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallArgsDelta { .. }))
        .collect();
    assert_eq!(args.len(), 1, "the arguments once: {events:?}");
    let ends = events
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallEnd { index: 0 }))
        .count();
    assert_eq!(ends, 1);
    assert!(events.contains(&StreamEvent::Finish(FinishReason::MaxTokens)));
    let Some(StreamEvent::OpaqueReply(items)) = events.last() else {
        panic!("no kept reply: {events:?}");
    };
    assert_eq!(
        items.len(),
        2,
        "the cut call is kept with the reasoning it follows"
    );
}

#[test]
fn arguments_come_once_however_a_server_repeats_them() {
    let events = |lines: &[&str]| {
        let mut decoder = ResponsesDecoder::new();
        let mut events = Vec::new();
        for line in lines {
            events.extend(decoder.on_event("", line).unwrap());
        }
        events.extend(
            decoder
                .on_event("", r#"{"type":"response.completed","response":{}}"#)
                .unwrap(),
        );
        events
    };
    // Whole in `added`, then pieces, `.done`, the item done twice, a delta after the end.
    let got = events(&[
        r#"{"type":"response.output_item.added","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"glob","arguments":"{}"}}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{}"}"#,
        r#"{"type":"response.function_call_arguments.done","item_id":"fc_1","output_index":0,"arguments":"{}"}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"glob","arguments":"{}"}}"#,
        r#"{"type":"response.output_item.done","output_index":0,"item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"glob","arguments":"{}"}}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{}"}"#,
    ]);
    assert_eq!(
        got,
        [
            StreamEvent::ToolCallStart {
                index: 0,
                id: "c1".into(),
                name: "glob".into()
            },
            StreamEvent::ToolCallArgsDelta {
                index: 0,
                delta: "{}".into()
            },
            StreamEvent::ToolCallEnd { index: 0 },
            StreamEvent::Finish(FinishReason::ToolUse),
        ]
    );
    // Without output indices, a call after a reasoning item starts once.
    let got = events(&[
        r#"{"type":"response.output_item.added","item":{"id":"rs_1","type":"reasoning"}}"#,
        r#"{"type":"response.output_item.done","item":{"id":"rs_1","type":"reasoning","encrypted_content":"e"}}"#,
        r#"{"type":"response.output_item.added","item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"glob","arguments":""}}"#,
        r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","delta":"{}"}"#,
        r#"{"type":"response.output_item.done","item":{"id":"fc_1","type":"function_call","call_id":"c1","name":"glob","arguments":"{}"}}"#,
    ]);
    let starts = got
        .iter()
        .filter(|e| matches!(e, StreamEvent::ToolCallStart { .. }))
        .count();
    assert_eq!(starts, 1, "{got:?}");
    // A server that sends the text only in the final response: it is shown.
    let got = events(&[]);
    assert_eq!(got, [StreamEvent::Finish(FinishReason::Stop)]);
    let mut decoder = ResponsesDecoder::new();
    let shown = decoder
        .on_event(
            "",
            r#"{"type":"response.completed","response":{"output":[{"id":"m1","type":"message","content":[{"type":"output_text","text":"Hi."}]}]}}"#,
        )
        .unwrap();
    assert_eq!(shown[0], StreamEvent::TextDelta("Hi.".into()));
}
