//! One live MCP session with a server, on rmcp: started over stdio (a process eve runs)
//! or HTTP (streamable, or the older HTTP+SSE when the server answers that way); its
//! tools listed and called as JSON read leniently; `list_changed` noted for the next
//! step boundary.

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use rmcp::model::{
    CancelledNotificationParam, ClientCapabilities, ClientConfig, ClientRequest, CustomRequest,
    Implementation, ServerResult,
};
use rmcp::service::{NotificationContext, Peer, PeerRequestOptions, RunningService, ServiceError};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::listing::{Builder, MAX_PAGES};
use super::spawn::{Plan, Process};
use super::values::{Redactor, expand};
use crate::manifest::connection::{Connection, Listing, Transport};

/// The largest message eve reads from a server (stdio line, HTTP body, SSE event).
pub const MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// Where a server runs and what it may read.
#[derive(Clone, Copy)]
pub struct Place<'a> {
    pub agent_dir: &'a Path,
    pub workspace: &'a Path,
    /// Reads a variable for `${VAR}` (eve's secrets, then its environment).
    pub read: &'a (dyn Fn(&str) -> Option<String> + Sync),
    /// What a stdio server's sandbox is made from (unless its file says `sandbox =
    /// false`); `None`: unconfined (`mode = "off"`).
    pub sandbox: Option<&'a crate::sandbox::Recipe>,
}

/// What eve's side of the session does with what the server sends unasked.
#[derive(Clone)]
struct Handler {
    changed: Arc<AtomicBool>,
}

impl ClientHandler for Handler {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("eve", env!("CARGO_PKG_VERSION")),
        )
    }

    /// However many notifications come, one flag: the list is read again once, at the
    /// next step boundary.
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + Send + '_ {
        self.changed.store(true, Ordering::Relaxed);
        std::future::ready(())
    }
}

/// How a call failed, when it did not get a result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallError {
    /// No answer within the call's timeout; eve sent `notifications/cancelled`.
    Timeout,
    /// The turn was interrupted; eve sent `notifications/cancelled`.
    Interrupted,
    /// The connection is gone (the server exited, the stream closed).
    Closed,
    /// The server answered with a JSON-RPC error.
    Server(String),
}

/// A running session with one server.
pub struct Client {
    service: RunningService<RoleClient, Handler>,
    peer: Peer<RoleClient>,
    process: Option<tokio::sync::Mutex<Process>>,
    changed: Arc<AtomicBool>,
    pub secrets: Redactor,
    /// The server's name and version, as it said.
    pub server: Option<String>,
    /// `stdio`, `streamable HTTP` or `HTTP+SSE`.
    pub transport: &'static str,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("server", &self.server)
            .field("transport", &self.transport)
            .finish()
    }
}

impl Client {
    /// Starts the server and initialises the session (the SDK negotiates the protocol
    /// version), all within the connection's startup timeout.
    pub async fn start(connection: &Connection, place: Place<'_>) -> Result<Client, String> {
        let timeout = Duration::from_secs(connection.startup_timeout_secs.max(1));
        let changed = Arc::new(AtomicBool::new(false));
        let handler = Handler {
            changed: changed.clone(),
        };
        let mut secrets = Redactor::default();
        match &connection.transport {
            Transport::Stdio {
                command,
                env,
                cwd,
                sandbox,
            } => {
                let (sandbox, cache) = match place.sandbox.filter(|_| *sandbox) {
                    Some(recipe) => {
                        super::spawn::confine(recipe, place.agent_dir, &connection.name)?
                    }
                    None => (None, None),
                };
                let mut plan = plan(
                    connection,
                    command,
                    env,
                    cwd.as_deref(),
                    place,
                    &mut secrets,
                )?;
                plan.sandbox = sandbox;
                plan.cache = cache;
                let log = super::spawn::Log {
                    agent_dir: place.agent_dir.to_path_buf(),
                    name: connection.name.clone(),
                };
                let shown = format!(".eve/logs/{}.log", connection.name);
                let header = format!(
                    "--- eve {}: started `{}` at {} ---\n",
                    env!("CARGO_PKG_VERSION"),
                    connection.name,
                    crate::ids::now_rfc3339()
                );
                let (mut process, (stdout, stdin)) =
                    Process::start(&plan, log, shown, &header, secrets.clone()).await?;
                let transport =
                    AsyncRwTransport::new(stdout, stdin).with_max_line_length(MAX_MESSAGE);
                let started = tokio::time::timeout(timeout, handler.serve(transport)).await;
                let service = match started {
                    Ok(Ok(service)) => service,
                    Ok(Err(e)) => {
                        let why = match exited(&mut process).await {
                            Some(exit) => exit,
                            None => one_line(&e.to_string(), &secrets),
                        };
                        process.settle().await;
                        return Err(with_log(
                            &format!("the server did not start: {why}"),
                            &process,
                        ));
                    }
                    Err(_) => {
                        let exit = process.exit();
                        process.settle().await;
                        let why = match exit {
                            Some(exit) => format!("the server {exit} before it answered"),
                            None => {
                                format!("the server did not answer within {} s", timeout.as_secs())
                            }
                        };
                        return Err(with_log(&why, &process));
                    }
                };
                Ok(Client::new(
                    service,
                    Some(process),
                    changed,
                    secrets,
                    "stdio",
                ))
            }
            Transport::Http { url, headers } => {
                let headers = resolve_headers(connection, headers, place, &mut secrets)?;
                let client = crate::net::client()?;
                let started =
                    tokio::time::timeout(timeout, start_http(client, url, headers, handler))
                        .await
                        .map_err(|_| {
                            format!("the server did not answer within {} s", timeout.as_secs())
                        })?;
                let (service, transport) = started.map_err(|e| one_line(&e, &secrets))?;
                Ok(Client::new(service, None, changed, secrets, transport))
            }
        }
    }

