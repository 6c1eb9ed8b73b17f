//! The seam through which a durable engine journals a turn's effects: every model call
//! and every tool call of a journaled turn goes through [`Durable::run`] under a stable
//! name, so that after a crash the engine can give back what a finished call returned
//! instead of making it again.
//!
//! The names hold the turn id, the step and the call id, never anything that changes
//! with eve's version, so a journal written by one version replays under the next.
//! What crosses the seam is JSON, in the forms below.

use std::fmt::Debug;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::reply::CallFailure;
use super::reply::Reply;
use crate::protocol::{Image, Usage};
use crate::tools::ToolOutput;

/// The most bytes of one journaled result. A durable engine takes entries of a bounded
/// size (Restate: 32 MiB by default), and the records a result makes are journaled and
/// kept beside it; a result that could not be journaled would make the engine retry the
/// call for ever. A larger one is journaled as the error it is instead.
pub const MAX_RESULT_BYTES: usize = 4 * 1024 * 1024;

/// `value`, or the length of its JSON when that is longer than [`MAX_RESULT_BYTES`].
fn bounded(value: Value) -> Result<Value, usize> {
    let len = value.to_string().len();
    if len > MAX_RESULT_BYTES {
        return Err(len);
    }
    Ok(value)
}

fn too_large(what: &str, len: usize) -> String {
    format!(
        "{what} is {} KiB, more than the {} MiB a journaled call keeps",
        len >> 10,
        MAX_RESULT_BYTES >> 20
    )
}

