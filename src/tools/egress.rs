//! Where tools may connect, and how: the address policy shared by `web_fetch` and HTTP
//! tools. Unless a tool allows private addresses, every host — the first URL's and each
//! redirect's — is resolved first and refused when any of its addresses is not public
//! (loopback, private, link-local…); the connection is then pinned to the checked
//! addresses, so that DNS cannot answer differently between the check and the connect.
//! Redirects are followed here, hop by hop, never by the HTTP client; a tool whose URL
//! fixes an origin (scheme, host and port) is never taken off it, by a value or a redirect.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use reqwest::header::{
    AUTHORIZATION, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, COOKIE, HeaderMap, LOCATION,
    PROXY_AUTHORIZATION,
};
use reqwest::{Method, Url};

/// Redirects followed at most.
pub const MAX_REDIRECTS: usize = 10;
/// How long connecting to a server may take.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// How a tool may connect.
#[derive(Debug, Clone, Copy)]
pub struct Policy<'a> {
    /// Whether loopback, private, link-local… addresses may be reached.
    pub allow_private: bool,
    pub user_agent: &'a str,
    /// The origin every hop must be on, when the tool fixes one.
    pub fixed_origin: Option<&'a Origin>,
}

/// An origin a tool's URL fixes: scheme, host and port. A redirect to another port of
/// the same host is another server (`127.0.0.1:9999`), so the port counts too.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// `http` or `https`, lowercase.
    pub scheme: String,
    /// As [`Url::host_str`] writes it: lowercase, an IPv6 address in brackets.
    pub host: String,
    /// The port written, or the scheme's.
    pub port: u16,
}

impl Origin {
    /// Why `url` is not on this origin, if it is not.
    fn refuses(&self, url: &Url) -> Option<String> {
        let host = url.host_str().unwrap_or_default();
        let port = url.port_or_known_default().unwrap_or(0);
        let same = url.scheme() == self.scheme
            && host.eq_ignore_ascii_case(&self.host)
            && port == self.port;
        (!same).then(|| {
            format!(
                "the tool's URL is on `{}://{}:{}`, and this one is on `{}://{host}:{port}`",
                self.scheme,
                self.host,
                self.port,
                url.scheme()
            )
        })
    }
}

/// One request to send.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    pub url: Url,
    pub headers: HeaderMap,
    pub body: Option<String>,
}

/// Sends `request` under `policy`, following up to [`MAX_REDIRECTS`] redirects, each hop
/// checked and pinned like the first. The error is a sentence for the model.
pub async fn send(policy: &Policy<'_>, mut request: Request) -> Result<reqwest::Response, String> {
    let start = request.url.clone();
    let mut redirects = 0;
    loop {
        let url = request.url.clone();
        let what = if redirects == 0 {
            url.to_string()
        } else {
            format!("{url} (redirected from {start})")
        };
        check_scheme(&url).map_err(|e| format!("Cannot fetch {what}: {e}"))?;
        if let Some(why) = policy.fixed_origin.and_then(|o| o.refuses(&url)) {
            return Err(format!("Refused to fetch {what}: {why}."));
        }
        let client = client_for(policy, &url, &what).await?;
        let mut builder = client
            .request(request.method.clone(), url.clone())
            .headers(request.headers.clone());
        if let Some(body) = &request.body {
            builder = builder.body(body.clone());
        }
        let response = builder
            .send()
            .await
            .map_err(|e| format!("Cannot fetch {what}: {}", crate::net::error_chain(&e)))?;
        let status = response.status().as_u16();
        let location = match response.headers().get(LOCATION) {
            Some(location) if matches!(status, 301 | 302 | 303 | 307 | 308) => location,
            _ => return Ok(response),
        };
        let next = location
            .to_str()
            .ok()
            .and_then(|l| url.join(l.trim()).ok())
            .ok_or_else(|| {
                format!(
                    "Cannot fetch {what}: it redirects to `{}`, which is not a valid URL.",
                    String::from_utf8_lossy(location.as_bytes())
                )
            })?;
        if redirects == MAX_REDIRECTS {
            return Err(format!(
                "Cannot fetch {start}: it was redirected more than {MAX_REDIRECTS} times (the last hop, {url}, redirects to {next})."
            ));
        }
        check_scheme(&next)
            .map_err(|e| format!("Refused to follow the redirect from {what} to {next}: {e}"))?;
        // As browsers do: 303, and 301/302 after anything but GET or HEAD, become a GET
        // without a body; 307 and 308 repeat the request.
        if status == 303 || (matches!(status, 301 | 302) && request.method != Method::HEAD) {
            if request.method != Method::HEAD {
                request.method = Method::GET;
            }
            request.body = None;
            for header in [CONTENT_TYPE, CONTENT_LENGTH, CONTENT_ENCODING] {
                request.headers.remove(header);
            }
        }
        // Credentials stay with the origin they were written for.
        if next.origin() != url.origin() {
            for header in [AUTHORIZATION, COOKIE, PROXY_AUTHORIZATION] {
                request.headers.remove(header);
            }
        }
        redirects += 1;
        request.url = next;
    }
}

/// A client for one request to `url` (`what` in messages): the host's addresses checked
/// and pinned unless the policy allows private addresses.
async fn client_for(policy: &Policy<'_>, url: &Url, what: &str) -> Result<reqwest::Client, String> {
    let pinned = if policy.allow_private {
        None
    } else {
        match checked_addresses(url).await {
            Ok(pinned) => pinned,
            Err(Check::Unresolved(e)) => return Err(format!("Cannot fetch {what}: {e}")),
            Err(Check::Forbidden(e)) => return Err(format!("Refused to fetch {what}: {e}")),
        }
    };
    build_client(
        policy.user_agent,
        pinned
            .as_ref()
            .map(|(host, addrs)| (host.as_str(), addrs.as_slice())),
    )
    .map_err(|e| format!("Cannot fetch {what}: {e}"))
}

