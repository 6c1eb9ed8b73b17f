//! The tools a run offers: built from the manifest, each with its schema validator and executor.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::builtin::Builtin;
use super::builtin::agent::{AgentTool, Target, max_depth};
use super::custom::command::CommandTool;
use super::custom::http::HttpTool;
use super::stub::{Stubbed, Stubs};
use super::{ToolContext, ToolExec, ToolOutput};
use crate::manifest::{self, Approval, Executor};
use crate::protocol::{InputKind, ToolCall, ToolKind, ToolSpec, Unavailable};
use crate::suggest;

#[derive(Debug)]
struct Entry {
    spec: manifest::Tool,
    /// Which built-in it is, for built-ins (overridden or not).
    builtin: Option<Builtin>,
    validator: jsonschema::Validator,
    exec: Arc<dyn ToolExec>,
    kind: ToolKind,
}

/// The executable tools of a manifest, in manifest order.
#[derive(Debug)]
pub struct Registry {
    entries: Vec<Entry>,
    unavailable: Vec<Unavailable>,
}

/// Why eve cannot execute a tool of the manifest, if it cannot.
fn executor(
    tool: &manifest::Tool,
    manifest: &manifest::Manifest,
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
    }
}

impl Registry {
    /// Builds the registry. A tool eve cannot execute is left out (never offered to the
    /// model) and listed by [`Registry::unavailable`].
    pub fn from_manifest(manifest: &manifest::Manifest) -> Registry {
        Registry::for_provider(manifest, false, true, None)
    }

