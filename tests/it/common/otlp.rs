//! An OTLP/HTTP receiver on 127.0.0.1 built on the official protobuf definitions
//! (`opentelemetry-proto`): it keeps every request's raw bytes and decodes exactly what
//! eve sent. `Receiver::slow` accepts requests and never answers.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

#[derive(Debug, Clone)]
pub struct Request {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

pub struct Receiver {
    port: u16,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Receiver {
    pub fn start() -> Receiver {
        Receiver::listen(false)
    }

    /// A collector that reads each request and never answers it.
    pub fn slow() -> Receiver {
        Receiver::listen(true)
    }

    fn listen(slow: bool) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let recorded = requests.clone();
        thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let recorded = recorded.clone();
                thread::spawn(move || serve(stream, &recorded, slow));
            }
        });
        Receiver { port, requests }
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }

    /// Every byte received, for grepping.
    pub fn bytes(&self) -> Vec<u8> {
        self.requests()
            .into_iter()
            .flat_map(|r| {
                r.body.into_iter().chain(
                    r.headers
                        .into_iter()
                        .flat_map(|(k, v)| format!("{k}: {v}\n").into_bytes()),
                )
            })
            .collect()
    }

    /// Every span received, decoded.
    pub fn spans(&self) -> Vec<Span> {
        self.requests()
            .iter()
            .filter(|r| r.path == "/v1/traces")
            .flat_map(|r| {
                ExportTraceServiceRequest::decode(r.body.as_slice())
                    .expect("a valid ExportTraceServiceRequest")
                    .resource_spans
            })
            .flat_map(|r| r.scope_spans)
            .flat_map(|s| s.spans)
            .collect()
    }

    /// The names of the metrics received.
    pub fn metric_names(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r.path == "/v1/metrics")
            .flat_map(|r| {
                ExportMetricsServiceRequest::decode(r.body.as_slice())
                    .expect("a valid ExportMetricsServiceRequest")
                    .resource_metrics
            })
            .flat_map(|r| r.scope_metrics)
            .flat_map(|s| s.metrics)
            .map(|m| m.name)
            .collect()
    }

    /// The first resource's attributes of a traces request.
    pub fn resource(&self) -> HashMap<String, String> {
        self.requests()
            .iter()
            .filter(|r| r.path == "/v1/traces")
            .flat_map(|r| {
                ExportTraceServiceRequest::decode(r.body.as_slice())
                    .unwrap()
                    .resource_spans
            })
            .filter_map(|r| r.resource)
            .flat_map(|r| r.attributes)
            .map(|kv| (kv.key.clone(), text(kv.value.as_ref())))
            .collect()
    }
}

/// A span's attribute, as text (numbers and booleans printed).
pub fn attr(span: &Span, key: &str) -> Option<String> {
    find(&span.attributes, key)
}

fn find(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .map(|kv| text(kv.value.as_ref()))
}

/// An event's attribute.
pub fn event_attr(span: &Span, event: &str, key: &str) -> Option<String> {
    span.events
        .iter()
        .find(|e| e.name == event)
        .and_then(|e| find(&e.attributes, key))
}

fn text(value: Option<&AnyValue>) -> String {
    match value.and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(any_value::Value::ArrayValue(a)) => a
            .values
            .iter()
            .map(|v| text(Some(v)))
            .collect::<Vec<_>>()
            .join(","),
        _ => String::new(),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A span's trace id and its own and its parent's span ids, as hex.
pub fn ids(span: &Span) -> (String, String, String) {
    (
        hex(&span.trace_id),
        hex(&span.span_id),
        hex(&span.parent_span_id),
    )
}

fn serve(stream: TcpStream, recorded: &Mutex<Vec<Request>>, slow: bool) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).is_err() || request_line.is_empty() {
            return;
        }
        let path = request_line
            .split_whitespace()
            .nth(1)
            .unwrap_or_default()
            .to_string();
        let mut headers = Vec::new();
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                headers.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        }
        let length: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse().ok())
            .unwrap_or(0);
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        recorded.lock().unwrap().push(Request {
            path,
            headers,
            body,
        });
        if slow {
            thread::sleep(Duration::from_secs(120));
            return;
        }
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n";
        if stream.write_all(head.as_bytes()).is_err() {
            return;
        }
    }
}
