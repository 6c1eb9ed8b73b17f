//! HTTP tools: one request described by templates over `input`, `agent_dir` and `env`,
//! sent under `egress`'s address policy (no loopback, private or link-local address unless
//! the tool sets `allow_private`), and only to the host the URL template writes out, when
//! it writes one.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use minijinja::{Environment, UndefinedBehavior};
use serde_json::{Value, json};

use crate::tools::egress;
use crate::tools::output::Captured;
use crate::tools::{ToolContext, ToolExec, ToolOutput};

/// Bytes of a response body an HTTP tool returns at most.
pub const BODY_LIMIT: usize = 64 * 1024;

/// An `[http]` tool.
#[derive(Debug, Clone)]
pub struct HttpTool {
    pub name: String,
    pub method: String,
    pub url: String,
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    pub timeout: Duration,
    /// Whether loopback, private and link-local addresses may be reached.
    pub allow_private: bool,
}

/// The request an HTTP tool sends for one call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
}

impl HttpTool {
    /// The tool as its manifest entry declares it.
    pub fn from_manifest(tool: &crate::manifest::Tool) -> Result<HttpTool, String> {
        let crate::manifest::Executor::Http {
            method,
            url,
            headers,
            body,
            allow_private,
        } = &tool.executor
        else {
            return Err(format!("`{}` is not an HTTP tool", tool.name));
        };
        Ok(HttpTool {
            name: tool.name.clone(),
            method: method.clone(),
            url: url.clone(),
            headers: headers.clone(),
            body: body.clone(),
            timeout: Duration::from_secs(tool.timeout_secs.max(1)),
            allow_private: *allow_private,
        })
    }

    /// Renders the templates for one call; `env` is the process environment.
    pub fn render(
        &self,
        input: &Value,
        agent_dir: &str,
        env: &BTreeMap<String, String>,
    ) -> Result<RenderedRequest, String> {
        let mut jinja = Environment::new();
        jinja.set_undefined_behavior(UndefinedBehavior::Strict);
        let context = minijinja::Value::from(minijinja::value::Serde(json!({
            "input": input,
            "agent_dir": agent_dir,
            "env": env,
        })));
        let render = |what: &str, template: &str| {
            jinja.render_str(template, &context).map_err(|e| {
                format!(
                    "cannot build the request's {what}: {}",
                    e.detail().unwrap_or("invalid template")
                )
            })
        };
        let url = render("url", &self.url)?;
        let headers = self
            .headers
            .iter()
            .map(|(name, value)| Ok((name.clone(), render(&format!("`{name}` header"), value)?)))
            .collect::<Result<Vec<_>, String>>()?;
        let body = self
            .body
            .as_deref()
            .map(|b| render("body", b))
            .transpose()?;
        Ok(RenderedRequest {
            method: self.method.clone(),
            url,
            headers,
            body,
        })
    }

    async fn run(&self, input: &Value, ctx: &ToolContext) -> ToolOutput {
        // Provider API keys stay out of reach, as they do for command tools.
        // `vars_os`: `vars` panics on a name or value that is not UTF-8, and such a
        // variable (which no template can name) must not break the tool.
        let env: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .filter(|(name, _)| !ctx.hidden_env.contains(name))
            .collect();
        let request = match self.render(input, &ctx.agent_dir.to_string_lossy(), &env) {
            Ok(request) => request,
            Err(e) => return ToolOutput::error(e),
        };
        let Ok(method) = reqwest::Method::from_bytes(request.method.as_bytes()) else {
            return ToolOutput::error(format!("`{}` is not an HTTP method", request.method));
        };
        let url = match reqwest::Url::parse(request.url.trim()) {
            Ok(url) => url,
            Err(e) => {
                return ToolOutput::error(format!(
                    "cannot send the request: `{}` is not a valid URL ({e})",
                    request.url
                ));
            }
        };
        let mut headers = reqwest::header::HeaderMap::new();
        for (name, value) in &request.headers {
            let Ok(header) = reqwest::header::HeaderName::from_bytes(name.as_bytes()) else {
                return ToolOutput::error(format!(
                    "cannot send the `{name}` header: it is not a valid header name"
                ));
            };
            let Ok(value) = reqwest::header::HeaderValue::from_str(value) else {
                return ToolOutput::error(format!(
                    "cannot send the `{name}` header: its value contains a line break or another control character"
                ));
            };
            headers.append(header, value);
        }
        // The call's span, when telemetry exports one, unless the author sends their own.
        if let Some(traceparent) = &ctx.traceparent
            && !headers.contains_key("traceparent")
            && let Ok(value) = reqwest::header::HeaderValue::from_str(traceparent)
        {
            headers.insert("traceparent", value);
        }
        let fixed_origin = literal_origin(&self.url);
        let policy = egress::Policy {
            allow_private: self.allow_private,
            user_agent: USER_AGENT,
            fixed_origin: fixed_origin.as_ref(),
        };
        let outgoing = egress::Request {
            method,
            url,
            headers,
            body: request.body,
        };
        let exchange = async {
            let response = egress::send(&policy, outgoing).await?;
            let status = response.status();
            let mut body = Captured::new(BODY_LIMIT);
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                body.push(&chunk.map_err(|e| {
                    format!(
                        "{} {} failed: {}",
                        request.method,
                        request.url,
                        crate::net::error_chain(&e)
                    )
                })?);
            }
            Ok::<_, String>((status, body.text()))
        };
        tokio::select! {
            result = tokio::time::timeout(self.timeout, exchange) => match result {
                Ok(Ok((status, body))) if status.is_success() => ToolOutput::ok(body),
                Ok(Ok((status, body))) => ToolOutput::error(format!("HTTP {status}\n{body}")),
                Ok(Err(e)) => ToolOutput::error(e),
                Err(_) => ToolOutput::error(format!(
                    "`{}` timed out after {} s",
                    self.name,
                    self.timeout.as_secs()
                )),
            },
            () = ctx.cancel.cancelled() => ToolOutput::error(format!("`{}` was aborted: the turn was interrupted", self.name)),
        }
    }
}

