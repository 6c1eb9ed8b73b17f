//! The harness: drives a manifest through the model ↔ tool loop, one step per model call.
//!
//! A **step** is one model call plus the execution of the tool calls it produced; a
//! **turn** is all the steps that answer one input. After each step a pure
//! [`decide`](decide::decide) says what comes next: another step, park, or the end of
//! the turn. [`Harness::step`] runs exactly one step, so a driver other than `eve run`
//! (an eval runner, a server, a durable engine) can persist between steps. The harness
//! emits events through an [`Emitter`] and writes records to a
//! [`Journal`](crate::protocol::Journal); it never prints and never names the session log.

mod asker;
mod calls;
pub mod compaction;
pub mod decide;
pub mod durable;
mod emitter;
mod env;
mod error;
mod estimate;
mod hooks;
mod input;
mod model_call;
pub mod prompt;
mod reply;
pub mod scheduler;
pub mod setup;
mod spawner;
mod turn;
mod verdict;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use crate::connections::Connections;
use crate::manifest::{Manifest, Mode};
use crate::protocol::{
    EndReason, EventKind, InputRequest, Journal, Message, Parked, Record, Resolution, Snapshot,
    StampRecord, Todo, TurnOutcome, Usage,
};
use crate::providers::Provider;
use crate::providers::retry::RetryPolicy;
use crate::tools::state::{SessionState, Stamp};
use crate::tools::stub::Stubs;
use crate::tools::{Registry, ToolOutput};

pub use asker::Asker;
pub use emitter::Emitter;
pub use env::Env;
pub use error::HarnessError;
pub use turn::Turn;

/// Everything a harness needs besides the conversation.
#[derive(Debug, Clone)]
pub struct Setup {
    pub manifest: Arc<Manifest>,
    /// The agent directory (absolute).
    pub agent_dir: PathBuf,
    /// Where tools act (absolute).
    pub workspace: PathBuf,
    pub provider: Arc<dyn Provider>,
    /// The id sent to the provider.
    pub model_id: String,
    /// The model reference as the person wrote it, for events and the prompt.
    pub model: String,
    /// Model calls allowed per turn.
    pub max_steps: u64,
    pub retry: RetryPolicy,
    /// Environment variables hidden from the processes tools start.
    pub hidden_env: Vec<String>,
    /// 0 for the top agent; a child agent runs one deeper.
    pub depth: u32,
    /// Where the session's records go (its log); `None`: not kept.
    pub journal: Option<Arc<dyn Journal>>,
    /// Asks a person at a terminal; `None` when nobody is there.
    pub asker: Option<Arc<dyn Asker>>,
    /// `--yes`: approve every call that needs an approval.
    pub approve_all: bool,
    /// Confines the processes tools start; `None`: not confined.
    pub sandbox: Option<Arc<crate::sandbox::Sandbox>>,
    /// Tool effects replaced for this run (an eval case's stubs); child agents share them.
    pub stubs: Option<Arc<Stubs>>,
    /// Hooks answered without running them (an eval case's `[hooks.NAME]`); child
    /// agents share them.
    pub hook_stubs: Arc<Vec<crate::manifest::eval::HookStub>>,
    /// The MCP servers whose tools the agent uses; `None` when it has none.
    pub connections: Option<Arc<Connections>>,
    /// The hooks this session runs, each with the agent directory it belongs to: its
    /// own agent's, and for a child agent its parents' tool hooks first (a parent's
    /// guard holds for what it delegates).
    pub hooks: Arc<Vec<Bound>>,
    /// The entries of the top agent directory that commands run, relative to it
    /// ([`Manifest::executed_paths`] of the top agent; a child agent keeps its
    /// parent's): file tools keep them with the definition.
    pub executed: Arc<Vec<String>>,
    /// The environment the instructions' `[instructions] env` variables are read from
    /// (the process's for a run; empty unless set: the harness reads no environment of
    /// its own).
    pub env: Env,
    /// What watches the session's events (telemetry); `None`: nothing does, at no cost.
    pub observer: Option<Arc<dyn crate::protocol::Observer>>,
}