    fn new(
        service: RunningService<RoleClient, Handler>,
        process: Option<Process>,
        changed: Arc<AtomicBool>,
        secrets: Redactor,
        transport: &'static str,
    ) -> Client {
        let peer = service.peer().clone();
        let server = peer
            .peer_info()
            .and_then(|info| info.server_info.clone())
            .map(|i| {
                let name = crate::text::shorten(&format!("{} {}", i.name, i.version), 100);
                crate::text::for_terminal(&name).into_owned()
            });
        Client {
            service,
            peer,
            process: process.map(tokio::sync::Mutex::new),
            changed,
            secrets,
            server,
            transport,
        }
    }

    /// Every page of `tools/list` (at most [`MAX_PAGES`]), each tool checked on its own.
    pub async fn list(&self) -> Result<Listing, String> {
        let mut builder = Builder::default();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map(|c| json!({ "cursor": c }));
            let result = self
                .request("tools/list", params, PeerRequestOptions::no_options())
                .await
                .map_err(|e| self.describe(&e))?;
            cursor = builder.page(&result)?;
            if cursor.is_none() {
                break;
            }
        }
        Ok(builder.finish(self.server.clone(), &self.secrets))
    }

    /// Calls `tool` with `arguments`. A timeout or a cancel sends
    /// `notifications/cancelled` for the request.
    pub async fn call(
        &self,
        tool: &str,
        arguments: &Value,
        timeout: Duration,
        cancel: &CancellationToken,
    ) -> Result<Value, CallError> {
        let params = json!({ "name": tool, "arguments": arguments });
        let request = ClientRequest::CustomRequest(CustomRequest::new("tools/call", Some(params)));
        let handle = self
            .peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(timeout))
            .await
            .map_err(|_| CallError::Closed)?;
        let id = handle.id.clone();
        tokio::select! {
            answer = handle.await_response() => match answer {
                Ok(result) => result_value(result).map_err(CallError::Server),
                Err(ServiceError::Timeout { .. }) => Err(CallError::Timeout),
                Err(ServiceError::McpError(e)) => {
                    Err(CallError::Server(one_line(&e.message, &self.secrets)))
                }
                Err(ServiceError::Cancelled { reason }) => Err(CallError::Server(format!(
                    "the server cancelled the call{}",
                    reason.map(|r| format!(": {}", one_line(&r, &self.secrets))).unwrap_or_default()
                ))),
                Err(_) => Err(CallError::Closed),
            },
            () = cancel.cancelled() => {
                let note = CancelledNotificationParam::new(
                    Some(id),
                    Some("the person interrupted the turn".into()),
                );
                let _ = self.peer.notify_cancelled(note).await;
                Err(CallError::Interrupted)
            }
        }
    }

    async fn request(
        &self,
        method: &str,
        params: Option<Value>,
        options: PeerRequestOptions,
    ) -> Result<Value, ServiceError> {
        let request = ClientRequest::CustomRequest(CustomRequest::new(method, params));
        let handle = self.peer.send_request_with_option(request, options).await?;
        let result = handle.await_response().await?;
        result_value(result).map_err(|_| ServiceError::UnexpectedResponse)
    }

    fn describe(&self, error: &ServiceError) -> String {
        match error {
            ServiceError::McpError(e) => format!(
                "the server answered: {}",
                one_line(&e.message, &self.secrets)
            ),
            ServiceError::UnexpectedResponse => "the server's reply is not what MCP says".into(),
            _ => "the connection closed".into(),
        }
    }

    /// Whether the server sent `notifications/tools/list_changed` since the last look.
    pub fn take_changed(&self) -> bool {
        self.changed.swap(false, Ordering::Relaxed)
    }

    /// Why the session is over, if it is: the process exited, or the stream closed.
    pub async fn ended(&self) -> Option<String> {
        let closed = self.service.is_closed() || self.peer.is_transport_closed();
        let Some(process) = &self.process else {
            return closed.then(|| "the connection to the server closed".to_string());
        };
        let mut process = process.lock().await;
        // A server whose output closed is usually exiting: give it a moment to say how.
        let exit = if closed {
            process.exit_within(Duration::from_secs(1)).await
        } else {
            process.exit()
        };
        let message = match (exit, closed) {
            (Some(exit), _) => format!("the server {exit}"),
            (None, true) => "the server closed its output".to_string(),
            (None, false) => return None,
        };
        process.settle().await;
        Some(with_log(&message, &process))
    }

    /// Ends the session: the transport closes (a stdio server sees its stdin end), then
    /// the server's process group is stopped.
    pub async fn stop(mut self) {
        let _ = tokio::time::timeout(Duration::from_millis(500), self.service.close()).await;
        if let Some(process) = self.process.take() {
            process.into_inner().stop().await;
        }
    }
}