const USER_AGENT: &str = concat!("eve/", env!("CARGO_PKG_VERSION"));

/// The origin a URL template writes out before any template tag
/// (`https://api.example.com/…`, `http://127.0.0.1:8080{{ input.path }}`), if it does:
/// every URL the tool requests, and every redirect it follows, must be on it, so that a
/// model value or a server cannot move the request elsewhere (`@127.0.0.1/secret`, a
/// redirect to another port). A template that leaves the host (or a port after a `:`,
/// which reads the same as `user:{{ env.PASS }}@host`) to a value fixes none; one that
/// writes no port fixes the scheme's.
pub fn literal_origin(template: &str) -> Option<egress::Origin> {
    let tag = ["{{", "{%", "{#"]
        .iter()
        .filter_map(|open| template.find(open))
        .min()
        .unwrap_or(template.len());
    let literal = template[..tag].trim_start();
    let (scheme, after) = literal.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let authority_end = after.find(['/', '?', '#']).unwrap_or(after.len());
    let authority = &after[..authority_end];
    // The authority is whole when something follows it, or no tag does.
    let whole = authority_end < after.len() || tag == template.len();
    let host_port = match authority.rsplit_once('@') {
        Some((_, host)) => host,
        // `https://user:{{ env.PASS }}@host`: the host is not written yet.
        None if !whole && authority.ends_with(':') => return None,
        None => authority,
    };
    let (host, port) = if host_port.starts_with('[') {
        let end = host_port.find(']')?;
        (&host_port[..=end], host_port[end + 1..].strip_prefix(':'))
    } else {
        match host_port.split_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (host_port, None),
        }
    };
    // `https://api.{{ input.zone }}.com`: the value finishes the host.
    if host.is_empty() || (!whole && port.is_none() && host.ends_with(['.', '-'])) {
        return None;
    }
    let default = match scheme.as_str() {
        "http" => 80,
        "https" => 443,
        _ => return None,
    };
    // Digits a value could lengthen (`:80{{ "81" }}`) still fix the port written.
    let port = match port {
        Some("") | None => default,
        Some(digits) => digits.parse().ok()?,
    };
    Some(egress::Origin {
        scheme,
        host: host.to_ascii_lowercase(),
        port,
    })
}

impl ToolExec for HttpTool {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        self.run(input, ctx).boxed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_headers_and_body_are_rendered_from_input_agent_dir_and_env() {
        let tool = HttpTool {
            name: "weather".into(),
            method: "POST".into(),
            url: "https://api.example.com/w?city={{ input.city | urlencode }}".into(),
            headers: BTreeMap::from([("Authorization".into(), "Bearer {{ env.TOKEN }}".into())]),
            body: Some("{{ input | tojson }} from {{ agent_dir }}".into()),
            timeout: Duration::from_secs(5),
            allow_private: false,
        };
        let env = BTreeMap::from([("TOKEN".to_string(), "t0k".to_string())]);
        let request = tool
            .render(&json!({"city": "São Paulo"}), "/agents/w", &env)
            .unwrap();
        assert_eq!(
            request.url,
            "https://api.example.com/w?city=S%C3%A3o%20Paulo"
        );
        assert_eq!(
            request.headers,
            [("Authorization".to_string(), "Bearer t0k".to_string())]
        );
        assert_eq!(
            request.body.as_deref(),
            Some(r#"{"city": "São Paulo"} from /agents/w"#)
        );
        let err = tool
            .render(&json!({"city": "x"}), "/a", &BTreeMap::new())
            .unwrap_err();
        assert!(
            err.starts_with("cannot build the request's `Authorization` header"),
            "{err}"
        );
    }

    #[test]
    fn the_literal_origin_of_a_url_template() {
        let origin = |scheme: &str, host: &str, port: u16| {
            Some(egress::Origin {
                scheme: scheme.into(),
                host: host.into(),
                port,
            })
        };
        for (template, fixed) in [
            (
                "https://api.example.com/v1/{{ input.x }}",
                origin("https", "api.example.com", 443),
            ),
            (
                "http://api.example.com{{ input.path }}",
                origin("http", "api.example.com", 80),
            ),
            (
                "HTTP://API.example.com:8080{{ input.path }}",
                origin("http", "api.example.com", 8080),
            ),
            (
                "http://127.0.0.1:8080/api",
                origin("http", "127.0.0.1", 8080),
            ),
            (
                "https://user@api.example.com/{{ input.x }}",
                origin("https", "api.example.com", 443),
            ),
            ("https://user:{{ env.PASS }}@api.example.com/", None),
            ("http://localhost:{{ env.PORT }}/x", None),
            ("http://[::1]:80/{{ input.x }}", origin("http", "[::1]", 80)),
            ("http://[::1]/x", origin("http", "[::1]", 80)),
            ("{{ env.BASE }}/x", None),
            ("https://{{ input.host }}/", None),
            ("https://api.{{ input.zone }}.com/", None),
            ("ftp://example.com/", None),
            ("http://example.com:99999/", None),
        ] {
            assert_eq!(literal_origin(template), fixed, "{template}");
        }
    }
}
