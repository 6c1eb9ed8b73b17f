//! The process's one export pipeline: configured from the standard `OTEL_*` variables,
//! built the first time a session asks for it, shut down once at exit. Nothing is
//! built, and nothing sent, unless an endpoint is configured.

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use opentelemetry::KeyValue;
use opentelemetry::metrics::{Counter, Histogram, MeterProvider as _};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError};
use opentelemetry_otlp::{WithExportConfig as _, WithHttpConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, SdkTracer, SdkTracerProvider, SpanData, SpanExporter,
};

/// Spans waiting to be sent at most; more are dropped (and counted), never waited for.
const MAX_QUEUE: usize = 2048;
/// How long eve waits at exit for what is queued to be sent.
const EXIT_DEADLINE: Duration = Duration::from_secs(3);
/// The most of a collector's answer eve reads.
const MAX_ANSWER: usize = 64 * 1024;

/// What the environment asks for.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Config {
    pub traces: bool,
    pub metrics: bool,
    /// Request headers for each signal (`OTEL_EXPORTER_OTLP_{,TRACES_,METRICS_}HEADERS`).
    pub trace_headers: HashMap<String, String>,
    pub metric_headers: HashMap<String, String>,
    /// `OTEL_EXPORTER_OTLP_TIMEOUT` (milliseconds), else 10 s.
    pub timeout: Duration,
    /// Why the configuration was not taken as it is, one line each.
    pub warnings: Vec<String>,
}

impl Config {
    /// The configuration `var` gives (the environment, or the secrets eve took from it).
    pub fn read(var: &dyn Fn(&str) -> Option<String>) -> Config {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let mut config = Config {
            timeout: var("OTEL_EXPORTER_OTLP_TIMEOUT")
                .and_then(|ms| ms.trim().parse::<u64>().ok())
                .map_or(Duration::from_secs(10), Duration::from_millis),
            ..Config::default()
        };
        if var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true")) {
            return config;
        }
        let endpoint = var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some();
        let wanted = |exporter: &str, signal_endpoint: &str| {
            let otlp = var(exporter).is_none_or(|v| v.split(',').any(|e| e.trim() == "otlp"));
            otlp && (endpoint || var(signal_endpoint).is_some())
        };
        config.traces = wanted("OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT");
        config.metrics = wanted(
            "OTEL_METRICS_EXPORTER",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        );
        for (signal, on) in [("TRACES", config.traces), ("METRICS", config.metrics)] {
            let protocol = var(&format!("OTEL_EXPORTER_OTLP_{signal}_PROTOCOL"))
                .or_else(|| var("OTEL_EXPORTER_OTLP_PROTOCOL"));
            if let Some(protocol) = protocol.filter(|p| on && p.trim() != "http/protobuf") {
                config.warnings.push(format!(
                    "telemetry: eve sends OTLP over `http/protobuf` only, not `{}`: {} are not exported (unset OTEL_EXPORTER_OTLP_PROTOCOL, and point the endpoint at the collector's HTTP port, 4318)",
                    protocol.trim(),
                    signal.to_ascii_lowercase()
                ));
                match signal {
                    "TRACES" => config.traces = false,
                    _ => config.metrics = false,
                }
            }
        }
        let general = var("OTEL_EXPORTER_OTLP_HEADERS");
        let headers = |name: &str| parse_headers(var(name).or_else(|| general.clone()).as_deref());
        config.trace_headers = headers("OTEL_EXPORTER_OTLP_TRACES_HEADERS");
        config.metric_headers = headers("OTEL_EXPORTER_OTLP_METRICS_HEADERS");
        config
    }
}