/// A durable engine's journal of a turn's effects.
pub trait Durable: Send + Sync + Debug {
    /// Runs `work` and journals its result under `name`; or, when the journal already
    /// holds a result under `name`, returns that without running `work`. The result is
    /// what `work` returned, as JSON; `Null` when the engine cancelled the call (the
    /// turn was cancelled while it ran) and so keeps no result for it.
    fn run(&self, name: String, work: BoxFuture<'static, Value>) -> BoxFuture<'static, Value>;
}

/// The journal name of a step's model call.
pub fn model_name(turn_id: &str, step: u64) -> String {
    format!("turn {turn_id} step {step} model")
}

/// The journal name of a compaction's model call before a step.
pub fn compaction_name(turn_id: &str, step: u64) -> String {
    format!("turn {turn_id} step {step} compaction")
}

/// The journal name of a tool call.
pub fn call_name(turn_id: &str, step: u64, call_id: &str) -> String {
    format!("turn {turn_id} step {step} call {call_id}")
}

/// The journal name of the `n`th hook run of a turn (counted from the turn's start or
/// its resumption, so that a replay names each run as before).
pub fn hook_name(turn_id: &str, step: u64, hook: &str, n: u64) -> String {
    format!("turn {turn_id} step {step} hook {hook} run {n}")
}

/// Runs `work` (a hook) through `durable` under `name`: its answer is journaled as JSON,
/// so that a replay gets the answer the hook gave the first time instead of running it
/// again. The error says why there is no answer (the engine cancelled it, or the entry
/// is of another shape).
pub async fn journaled<T>(
    durable: &dyn Durable,
    name: String,
    work: impl Future<Output = T> + Send + 'static,
) -> Result<T, String>
where
    T: Serialize + serde::de::DeserializeOwned + Send + 'static,
{
    let work = async move {
        bounded(serde_json::to_value(work.await).unwrap_or(Value::Null)).unwrap_or(Value::Null)
    };
    let value = durable.run(name.clone(), work.boxed()).await;
    if value.is_null() {
        return Err("the turn was cancelled while it ran".into());
    }
    serde_json::from_value(value)
        .map_err(|e| format!("the journal's entry `{name}` is not a hook's answer: {e}"))
}

/// A model call's outcome as journaled.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
enum Called {
    Reply { reply: Reply },
    Aborted { partial: String },
    Failed { error: String },
}

/// Runs a model call through `durable` under `name`.
pub async fn model_call(
    durable: &dyn Durable,
    name: String,
    work: impl Future<Output = Result<Reply, CallFailure>> + Send + 'static,
) -> Result<Reply, CallFailure> {
    let work = async move {
        let called = match work.await {
            Ok(reply) => Called::Reply { reply },
            Err(CallFailure::Aborted { partial }) => Called::Aborted { partial },
            Err(CallFailure::Failed(error)) => Called::Failed { error },
        };
        bounded(serde_json::to_value(called).unwrap_or(Value::Null)).unwrap_or_else(|len| {
            let error = too_large("the model's reply", len);
            serde_json::to_value(Called::Failed { error }).unwrap_or(Value::Null)
        })
    };
    let value = durable.run(name.clone(), work.boxed()).await;
    if value.is_null() {
        return Err(CallFailure::Aborted {
            partial: String::new(),
        });
    }
    match serde_json::from_value(value) {
        Ok(Called::Reply { reply }) => Ok(reply),
        Ok(Called::Aborted { partial }) => Err(CallFailure::Aborted { partial }),
        Ok(Called::Failed { error }) => Err(CallFailure::Failed(error)),
        Err(e) => Err(CallFailure::Failed(format!(
            "the journal's entry `{name}` is not a model call's result: {e}"
        ))),
    }
}

/// A compaction's summary call through `durable` under `name`.
pub async fn summary_call(
    durable: &dyn Durable,
    name: String,
    work: impl Future<Output = Result<(String, Usage), String>> + Send + 'static,
) -> Result<(String, Usage), String> {
    let work = async move {
        bounded(serde_json::to_value(work.await).unwrap_or(Value::Null)).unwrap_or_else(|len| {
            let failed: Result<(String, Usage), String> = Err(too_large("the summary", len));
            serde_json::to_value(failed).unwrap_or(Value::Null)
        })
    };
    let value = durable.run(name.clone(), work.boxed()).await;
    if value.is_null() {
        return Err("the turn was cancelled during the compaction".into());
    }
    serde_json::from_value::<Result<(String, Usage), String>>(value)
        .map_err(|e| format!("the journal's entry `{name}` is not a summary: {e}"))?
}

/// A tool call's output as journaled.
#[derive(Debug, Serialize, Deserialize)]
struct Output {
    content: String,
    is_error: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    images: Vec<Image>,
}

/// Runs a tool call through `durable` under `name`.
pub async fn tool_call(
    durable: &dyn Durable,
    name: String,
    work: impl Future<Output = ToolOutput> + Send + 'static,
) -> ToolOutput {
    let work = async move {
        let output = work.await;
        let value = serde_json::to_value(Output {
            content: output.content,
            is_error: output.is_error,
            images: output.images,
        })
        .unwrap_or(Value::Null);
        bounded(value).unwrap_or_else(|len| {
            serde_json::to_value(Output {
                content: too_large("this call's result", len),
                is_error: true,
                images: Vec::new(),
            })
            .unwrap_or(Value::Null)
        })
    };
    let value = durable.run(name.clone(), work.boxed()).await;
    if value.is_null() {
        return ToolOutput::error(
            "the turn was cancelled while this call ran: what it did is not known, and its result is not kept",
        );
    }
    match serde_json::from_value::<Output>(value) {
        Ok(output) => ToolOutput {
            content: output.content,
            is_error: output.is_error,
            images: output.images,
        },
        Err(e) => ToolOutput::error(format!(
            "eve could not tell what this call returned: the journal's entry `{name}` is not a tool's result ({e})"
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::collections::HashMap;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::providers::FinishReason;

    /// A journal in memory: a name it holds is never run again.
    #[derive(Debug, Default)]
    struct Memory {
        entries: Arc<Mutex<HashMap<String, Value>>>,
        ran: Arc<AtomicUsize>,
    }

    impl Durable for Memory {
        fn run(&self, name: String, work: BoxFuture<'static, Value>) -> BoxFuture<'static, Value> {
            if let Some(value) = self.entries.lock().unwrap().get(&name) {
                let value = value.clone();
                return async move { value }.boxed();
            }
            let (entries, ran) = (self.entries.clone(), self.ran.clone());
            async move {
                ran.fetch_add(1, Ordering::SeqCst);
                let value = work.await;
                entries.lock().unwrap().insert(name, value.clone());
                value
            }
            .boxed()
        }
    }

    #[tokio::test]
    async fn a_journaled_call_returns_its_first_result_and_never_runs_again() {
        let journal = Memory::default();
        let reply = Reply {
            text: "hi".into(),
            finish: Some(FinishReason::ToolUse),
            ..Reply::default()
        };
        let first = model_call(&journal, model_name("turn_1", 1), {
            let reply = reply.clone();
            async move { Ok(reply) }
        })
        .await
        .ok()
        .unwrap();
        let again = model_call(&journal, model_name("turn_1", 1), async {
            Err(CallFailure::Failed("must not run".into()))
        })
        .await
        .ok()
        .unwrap();
        assert_eq!(first, reply);
        assert_eq!(again, reply);
        let output = tool_call(&journal, call_name("turn_1", 1, "call_1"), async {
            ToolOutput::ok("done")
        })
        .await;
        let replayed = tool_call(&journal, call_name("turn_1", 1, "call_1"), async {
            ToolOutput::error("must not run")
        })
        .await;
        assert_eq!(output, replayed);
        assert_eq!(journal.ran.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_result_too_large_to_journal_is_journaled_as_an_error() {
        let journal = Memory::default();
        let huge = "x".repeat(MAX_RESULT_BYTES + 1);
        let output = tool_call(&journal, call_name("t", 1, "c"), {
            let huge = huge.clone();
            async move { ToolOutput::ok(huge) }
        })
        .await;
        assert!(output.is_error && output.content.contains("more than the 4 MiB"));
        let reply = model_call(&journal, model_name("t", 2), async move {
            Ok(Reply {
                text: huge,
                ..Reply::default()
            })
        })
        .await;
        let Err(CallFailure::Failed(error)) = reply else {
            panic!("a reply over the limit must fail");
        };
        assert!(error.contains("the model's reply"), "{error}");
        let entries = journal.entries.lock().unwrap();
        assert!(entries.values().all(|v| v.to_string().len() < 1024));
    }

    /// An engine that cancels every call.
    #[derive(Debug)]
    struct Cancelled;

    impl Durable for Cancelled {
        fn run(&self, _: String, _: BoxFuture<'static, Value>) -> BoxFuture<'static, Value> {
            async { Value::Null }.boxed()
        }
    }

    #[tokio::test]
    async fn a_call_the_engine_cancelled_says_so() {
        let output = tool_call(&Cancelled, call_name("t", 1, "c"), async {
            ToolOutput::ok("x")
        })
        .await;
        assert!(output.is_error && output.content.contains("cancelled"));
        let reply = model_call(&Cancelled, model_name("t", 1), async {
            Ok(Reply::default())
        })
        .await;
        assert!(matches!(reply, Err(CallFailure::Aborted { .. })));
        let summary = summary_call(&Cancelled, compaction_name("t", 1), async {
            Ok(("s".to_string(), Usage::default()))
        })
        .await;
        assert!(summary.is_err_and(|e| e.contains("cancelled")));
    }

    #[tokio::test]
    async fn an_entry_of_another_shape_is_an_error_not_a_panic() {
        let journal = Memory::default();
        journal.entries.lock().unwrap().insert(
            call_name("t", 1, "c"),
            serde_json::json!({"nonsense": true}),
        );
        let output = tool_call(&journal, call_name("t", 1, "c"), async {
            ToolOutput::ok("x")
        })
        .await;
        assert!(output.is_error && output.content.contains("not a tool's result"));
    }

    #[tokio::test]
    async fn a_hooks_answer_is_journaled_and_a_replay_gets_the_first_one() {
        let journal = Memory::default();
        let name = hook_name("t", 1, "guard", 0);
        let first: Result<String, String> =
            journaled(&journal, name.clone(), async { "deny".to_string() }).await;
        // Replayed, the hook would answer otherwise: the journal's answer wins.
        let again: Result<String, String> =
            journaled(&journal, name.clone(), async { "allow".to_string() }).await;
        assert_eq!((first, again), (Ok("deny".into()), Ok("deny".into())));
        assert_eq!(journal.ran.load(Ordering::SeqCst), 1);
        let cancelled: Result<String, String> =
            journaled(&Cancelled, name, async { "allow".to_string() }).await;
        assert!(cancelled.is_err_and(|e| e.contains("cancelled")));
    }
}