    /// Builds the registry for a provider: `hosted_web_search` says whether it runs
    /// `web_search` itself (Anthropic's API does).
    /// `can_ask` says whether a person can answer questions in this run: a child agent
    /// cannot park its turn, so it has no `ask_question` unless someone is at a terminal.
    /// `processes_withheld` says why the tools that start processes (`bash`, command
    /// tools) are not offered, when the sandbox they would need is missing.
    pub fn for_provider(
        manifest: &manifest::Manifest,
        hosted_web_search: bool,
        can_ask: bool,
        processes_withheld: Option<&str>,
    ) -> Registry {
        let mut entries = Vec::new();
        let mut unavailable = Vec::new();
        for tool in &manifest.tools {
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
                        reason: "only Anthropic's API hosts web search, and this model's provider is not Anthropic".into(),
                    });
                    continue;
                }
                ToolKind::HostedWebSearch
            } else {
                ToolKind::Function
            };
            let built = executor(tool, manifest).and_then(|exec| {
                let validator = jsonschema::validator_for(&tool.input_schema)
                    .map_err(|e| format!("its input schema is invalid: {e}"))?;
                Ok((exec, validator))
            });
            match built {
                Ok((exec, validator)) => entries.push(Entry {
                    spec: tool.clone(),
                    builtin,
                    validator,
                    exec,
                    kind,
                }),
                Err(reason) => unavailable.push(Unavailable {
                    name: tool.name.clone(),
                    reason,
                }),
            }
        }
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

    /// The tools offered to the model, in manifest order.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.entries
            .iter()
            .map(|e| ToolSpec {
                name: e.spec.name.clone(),
                description: e.spec.description.clone(),
                input_schema: e.spec.input_schema.clone(),
                kind: e.kind,
            })
            .collect()
    }

    /// The names of the offered tools.
    pub fn names(&self) -> Vec<String> {
        self.entries.iter().map(|e| e.spec.name.clone()).collect()
    }

    /// Whether this built-in is offered (overridden or not).
    pub fn offers(&self, builtin: Builtin) -> bool {
        self.entries.iter().any(|e| e.builtin == Some(builtin))
    }

    /// The manifest's tools that are not offered, and why.
    pub fn unavailable(&self) -> &[Unavailable] {
        &self.unavailable
    }

    fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.spec.name == name)
    }

    /// Whether a call may run beside others: read-only tools, and calls that will only
    /// return an error (unknown tools).
    pub fn runs_in_parallel(&self, name: &str) -> bool {
        self.entry(name).is_none_or(|e| e.spec.read_only)
    }

    /// Checks a call before it runs: the tool exists and the arguments match its schema.
    pub fn check(&self, call: &ToolCall) -> Result<(), ToolOutput> {
        let Some(entry) = self.entry(&call.name) else {
            let names: Vec<&str> = self.entries.iter().map(|e| e.spec.name.as_str()).collect();
            let hint = match suggest::closest(&call.name, names.iter().copied()) {
                Some(near) => format!(" Did you mean `{near}`?"),
                None => String::new(),
            };
            return Err(ToolOutput::error(format!(
                "There is no tool named `{}`.{hint} Available tools: {}.",
                call.name,
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )));
        };
        let problems: Vec<String> = entry
            .validator
            .iter_errors(&call.input)
            .map(|e| {
                let path = e.instance_path().to_string();
                if path.is_empty() {
                    format!("- {e}")
                } else {
                    format!("- at `{path}`: {e}")
                }
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ToolOutput::error(format!(
                "Invalid arguments for `{}`:\n{}\nCall it again with arguments that match its input schema.",
                call.name,
                problems.join("\n")
            )))
        }
    }

    /// What a valid call needs from a person before it runs: an answer (`ask_question`)
    /// or an approval (`approval = "always"` and no `allow` pattern covers it).
    pub fn needs_input(&self, call: &ToolCall) -> Option<InputKind> {
        self.check(call).ok()?;
        let entry = self.entry(&call.name)?;
        if entry.builtin == Some(Builtin::AskQuestion) {
            let question = call.input.get("question")?.as_str()?.to_string();
            let options = call
                .input
                .get("options")
                .and_then(Value::as_array)
                .map(|o| {
                    o.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            return Some(InputKind::Question { question, options });
        }
        if entry.exec.precheck(&call.input).is_some() {
            return None;
        }
        (entry.spec.approval == Approval::Always && !entry.exec.approved_by_policy(&call.input))
            .then_some(InputKind::Approval)
    }

    /// Runs a call a person approved: like [`Registry::call`], without the approval check.
    pub async fn call_approved(&self, call: &ToolCall, ctx: &ToolContext) -> ToolOutput {
        self.run(call, ctx, true).await
    }

    /// Runs a call: checks it, refuses what needs an approval nobody gave, executes it.
    pub async fn call(&self, call: &ToolCall, ctx: &ToolContext) -> ToolOutput {
        self.run(call, ctx, false).await
    }

    async fn run(&self, call: &ToolCall, ctx: &ToolContext, approved: bool) -> ToolOutput {
        if let Err(refused) = self.check(call) {
            return refused;
        }
        let Some(entry) = self.entry(&call.name) else {
            return ToolOutput::error(format!("There is no tool named `{}`.", call.name));
        };
        if let Some(refused) = entry.exec.precheck(&call.input) {
            return refused;
        }
        if !approved
            && entry.spec.approval == Approval::Always
            && !entry.exec.approved_by_policy(&call.input)
        {
            return ToolOutput::error(format!(
                "Refused: `{}` needs a person's approval for every call (approval = \"always\"), and nobody can approve calls in this run. Do the task without it, or say what you would run.",
                call.name
            ));
        }
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error(format!(
                "`{}` was not started: the turn was interrupted",
                call.name
            ));
        }
        bounded(
            &call.name,
            Duration::from_secs(entry.spec.timeout_secs.max(1)),
            ctx,
            entry.exec.call(&call.input, ctx),
        )
        .await
    }
}

/// How long a tool that stops its own work (a process it kills, a walk it ends) gets
/// beyond its timeout, or after a Ctrl-C, to say so itself before the call is dropped.
const GRACE: Duration = Duration::from_secs(3);

/// Runs a call under its tool's timeout and the turn's cancellation, whatever the tool
/// does: a call still running `GRACE` after its timeout or after a Ctrl-C is dropped and
/// answered with an error, so no built-in can hold a turn past its declared limit.
async fn bounded(
    name: &str,
    timeout: Duration,
    ctx: &ToolContext,
    call: impl std::future::Future<Output = ToolOutput>,
) -> ToolOutput {
    tokio::pin!(call);
    tokio::select! {
        output = &mut call => output,
        () = tokio::time::sleep(timeout.saturating_add(GRACE)) => ToolOutput::error(format!(
            "`{name}` did not finish within its timeout ({} s) and was stopped.",
            timeout.as_secs()
        )),
        () = ctx.cancel.cancelled() => {
            match tokio::time::timeout(GRACE, &mut call).await {
                Ok(output) => output,
                Err(_) => ToolOutput::error(format!("`{name}` was interrupted")),
            }
        }
    }
}