/// A client that follows no redirects, its connections to `pinned`'s host made only to
/// `pinned`'s addresses.
pub fn build_client(
    user_agent: &str,
    pinned: Option<(&str, &[SocketAddr])>,
) -> Result<reqwest::Client, String> {
    // Err means another provider is already installed, which is just as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut builder = reqwest::Client::builder()
        .user_agent(user_agent)
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(CONNECT_TIMEOUT);
    if let Some((host, addrs)) = pinned {
        builder = builder.resolve_to_addrs(host, addrs);
    }
    builder
        .build()
        .map_err(|e| format!("cannot set up the HTTP client: {e}"))
}

/// Whether a URL is one eve may fetch at all: http or https.
pub fn check_scheme(url: &Url) -> Result<(), String> {
    match url.scheme() {
        "http" | "https" => Ok(()),
        other => Err(format!(
            "only http and https URLs can be fetched, not {other}."
        )),
    }
}

/// Why a host's addresses did not pass.
#[derive(Debug)]
enum Check {
    /// The host has no address.
    Unresolved(String),
    /// An address is not public.
    Forbidden(String),
}

/// For a host name, the addresses it resolves to, all checked, to pin the connection to;
/// for an IP literal (checked too) there is nothing to pin.
async fn checked_addresses(url: &Url) -> Result<Option<(String, Vec<SocketAddr>)>, Check> {
    let host = url
        .host_str()
        .ok_or_else(|| Check::Unresolved("the URL has no host.".into()))?;
    let literal = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<Ipv6Addr>().ok().map(IpAddr::V6),
        None => host.parse::<Ipv4Addr>().ok().map(IpAddr::V4),
    };
    if let Some(ip) = literal {
        return match forbidden_reason(ip) {
            Some(reason) => Err(Check::Forbidden(format!(
                "{ip} is {} address. {PRIVATE_HINT}",
                with_article(reason)
            ))),
            None => Ok(None),
        };
    }
    let port = url.port_or_known_default().unwrap_or(80);
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| Check::Unresolved(format!("cannot resolve `{host}` ({e}).")))?
        .collect();
    if addrs.is_empty() {
        return Err(Check::Unresolved(format!(
            "`{host}` resolves to no address."
        )));
    }
    for addr in &addrs {
        if let Some(reason) = forbidden_reason(addr.ip()) {
            return Err(Check::Forbidden(format!(
                "`{host}` resolves to {}, {} address. {PRIVATE_HINT}",
                addr.ip(),
                with_article(reason)
            )));
        }
    }
    Ok(Some((host.to_string(), addrs)))
}

const PRIVATE_HINT: &str = "Loopback, private, link-local and other non-public addresses are refused unless the tool sets `allow_private = true`.";

fn with_article(reason: &str) -> String {
    let article = if reason.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    };
    format!("{article} {reason}")
}

/// Why `ip` may not be fetched unless `allow_private` is set; `None` for a public address.
pub fn forbidden_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, d] = ip.octets();
    match (a, b, c, d) {
        (0, 0, 0, 0) => Some("unspecified"),
        (0, ..) => Some("reserved (\"this network\")"),
        (10, ..) | (192, 168, ..) => Some("private"),
        (172, 16..=31, ..) => Some("private"),
        (100, 64..=127, ..) => Some("shared (carrier-grade NAT)"),
        (127, ..) => Some("loopback"),
        (169, 254, ..) => Some("link-local"),
        (192, 0, 0, _) => Some("reserved (IETF protocol assignments)"),
        (192, 0, 2, _) | (198, 51, 100, _) | (203, 0, 113, _) => Some("documentation"),
        (192, 88, 99, _) => Some("reserved (6to4 relay)"),
        (198, 18..=19, ..) => Some("benchmarking"),
        (224..=239, ..) => Some("multicast"),
        (255, 255, 255, 255) => Some("broadcast"),
        (240..=255, ..) => Some("reserved"),
        _ => None,
    }
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_reason(v4);
    }
    if ip.is_unspecified() {
        return Some("unspecified");
    }
    if ip.is_loopback() {
        return Some("loopback");
    }
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| {
        let [a, b] = hi.to_be_bytes();
        let [c, d] = lo.to_be_bytes();
        Ipv4Addr::new(a, b, c, d)
    };
    match s[0] {
        // ::/16 beyond the above: IPv4-compatible and IPv4-translated forms, all deprecated.
        0 => Some("reserved"),
        // NAT64 (64:ff9b::/96) reaches the embedded IPv4 address; the local-use prefix is private.
        0x64 if s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] => v4_reason(embedded(s[6], s[7])),
        0x64 if s[1] == 0xff9b && s[2] == 1 => Some("private (local-use NAT64)"),
        0x100 if s[1..4] == [0, 0, 0] => Some("reserved (discard-only)"),
        0x2001 if s[1] == 0 => Some("reserved (Teredo)"),
        0x2001 if s[1] == 0xdb8 => Some("documentation"),
        // 6to4 (2002::/16) reaches the embedded IPv4 address.
        0x2002 => v4_reason(embedded(s[1], s[2])),
        0x3fff if s[1] <= 0x0fff => Some("documentation"),
        x if x & 0xfe00 == 0xfc00 => Some("private (unique local)"),
        x if x & 0xffc0 == 0xfe80 => Some("link-local"),
        x if x & 0xffc0 == 0xfec0 => Some("private (site-local)"),
        x if x & 0xff00 == 0xff00 => Some("multicast"),
        _ => None,
    }
}
