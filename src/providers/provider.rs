//! The one trait every model API implements, and what a provider offers beyond it.

use std::path::Path;

use futures_util::future::BoxFuture;

use super::error::ProviderError;
use super::request::ModelRequest;
use super::stream::EventStream;

/// A model API: turns one request into a stream of events.
pub trait Provider: Send + Sync + std::fmt::Debug {
    /// The name model references use for it (`anthropic`, `ollama`, `scripted`).
    fn name(&self) -> &str;

    /// Tells the provider which logged session of the agent in `agent_dir` it serves
    /// (the scripted provider keeps its place in the script per session, in `.eve/`
    /// through [`crate::statedir`], so a resumed session gets the next reply).
    fn bind_session(&self, _agent_dir: &Path, _session_id: &str) {}

    /// What it can do beyond plain function calls.
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }

    /// Sends the request; the stream yields the reply as it arrives. Errors before the
    /// first event (HTTP status, connection) come from the future, later ones from the stream.
    fn stream<'a>(
        &'a self,
        request: &'a ModelRequest,
    ) -> BoxFuture<'a, Result<EventStream, ProviderError>>;
}

/// What a provider offers beyond the common ground of every API.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Capabilities {
    /// It runs a web search within its replies (Anthropic's hosted `web_search`).
    pub hosted_web_search: bool,
}
