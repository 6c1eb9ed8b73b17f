//! Server-sent events framing, by the WHATWG rules, in time linear in the body's size and
//! within fixed bounds.
//!
//! The provider is on the other side of the network and is not trusted: a response that
//! never ends a line, or one event of hundreds of megabytes, must not make eve spend
//! minutes of CPU or run out of memory. So each byte is looked at once (a line is split
//! as it arrives, never re-scanned from its start), one event's data is at most
//! [`MAX_EVENT_BYTES`] and one response at most [`MAX_BODY_BYTES`]; past either the
//! stream fails with the reason. (eventsource-stream re-parsed its whole buffer for each
//! chunk and kept any amount; sse-stream is linear but refuses lines the standard says
//! to ignore, and neither bounds what it holds.)

use std::collections::VecDeque;

/// The most data one event may carry: far above any real provider's (a whole tool call
/// in one event is a few hundred kilobytes).
pub const MAX_EVENT_BYTES: usize = 16 << 20;

/// The most bytes one response may have: a reply of 128k output tokens streamed one token
/// an event, with Chat Completions' per-chunk overhead, is about 40 MiB.
pub const MAX_BODY_BYTES: u64 = 128 << 20;

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, or `message` when there was none.
    pub event: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Splits a body into events, a chunk at a time.
#[derive(Debug, Default)]
pub struct SseParser {
    /// The start of a line whose end has not arrived yet.
    line: Vec<u8>,
    /// The event being built: its type and data lines.
    event: String,
    data: String,
    data_lines: usize,
    ready: VecDeque<SseEvent>,
    /// The last chunk ended with `\r`: a `\n` at the start of the next one belongs to it.
    after_cr: bool,
    /// A first line has been seen (a byte-order mark is dropped from the first only).
    started: bool,
    body: u64,
}

impl SseParser {
    /// Takes the next chunk of the body. An error (too large, not UTF-8) ends the stream.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), String> {
        // An empty chunk (an empty HTTP/2 frame) must not cut a `\r\n` in two.
        if chunk.is_empty() {
            return Ok(());
        }
        self.body += chunk.len() as u64;
        if self.body > MAX_BODY_BYTES {
            return Err(format!(
                "the response is larger than {} MiB, more than any model reply",
                MAX_BODY_BYTES >> 20
            ));
        }
        let mut bytes = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n") {
                bytes = rest;
            }
        }
        while let Some(end) = bytes.iter().position(|b| matches!(b, b'\n' | b'\r')) {
            if self.line.is_empty() {
                self.field(&bytes[..end])?;
            } else {
                self.line.extend_from_slice(&bytes[..end]);
                let line = std::mem::take(&mut self.line);
                let result = self.field(&line);
                self.line = line;
                self.line.clear();
                result?;
            }
            let mut next = end + 1;
            if bytes[end] == b'\r' {
                match bytes.get(next) {
                    Some(b'\n') => next += 1,
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            bytes = &bytes[next..];
        }
        self.line.extend_from_slice(bytes);
        if self.line.len() > MAX_EVENT_BYTES {
            return Err(too_large());
        }
        Ok(())
    }

    /// The next event that is complete.
    pub fn next_event(&mut self) -> Option<SseEvent> {
        self.ready.pop_front()
    }

    fn field(&mut self, mut line: &[u8]) -> Result<(), String> {
        if !self.started {
            self.started = true;
            line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch();
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (name, value) = match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"event" => self.event = utf8(value)?.to_string(),
            b"data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(too_large());
                }
                if self.data_lines > 0 {
                    self.data.push('\n');
                }
                self.data.push_str(utf8(value)?);
                self.data_lines += 1;
            }
            // `id`, `retry` and fields the standard does not know are of no use here.
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self) {
        let event = std::mem::take(&mut self.event);
        if self.data_lines == 0 {
            return;
        }
        self.data_lines = 0;
        self.ready.push_back(SseEvent {
            event: if event.is_empty() {
                "message".to_string()
            } else {
                event
            },
            data: std::mem::take(&mut self.data),
        });
    }
}

