//! How a [`Setup`] is made: [`Setup::new`] for a top-level session, the builder methods
//! for what a caller adds (a sandbox, a log, servers, an eval's stubs), and
//! [`Setup::child`] for an agent a session starts. Every harness is assembled here.

use std::path::PathBuf;
use std::sync::Arc;

use super::{Asker, Bound, Env, Setup};
use crate::connections::Connections;
use crate::manifest::Manifest;
use crate::manifest::hook::HookEvent;
use crate::protocol::Journal;
use crate::providers::Resolved;
use crate::providers::retry::RetryPolicy;
use crate::tools::stub::Stubs;

impl Setup {
    /// A top-level session of `manifest`, built from `agent_dir` (absolute), on `model`,
    /// acting in `workspace` (absolute): the agent's own step limit, its provider keys
    /// hidden from the processes tools start, the default retries, no environment; not
    /// confined, logged or connected until the builder methods say so.
    pub fn new(
        manifest: Arc<Manifest>,
        agent_dir: PathBuf,
        workspace: PathBuf,
        model: Resolved,
    ) -> Setup {
        Setup {
            max_steps: manifest.agent.limits.max_steps,
            hidden_env: crate::providers::key_variables(&manifest),
            executed: Arc::new(manifest.executed_paths()),
            hooks: Arc::new(
                manifest
                    .hooks
                    .iter()
                    .map(|h| Bound::own(h, &agent_dir))
                    .collect(),
            ),
            manifest,
            agent_dir,
            workspace,
            provider: model.provider,
            model_id: model.model_id,
            model: model.reference,
            retry: RetryPolicy::default(),
            depth: 0,
            journal: None,
            asker: None,
            approve_all: false,
            sandbox: None,
            stubs: None,
            hook_stubs: Arc::default(),
            connections: None,
            env: Env::empty(),
            observer: None,
        }
    }

    /// Shows every event of the session, its child agents' too, to `observer`.
    pub fn with_observer(mut self, observer: Option<Arc<dyn crate::protocol::Observer>>) -> Setup {
        self.observer = observer;
        self
    }

    /// Where the instructions' variables are read from (`Env::process()` for a run).
    pub fn with_env(mut self, env: Env) -> Setup {
        self.env = env;
        self
    }

    /// How model calls are retried (`RetryPolicy::from_env()` for a run).
    pub fn with_retry(mut self, retry: RetryPolicy) -> Setup {
        self.retry = retry;
        self
    }

    /// Model calls allowed per turn (`--max-steps`), instead of the agent's limit.
    pub fn with_max_steps(mut self, max_steps: u64) -> Setup {
        self.max_steps = max_steps;
        self
    }

    /// Hides these variables too from the processes tools start.
    pub fn hiding(mut self, variables: impl IntoIterator<Item = String>) -> Setup {
        self.hidden_env.extend(variables);
        self
    }

    /// Confines the processes tools start.
    pub fn with_sandbox(mut self, sandbox: Option<Arc<crate::sandbox::Sandbox>>) -> Setup {
        self.sandbox = sandbox;
        self
    }

    /// Where the session's records go.
    pub fn with_journal(mut self, journal: Arc<dyn Journal>) -> Setup {
        self.journal = Some(journal);
        self
    }

    /// A person who answers at a terminal, and `--yes`.
    pub fn with_person(mut self, asker: Option<Arc<dyn Asker>>, approve_all: bool) -> Setup {
        self.asker = asker;
        self.approve_all = approve_all;
        self
    }

    /// The servers whose tools the agent uses.
    pub fn with_connections(mut self, connections: Option<Arc<Connections>>) -> Setup {
        self.connections = connections;
        self
    }

    /// Hooks answered without running them for this run (an eval case's `[hooks.NAME]`).
    pub fn with_hook_stubs(mut self, stubs: Arc<Vec<crate::manifest::eval::HookStub>>) -> Setup {
        self.hook_stubs = stubs;
        self
    }

    /// Tool effects replaced for this run (an eval case's stubs).
    pub fn with_stubs(mut self, stubs: Option<Arc<Stubs>>) -> Setup {
        self.stubs = stubs;
        self
    }

    /// The setup of an agent this session starts (`agent` tool, a subagent), `depth`
    /// deep, from `agent_dir`, on `model`, with `connections`: everything else — the
    /// workspace, the sandbox, the person, the hidden variables, the stubs, what the
    /// definition runs — is this session's. Not logged.
    pub(crate) fn child(
        &self,
        manifest: Arc<Manifest>,
        agent_dir: PathBuf,
        depth: u32,
        model: Resolved,
        connections: Option<Arc<Connections>>,
    ) -> Setup {
        // A child keeps this agent's tool hooks (a guard holds for what the agent
        // delegates) and its `subagent_stop` hooks (the child is the subagent), not the
        // ones about this agent's own session and turn; a subagent adds its own hooks
        // after them. The `agent` tool's copy is this agent: it adds none.
        let mut hooks: Vec<Bound> = self
            .hooks
            .iter()
            .filter(|b| b.hook.event.is_tool_event() || b.hook.event == HookEvent::SubagentStop)
            .map(|b| Bound {
                inherited: true,
                ..b.clone()
            })
            .collect();
        if agent_dir != self.agent_dir {
            hooks.extend(manifest.hooks.iter().map(|h| Bound::own(h, &agent_dir)));
        }
        let hooks = Arc::new(hooks);
        Setup {
            max_steps: manifest.agent.limits.max_steps,
            hooks,
            manifest,
            agent_dir,
            workspace: self.workspace.clone(),
            provider: model.provider,
            model_id: model.model_id,
            model: model.reference,
            retry: self.retry,
            hidden_env: self.hidden_env.clone(),
            depth,
            journal: None,
            asker: self.asker.clone(),
            approve_all: self.approve_all,
            sandbox: self.sandbox.clone(),
            stubs: self.stubs.clone(),
            hook_stubs: self.hook_stubs.clone(),
            connections,
            executed: self.executed.clone(),
            env: self.env.clone(),
            observer: self.observer.clone(),
        }
    }
}
