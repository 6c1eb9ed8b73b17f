//! The HTTP providers: Anthropic's Messages API, OpenAI's Responses API, and Chat
//! Completions (OpenAI's and every compatible server's).

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};

use super::Provider;
use super::anthropic::{self, AnthropicDecoder};
use super::error::{ProviderError, error_message, parse_retry_after};
use super::event::StreamEvent;
use super::openai::{self, Flavour, OpenAiDecoder};
use super::redact::{MASK, Secrets, url_for_display};
use super::request::ModelRequest;
use super::responses::{self, ResponsesDecoder};
use super::stream::{EventStream, StreamLimits, WireDecoder, decode_sse};
use crate::manifest::Api;

/// The version header every Messages API call carries.
pub const ANTHROPIC_VERSION: &str = "2023-06-01";
/// Error bodies longer than this are cut before they are read into memory.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// A provider reached over HTTP. It knows its secrets (the key, the credentials in its
/// base URL), so it masks them in every error it returns and in its `Debug` form.
#[derive(Clone)]
pub struct HttpProvider {
    /// The name model references use: `anthropic`, `openai` or a `[providers.NAME]`.
    pub name: String,
    pub api: Api,
    pub flavour: Flavour,
    /// Anthropic: scheme and host (`https://api.anthropic.com`). OpenAI: up to `/v1`.
    base_url: String,
    api_key: Option<String>,
    secrets: Secrets,
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
            secrets: Secrets::new(api_key.as_deref(), base_url),
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

    /// The endpoint eve posts to, with the base URL's credentials masked: what messages show.
    pub fn display_url(&self) -> String {
        url_for_display(&self.url())
    }

    /// The endpoint eve posts to.
    pub fn url(&self) -> String {
        match self.api {
            Api::Anthropic => format!("{}/v1/messages", self.base_url),
            Api::Openai => format!("{}/chat/completions", self.base_url),
            Api::OpenaiResponses => format!("{}/responses", self.base_url),
        }
    }

    /// The request in this provider's API, its headers (the key among them), and the
    /// decoder of the reply.
    fn wire(
        &self,
        mut builder: reqwest::RequestBuilder,
        request: &ModelRequest,
    ) -> (reqwest::RequestBuilder, serde_json::Value, WireDecoder) {
        if self.api == Api::Anthropic {
            builder = builder.header("anthropic-version", ANTHROPIC_VERSION);
            if let Some(beta) = anthropic::beta_header(request) {
                builder = builder.header("anthropic-beta", beta);
            }
            if let Some(key) = &self.api_key {
                builder = builder.header("x-api-key", key);
            }
        } else if let Some(key) = &self.api_key {
            builder = builder.bearer_auth(key);
        }
        let (body, decoder) = match self.api {
            Api::Anthropic => (
                anthropic::request_body(request),
                WireDecoder::Anthropic(AnthropicDecoder::new()),
            ),
            Api::Openai => (
                openai::request_body(request, self.flavour),
                WireDecoder::OpenAi(OpenAiDecoder::new()),
            ),
            Api::OpenaiResponses => (
                responses::request_body(request, &self.origin(request)),
                WireDecoder::Responses(ResponsesDecoder::new()),
            ),
        };
        (builder, body, decoder)
    }

    /// Where a Responses reply comes from, as its kept reasoning is marked.
    fn origin(&self, request: &ModelRequest) -> String {
        responses::origin(&self.name, &self.base_url, &request.model)
    }

    async fn open(&self, request: &ModelRequest) -> Result<EventStream, ProviderError> {
        let url = self.url();
        let builder = self
            .client
            .post(&url)
            .header(reqwest::header::ACCEPT, "text/event-stream");
        let (builder, body, decoder) = self.wire(builder, request);
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
        if let Some(origin) = crate::net::redirect_elsewhere(&response) {
            return Err(ProviderError::Status {
                provider: self.name.clone(),
                status: status.as_u16(),
                message: format!(
                    "it redirects to another origin ({origin}), which eve does not follow: the key goes only to the provider's own base URL"
                ),
                retry_after: None,
            });
        }
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

impl std::fmt::Debug for HttpProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpProvider")
            .field("name", &self.name)
            .field("api", &self.api)
            .field("flavour", &self.flavour)
            .field("url", &self.display_url())
            .field("api_key", &self.api_key.as_ref().map(|_| MASK))
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Provider for HttpProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn capabilities(&self) -> super::Capabilities {
        super::Capabilities {
            hosted_web_search: self.api.hosts_web_search(),
        }
    }

    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<EventStream, ProviderError>> {
        async move {
            match self.open(request).await {
                Ok(events) => {
                    let secrets = self.secrets.clone();
                    // A Responses reply's reasoning is marked with where it came from:
                    // it goes back only there.
                    let origin = (self.api == Api::OpenaiResponses).then(|| self.origin(request));
                    let events = events.map(move |event| match event {
                        Ok(StreamEvent::OpaqueReply(mut items)) => {
                            if let Some(origin) = &origin {
                                responses::mark_origin(&mut items, origin);
                            }
                            Ok(StreamEvent::OpaqueReply(items))
                        }
                        Ok(event) => Ok(event),
                        Err(e) => Err(e.redacted(&secrets)),
                    });
                    Ok(Box::pin(events) as EventStream)
                }
                Err(error) => Err(error.redacted(&self.secrets)),
            }
        }
        .boxed()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_debug_form_and_display_url_hold_no_secret() {
        let provider = HttpProvider::new(
            "anthropic",
            Api::Anthropic,
            Flavour::OpenAi,
            "http://proxy:PASSWORD-1234@127.0.0.1:9/",
            Some("sk-ant-api03-very-secret".into()),
        )
        .unwrap();
        assert_eq!(
            provider.url(),
            "http://proxy:PASSWORD-1234@127.0.0.1:9/v1/messages"
        );
        assert_eq!(provider.display_url(), "http://***@127.0.0.1:9/v1/messages");
        let debug = format!("{provider:?}");
        assert!(
            !debug.contains("PASSWORD") && !debug.contains("very-secret"),
            "{debug}"
        );
    }

    #[tokio::test]
    async fn errors_from_the_provider_mask_its_key_and_url_credentials() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let provider = HttpProvider::new(
            "openai",
            Api::Openai,
            Flavour::OpenAi,
            &format!("http://proxy:PASSWORD-1234@127.0.0.1:{port}/v1"),
            Some("sk-proj-very-secret".into()),
        )
        .unwrap();
        let request = ModelRequest {
            model: "gpt-test".into(),
            system: String::new(),
            messages: Vec::new(),
            tools: Vec::new(),
            max_output_tokens: 10,
            temperature: None,
            reasoning: None,
            cache_key: None,
        };
        let Err(error) = provider.stream(&request).await else {
            panic!("nothing listens on port {port}");
        };
        let text = error.to_string();
        assert!(
            text.starts_with(&format!(
                "cannot reach openai at http://***@127.0.0.1:{port}/v1/chat/completions: "
            )),
            "{text}"
        );
        assert!(!text.contains("PASSWORD"), "{text}");
    }
}