fn utf8(bytes: &[u8]) -> Result<&str, String> {
    std::str::from_utf8(bytes).map_err(|e| format!("the response is not UTF-8: {e}"))
}

fn too_large() -> String {
    format!(
        "an event of the response is larger than {} MiB, more than any model reply",
        MAX_EVENT_BYTES >> 20
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(chunks: &[&[u8]]) -> Vec<(String, String)> {
        let mut parser = SseParser::default();
        let mut out = Vec::new();
        for chunk in chunks {
            parser.push(chunk).unwrap();
            while let Some(e) = parser.next_event() {
                out.push((e.event, e.data));
            }
        }
        out
    }

    fn pair(event: &str, data: &str) -> (String, String) {
        (event.to_string(), data.to_string())
    }

    #[test]
    fn lines_end_with_lf_crlf_or_cr_even_split_across_chunks() {
        let whole = b"event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\rdata: 3\n\n";
        let expected = vec![pair("a", "1"), pair("b", "2"), pair("message", "3")];
        assert_eq!(events(&[whole]), expected);
        // Every split point, a CR at a chunk's end included.
        for at in 0..whole.len() {
            assert_eq!(
                events(&[&whole[..at], &whole[at..]]),
                expected,
                "split at {at}"
            );
        }
        let bytes: Vec<&[u8]> = whole.chunks(1).collect();
        assert_eq!(events(&bytes), expected);
    }

    #[test]
    fn an_empty_chunk_between_cr_and_lf_does_not_end_the_event() {
        assert_eq!(
            events(&[b"data: a\r", b"", b"\ndata: b\n\n"]),
            vec![pair("message", "a\nb")]
        );
    }

    #[test]
    fn the_standards_rules_for_fields() {
        let body = b"\xEF\xBB\xBFdata: first\n\n: a comment\nid: 7\nretry: 10\nunknown: x\ndata\ndata:  two spaces\ndata:x\n\nevent: only-a-type\n\ndata: after\n\n";
        assert_eq!(
            events(&[body]),
            vec![
                pair("message", "first"),
                pair("message", "\n two spaces\nx"),
                // The type of an event without data does not carry over.
                pair("message", "after"),
            ]
        );
        // An event the body ends before the blank line of is not dispatched.
        assert_eq!(events(&[b"data: cut off"]), vec![]);
    }

    #[test]
    fn an_event_past_its_limit_fails_and_is_not_kept() {
        let mut parser = SseParser::default();
        let piece = vec![b'x'; 1 << 20];
        parser.push(b"data: ").unwrap();
        let mut failed = None;
        for i in 0..64 {
            if let Err(e) = parser.push(&piece) {
                failed = Some((i, e));
                break;
            }
        }
        let (at, message) = failed.expect("an endless line fails");
        assert_eq!(at, 15, "it fails as soon as the line passes 16 MiB");
        assert!(message.contains("larger than 16 MiB"), "{message}");
        // Many data lines make one event too.
        let mut parser = SseParser::default();
        let line = [b"data: ".as_slice(), &piece, b"\n"].concat();
        let failed = (0..64).find_map(|_| parser.push(&line).err());
        assert!(failed.is_some_and(|m| m.contains("16 MiB")));
    }

    #[test]
    fn a_body_past_its_limit_fails() {
        let mut parser = SseParser::default();
        let event = [b"data: ".as_slice(), &vec![b'x'; (1 << 20) - 8], b"\n\n"].concat();
        let mut dispatched = 0;
        let failed = loop {
            match parser.push(&event) {
                Ok(()) => {
                    while parser.next_event().is_some() {
                        dispatched += 1;
                    }
                }
                Err(e) => break e,
            }
        };
        assert_eq!(dispatched, 128);
        assert!(failed.contains("larger than 128 MiB"), "{failed}");
    }

    #[test]
    fn data_that_is_not_utf8_fails() {
        let mut parser = SseParser::default();
        let failed = parser.push(b"data: \xff\xfe\n\n").unwrap_err();
        assert!(failed.contains("not UTF-8"), "{failed}");
    }
}
