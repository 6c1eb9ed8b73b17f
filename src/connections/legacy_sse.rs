//! The older HTTP+SSE transport (MCP 2024-11-05), for servers that refuse a streamable
//! HTTP `POST`: a `GET` opens an event stream whose first `endpoint` event names where
//! to `POST` messages; replies come back on the stream. rmcp no longer ships a client
//! for it, so this is one, as an rmcp [`Transport`].

use std::future::Future;

use futures_util::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderValue};
use rmcp::RoleClient;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

/// The largest event eve reads from the stream.
pub const MAX_EVENT: usize = 4 * 1024 * 1024;

/// A failure to send a message to the server.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct LegacyError(String);

/// A connection over the HTTP+SSE transport.
pub struct LegacySse {
    client: reqwest::Client,
    endpoint: reqwest::Url,
    headers: HeaderMap,
    incoming: mpsc::Receiver<ServerJsonRpcMessage>,
    reader: tokio::task::JoinHandle<()>,
}

/// Opens the event stream at `url` and waits for its `endpoint` event. The endpoint
/// must be on the same origin as `url`: the headers (a token, say) go there too.
pub async fn connect(
    client: reqwest::Client,
    url: &str,
    headers: HeaderMap,
) -> Result<LegacySse, String> {
    let base = reqwest::Url::parse(url).map_err(|e| format!("`{url}` is not a URL: {e}"))?;
    let response = client
        .get(base.clone())
        .headers(headers.clone())
        .header(ACCEPT, HeaderValue::from_static("text/event-stream"))
        .send()
        .await
        .map_err(|e| crate::net::error_chain(&e))?;
    let status = response.status();
    let is_sse = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !status.is_success() || !is_sse {
        return Err(format!(
            "a GET answered {status} without an event stream, so it is not an HTTP+SSE server either"
        ));
    }
    let mut bytes = response.bytes_stream();
    let mut parser = Parser::default();
    let endpoint = 'found: loop {
        let Some(chunk) = bytes.next().await else {
            return Err("the event stream ended before it named its endpoint".into());
        };
        let chunk = chunk.map_err(|e| crate::net::error_chain(&e))?;
        for event in parser.feed(&chunk)? {
            if event.name == "endpoint" {
                break 'found event.data;
            }
        }
    };
    let endpoint = base
        .join(endpoint.trim())
        .map_err(|e| format!("the server's endpoint `{endpoint}` is not a URL: {e}"))?;
    if endpoint.origin() != base.origin() {
        return Err(format!(
            "the server names an endpoint on another origin ({}), where eve would send its headers; refused",
            endpoint.origin().ascii_serialization()
        ));
    }
    let (tx, incoming) = mpsc::channel(64);
    let reader = tokio::spawn(async move {
        while let Some(chunk) = bytes.next().await {
            let Ok(chunk) = chunk else { break };
            let Ok(events) = parser.feed(&chunk) else {
                break;
            };
            for event in events {
                if event.name != "message" && !event.name.is_empty() {
                    continue;
                }
                // A message that is not JSON-RPC is dropped; its request times out.
                if let Ok(message) = serde_json::from_str::<ServerJsonRpcMessage>(&event.data)
                    && tx.send(message).await.is_err()
                {
                    return;
                }
            }
        }
    });
    Ok(LegacySse {
        client,
        endpoint,
        headers,
        incoming,
        reader,
    })
}

impl Transport<RoleClient> for LegacySse {
    type Error = LegacyError;

    fn send(
        &mut self,
        item: ClientJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .json(&item);
        async move {
            let response = request
                .send()
                .await
                .map_err(|e| LegacyError(crate::net::error_chain(&e)))?;
            if response.status().is_success() {
                Ok(())
            } else {
                Err(LegacyError(format!(
                    "the server answered {} to a message",
                    response.status()
                )))
            }
        }
    }

    fn receive(&mut self) -> impl Future<Output = Option<ServerJsonRpcMessage>> + Send {
        self.incoming.recv()
    }

    fn close(&mut self) -> impl Future<Output = Result<(), Self::Error>> + Send {
        self.reader.abort();
        std::future::ready(Ok(()))
    }
}

impl Drop for LegacySse {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// One server-sent event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub name: String,
    pub data: String,
}

/// An SSE parser that never holds more than [`MAX_EVENT`] bytes of one event.
#[derive(Debug, Default)]
pub struct Parser {
    line: Vec<u8>,
    name: String,
    data: String,
    has_data: bool,
}

impl Parser {
    /// Feeds bytes; returns the events they complete.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<Event>, String> {
        let mut events = Vec::new();
        for &b in bytes {
            if b != b'\n' {
                self.line.push(b);
                if self.line.len() + self.data.len() > MAX_EVENT {
                    return Err("the server sent an event larger than 4 MiB".into());
                }
                continue;
            }
            let line = String::from_utf8_lossy(&self.line).into_owned();
            self.line.clear();
            let line = line.strip_suffix('\r').unwrap_or(&line);
            if line.is_empty() {
                if self.has_data || !self.name.is_empty() {
                    events.push(Event {
                        name: std::mem::take(&mut self.name),
                        data: std::mem::take(&mut self.data),
                    });
                }
                self.has_data = false;
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
                None => (line, ""),
            };
            match field {
                "event" => self.name = value.to_string(),
                "data" => {
                    if self.has_data {
                        self.data.push('\n');
                    }
                    self.data.push_str(value);
                    self.has_data = true;
                }
                _ => {}
            }
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_parsed_across_any_split() {
        let stream = b": hi\nevent: endpoint\ndata: /message?id=1\n\nevent: message\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n";
        for cut in 0..stream.len() {
            let mut parser = Parser::default();
            let mut events = parser.feed(&stream[..cut]).unwrap();
            events.extend(parser.feed(&stream[cut..]).unwrap());
            assert_eq!(
                events,
                [
                    Event {
                        name: "endpoint".into(),
                        data: "/message?id=1".into()
                    },
                    Event {
                        name: "message".into(),
                        data: "{\"a\":\n1}".into()
                    }
                ],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn an_endless_event_is_refused() {
        let mut parser = Parser::default();
        let chunk = vec![b'x'; 1024 * 1024];
        let mut result = Ok(Vec::new());
        for _ in 0..5 {
            result = parser.feed(&chunk);
            if result.is_err() {
                break;
            }
        }
        assert!(result.is_err());
    }
}
