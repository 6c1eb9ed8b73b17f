//! Who may call the server: the token (`EVE_SERVE_TOKEN`, or one made at start) and
//! the page's cookie and one-time login code, kept as digests and compared in
//! constant time (see `guard.rs` for where they are checked).

use std::sync::Mutex;

use axum::http::{HeaderMap, HeaderValue, header};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

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
    pub fn admits(&self, headers: &HeaderMap) -> bool {
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
}
