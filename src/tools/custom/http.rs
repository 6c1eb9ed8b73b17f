//! HTTP tools: one request described by templates over `input`, `agent_dir` and `env`.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::{FutureExt, StreamExt};
use minijinja::{Environment, UndefinedBehavior};
use serde_json::{Value, json};

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
            allow_private: _,
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
        let env: BTreeMap<String, String> = std::env::vars()
            .filter(|(name, _)| !ctx.hidden_env.contains(name))
            .collect();
        let request = match self.render(input, &ctx.agent_dir.to_string_lossy(), &env) {
            Ok(request) => request,
            Err(e) => return ToolOutput::error(e),
        };
        let client = match crate::net::client() {
            Ok(client) => client,
            Err(e) => return ToolOutput::error(e),
        };
        let Ok(method) = reqwest::Method::from_bytes(request.method.as_bytes()) else {
            return ToolOutput::error(format!("`{}` is not an HTTP method", request.method));
        };
        let mut builder = client.request(method, &request.url).timeout(self.timeout);
        for (name, value) in &request.headers {
            builder = builder.header(name, value);
        }
        if let Some(body) = request.body {
            builder = builder.body(body);
        }
        let exchange = async {
            let response = builder.send().await.map_err(|e| e.to_string())?;
            let status = response.status();
            let mut body = Captured::new(BODY_LIMIT);
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                body.push(&chunk.map_err(|e| e.to_string())?);
            }
            Ok::<_, String>((status, body.text()))
        };
        tokio::select! {
            result = exchange => match result {
                Ok((status, body)) if status.is_success() => ToolOutput::ok(body),
                Ok((status, body)) => ToolOutput::error(format!("HTTP {status}\n{body}")),
                Err(e) => ToolOutput::error(format!("{} {} failed: {e}", request.method, request.url)),
            },
            () = ctx.cancel.cancelled() => ToolOutput::error(format!("`{}` was aborted: the turn was interrupted", self.name)),
        }
    }
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
}
