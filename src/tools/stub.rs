//! Tool stubs: a call whose input matches a stub gets the stub's outcome instead of the
//! tool's effect. The registry wraps the tool's executor, so schema validation, approvals,
//! the scheduler and the events stay the real ones.

use std::sync::{Arc, Mutex};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde_json::Value;

use super::{ToolContext, ToolExec, ToolOutput};
use crate::manifest::eval::{Outcome, Stub};
use crate::sync::lock;

/// Whether `input` matches `pattern`: a string pattern is a glob over a string (`*`
/// matches `/` too), a table matches an object holding at least its keys (each
/// matching), an array matches an array of as many matching items, a number matches
/// the same number, anything else only itself.
pub fn matches(pattern: &Value, input: &Value) -> bool {
    match (pattern, input) {
        (Value::String(glob), Value::String(text)) => glob_matches(glob, text),
        (Value::Object(want), Value::Object(have)) => want
            .iter()
            .all(|(key, want)| have.get(key).is_some_and(|have| matches(want, have))),
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| matches(w, h))
        }
        (Value::Number(want), Value::Number(have)) => {
            want == have || want.as_f64().is_some_and(|w| have.as_f64() == Some(w))
        }
        _ => pattern == input,
    }
}

/// Builds the glob of a match pattern; `None` when it is not a valid glob.
pub fn glob(pattern: &str) -> Option<globset::GlobMatcher> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// Whether `text` matches the glob `pattern` (an invalid glob matches nothing).
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    glob(pattern).is_some_and(|g| g.is_match(text))
}

/// A glob that matches exactly `text`: every character with a meaning in a glob escaped.
pub fn escape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '!' | ',') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

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
            Outcome::Response(text) => ToolOutput::ok(text.clone()),
            Outcome::Error(text) => ToolOutput::error(text.clone()),
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

    #[test]
    fn patterns_match_exact_values_globs_and_subsets() {
        let input = json!({"url": "https://example.com/a/b", "n": 3, "flags": ["x", "y"], "deep": {"k": 1.0, "z": true}});
        for pattern in [
            json!({}),
            json!({"url": "https://example.com/*"}),
            json!({"url": "https://example.com/a/b", "n": 3}),
            json!({"n": 3.0}),
            json!({"flags": ["x", "?"]}),
            json!({"deep": {"k": 1}}),
        ] {
            assert!(matches(&pattern, &input), "{pattern}");
        }
        for pattern in [
            json!({"url": "https://example.org/*"}),
            json!({"n": "3"}),
            json!({"missing": 1}),
            json!({"flags": ["x"]}),
            json!({"deep": {"z": false}}),
        ] {
            assert!(!matches(&pattern, &input), "{pattern}");
        }
    }

    #[test]
    fn an_escaped_glob_matches_only_its_text() {
        for text in [
            "plain",
            "a*b",
            "what?",
            "[x]",
            "{a,b}",
            r"back\slash",
            "!neg",
            "",
            "ünïcode *",
        ] {
            let escaped = escape_glob(text);
            assert!(glob_matches(&escaped, text), "{text} as {escaped}");
            assert!(!glob_matches(&escaped, &format!("{text}x")), "{text}");
        }
        assert!(!glob_matches(&escape_glob("a*b"), "axxb"));
    }

    #[tokio::test]
    async fn the_first_matching_stub_answers_and_its_last_outcome_repeats() {
        let stubs = Stubs::new(&[
            Stub {
                tool: "web_fetch".into(),
                input: Some(json!({"url": "https://a.test/*"})),
                schema: None,
                outcomes: vec![
                    Outcome::Response("one".into()),
                    Outcome::Error("two".into()),
                ],
            },
            Stub {
                tool: "web_fetch".into(),
                input: None,
                schema: Some(json!({"type": "object", "required": ["url"]})),
                outcomes: vec![Outcome::Response("fallback".into())],
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
