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

use std::sync::{Arc, Mutex};
use std::time::Instant;

use axum::extract::{Request, State as Extract};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use super::State;
use super::error::ApiError;

/// The token clients must show: `EVE_SERVE_TOKEN`, or one eve made at start. Its
/// `Debug` form never shows it.
#[derive(Clone)]
pub struct Token {
    value: String,
    /// The person chose it (`EVE_SERVE_TOKEN`), rather than eve making it.
    pub chosen: bool,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Token")
            .field("chosen", &self.chosen)
            .finish_non_exhaustive()
    }
}

impl Token {
    /// `chosen` (`EVE_SERVE_TOKEN`, when set), or a new random one.
    pub fn new(chosen: Option<String>) -> Result<Token, String> {
        Ok(match chosen {
            Some(value) => Token {
                value,
                chosen: true,
            },
            None => Token {
                value: crate::secrets::random_hex(32)?,
                chosen: false,
            },
        })
    }

    /// The token itself, to tell the person who started the server.
    pub fn reveal(&self) -> &str {
        &self.value
    }
}

/// What a caller may show, kept as digests, and the one-time login code of the page.
#[derive(Debug)]
pub struct Keys {
    token: [u8; 32],
    /// The person chose the token (`EVE_SERVE_TOKEN`).
    pub chosen: bool,
    /// The cookie's name: cookies do not tell ports apart, so two servers of one
    /// machine each have their own.
    cookie_name: String,
    /// The cookie's value, given to a page that logged in.
    cookie: String,
    /// The digest of the login code the printed link holds, until it is used.
    login: Mutex<Option<[u8; 32]>>,
}

impl Keys {
    /// The keys of a server listening on `port`; returns them and the one-time login
    /// code (for the link eve prints).
    pub fn new(token: &Token, port: u16) -> Result<(Keys, String), String> {
        let code = crate::secrets::random_hex(32)?;
        let keys = Keys {
            token: digest(&token.value),
            chosen: token.chosen,
            cookie_name: format!("eve-{port}"),
            cookie: crate::secrets::random_hex(32)?,
            login: Mutex::new(Some(digest(&code))),
        };
        Ok((keys, code))
    }

    /// Whether the request is from someone who holds the token: as a bearer, or as the
    /// page's cookie.
    fn admits(&self, headers: &HeaderMap) -> bool {
        authorized(headers, &self.token) || self.cookie_of(headers)
    }

    fn cookie_of(&self, headers: &HeaderMap) -> bool {
        let expected = digest(&self.cookie);
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().split_once('='))
            .any(|(name, value)| {
                let matches: bool = digest(value).ct_eq(&expected).into();
                name == self.cookie_name && matches
            })
    }

    /// Whether `token` is the server's token (the page's form sends it).
    pub fn is_token(&self, token: &str) -> bool {
        let matches: bool = digest(token).ct_eq(&self.token).into();
        matches && !token.is_empty()
    }

    /// Uses the one-time login code: `true` the first time the right code comes.
    pub fn use_login(&self, code: &str) -> bool {
        let mut login = crate::sync::lock(&self.login);
        let matches = login.is_some_and(|expected| {
            let matches: bool = digest(code).ct_eq(&expected).into();
            matches && !code.is_empty()
        });
        if matches {
            *login = None;
        }
        matches
    }

    /// The `Set-Cookie` value that lets a page in.
    pub fn set_cookie(&self) -> Option<HeaderValue> {
        HeaderValue::from_str(&format!(
            "{}={}; Path=/; HttpOnly; SameSite=Strict",
            self.cookie_name, self.cookie
        ))
        .ok()
    }
}

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
    fn the_login_code_works_once_and_only_this_servers_cookie_lets_in() {
        let token = Token::new(None).unwrap();
        assert!(!token.chosen);
        assert_eq!(token.reveal().len(), 64);
        assert!(!format!("{token:?}").contains(token.reveal()));
        let (keys, code) = Keys::new(&token, 8787).unwrap();
        assert!(!keys.use_login(""));
        assert!(!keys.use_login(&format!("{code}x")));
        assert!(keys.use_login(&code));
        assert!(!keys.use_login(&code), "used up");
        let cookie = keys.set_cookie().unwrap();
        let pair = cookie
            .to_str()
            .unwrap()
            .split(';')
            .next()
            .unwrap()
            .to_string();
        assert!(pair.starts_with("eve-8787="));
        let with = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(header::COOKIE, HeaderValue::from_str(value).unwrap());
            keys.admits(&headers)
        };
        assert!(with(&pair));
        assert!(with(&format!("a=b; {pair}; c=d")));
        assert!(!with(&pair.replace("eve-8787", "eve-8788")));
        assert!(!with("eve-8787="));
        assert!(!with(&format!("eve-8787={}", token.reveal())));
        assert!(keys.is_token(token.reveal()));
        assert!(!keys.is_token(""));
        let mut bearer = HeaderMap::new();
        bearer.insert(
            header::AUTHORIZATION,
            HeaderValue::from_str(&format!("Bearer {}", token.reveal())).unwrap(),
        );
        assert!(keys.admits(&bearer));
        assert!(!keys.admits(&HeaderMap::new()));
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
