//! The process-wide HTTP client and the one-line form of its errors, shared by the
//! providers and the tools that reach the network.

use std::sync::OnceLock;
use std::time::Duration;

/// The process-wide HTTP client (rustls with ring, HTTP/2 when the server offers it).
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
                .build()
                .map_err(|e| format!("cannot set up the HTTP client: {e}"))
        })
        .clone()
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
