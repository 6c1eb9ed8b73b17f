//! What every request passes before a handler sees it: who is calling (the token as a
//! bearer, or the page's cookie, both compared in constant time), the `Host` a server
//! without a chosen token answers to, the origins a browser may call from, CORS when
//! asked for, refusal while shutting down; and the request log, which holds the method,
//! the path, the status and the time, never a body, a query or a header.
//!
//! Every caller is authenticated, local or not: a process on this machine, a sandboxed
//! tool of one of the server's own sessions among them, must not answer that session's
//! approvals. The token is `EVE_SERVE_TOKEN` or one made at start; eve keeps it in
//! memory only, never in the environment of a process it starts, a log, a session or
//! an event. The page gets in by a one-time link eve prints at start (or by the token
//! typed into it), which it trades for an `HttpOnly`, `SameSite=Strict` cookie.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{Request, State as Extract};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::State;
use super::error::ApiError;
use crate::serve::log::log_line;

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
    log_line!(
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
    // A token eve made is only ever printed on this machine: without EVE_SERVE_TOKEN a
    // request must be addressed to it (a browser tricked by DNS rebinding is not).
    if !state.keys.chosen && !loopback_host(host) {
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
    // Everything but the page, its login and the health check needs the token or the
    // page's cookie, from every caller: a path no route takes is refused before it is
    // looked up, however it is spelled.
    let open = matches!(
        request.uri().path(),
        "/" | "/page.js" | "/page.css" | "/eve/v1/health" | "/eve/v1/login"
    );
    if !open && request.method() != Method::OPTIONS && !state.keys.admits(headers) {
        return Some(unauthorized());
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

/// `401 unauthorized`, saying where the token is.
pub fn unauthorized() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "unauthorized",
        "send the server's token as `Authorization: Bearer <token>`: EVE_SERVE_TOKEN, or the one `eve serve` printed at start",
    )
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