/// A result as JSON, however rmcp typed it.
fn result_value(result: ServerResult) -> Result<Value, String> {
    match result {
        ServerResult::CustomResult(custom) => Ok(custom.0),
        other => serde_json::to_value(other).map_err(|e| e.to_string()),
    }
}

/// An error from the server (or about it) as one bounded line, secrets removed, and
/// without the Rust type names rmcp puts in its transport errors.
fn one_line(text: &str, secrets: &Redactor) -> String {
    let mut text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    while let Some(start) = text.find("Transport [") {
        let Some(end) = text[start..].find("] error: ") else {
            break;
        };
        text.replace_range(start..start + end + "] error: ".len(), "");
    }
    crate::text::for_terminal(&secrets.redact(&crate::text::shorten(&text, 300))).into_owned()
}

/// What a refused streamable HTTP request said: its HTTP status, when there is one.
fn refusal(error: &str) -> String {
    match error.find("HTTP ") {
        Some(at) if error[at + 5..].chars().take(3).all(|c| c.is_ascii_digit()) => {
            let status = &error[at..];
            let end = status.find([':', ',']).unwrap_or(status.len());
            format!("it answered {}", status[..end].trim())
        }
        _ => crate::text::shorten(error, 160),
    }
}

async fn exited(process: &mut Process) -> Option<String> {
    process
        .exit_within(Duration::from_secs(1))
        .await
        .map(|exit| format!("it {exit}"))
}

/// A message with the end of the server's log after it (escapes shown, not obeyed:
/// the message may reach a terminal).
fn with_log(message: &str, process: &Process) -> String {
    let tail = crate::text::for_terminal(&crate::sync::lock(&process.tail).text()).into_owned();
    if tail.is_empty() {
        format!("{message} (its log, {}, is empty)", process.log)
    } else {
        format!("{message}; the end of {}:\n{tail}", process.log)
    }
}

/// The program a stdio connection would start, found exactly as its start finds it
/// (templates rendered, `${VAR}` read, the same lookup that never takes a program from
/// a folder the model may write), for `eve doctor`; nothing starts. `None` for a
/// connection over HTTP.
pub fn program(connection: &Connection, place: Place<'_>) -> Option<Result<String, String>> {
    let Transport::Stdio {
        command, env, cwd, ..
    } = &connection.transport
    else {
        return None;
    };
    let mut secrets = Redactor::default();
    Some(
        plan(
            connection,
            command,
            env,
            cwd.as_deref(),
            place,
            &mut secrets,
        )
        .map(|p| p.program),
    )
}

