//! The process-wide HTTP client and the one-line form of its errors, shared by the
//! providers and the connections' HTTP transports. (Tools that reach the network build
//! their own clients in `tools::egress`, which follows redirects itself.)

use std::sync::OnceLock;
use std::time::Duration;

/// Redirects the client follows at most.
pub const MAX_REDIRECTS: usize = 10;

/// The process-wide HTTP client (rustls with ring, HTTP/2 when the server offers it).
/// It follows redirects only within the origin of the request ([`same_origin`]).
pub fn client() -> Result<reqwest::Client, String> {
    static CLIENT: OnceLock<Result<reqwest::Client, String>> = OnceLock::new();
    CLIENT
        .get_or_init(|| {
            // Err means another provider is already installed, which is just as good.
            let _ = rustls::crypto::ring::default_provider().install_default();
            reqwest::Client::builder()
                .user_agent(concat!("eve/", env!("CARGO_PKG_VERSION")))
                .connect_timeout(Duration::from_secs(30))
                // Decompression is there for web_fetch and HTTP tools; provider streams
                // stay as they were, uncompressed and unbuffered.
                .no_gzip()
                .no_brotli()
                .redirect(reqwest::redirect::Policy::custom(same_origin))
                .build()
                .map_err(|e| format!("cannot set up the HTTP client: {e}"))
        })
        .clone()
}

/// A redirect is followed only to the origin (scheme, host and port) the request was
/// made to. The requests of this client carry credentials in headers reqwest does not
/// know to be secret (`x-api-key`, a connection's `${VAR}` headers), and it keeps them
/// on every hop: a provider's base URL or an MCP server answering `307` to another
/// origin would have them sent there. A redirect elsewhere is not followed; the caller
/// gets the redirect response itself.
fn same_origin(attempt: reqwest::redirect::Attempt<'_>) -> reqwest::redirect::Action {
    let elsewhere = attempt
        .previous()
        .first()
        .is_some_and(|first| first.origin() != attempt.url().origin());
    if elsewhere {
        attempt.stop()
    } else if attempt.previous().len() > MAX_REDIRECTS {
        attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
    } else {
        attempt.follow()
    }
}

/// The origin a redirect `response` points to when it is another one than the
/// request's, as `scheme://host:port`: the redirect [`client`] did not follow.
pub fn redirect_elsewhere(response: &reqwest::Response) -> Option<String> {
    if !response.status().is_redirection() {
        return None;
    }
    let location = response
        .headers()
        .get(reqwest::header::LOCATION)?
        .to_str()
        .ok()?;
    let next = response.url().join(location.trim()).ok()?;
    (next.origin() != response.url().origin()).then(|| next.origin().ascii_serialization())
}

/// An error and its causes on one line: reqwest's own message rarely says what failed.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}