/// `key1=value1,key2=value2`, values percent-decoded (the OTLP exporter spec's form);
/// an entry without `=` is skipped.
pub fn parse_headers(text: Option<&str>) -> HashMap<String, String> {
    text.unwrap_or_default()
        .split(',')
        .filter_map(|entry| {
            let (name, value) = entry.split_once('=')?;
            let name = name.trim();
            (!name.is_empty()).then(|| (name.to_string(), percent_decode(value.trim())))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The instruments eve records to.
#[derive(Debug, Clone)]
pub struct Instruments {
    pub token_usage: Histogram<u64>,
    pub operation_duration: Histogram<f64>,
    pub tool_duration: Histogram<f64>,
    pub tool_errors: Counter<u64>,
    pub sessions: Counter<u64>,
}

/// The running pipeline.
#[derive(Debug)]
pub struct Pipeline {
    tracer_provider: Option<SdkTracerProvider>,
    meter_provider: Option<SdkMeterProvider>,
    pub tracer: Option<SdkTracer>,
    pub instruments: Option<Instruments>,
    /// Spans ended, and those a collector took.
    pub ended: AtomicU64,
    delivered: &'static AtomicU64,
}

static PIPELINE: OnceLock<Option<Pipeline>> = OnceLock::new();
static WARNINGS: OnceLock<Vec<String>> = OnceLock::new();

/// The pipeline, built on the first call from the environment; `None` when telemetry is
/// off (no endpoint, `OTEL_SDK_DISABLED=true`, or it could not be set up). The second
/// value is what the person should be told, given once a process.
pub fn get() -> (Option<&'static Pipeline>, Vec<String>) {
    let mut fresh = None;
    let pipeline = PIPELINE.get_or_init(|| {
        let config = Config::read(&crate::secrets::var);
        let (pipeline, warnings) = build(config);
        fresh = Some(warnings);
        pipeline
    });
    if let Some(warnings) = fresh {
        let _ = WARNINGS.set(warnings.clone());
        return (pipeline.as_ref(), warnings);
    }
    (pipeline.as_ref(), Vec::new())
}

/// Cancelled when eve stops waiting for the collector at exit: what is still being sent
/// is given up.
fn closing() -> &'static tokio_util::sync::CancellationToken {
    static CLOSING: OnceLock<tokio_util::sync::CancellationToken> = OnceLock::new();
    CLOSING.get_or_init(Default::default)
}

/// Sends what is queued (waiting [`EXIT_DEADLINE`] at most, however slow the collector)
/// and stops the pipeline; says how many spans were not delivered, if any. Nothing
/// happens when no pipeline was built.
pub fn shutdown() -> Option<String> {
    let pipeline: &'static Pipeline = PIPELINE.get()?.as_ref()?;
    let (done, finished) = std::sync::mpsc::channel();
    let stopping = std::thread::Builder::new()
        .name("eve-otlp-exit".into())
        .spawn(move || {
            if let Some(provider) = &pipeline.tracer_provider {
                let _ = provider.shutdown_with_timeout(EXIT_DEADLINE);
            }
            if let Some(provider) = &pipeline.meter_provider {
                let _ = provider.shutdown_with_timeout(EXIT_DEADLINE);
            }
            let _ = done.send(());
        });
    if stopping.is_ok() && finished.recv_timeout(EXIT_DEADLINE).is_err() {
        closing().cancel();
        let _ = finished.recv_timeout(Duration::from_millis(500));
    }
    pipeline.tracer_provider.as_ref()?;
    let ended = pipeline.ended.load(Ordering::Relaxed);
    let delivered = pipeline.delivered.load(Ordering::Relaxed);
    (ended > delivered).then(|| {
        format!(
            "telemetry: {} of {ended} spans were not delivered (the collector did not take them in time, or eve's queue of {MAX_QUEUE} was full)",
            ended - delivered
        )
    })
}

fn build(mut config: Config) -> (Option<Pipeline>, Vec<String>) {
    if !config.traces && !config.metrics {
        return (None, config.warnings);
    }
    let transport = match Transport::new(config.timeout) {
        Ok(transport) => transport,
        Err(e) => {
            config.warnings.push(format!("telemetry is off: {e}"));
            return (None, config.warnings);
        }
    };
    static DELIVERED: AtomicU64 = AtomicU64::new(0);
    let resource = resource();
    let mut pipeline = Pipeline {
        tracer_provider: None,
        meter_provider: None,
        tracer: None,
        instruments: None,
        ended: AtomicU64::new(0),
        delivered: &DELIVERED,
    };
    if config.traces {
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_http_client(transport.clone())
            .with_headers(config.trace_headers.clone())
            .with_timeout(config.timeout)
            .build();
        match exporter {
            Ok(exporter) => {
                let processor = BatchSpanProcessor::builder(Counting {
                    inner: exporter,
                    delivered: &DELIVERED,
                })
                .with_batch_config(
                    BatchConfigBuilder::default()
                        .with_max_queue_size(MAX_QUEUE)
                        .build(),
                )
                .build();
                let provider = SdkTracerProvider::builder()
                    .with_span_processor(processor)
                    .with_resource(resource.clone())
                    .build();
                pipeline.tracer = Some(provider.tracer_with_scope(scope()));
                pipeline.tracer_provider = Some(provider);
            }
            Err(e) => config
                .warnings
                .push(format!("telemetry: traces are not exported: {e}")),
        }
    }
    if config.metrics {
        let exporter = opentelemetry_otlp::MetricExporter::builder()
            .with_http()
            .with_http_client(transport)
            .with_headers(config.metric_headers.clone())
            .with_timeout(config.timeout)
            .build();
        match exporter {
            Ok(exporter) => {
                let provider = SdkMeterProvider::builder()
                    .with_reader(PeriodicReader::builder(exporter).build())
                    .with_resource(resource)
                    .build();
                pipeline.instruments = Some(instruments(&provider));
                pipeline.meter_provider = Some(provider);
            }
            Err(e) => config
                .warnings
                .push(format!("telemetry: metrics are not exported: {e}")),
        }
    }
    (Some(pipeline), config.warnings)
}

fn scope() -> opentelemetry::InstrumentationScope {
    opentelemetry::InstrumentationScope::builder("eve")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build()
}

/// The process as the collector sees it: `service.name` from `OTEL_SERVICE_NAME` (else
/// `eve`), `OTEL_RESOURCE_ATTRIBUTES`, and eve's version.
fn resource() -> Resource {
    let builder = Resource::builder();
    let named = std::env::var("OTEL_SERVICE_NAME").is_ok_and(|v| !v.trim().is_empty())
        || std::env::var("OTEL_RESOURCE_ATTRIBUTES").is_ok_and(|v| {
            v.split(',')
                .any(|kv| kv.trim().starts_with("service.name="))
        });
    let builder = if named {
        builder
    } else {
        builder.with_service_name("eve")
    };
    builder
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build()
}

fn instruments(provider: &SdkMeterProvider) -> Instruments {
    let meter = provider.meter_with_scope(scope());
    Instruments {
        token_usage: meter
            .u64_histogram("gen_ai.client.token.usage")
            .with_unit("{token}")
            .with_description("Tokens of a model call, by gen_ai.token.type (input, output)")
            .with_boundaries(vec![
                1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0,
                4194304.0, 16777216.0, 67108864.0,
            ])
            .build(),
        operation_duration: meter
            .f64_histogram("gen_ai.client.operation.duration")
            .with_unit("s")
            .with_description("How long a model call took")
            .with_boundaries(vec![
                0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96,
                81.92,
            ])
            .build(),
        tool_duration: meter
            .f64_histogram("eve.tool.duration")
            .with_unit("s")
            .with_description("How long a tool call took")
            .build(),
        tool_errors: meter
            .u64_counter("eve.tool.errors")
            .with_description("Tool calls that failed")
            .build(),
        sessions: meter
            .u64_counter("eve.sessions")
            .with_description("Sessions started")
            .build(),
    }
}

/// The OTLP exporter, counting the spans a collector took.
#[derive(Debug)]
struct Counting<E> {
    inner: E,
    delivered: &'static AtomicU64,
}

impl<E: SpanExporter> SpanExporter for Counting<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let count = batch.len() as u64;
        let result = self.inner.export(batch).await;
        if result.is_ok() {
            self.delivered.fetch_add(count, Ordering::Relaxed);
        }
        result
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The exporters' HTTP client: requests run on a runtime of their own (one thread, made
/// once), so exporting never waits on, or for, the runtime that drives the sessions,
/// and a slow collector holds nothing of eve's but that thread.
#[derive(Debug, Clone)]
struct Transport {
    client: reqwest::Client,
    handle: tokio::runtime::Handle,
}

impl Transport {
    fn new(timeout: Duration) -> Result<Transport, String> {
        static RUNTIME: OnceLock<Result<tokio::runtime::Runtime, String>> = OnceLock::new();
        let runtime = RUNTIME
            .get_or_init(|| {
                tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(1)
                    .thread_name("eve-otlp")
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start the exporter's thread: {e}"))
            })
            .as_ref()
            .map_err(Clone::clone)?;
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .user_agent(concat!("eve/", env!("CARGO_PKG_VERSION")))
            .timeout(timeout)
            .connect_timeout(timeout)
            // A collector's credentials go only where they were configured to.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot set up the exporter's HTTP client: {e}"))?;
        Ok(Transport {
            client,
            handle: runtime.handle().clone(),
        })
    }
}

#[async_trait::async_trait]
impl HttpClient for Transport {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, HttpError> {
        let client = self.client.clone();
        let task = self.handle.spawn(async move {
            let request = reqwest::Request::try_from(request)?;
            let mut response = client.execute(request).await?;
            let mut answer = http::Response::builder().status(response.status());
            if let Some(headers) = answer.headers_mut() {
                headers.extend(response.headers().clone());
            }
            let mut body = Vec::new();
            while let Some(chunk) = response.chunk().await? {
                let room = MAX_ANSWER.saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if room < chunk.len() {
                    break;
                }
            }
            Ok::<_, HttpError>(answer.body(Bytes::from(body))?)
        });
        tokio::select! {
            answer = task => answer?,
            () = closing().cancelled() => Err("eve stopped waiting for the collector".into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Config {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::read(&|name| vars.get(name).cloned())
    }

    #[test]
    fn nothing_is_exported_without_an_endpoint() {
        let none = config(&[("OTEL_SERVICE_NAME", "x"), ("OTEL_TRACES_EXPORTER", "otlp")]);
        assert!(!none.traces && !none.metrics);
        let both = config(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")]);
        assert!(both.traces && both.metrics);
        let traces = config(&[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://h/v1/traces")]);
        assert!(traces.traces && !traces.metrics);
    }

    #[test]
    fn exporters_none_and_the_sdk_switch_turn_signals_off() {
        let endpoint = ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318");
        let off = config(&[endpoint, ("OTEL_SDK_DISABLED", "TRUE")]);
        assert!(!off.traces && !off.metrics);
        let no_metrics = config(&[endpoint, ("OTEL_METRICS_EXPORTER", "none")]);
        assert!(no_metrics.traces && !no_metrics.metrics);
    }

    #[test]
    fn grpc_is_refused_with_a_line_not_silently() {
        let grpc = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4317"),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ]);
        assert!(!grpc.traces && !grpc.metrics);
        assert_eq!(grpc.warnings.len(), 2);
        assert!(
            grpc.warnings[0].contains("http/protobuf"),
            "{:?}",
            grpc.warnings
        );
    }

    #[test]
    fn headers_are_read_per_signal_and_percent_decoded() {
        let c = config(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://h"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Basic%20abc%3D,x-team = search,bad",
            ),
            ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "x-only=metrics"),
        ]);
        assert_eq!(
            c.trace_headers.get("Authorization").map(String::as_str),
            Some("Basic abc=")
        );
        assert_eq!(
            c.trace_headers.get("x-team").map(String::as_str),
            Some("search")
        );
        assert_eq!(c.trace_headers.len(), 2);
        assert_eq!(c.metric_headers.len(), 1);
    }
}
