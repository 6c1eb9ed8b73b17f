//! Why a model call failed, and whether trying again may help.

use std::time::Duration;

use super::event::DecodeError;
use super::redact::{Secrets, url_for_display};

/// A failed model call.
#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    /// The API key's variable is not set.
    #[error("{var} is not set: export it, or choose another model with --model or EVE_MODEL")]
    MissingKey { var: String },
    /// The provider answered with an HTTP error status.
    #[error("{provider} returned HTTP {status}: {message}")]
    Status {
        provider: String,
        status: u16,
        message: String,
        retry_after: Option<Duration>,
    },
    /// The request never got an answer: DNS, connection refused or reset, TLS, request timeout.
    #[error("cannot reach {provider} at {url}: {message}")]
    Connect {
        provider: String,
        url: String,
        message: String,
    },
    /// The stream stopped sending anything for too long.
    #[error("{provider} sent nothing for {secs} s; giving up on this stream")]
    Idle { provider: String, secs: f64 },
    /// The stream kept sending keep-alives (pings) but no content for too long.
    #[error(
        "{provider} sent no content for {secs} s (keep-alives do not count); giving up on this stream"
    )]
    NoProgress { provider: String, secs: f64 },
    /// The whole call took longer than its deadline, however busy the stream was.
    #[error("{provider} did not finish its reply within {secs} s; giving up on this call")]
    Deadline { provider: String, secs: f64 },
    /// The stream broke or carried something eve cannot read.
    #[error("{provider}: {source}")]
    Decode {
        provider: String,
        #[source]
        source: DecodeError,
    },
    /// The stream's connection broke midway.
    #[error("{provider}: the stream broke: {message}")]
    Stream { provider: String, message: String },
    /// The scripted provider's file is wrong or used up.
    #[error("{0}")]
    Script(String),
}

impl ProviderError {
    /// Whether the same request may succeed if sent again.
    pub fn is_retryable(&self) -> bool {
        match self {
            ProviderError::MissingKey { .. } | ProviderError::Script(_) => false,
            ProviderError::Status { status, .. } => is_retryable_status(*status),
            ProviderError::Connect { .. }
            | ProviderError::Idle { .. }
            | ProviderError::NoProgress { .. }
            | ProviderError::Deadline { .. }
            | ProviderError::Stream { .. } => true,
            ProviderError::Decode { source, .. } => source.is_retryable(),
        }
    }

    /// The same error with every secret in its text masked: what a provider that knows
    /// its key and URL credentials returns, so no message eve prints or logs holds them.
    pub fn redacted(self, secrets: &Secrets) -> ProviderError {
        let r = |text: String| secrets.redact(&text);
        match self {
            ProviderError::MissingKey { var } => ProviderError::MissingKey { var },
            ProviderError::Status {
                provider,
                status,
                message,
                retry_after,
            } => ProviderError::Status {
                provider: r(provider),
                status,
                message: r(message),
                retry_after,
            },
            ProviderError::Connect {
                provider,
                url,
                message,
            } => ProviderError::Connect {
                provider: r(provider),
                url: r(url_for_display(&url)),
                message: r(message),
            },
            ProviderError::Idle { provider, secs } => ProviderError::Idle {
                provider: r(provider),
                secs,
            },
            ProviderError::NoProgress { provider, secs } => ProviderError::NoProgress {
                provider: r(provider),
                secs,
            },
            ProviderError::Deadline { provider, secs } => ProviderError::Deadline {
                provider: r(provider),
                secs,
            },
            ProviderError::Decode { provider, source } => ProviderError::Decode {
                provider: r(provider),
                source: source.redacted(secrets),
            },
            ProviderError::Stream { provider, message } => ProviderError::Stream {
                provider: r(provider),
                message: r(message),
            },
            ProviderError::Script(message) => ProviderError::Script(r(message)),
        }
    }

    /// How long the provider asked eve to wait, if it did.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            ProviderError::Status { retry_after, .. } => *retry_after,
            _ => None,
        }
    }
}

/// 408, 409, 429, 5xx and Anthropic's 529 are worth retrying; other statuses are the request's fault.
pub fn is_retryable_status(status: u16) -> bool {
    matches!(status, 408 | 409 | 429) || (500..600).contains(&status)
}

/// The human part of an error body: `error.message` of either API's JSON, else the body itself, shortened.
pub fn error_message(body: &str) -> String {
    #[derive(serde::Deserialize)]
    struct Body {
        error: Option<Inner>,
        message: Option<String>,
    }
    #[derive(serde::Deserialize)]
    #[serde(untagged)]
    enum Inner {
        Object {
            message: Option<String>,
            #[serde(rename = "type")]
            kind: Option<String>,
        },
        Text(String),
    }
    if let Ok(parsed) = serde_json::from_str::<Body>(body) {
        match parsed.error {
            Some(Inner::Object {
                message: Some(message),
                kind,
            }) => {
                return match kind {
                    Some(kind) if !kind.is_empty() => format!("{message} ({kind})"),
                    _ => message,
                };
            }
            Some(Inner::Text(text)) => return text,
            _ => {}
        }
        if let Some(message) = parsed.message {
            return message;
        }
    }
    let body = body.trim();
    if body.is_empty() {
        return "(empty response body)".into();
    }
    shorten(body, 500)
}

pub use crate::text::shorten;

/// Parses a `retry-after` header: seconds (possibly fractional) or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate_parse(value)?;
    Some(
        when.duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

fn httpdate_parse(value: &str) -> Option<std::time::SystemTime> {
    humantime::parse_rfc3339_weak(value).ok().or_else(|| {
        // IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT`.
        let rest = value.split_once(", ")?.1.strip_suffix(" GMT")?;
        let mut parts = rest.split(' ');
        let day = parts.next()?;
        let month = match parts.next()? {
            "Jan" => "01",
            "Feb" => "02",
            "Mar" => "03",
            "Apr" => "04",
            "May" => "05",
            "Jun" => "06",
            "Jul" => "07",
            "Aug" => "08",
            "Sep" => "09",
            "Oct" => "10",
            "Nov" => "11",
            "Dec" => "12",
            _ => return None,
        };
        let year = parts.next()?;
        let time = parts.next()?;
        humantime::parse_rfc3339(&format!("{year}-{month}-{day}T{time}Z")).ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retryable_statuses() {
        for status in [408, 409, 429, 500, 502, 503, 529] {
            assert!(is_retryable_status(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!is_retryable_status(status), "{status}");
        }
    }

    #[test]
    fn error_messages_from_both_apis() {
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: too big"}}"#
            ),
            "max_tokens: too big (invalid_request_error)"
        );
        assert_eq!(
            error_message(
                r#"{"error":{"message":"Incorrect API key","type":"invalid_request_error","code":"invalid_api_key"}}"#
            ),
            "Incorrect API key (invalid_request_error)"
        );
        assert_eq!(
            error_message(r#"{"error":"model not found"}"#),
            "model not found"
        );
        assert_eq!(error_message("Bad Gateway"), "Bad Gateway");
        assert_eq!(error_message(""), "(empty response body)");
        assert_eq!(error_message(&"x".repeat(600)).chars().count(), 501);
    }

    #[test]
    fn retry_after_in_seconds_and_as_a_date() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("-1"), None);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }
}
