//! Tool stubs: a call whose input matches a stub gets the stub's outcome instead of the
//! tool's effect. The registry wraps the tool's executor, so schema validation, approvals,
//! the scheduler and the events stay the real ones.

use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{ToolContext, ToolExec, ToolOutput};
use crate::manifest::eval::{Stub, StubOutcome};
use crate::pattern::matches;
use crate::sync::lock;

/// The stubs of a run, with how many calls each has answered.
#[derive(Debug)]
pub struct Stubs {
    stubs: Vec<Compiled>,
}

#[derive(Debug)]
struct Compiled {
    stub: Stub,
    schema: Option<jsonschema::Validator>,
    answered: Mutex<usize>,
}

impl Stubs {
    /// The stubs, in the order they are tried.
    pub fn new(stubs: &[Stub]) -> Stubs {
        Stubs {
            stubs: stubs
                .iter()
                .map(|stub| Compiled {
                    schema: stub
                        .schema
                        .as_ref()
                        .and_then(|s| jsonschema::validator_for(s).ok()),
                    stub: stub.clone(),
                    answered: Mutex::new(0),
                })
                .collect(),
        }
    }

    /// Whether any stub is for `tool`.
    pub fn covers(&self, tool: &str) -> bool {
        self.stubs.iter().any(|s| s.stub.tool == tool)
    }

    /// The outcome of the first stub for `tool` that matches `input`; `None`: run the tool.
    pub fn answer(&self, tool: &str, input: &Value) -> Option<ToolOutput> {
        let compiled = self.stubs.iter().find(|c| {
            c.stub.tool == tool
                && c.stub.input.as_ref().is_none_or(|p| matches(p, input))
                && match (&c.stub.schema, &c.schema) {
                    (None, _) => true,
                    (Some(_), Some(validator)) => validator.is_valid(input),
                    // A schema the compiler accepted but jsonschema cannot build: never matches.
                    (Some(_), None) => false,
                }
        })?;
        let mut answered = lock(&compiled.answered);
        let outcome = compiled
            .stub
            .outcomes
            .get(*answered)
            .or_else(|| compiled.stub.outcomes.last())?;
        *answered += 1;
        Some(match outcome {
            StubOutcome::Response(text) => ToolOutput::ok(text.clone()),
            StubOutcome::Error(text) => ToolOutput::error(text.clone()),
        })
    }
}

/// A tool's executor behind its stubs: a matching call gets the stub's outcome, any
/// other call runs the real tool.
#[derive(Debug)]
pub struct Stubbed {
    pub tool: String,
    pub real: Arc<dyn ToolExec>,
    pub stubs: Arc<Stubs>,
}

impl ToolExec for Stubbed {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        match self.stubs.answer(&self.tool, input) {
            Some(output) => async move { output }.boxed(),
            None => self.real.call(input, ctx),
        }
    }

    fn precheck(&self, input: &Value) -> Option<ToolOutput> {
        self.real.precheck(input)
    }

    fn approved_by_policy(&self, input: &Value) -> bool {
        self.real.approved_by_policy(input)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn the_first_matching_stub_answers_and_its_last_outcome_repeats() {
        let stubs = Stubs::new(&[
            Stub {
                tool: "web_fetch".into(),
                input: Some(json!({"url": "https://a.test/*"})),
                schema: None,
                outcomes: vec![
                    StubOutcome::Response("one".into()),
                    StubOutcome::Error("two".into()),
                ],
            },
            Stub {
                tool: "web_fetch".into(),
                input: None,
                schema: Some(json!({"type": "object", "required": ["url"]})),
                outcomes: vec![StubOutcome::Response("fallback".into())],
            },
        ]);
        let a = json!({"url": "https://a.test/x"});
        assert_eq!(stubs.answer("web_fetch", &a), Some(ToolOutput::ok("one")));
        assert_eq!(
            stubs.answer("web_fetch", &a),
            Some(ToolOutput::error("two"))
        );
        assert_eq!(
            stubs.answer("web_fetch", &a),
            Some(ToolOutput::error("two"))
        );
        assert_eq!(
            stubs.answer("web_fetch", &json!({"url": "https://b.test/"})),
            Some(ToolOutput::ok("fallback"))
        );
        assert_eq!(stubs.answer("web_fetch", &json!({"other": 1})), None);
        assert_eq!(stubs.answer("bash", &a), None);
        assert!(stubs.covers("web_fetch") && !stubs.covers("bash"));
    }
}
