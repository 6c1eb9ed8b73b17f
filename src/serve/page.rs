//! The chat page at `GET /`: one HTML file, a script and a style sheet, embedded in the
//! binary. It uses only the public API, with the cookie it gets for the one-time link
//! eve prints at start (`/?login=…`) or for the token a person types in; the script never
//! holds the token.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{RawQuery, State as Extract};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use super::State;
use super::error::{ApiError, parse};
use super::guard;

const INDEX: &str = include_str!("page/index.html");
const SCRIPT: &str = include_str!("page/page.js");
const STYLE: &str = include_str!("page/page.css");

/// Nothing but this server's own script, style and API: no inline script, no other site.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

fn asset(body: &'static str, kind: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(POLICY),
    );
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The page; with `?login=CODE`, the one-time link: the first visit with the right
/// code gets the cookie, and every visit with a code goes on to `/`, so no code stays in
/// the address bar or the history.
pub async fn index(Extract(state): Extract<Arc<State>>, RawQuery(query): RawQuery) -> Response {
    let code = query
        .as_deref()
        .and_then(|q| q.split('&').find_map(|pair| pair.strip_prefix("login=")));
    let Some(code) = code else {
        return asset(INDEX, "text/html; charset=utf-8");
    };
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
    if state.keys.use_login(code)
        && let Some(cookie) = state.keys.set_cookie()
    {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Login {
    token: String,
}

/// `POST /eve/v1/login {"token": "…"}`: the page's way in when its link is used up.
pub async fn login(Extract(state): Extract<Arc<State>>, body: Bytes) -> Result<Response, ApiError> {
    let login: Login = parse(&body)?;
    if !state.keys.is_token(login.token.trim()) {
        return Err(guard::unauthorized());
    }
    let mut response = StatusCode::NO_CONTENT.into_response();
    if let Some(cookie) = state.keys.set_cookie() {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    Ok(response)
}

pub async fn script() -> Response {
    asset(SCRIPT, "text/javascript; charset=utf-8")
}

pub async fn style() -> Response {
    asset(STYLE, "text/css; charset=utf-8")
}