/// One session: a system prompt, the tools, and the history of its turns.
#[derive(Debug)]
pub struct Harness {
    setup: Setup,
    registry: Arc<Registry>,
    system: String,
    emitter: Emitter,
    session_id: String,
    history: Vec<Message>,
    /// Tokens of the whole session.
    usage: Usage,
    /// Read stamps and the todo list.
    state: Arc<SessionState>,
    /// What the journal last got of the tool state.
    logged: Logged,
    /// A parked turn and the request it waits for.
    parked: Option<Parked>,
    /// Answers given in the current turn, by tool call id.
    resolutions: HashMap<String, Resolution>,
    /// The input each approved call was shown to the person with, by call id: an
    /// approved call runs with exactly this, whatever hooks would answer now.
    approved_inputs: HashMap<String, serde_json::Value>,
    /// Errors found before a call could run (arguments that are not JSON, a hook's
    /// refusal), by call id.
    early: HashMap<String, ToolOutput>,
    /// Notes of the `session_start` hooks for the model, given with the next message.
    pending_context: Vec<String>,
    /// What `before_tool` hooks decided of this step's calls, by call id.
    judged: HashMap<String, verdict::Judged>,
    /// Hooks run so far: each one's journal name is unique (a durable engine's journal
    /// gives a replayed hook its first answer).
    hook_runs: std::sync::atomic::AtomicU64,
    /// Every tool call id of the session: a new call never reuses one.
    call_ids: HashSet<String>,
    /// The token estimate compaction reads.
    estimate: estimate::Estimate,
    /// What every tool call gets but the turn's cancellation.
    tools: crate::tools::ToolContext,
    /// Once cancelled, a turn starts no further step: it ends as aborted after the
    /// step that is running (a server shutting down lets steps finish).
    wind_down: Option<tokio_util::sync::CancellationToken>,
    /// The durable engine whose journal holds the turn's model and tool calls.
    durable: Option<Arc<dyn durable::Durable>>,
}

/// A hook a session runs, with the agent directory it belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct Bound {
    pub hook: crate::manifest::hook::Hook,
    pub agent_dir: PathBuf,
    /// Whether it is a parent agent's (a child runs those before its own).
    pub inherited: bool,
}

impl Bound {
    fn own(hook: &crate::manifest::hook::Hook, agent_dir: &std::path::Path) -> Bound {
        Bound {
            hook: hook.clone(),
            agent_dir: agent_dir.to_path_buf(),
            inherited: false,
        }
    }
}

/// The todo list and read stamps as last written to the journal.
#[derive(Debug, Default)]
struct Logged {
    todos: Vec<Todo>,
    stamps: Vec<(PathBuf, Stamp)>,
}

impl Harness {
    /// Reopens a session from what its log held; new records go to `setup.journal`.
    pub fn resume(
        setup: Setup,
        emitter: Emitter,
        snapshot: Snapshot,
    ) -> Result<Harness, HarnessError> {
        let mut harness = Harness::new(setup, emitter, snapshot.session_id)?;
        harness.call_ids = snapshot
            .history
            .iter()
            .flat_map(|m| match m {
                Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
                _ => &[],
            })
            .map(|c| c.id.clone())
            .collect();
        harness.history = snapshot.history;
        harness.usage = snapshot.usage;
        harness.state.set_todos(snapshot.todos.clone());
        harness.logged.todos = snapshot.todos;
        let stamps: Vec<_> = snapshot.stamps.iter().filter_map(|s| s.stamp()).collect();
        harness.state.set_stamps(stamps.clone());
        harness.logged.stamps = stamps;
        harness.parked = snapshot.parked;
        harness.resolutions = snapshot.resolutions;
        harness.approved_inputs = snapshot.approved_inputs;
        harness.estimate = estimate::Estimate {
            last_input_tokens: snapshot.last_input_tokens,
            appended_chars: snapshot.appended_chars,
        };
        Ok(harness)
    }

    /// Ends turns after their running step once `token` is cancelled, instead of
    /// starting another step (the turn ends as aborted).
    pub fn wind_down_on(&mut self, token: tokio_util::sync::CancellationToken) {
        self.wind_down = Some(token);
    }

    /// Runs every model call and tool call of this session's turns through `durable`'s
    /// journal (see [`durable`]); a step's tool calls then run one at a time, each
    /// journaled as it finishes. Child agents run inside their parent's tool call.
    pub fn durable_on(&mut self, durable: Arc<dyn durable::Durable>) {
        self.durable = Some(durable);
    }

    /// The session's id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    /// The rendered system prompt.
    pub fn system_prompt(&self) -> &str {
        &self.system
    }

    /// The tools offered to the model, and those left out.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The conversation so far.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The request a parked turn waits for.
    pub fn pending(&self) -> Option<&InputRequest> {
        self.parked.as_ref().map(|p| &p.request)
    }

    /// Emits `session.started` with the tools as they stand, starting no server (a
    /// session created with no turn yet: its servers start with its first turn).
    pub fn announce(&self, warnings: Vec<String>) {
        self.emitter.emit(EventKind::SessionStarted {
            session_id: self.session_id.clone(),
            agent: self.setup.manifest.agent.name.clone(),
            model: self.setup.model.clone(),
            workspace: self.setup.workspace.display().to_string(),
            tools: self.registry.names(),
            unavailable_tools: self.registry.unavailable().to_vec(),
            deferred_tools: self.registry.deferred(),
            warnings,
        });
    }

