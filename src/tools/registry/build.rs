//! Building a registry: the executor of each tool of the manifest (built-in, command,
//! HTTP, subagent), the tools this run cannot offer and why, the connections' live tools,
//! and the eval stubs put in front.

use std::sync::Arc;

use super::{External, Registry, entry};
use crate::manifest::{self, Executor};
use crate::protocol::{ToolKind, Unavailable};
use crate::tools::ToolExec;
use crate::tools::builtin::Builtin;
use crate::tools::builtin::agent::{AgentTool, Target, max_depth};
use crate::tools::custom::command::CommandTool;
use crate::tools::custom::http::HttpTool;
use crate::tools::stub::{Stubbed, Stubs};

/// Why eve cannot execute a tool of the manifest, if it cannot.
fn executor(
    tool: &manifest::Tool,
    manifest: &Arc<manifest::Manifest>,
) -> Result<Arc<dyn ToolExec>, String> {
    match &tool.executor {
        Executor::Command { .. } => Ok(Arc::new(CommandTool::from_manifest(tool)?)),
        Executor::Http { .. } => Ok(Arc::new(HttpTool::from_manifest(tool)?)),
        Executor::Builtin => Builtin::from_name(&tool.name)
            .ok_or_else(|| {
                format!(
                    "`{}` is not a built-in tool this version of eve knows",
                    tool.name
                )
            })?
            .build(tool, manifest),
        Executor::Subagent { name } => {
            let subagent = manifest
                .subagents
                .iter()
                .find(|s| &s.name == name)
                .ok_or_else(|| format!("the manifest has no subagent `{name}`"))?;
            Ok(Arc::new(AgentTool {
                name: tool.name.clone(),
                target: Target::Subagent {
                    manifest: Arc::new((*subagent.manifest).clone()),
                    path: subagent.path.clone(),
                },
                max_depth: max_depth(manifest),
            }))
        }
        Executor::Mcp { connection, .. } => Err(format!(
            "its connection `{connection}` is not running in this session"
        )),
    }
}

impl Registry {
    /// Builds the registry. A tool eve cannot execute is left out (never offered to the
    /// model) and listed by [`Registry::unavailable`].
    #[cfg(test)]
    pub fn from_manifest(manifest: &manifest::Manifest) -> Registry {
        Registry::for_provider(&Arc::new(manifest.clone()), false, true, None)
    }

    /// Builds the registry for a provider: `hosted_web_search` says whether it runs
    /// `web_search` itself (Anthropic's Messages API and OpenAI's Responses API do).
    /// `can_ask` says whether a person can answer questions in this run: a child agent
    /// cannot park its turn, so it has no `ask_question` unless someone is at a terminal.
    /// `processes_withheld` says why the tools that start processes (`bash`, command
    /// tools) are not offered, when the sandbox they would need is missing.
    /// The manifest's connection tools are left out, as no server runs.
    pub fn for_provider(
        manifest: &Arc<manifest::Manifest>,
        hosted_web_search: bool,
        can_ask: bool,
        processes_withheld: Option<&str>,
    ) -> Registry {
        Registry::with_external(
            manifest,
            hosted_web_search,
            can_ask,
            processes_withheld,
            Vec::new(),
            Vec::new(),
        )
    }

    /// Like [`Registry::for_provider`], with the connections' tools as their servers
    /// offer them now (`external`) instead of the manifest's, and the reasons the tools
    /// of connections that do not run are missing (`missing`).
    pub fn with_external(
        manifest: &Arc<manifest::Manifest>,
        hosted_web_search: bool,
        can_ask: bool,
        processes_withheld: Option<&str>,
        external: Vec<External>,
        missing: Vec<Unavailable>,
    ) -> Registry {
        let mut entries = Vec::new();
        let mut unavailable = Vec::new();
        for tool in &manifest.tools {
            // A connection's tools come as its server offers them now, in `external`.
            if matches!(tool.executor, Executor::Mcp { .. }) {
                if external.is_empty() && missing.is_empty() {
                    unavailable.push(Unavailable {
                        name: tool.name.clone(),
                        reason: executor(tool, manifest).err().unwrap_or_default(),
                    });
                }
                continue;
            }
            let builtin = (tool.executor == Executor::Builtin)
                .then(|| Builtin::from_name(&tool.name))
                .flatten();
            let starts_processes =
                builtin == Some(Builtin::Bash) || matches!(tool.executor, Executor::Command { .. });
            if let (true, Some(reason)) = (starts_processes, processes_withheld) {
                unavailable.push(Unavailable {
                    name: tool.name.clone(),
                    reason: reason.to_string(),
                });
                continue;
            }
            if builtin == Some(Builtin::AskQuestion) && !can_ask {
                unavailable.push(Unavailable {
                    name: tool.name.clone(),
                    reason: "a child agent cannot stop to wait for a person's answer".into(),
                });
                continue;
            }
            let kind = if builtin == Some(Builtin::WebSearch) {
                if !hosted_web_search {
                    unavailable.push(Unavailable {
                        name: tool.name.clone(),
                        reason: "this model's provider does not run web searches itself (Anthropic's Messages API and OpenAI's Responses API do)".into(),
                    });
                    continue;
                }
                ToolKind::HostedWebSearch
            } else {
                ToolKind::Function
            };
            match executor(tool, manifest).and_then(|exec| entry(tool.clone(), builtin, exec, kind))
            {
                Ok(entry) => entries.push(entry),
                Err(reason) => unavailable.push(Unavailable {
                    name: tool.name.clone(),
                    reason,
                }),
            }
        }
        for external in external {
            let name = external.tool.name.clone();
            if entries.iter().any(|e| e.spec.name == name) {
                unavailable.push(Unavailable {
                    name,
                    reason: "another tool has this name".into(),
                });
                continue;
            }
            match entry(external.tool, None, external.exec, ToolKind::Function) {
                Ok(entry) => entries.push(entry),
                Err(reason) => unavailable.push(Unavailable { name, reason }),
            }
        }
        unavailable.extend(missing);
        Registry {
            entries,
            unavailable,
        }
    }

    /// Puts the tools `stubs` covers behind them: a matching call gets the stub's outcome,
    /// after the same checks and approvals as a real call.
    pub fn with_stubs(mut self, stubs: &Arc<Stubs>) -> Registry {
        for entry in &mut self.entries {
            if stubs.covers(&entry.spec.name) {
                entry.exec = Arc::new(Stubbed {
                    tool: entry.spec.name.clone(),
                    real: entry.exec.clone(),
                    stubs: stubs.clone(),
                });
            }
        }
        self
    }
}