/// The process to start for a stdio connection: templates rendered, `${VAR}` read.
fn plan(
    connection: &Connection,
    command: &[String],
    env: &std::collections::BTreeMap<String, String>,
    cwd: Option<&str>,
    place: Place<'_>,
    secrets: &mut Redactor,
) -> Result<Plan, String> {
    // Absolute: the server does not start where eve runs.
    let agent_dir = place
        .agent_dir
        .canonicalize()
        .or_else(|_| std::path::absolute(place.agent_dir))
        .unwrap_or_else(|_| place.agent_dir.to_path_buf());
    let render = |text: &str| -> Result<String, String> {
        if !text.contains("{{") && !text.contains("{%") {
            return Ok(text.to_string());
        }
        let env = minijinja::Environment::new();
        env.render_str(
            text,
            minijinja::context! {
                agent_dir => agent_dir.display().to_string(),
                workspace => place.workspace.display().to_string(),
            },
        )
        .map_err(|e| format!("{}: cannot render `{text}`: {e}", connection.file))
    };
    let mut argv = Vec::with_capacity(command.len());
    for arg in command {
        argv.push(render(arg)?);
    }
    let Some((program, args)) = argv.split_first() else {
        return Err(format!("{}: `command` is empty", connection.file));
    };
    let mut vars = Vec::new();
    for (name, value) in env {
        let place_name = format!("{}: `env.{name}`", connection.file);
        vars.push((
            name.clone(),
            expand(value, &place_name, place.read, secrets)?,
        ));
    }
    // Where the model's processes may have written: never where the server starts
    // from, nor where its program is looked up.
    let writable = place.sandbox.map_or_else(
        || vec![place.workspace.to_path_buf()],
        crate::sandbox::Recipe::writable_folders,
    );
    let cwd = match cwd {
        Some(cwd) => place.workspace.join(render(cwd)?),
        None => super::spawn::home(place.agent_dir, &connection.name, &writable),
    };
    let program = crate::sandbox::program::resolve(
        program,
        &cwd,
        std::env::var_os("PATH").as_deref(),
        &writable,
    )
    .map_err(|why| format!("cannot start `{program}`: {why}"))?;
    let program = program.into_os_string().into_string().map_err(|p| {
        format!(
            "cannot start `{}`: its path is not UTF-8",
            p.to_string_lossy()
        )
    })?;
    Ok(Plan {
        program,
        args: args.to_vec(),
        env: vars,
        cwd,
        sandbox: None,
        cache: None,
    })
}

fn resolve_headers(
    connection: &Connection,
    headers: &std::collections::BTreeMap<String, String>,
    place: Place<'_>,
    secrets: &mut Redactor,
) -> Result<HeaderMap, String> {
    let mut out = HeaderMap::new();
    for (name, value) in headers {
        let where_ = format!("{}: `headers.{name}`", connection.file);
        let value = expand(value, &where_, place.read, secrets)?;
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("{where_}: not a header name"))?;
        let mut value = HeaderValue::from_str(&value)
            .map_err(|_| format!("{where_}: the value cannot be sent in a header"))?;
        value.set_sensitive(true);
        out.insert(name, value);
    }
    Ok(out)
}

/// Streamable HTTP first; when the server refuses it, the older HTTP+SSE transport.
async fn start_http(
    client: reqwest::Client,
    url: &str,
    headers: HeaderMap,
    handler: Handler,
) -> Result<(RunningService<RoleClient, Handler>, &'static str), String> {
    let custom: HashMap<HeaderName, HeaderValue> = headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let config = StreamableHttpClientTransportConfig::with_uri(url)
        .custom_headers(custom)
        .max_json_response_size(MAX_MESSAGE)
        .max_sse_event_size(MAX_MESSAGE);
    let transport = StreamableHttpClientTransport::with_client(client.clone(), config);
    let streamable = match handler.clone().serve(transport).await {
        Ok(service) => return Ok((service, "streamable HTTP")),
        Err(e) => one_line(&e.to_string(), &Redactor::default()),
    };
    match super::legacy_sse::connect(client, url, headers).await {
        Ok(legacy) => handler
            .serve(legacy)
            .await
            .map(|service| (service, "HTTP+SSE"))
            .map_err(|e| format!("the HTTP+SSE server did not start a session: {e}")),
        Err(legacy) => Err(format!(
            "the server refused streamable HTTP ({}), and {legacy}",
            refusal(&streamable)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_lose_type_names_and_keep_the_status() {
        let raw = "Send message error Transport [rmcp::transport::worker::WorkerTransport<rmcp::transport::streamable_http_client::StreamableHttpClientWorker<reqwest::async_impl::client::Client>>] error: unexpected server response: HTTP 405 Method Not Allowed: , when send initialize request";
        let line = one_line(raw, &Redactor::default());
        assert_eq!(
            line,
            "Send message error unexpected server response: HTTP 405 Method Not Allowed: , when send initialize request"
        );
        assert_eq!(refusal(&line), "it answered HTTP 405 Method Not Allowed");
        assert_eq!(refusal("connection refused"), "connection refused");
    }
}