    /// Starts the connections' servers (side by side), then emits `session.started`
    /// (at every start of a process, new session or not). Fails when a `required`
    /// server did not start.
    pub async fn start(&mut self) -> Result<(), HarnessError> {
        let mut warnings = Vec::new();
        let mut error = None;
        if let Some(connections) = self.setup.connections.clone() {
            let started = connections.start().await;
            warnings = started.warnings;
            error = started.error;
            self.registry = Arc::new(registry(&self.setup));
            self.system = prompt::system_prompt(
                &self.setup.manifest,
                &self.registry,
                &self.setup.model,
                &self.setup.workspace,
                &|name| self.setup.env.var(name),
            )
            .map_err(HarnessError::Setup)?;
        }
        self.announce(warnings);
        if let Some(e) = error {
            return Err(HarnessError::Setup(e));
        }
        self.session_start().await;
        Ok(())
    }

    /// At a step boundary: the connections whose servers said their tools changed are
    /// listed again, and the registry follows (`tools.changed` says what changed).
    async fn refresh_tools(&mut self, turn_id: &str) {
        let Some(connections) = self.setup.connections.clone() else {
            return;
        };
        let refreshed = connections.refresh().await;
        if !refreshed.stale {
            return;
        }
        self.registry = Arc::new(registry(&self.setup));
        for change in refreshed.changed {
            self.emitter.emit(EventKind::ToolsChanged {
                turn_id: turn_id.to_string(),
                connection: change.connection,
                added: change.added,
                removed: change.removed,
            });
        }
    }

    /// Ends the session in this process: its `session_end` hooks run, then the servers
    /// of its connections stop, unless someone else holds them too (`eve dev` across
    /// turns, the agent that started this child).
    pub async fn stop(&self) {
        self.session_end().await;
        if let Some(connections) = &self.setup.connections
            && Arc::strong_count(connections) == 1
        {
            connections.stop().await;
        }
    }

    /// Emits how the session stands after a turn: `session.failed` after an error,
    /// `session.waiting` when parked or in conversation mode, `session.completed`
    /// otherwise; and puts the journal on disk.
    pub fn finish(&self, outcome: &TurnOutcome) {
        let session_id = self.session_id.clone();
        let usage = self.usage.clone();
        let kind = if let Some(error) = &outcome.error {
            EventKind::SessionFailed {
                session_id,
                error: error.clone(),
                usage,
            }
        } else if outcome.end_reason == EndReason::Waiting
            || self.setup.manifest.agent.mode == Mode::Conversation
        {
            EventKind::SessionWaiting { session_id, usage }
        } else {
            EventKind::SessionCompleted { session_id, usage }
        };
        self.emitter.emit(kind);
        self.sync();
    }

    /// What a killed eve must not lose is written out (not waited on to reach the disk).
    fn flush(&self) {
        if let Some(journal) = self.emitter.journal() {
            journal.flush();
        }
    }

    /// Everything so far on durable storage: at a step boundary, once a step at most.
    fn sync(&self) {
        if let Some(journal) = self.emitter.journal() {
            journal.sync();
        }
    }

    fn journal_error(&self) -> Option<String> {
        self.emitter.journal().and_then(|j| j.error())
    }

    /// Appends a message to the history and to the journal.
    fn push(&mut self, message: Message) {
        self.estimate.appended_chars += message.chars();
        self.emitter.record(&Record::Message {
            message: message.clone(),
        });
        self.history.push(message);
    }

    /// Journals the todo list and the read stamps when they changed.
    fn save_tool_state(&mut self) {
        let todos = self.state.todos();
        if todos != self.logged.todos {
            self.emitter.record(&Record::Todos {
                todos: todos.clone(),
            });
            self.logged.todos = todos;
        }
        let stamps = self.state.stamps();
        if stamps != self.logged.stamps {
            self.emitter.record(&Record::Stamps {
                stamps: stamps
                    .iter()
                    .map(|(path, stamp)| StampRecord::new(path, stamp))
                    .collect(),
            });
            self.logged.stamps = stamps;
        }
    }

    /// Whether this harness can park a turn: the top agent of a journaled session.
    fn can_park(&self) -> bool {
        self.setup.depth == 0 && self.emitter.journal().is_some()
    }
}

/// The tools of a session: the manifest's, with the connections' as their servers offer
/// them now.
fn registry(setup: &Setup) -> Registry {
    let can_ask = setup.asker.is_some() || (setup.depth == 0 && setup.journal.is_some());
    let hosted = setup.provider.capabilities().hosted_web_search;
    let withheld = setup.sandbox.as_ref().and_then(|s| s.withheld.as_deref());
    let registry = match &setup.connections {
        Some(connections) => {
            let (external, missing) = connections.external();
            Registry::with_external(
                &setup.manifest,
                hosted,
                can_ask,
                withheld,
                external,
                missing,
            )
        }
        None => Registry::for_provider(&setup.manifest, hosted, can_ask, withheld),
    };
    match &setup.stubs {
        Some(stubs) => registry.with_stubs(stubs),
        None => registry,
    }
}
