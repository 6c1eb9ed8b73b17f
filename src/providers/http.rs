//! The HTTP providers: Anthropic's Messages API and OpenAI's Chat Completions (and every compatible server).

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};

use super::Provider;
use super::anthropic::{self, AnthropicDecoder};
use super::error::{ProviderError, error_message, parse_retry_after};
use super::openai::{self, Flavour, OpenAiDecoder};
use super::request::ModelRequest;
use super::stream::{EventStream, StreamLimits, WireDecoder, decode_sse};
use crate::manifest::Api;

/// The version header every Messages API call carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Error bodies longer than this are cut before they are read into memory.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A provider reached over HTTP.
#[derive(Debug, Clone)]
pub struct HttpProvider {
    /// The name model references use: `anthropic`, `openai` or a `[providers.NAME]`.
    pub name: String,
    pub api: Api,
    pub flavour: Flavour,
    /// Anthropic: scheme and host (`https://api.anthropic.com`). OpenAI: up to `/v1`.
    pub base_url: String,
    pub api_key: Option<String>,
    /// How long a call may wait, go without content, and take in all.
    pub limits: StreamLimits,
    client: reqwest::Client,
}

impl HttpProvider {
    /// A provider; `api_key` is sent as `x-api-key` (Anthropic) or a bearer token (OpenAI).
    pub fn new(
        name: &str,
        api: Api,
        flavour: Flavour,
        base_url: &str,
        api_key: Option<String>,
    ) -> Result<HttpProvider, String> {
        Ok(HttpProvider {
            name: name.to_string(),
            api,
            flavour,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
            limits: StreamLimits::default(),
            client: crate::net::client()?,
        })
    }

    /// The same provider with other stream deadlines.
    pub fn with_limits(mut self, limits: StreamLimits) -> HttpProvider {
        self.limits = limits;
        self
    }

    /// The endpoint eve posts to.
    pub fn url(&self) -> String {
        match self.api {
            Api::Anthropic => format!("{}/v1/messages", self.base_url),
            Api::Openai => format!("{}/chat/completions", self.base_url),
        }
    }

    async fn open(&self, request: &ModelRequest) -> Result<EventStream, ProviderError> {
        let url = self.url();
        let mut builder = self
            .client
            .post(&url)
            .header(reqwest::header::ACCEPT, "text/event-stream");
        let (body, decoder) = match self.api {
            Api::Anthropic => {
                builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
                if let Some(key) = &self.api_key {
                    builder = builder.header("x-api-key", key);
                }
                (
                    anthropic::request_body(request),
                    WireDecoder::Anthropic(AnthropicDecoder::new()),
                )
            }
            Api::Openai => {
                if let Some(key) = &self.api_key {
                    builder = builder.bearer_auth(key);
                }
                (
                    openai::request_body(request, self.flavour),
                    WireDecoder::OpenAi(OpenAiDecoder::new()),
                )
            }
        };
        let bytes = serde_json::to_vec(&body).map_err(|e| ProviderError::Script(e.to_string()))?;
        let builder = builder
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(bytes);
        let connect_error = |message: String| ProviderError::Connect {
            provider: self.name.clone(),
            url: url.clone(),
            message,
        };
        let started = tokio::time::Instant::now();
        let headers_by = started + self.limits.idle.min(self.limits.total);
        let response = match tokio::time::timeout_at(headers_by, builder.send()).await {
            Ok(Ok(response)) => response,
            Ok(Err(e)) => return Err(connect_error(crate::net::error_chain(&e))),
            Err(_) if self.limits.total <= self.limits.idle => {
                return Err(ProviderError::Deadline {
                    provider: self.name.clone(),
                    secs: self.limits.total.as_secs_f64(),
                });
            }
            Err(_) => {
                return Err(ProviderError::Idle {
                    provider: self.name.clone(),
                    secs: self.limits.idle.as_secs_f64(),
                });
            }
        };
        let status = response.status();
        if !status.is_success() {
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(parse_retry_after);
            // A server that trickles its error body must not hold the call past its deadlines.
            let body_by =
                (tokio::time::Instant::now() + self.limits.idle).min(started + self.limits.total);
            let body = tokio::time::timeout_at(body_by, read_capped(response, MAX_ERROR_BODY))
                .await
                .unwrap_or_default();
            return Err(ProviderError::Status {
                provider: self.name.clone(),
                status: status.as_u16(),
                message: error_message(&body),
                retry_after,
            });
        }
        Ok(decode_sse(
            response.bytes_stream(),
            decoder,
            &self.name,
            self.limits,
            started,
        ))
    }
}

impl Provider for HttpProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn speaks_anthropic(&self) -> bool {
        self.api == Api::Anthropic
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<EventStream, ProviderError>> {
        self.open(request).boxed()
    }
}

async fn read_capped(response: reqwest::Response, cap: usize) -> String {
    let mut body = Vec::new();
    let mut stream = response.bytes_stream();
    while let Some(Ok(chunk)) = stream.next().await {
        let room = cap.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= cap {
            break;
        }
    }
    String::from_utf8_lossy(&body).into_owned()
}
