//! What every request passes before a handler sees it: the bearer token (compared in
//! constant time), the `Host` a loopback server answers to, the origins a browser may
//! call from, CORS when asked for, refusal while shutting down; and the request log,
//! which holds the method, the path, the status and the time, never a body, a query or
//! a header.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State as Extract};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::State;
use super::error::ApiError;

/// The SHA-256 of a token: what the server keeps and compares.
pub fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// Whether `headers` carry `Authorization: Bearer <token>` for the token hashed in
/// `expected`. Both sides are hashed first, so the comparison takes the same time
/// whatever the length or the first wrong byte of what was sent.
pub fn authorized(headers: &HeaderMap, expected: &[u8; 32]) -> bool {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .unwrap_or("");
    let matches: bool = digest(presented).ct_eq(expected).into();
    matches && !presented.is_empty()
}

/// Whether a `Host` header names this machine's loopback (a browser tricked by DNS
/// rebinding sends the attacker's host name instead).
pub fn loopback_host(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => rest.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The checks, then the handler, then the log line.
pub async fn check(Extract(state): Extract<Arc<State>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let origin = request
        .headers()
        .get(header::ORIGIN)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let cors_ok = origin
        .as_deref()
        .is_some_and(|o| state.config.cors.as_deref() == Some(o));
    let response = match refuse(&state, &request, origin.as_deref(), cors_ok) {
        Some(error) => error.into_response(),
        None if method == Method::OPTIONS && cors_ok => preflight(),
        None => next.run(request).await,
    };
    let mut response = response;
    if cors_ok && let Some(origin) = origin.and_then(|o| HeaderValue::from_str(&o).ok()) {
        let headers = response.headers_mut();
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
        headers.insert(
            header::ACCESS_CONTROL_EXPOSE_HEADERS,
            HeaderValue::from_static("x-eve-session-id, x-eve-stream-format"),
        );
        headers.insert(header::VARY, HeaderValue::from_static("origin"));
    }
    eprintln!(
        "{} {method} {path} {} {} ms",
        crate::ids::now_rfc3339(),
        response.status().as_u16(),
        started.elapsed().as_millis()
    );
    response
}

/// Why a request is refused before any handler runs, if it is.
fn refuse(
    state: &State,
    request: &Request,
    origin: Option<&str>,
    cors_ok: bool,
) -> Option<ApiError> {
    let headers = request.headers();
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if state.token.is_none() && !loopback_host(host) {
        return Some(ApiError::new(
            StatusCode::FORBIDDEN,
            "host_not_allowed",
            "without EVE_SERVE_TOKEN this server answers only requests addressed to localhost or a loopback address",
        ));
    }
    // A page of another site may send requests here but never read the answers; it
    // must not start turns either.
    if let Some(origin) = origin {
        let same = origin
            .split_once("://")
            .is_some_and(|(_, rest)| rest.eq_ignore_ascii_case(host));
        if !same && !cors_ok {
            return Some(ApiError::new(
                StatusCode::FORBIDDEN,
                "origin_not_allowed",
                "requests from pages of another origin are refused; start eve serve with --cors ORIGIN to allow one",
            ));
        }
    }
    // Everything but the page and the health check needs the token: a path no route
    // takes is refused before it is looked up, however it is spelled.
    let open = matches!(
        request.uri().path(),
        "/" | "/page.js" | "/page.css" | "/eve/v1/health"
    );
    if !open
        && request.method() != Method::OPTIONS
        && let Some(expected) = &state.token
        && !authorized(headers, expected)
    {
        return Some(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "send the server's token as `Authorization: Bearer <EVE_SERVE_TOKEN>`",
        ));
    }
    if request.method() == Method::POST && state.shutdown.is_cancelled() {
        return Some(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "shutting_down",
            "the server is shutting down",
        ));
    }
    None
}

fn preflight() -> Response {
    let mut response = StatusCode::NO_CONTENT.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_METHODS,
        HeaderValue::from_static("GET, POST"),
    );
    headers.insert(
        header::ACCESS_CONTROL_ALLOW_HEADERS,
        HeaderValue::from_static("authorization, content-type"),
    );
    headers.insert(
        header::ACCESS_CONTROL_MAX_AGE,
        HeaderValue::from_static("600"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_token_is_authorized() {
        let expected = digest("s3cret-token");
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static("")),
            );
            authorized(&headers, &expected)
        };
        assert!(with("Bearer s3cret-token"));
        assert!(with("bearer s3cret-token"));
        assert!(!with("Bearer s3cret-toke"));
        assert!(!with("Bearer s3cret-token2"));
        assert!(!with("Basic s3cret-token"));
        assert!(!with("s3cret-token"));
        assert!(!with("Bearer "));
        assert!(!authorized(&HeaderMap::new(), &expected));
        assert!(
            !authorized(&HeaderMap::new(), &digest("")),
            "an empty token never matches"
        );
    }

    #[test]
    fn loopback_hosts_are_known_by_name_and_address() {
        for host in [
            "localhost",
            "localhost:8787",
            "127.0.0.1:8787",
            "127.0.0.2",
            "[::1]:8787",
            "LOCALHOST",
        ] {
            assert!(loopback_host(host), "{host}");
        }
        for host in [
            "evil.example:8787",
            "localhost.evil.example",
            "10.0.0.1:8787",
            "",
            "[::2]:80",
        ] {
            assert!(!loopback_host(host), "{host}");
        }
    }
}