/// The input of a tool call from its raw JSON arguments: `{}` when empty, an error when not a JSON object.
pub fn parse_arguments(raw: &str) -> Result<Value, String> {
    if raw.trim().is_empty() {
        return Ok(Value::Object(Default::default()));
    }
    match serde_json::from_str::<Value>(raw) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object, not `{other}`"
        )),
        Err(e) => Err(format!("the arguments are not valid JSON ({e})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn manifest() -> manifest::Manifest {
        let build = crate::compiler::compile(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("example-agent"),
            &crate::tools::builtin::CATALOG,
        );
        build.manifest.unwrap()
    }

    fn call(name: &str, input: Value) -> ToolCall {
        ToolCall {
            id: "c1".into(),
            name: name.into(),
            input,
        }
    }

    #[test]
    fn only_executable_tools_are_offered_and_the_rest_are_listed_with_a_reason() {
        let registry = Registry::from_manifest(&manifest());
        let names = registry.names();
        for offered in [
            "bash",
            "read_file",
            "edit_file",
            "git_history",
            "explorer",
            "load_skill",
            "glob",
            "grep",
            "todo",
        ] {
            assert!(
                names.iter().any(|n| n == offered),
                "{offered} is not offered: {names:?}"
            );
        }
        assert!(names.iter().any(|n| n == "ask_question"));
        let child = Registry::for_provider(&manifest(), false, false, None);
        let ask = child
            .unavailable()
            .iter()
            .find(|u| u.name == "ask_question")
            .unwrap();
        assert!(ask.reason.contains("child agent"), "{}", ask.reason);
        assert_eq!(registry.specs().len(), names.len());
    }

    #[test]
    fn unknown_tools_and_invalid_arguments_become_error_results() {
        let registry = Registry::from_manifest(&manifest());
        let unknown = registry.check(&call("git_histroy", json!({}))).unwrap_err();
        assert!(unknown.is_error);
        assert_eq!(
            unknown.content,
            format!(
                "There is no tool named `git_histroy`. Did you mean `git_history`? Available tools: {}.",
                registry.names().join(", ")
            )
        );
        let invalid = registry
            .check(&call("git_history", json!({"limit": 0, "colour": true})))
            .unwrap_err();
        assert!(
            invalid
                .content
                .starts_with("Invalid arguments for `git_history`:\n"),
            "{}",
            invalid.content
        );
        assert!(
            invalid.content.contains("at `/limit`"),
            "{}",
            invalid.content
        );
        assert!(invalid.content.contains("colour"), "{}", invalid.content);
        assert!(
            registry
                .check(&call("git_history", json!({"limit": 3})))
                .is_ok()
        );
        assert!(
            registry.runs_in_parallel("git_history"),
            "declared read_only"
        );
        assert!(registry.runs_in_parallel("nope"));
    }

    #[test]
    fn arguments_must_be_a_json_object() {
        assert_eq!(parse_arguments("").unwrap(), json!({}));
        assert_eq!(parse_arguments(r#"{"a":1}"#).unwrap(), json!({"a": 1}));
        assert!(
            parse_arguments("[1]")
                .unwrap_err()
                .contains("must be a JSON object")
        );
        assert!(
            parse_arguments(r#"{"a":"#)
                .unwrap_err()
                .contains("not valid JSON")
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_that_never_ends_is_stopped_at_its_timeout_and_at_a_cancel() {
        let ctx = ToolContext::new("/w".into(), "/a".into());
        let output = bounded(
            "stuck",
            Duration::from_secs(30),
            &ctx,
            std::future::pending::<ToolOutput>(),
        )
        .await;
        assert_eq!(
            output,
            ToolOutput::error("`stuck` did not finish within its timeout (30 s) and was stopped.")
        );
        let cancel = ctx.cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            cancel.cancel();
        });
        let output = bounded(
            "stuck",
            Duration::from_secs(86_400),
            &ctx,
            std::future::pending::<ToolOutput>(),
        )
        .await;
        assert_eq!(output, ToolOutput::error("`stuck` was interrupted"));
        let quick = bounded("quick", Duration::from_secs(1), &ctx, async {
            ToolOutput::ok("done")
        })
        .await;
        assert_eq!(quick, ToolOutput::ok("done"));
    }
}
