//! A `tools/call` result read as hostile input and turned into what the model gets:
//! text joined, structured content as JSON, images as image blocks, resources as text,
//! `isError` as a tool error; secrets redacted, everything capped.

use serde_json::Value;

use super::values::Redactor;
use crate::protocol::Image;
use crate::tools::ToolOutput;
use crate::tools::output::Captured;

/// The most text of one result the model gets (head and tail kept).
pub const TEXT_LIMIT: usize = 64 * 1024;
/// The largest image (base64 bytes) passed on; larger ones are described instead.
pub const IMAGE_LIMIT: usize = 5 * 1024 * 1024;
/// The most images of one result passed on.
pub const MAX_IMAGES: usize = 4;

const IMAGE_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// The tool output for a `tools/call` result.
pub fn output(result: &Value, secrets: &Redactor) -> ToolOutput {
    let mut parts: Vec<String> = Vec::new();
    let mut images = Vec::new();
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for block in blocks {
        let kind = block
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let text = |key: &str| block.get(key).and_then(Value::as_str).unwrap_or_default();
        match kind {
            "text" => parts.push(text("text").to_string()),
            "image" => {
                let (data, media_type) = (text("data"), text("mimeType"));
                if images.len() >= MAX_IMAGES {
                    parts.push(format!(
                        "[image ({media_type}) not shown: more than {MAX_IMAGES} images]"
                    ));
                } else if !IMAGE_TYPES.contains(&media_type) {
                    parts.push(format!("[image of type `{}` not shown: only PNG, JPEG, GIF and WebP are passed on]", crate::text::shorten(media_type, 60)));
                } else if data.len() > IMAGE_LIMIT || !is_base64(data) {
                    parts.push(format!("[image ({media_type}) not shown: it is larger than 5 MiB or not valid base64]"));
                } else {
                    images.push(Image {
                        media_type: media_type.to_string(),
                        data: data.to_string(),
                    });
                    parts.push(format!(
                        "[image {}: {media_type}, {} KiB]",
                        images.len(),
                        data.len() * 3 / 4 / 1024
                    ));
                }
            }
            "audio" => parts.push(format!(
                "[audio ({}) not shown]",
                crate::text::shorten(text("mimeType"), 60)
            )),
            "resource" => {
                let resource = block.get("resource").unwrap_or(&Value::Null);
                let field = |key: &str| resource.get(key).and_then(Value::as_str);
                let uri = field("uri").unwrap_or("(no uri)");
                match (field("text"), field("blob")) {
                    (Some(body), _) => parts.push(format!("resource {uri}:\n{body}")),
                    (None, Some(blob)) => parts.push(format!(
                        "[resource {uri} ({}): {} bytes of binary data, not shown]",
                        field("mimeType").unwrap_or("application/octet-stream"),
                        blob.len() * 3 / 4
                    )),
                    (None, None) => parts.push(format!("[resource {uri}]")),
                }
            }
            "resource_link" => {
                let mut line = format!("resource link: {}", text("uri"));
                if !text("name").is_empty() {
                    line.push_str(&format!(" ({})", text("name")));
                }
                if !text("description").is_empty() {
                    line.push_str(&format!(": {}", text("description")));
                }
                parts.push(line);
            }
            other => parts.push(format!(
                "[content of type `{}` not shown]",
                crate::text::shorten(other, 40)
            )),
        }
    }
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        // Servers are asked to repeat structured content as text; do not send it twice.
        let repeated = parts
            .iter()
            .any(|p| serde_json::from_str::<Value>(p).is_ok_and(|v| &v == structured))
            || strings_all_in(structured, &parts.join("\n"));
        if !repeated {
            parts.push(structured.to_string());
        }
    }
    let is_error = result.get("isError").and_then(Value::as_bool) == Some(true);
    let mut text = parts.join("\n");
    if text.trim().is_empty() {
        text = if is_error {
            "The tool failed and said nothing.".into()
        } else {
            "The tool returned nothing.".into()
        };
    }
    let mut captured = Captured::new(TEXT_LIMIT);
    captured.push(secrets.redact(&text).as_bytes());
    ToolOutput {
        content: captured.text(),
        is_error,
        images,
    }
}

/// Whether every leaf of `value` is a string the text already holds (a server that
/// wraps its text answer as `{"content": "…"}`).
fn strings_all_in(value: &Value, text: &str) -> bool {
    fn leaves<'a>(value: &'a Value, out: &mut Vec<Option<&'a str>>) {
        match value {
            Value::String(s) => out.push(Some(s)),
            Value::Array(items) => items.iter().for_each(|v| leaves(v, out)),
            Value::Object(map) => map.values().for_each(|v| leaves(v, out)),
            _ => out.push(None),
        }
    }
    let mut found = Vec::new();
    leaves(value, &mut found);
    !found.is_empty()
        && found
            .iter()
            .all(|leaf| leaf.is_some_and(|s| text.contains(s.trim())))
}

fn is_base64(data: &str) -> bool {
    !data.is_empty()
        && data
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'\n' | b'\r'))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn every_kind_of_content_becomes_text_or_an_image() {
        let result = json!({
            "content": [
                {"type": "text", "text": "hello"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
                {"type": "image", "data": "AAAA", "mimeType": "image/svg+xml"},
                {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "A"}},
                {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/zip"}},
                {"type": "resource_link", "uri": "file:///c", "name": "c"},
                {"type": "hologram"}
            ],
            "structuredContent": {"width": 1}
        });
        let out = output(&result, &Redactor::default());
        assert_eq!(
            out.content,
            "hello\n[image 1: image/png, 0 KiB]\n[image of type `image/svg+xml` not shown: only PNG, JPEG, GIF and WebP are passed on]\nresource file:///a.txt:\nA\n[resource file:///b.bin (application/zip): 3 bytes of binary data, not shown]\nresource link: file:///c (c)\n[content of type `hologram` not shown]\n{\"width\":1}"
        );
        assert!(!out.is_error);
        assert_eq!(
            out.images,
            [Image {
                media_type: "image/png".into(),
                data: "iVBORw0KGgo=".into()
            }]
        );
    }

    #[test]
    fn errors_repeats_and_huge_results_are_handled() {
        let out = output(
            &json!({"content": [{"type": "text", "text": "{\"a\": 1}"}], "structuredContent": {"a": 1}, "isError": true}),
            &Redactor::default(),
        );
        assert_eq!(out, ToolOutput::error("{\"a\": 1}"));
        let wrapped = output(
            &json!({"content": [{"type": "text", "text": "Remember the milk.\n"}], "structuredContent": {"content": "Remember the milk.\n"}}),
            &Redactor::default(),
        );
        assert_eq!(
            wrapped.content, "Remember the milk.\n",
            "the same text is not sent twice"
        );
        let out = output(
            &json!({"content": [{"type": "text", "text": "x".repeat(1_000_000)}]}),
            &Redactor::default(),
        );
        assert!(
            out.content.len() < TEXT_LIMIT + 200,
            "{}",
            out.content.len()
        );
        assert!(out.content.contains("bytes cut from the middle"));
        assert_eq!(
            output(&json!({}), &Redactor::default()).content,
            "The tool returned nothing."
        );
        assert_eq!(
            output(&json!({"content": "nope"}), &Redactor::default()).content,
            "The tool returned nothing."
        );
    }
}
