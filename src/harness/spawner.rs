//! How a harness is made ([`Harness::new`]), with the context every tool call gets; and
//! child agents (the `agent` tool and subagents), which that context starts as new
//! harnesses that share the parent's provider, workspace and event channel.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use tokio_util::sync::CancellationToken;

use super::error::HarnessError;
use super::estimate::Estimate;
use super::{Emitter, Harness, Logged, Setup, prompt, registry};
use crate::manifest::Manifest;
use crate::protocol::{TurnOutcome, Usage};
use crate::tools::state::SessionState;
use crate::tools::{Spawner, ToolContext};

/// Starts child agents with what they share with the agent that starts them.
#[derive(Debug)]
struct ChildSpawner {
    setup: Setup,
    emitter: Emitter,
}

impl Spawner for ChildSpawner {
    /// A child whose model is the parent's (the `agent` tool, a subagent that inherits
    /// it) uses the parent's provider, `--model` override included; another model is
    /// resolved anew.
    fn run_child(
        &self,
        manifest: Arc<Manifest>,
        agent_dir: PathBuf,
        depth: u32,
        task: String,
        cancel: CancellationToken,
    ) -> BoxFuture<'_, Result<TurnOutcome, String>> {
        async move {
            let model = if manifest.agent.model == self.setup.manifest.agent.model {
                crate::providers::Resolved {
                    provider: self.setup.provider.clone(),
                    model_id: self.setup.model_id.clone(),
                    reference: self.setup.model.clone(),
                }
            } else {
                crate::providers::resolve(
                    &manifest.agent.model,
                    &manifest.agent.providers,
                    &agent_dir,
                    &crate::secrets::var,
                )?
            };
            // The `agent` tool's copy shares this agent's servers; a subagent has its own.
            let connections = if agent_dir == self.setup.agent_dir {
                self.setup.connections.clone()
            } else {
                crate::connections::Connections::new(
                    &manifest,
                    &agent_dir,
                    &self.setup.workspace,
                    self.setup.sandbox.as_ref().and_then(|s| s.recipe.clone()),
                )
            };
            let setup = self
                .setup
                .child(manifest, agent_dir, depth, model, connections);
            let mut child = Harness::new(setup, self.emitter.clone(), crate::ids::new_id("ses"))?;
            // Interrupting the parent's call stops the child's hooks outside its turn too.
            child.wind_down_on(cancel.clone());
            let started = child.start().await;
            let outcome = match started {
                Ok(()) => Box::pin(child.run_turn(task, cancel)).await,
                Err(error) => TurnOutcome::failed(error.to_string()),
            };
            child.finish(&outcome);
            child.stop().await;
            Ok(outcome)
        }
        .boxed()
    }
}

impl Harness {
    /// A new session with this id. Fails when the instructions cannot be rendered.
    pub fn new(
        setup: Setup,
        emitter: Emitter,
        session_id: String,
    ) -> Result<Harness, HarnessError> {
        let emitter = match (&setup.journal, setup.depth) {
            (_, depth) if depth > 0 => emitter.for_child(&session_id),
            (Some(journal), _) => emitter.with_journal(journal.clone()),
            (None, _) => emitter,
        };
        // A child's emitter is its parent's, which already shows events to the observer.
        let emitter = match (&setup.observer, setup.depth) {
            (Some(observer), 0) => emitter.observed_by(observer.clone()),
            _ => emitter,
        };
        let registry = Arc::new(registry(&setup));
        let system = prompt::system_prompt(
            &setup.manifest,
            &registry,
            &setup.model,
            &setup.workspace,
            &|name| setup.env.var(name),
        )
        .map_err(HarnessError::Setup)?;
        let state = Arc::new(SessionState::default());
        let tools = tools_context(&setup, &emitter, &state);
        Ok(Harness {
            setup,
            registry,
            system,
            emitter,
            session_id,
            history: Vec::new(),
            usage: Usage::default(),
            state,
            tools,
            logged: Logged::default(),
            parked: None,
            resolutions: HashMap::new(),
            early: HashMap::new(),
            approved_inputs: HashMap::new(),
            judged: HashMap::new(),
            pending_context: Vec::new(),
            hook_runs: Default::default(),
            call_ids: HashSet::new(),
            estimate: Estimate::default(),
            wind_down: None,
            durable: None,
        })
    }

    /// What the tool calls of a step may use.
    pub(super) fn tool_context(&self, cancel: &CancellationToken) -> ToolContext {
        ToolContext {
            cancel: cancel.clone(),
            catalog: Some(self.registry.clone()),
            ..self.tools.clone()
        }
    }
}

/// The context tool calls of a harness share, built once per harness: only the turn's
/// cancellation differs from call to call.
pub(super) fn tools_context(
    setup: &Setup,
    emitter: &Emitter,
    state: &Arc<crate::tools::state::SessionState>,
) -> ToolContext {
    ToolContext {
        workspace: setup.workspace.clone(),
        agent_dir: setup.agent_dir.clone(),
        agent_writable: setup.manifest.agent.workspace.agent_writable,
        executed: setup.executed.clone(),
        cancel: CancellationToken::new(),
        traceparent: None,
        hidden_env: Arc::new(setup.hidden_env.clone()),
        state: state.clone(),
        depth: setup.depth,
        // The model reads its skills' files by the paths `load_skill` gives: the
        // agent's `skills/` and where its linked skills lead.
        read_roots: Arc::new(
            setup
                .agent_dir
                .join("skills")
                .canonicalize()
                .into_iter()
                .chain(
                    setup
                        .manifest
                        .skills
                        .iter()
                        .filter_map(|s| s.linked.as_deref().map(PathBuf::from)),
                )
                .collect(),
        ),
        sandbox: setup.sandbox.clone(),
        catalog: None,
        spawner: Some(Arc::new(ChildSpawner {
            setup: setup.clone(),
            emitter: emitter.clone(),
        })),
    }
}
