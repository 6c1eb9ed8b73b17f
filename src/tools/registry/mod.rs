//! The tools a run offers: built from the manifest (and the live tools of its
//! connections), each with its schema validator and executor; the deferred ones are
//! reached through the tool catalog.

use std::borrow::Cow;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use super::builtin::Builtin;
use super::{ToolContext, ToolExec, ToolOutput};
use crate::manifest::{self, Approval, Executor};
use crate::protocol::{InputKind, ToolCall, ToolKind, ToolSpec, Unavailable};
use crate::suggest;

mod build;

#[derive(Debug)]
struct Entry {
    spec: manifest::Tool,
    /// Which built-in it is, for built-ins (overridden or not).
    builtin: Option<Builtin>,
    validator: Arc<jsonschema::Validator>,
    exec: Arc<dyn ToolExec>,
    kind: ToolKind,
    /// What `search_tools` matches a deferred tool by.
    search: Option<SearchText>,
}

/// A tool from outside the manifest's executors: a connection's, as its server offers it
/// now (the live list can differ from the build's).
#[derive(Debug, Clone)]
pub struct External {
    pub tool: manifest::Tool,
    pub exec: Arc<dyn ToolExec>,
}

/// The executable tools of a manifest, in manifest order, then the external ones.
#[derive(Debug)]
pub struct Registry {
    entries: Vec<Entry>,
    unavailable: Vec<Unavailable>,
}

impl crate::tools::Catalog for Registry {
    fn search(&self, query: &str, limit: usize) -> Vec<&manifest::Tool> {
        Registry::search(self, query, limit)
    }

    fn deferred(&self) -> Vec<String> {
        Registry::deferred(self)
    }

    fn call<'a>(
        &'a self,
        call: &'a ToolCall,
        ctx: &'a ToolContext,
    ) -> futures_util::future::BoxFuture<'a, ToolOutput> {
        Box::pin(Registry::call(self, call, ctx))
    }
}

impl Registry {
    /// The tools offered to the model, in manifest order (deferred ones are not).
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.offered()
            .map(|e| ToolSpec {
                name: e.spec.name.clone(),
                description: e.spec.description.clone(),
                input_schema: e.spec.input_schema.clone(),
                kind: e.kind,
            })
            .collect()
    }

    fn offered(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| !e.spec.defer)
    }

    /// The names of the offered tools.
    pub fn names(&self) -> Vec<String> {
        self.offered().map(|e| e.spec.name.clone()).collect()
    }

    /// The names of the deferred tools (reached through `search_tools` and `call_tool`).
    pub fn deferred(&self) -> Vec<String> {
        self.entries
            .iter()
            .filter(|e| e.spec.defer)
            .map(|e| e.spec.name.clone())
            .collect()
    }

    /// Every executable tool (offered and deferred), as the manifest describes it.
    pub fn tools(&self) -> impl Iterator<Item = &manifest::Tool> {
        self.entries.iter().map(|e| &e.spec)
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

    /// The name and input of the tool a call runs (for `call_tool`, the deferred tool it
    /// names), or `None` when the call names no tool it can run.
    pub fn target(&self, call: &ToolCall) -> Option<(String, Value)> {
        self.resolve(call)
            .ok()
            .map(|(entry, input)| (entry.spec.name.clone(), input.into_owned()))
    }

    /// The tool a call runs and its input: for `call_tool`, the deferred tool it names.
    fn resolve<'a>(
        &'a self,
        call: &'a ToolCall,
    ) -> Result<(&'a Entry, Cow<'a, Value>), ToolOutput> {
        let Some(entry) = self.entry(&call.name) else {
            return Err(self.unknown(&call.name));
        };
        if entry.builtin != Some(Builtin::CallTool) {
            return Ok((entry, Cow::Borrowed(&call.input)));
        }
        problems(entry, &call.name, &call.input)?;
        let name = call
            .input
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let input = call
            .input
            .get("input")
            .cloned()
            .unwrap_or_else(|| Value::Object(Default::default()));
        let Some(target) = self.entry(name) else {
            return Err(ToolOutput::error(format!(
                "There is no tool named `{name}`. Find the name with search_tools first."
            )));
        };
        if !target.spec.defer {
            return Err(ToolOutput::error(format!(
                "`{name}` is in your tool list: call it directly instead of through call_tool."
            )));
        }
        Ok((target, Cow::Owned(input)))
    }

    fn unknown(&self, name: &str) -> ToolOutput {
        let names: Vec<&str> = self.offered().map(|e| e.spec.name.as_str()).collect();
        let hint = match suggest::closest(name, names.iter().copied()) {
            Some(near) => format!(" Did you mean `{near}`?"),
            None => String::new(),
        };
        let catalog = if self.entries.iter().any(|e| e.spec.defer) {
            " More tools can be found with search_tools."
        } else {
            ""
        };
        ToolOutput::error(format!(
            "There is no tool named `{name}`.{hint} Available tools: {}.{catalog}",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ))
    }

    /// Whether a call may run beside others: read-only tools, and calls that will only
    /// return an error (unknown tools). A `call_tool` call is scheduled as its target.
    pub fn runs_in_parallel(&self, call: &ToolCall) -> bool {
        self.resolve(call).map_or(true, |(e, _)| e.spec.read_only)
    }

    /// The connection whose server runs this call, if a connection's tool runs it.
    pub fn connection_of(&self, call: &ToolCall) -> Option<String> {
        let (entry, _) = self.resolve(call).ok()?;
        match &entry.spec.executor {
            Executor::Mcp { connection, .. } => Some(connection.clone()),
            _ => None,
        }
    }

    /// Checks a call before it runs: the tool exists and the arguments match its schema
    /// (for `call_tool`, the named tool's schema).
    pub fn check(&self, call: &ToolCall) -> Result<(), ToolOutput> {
        let (entry, input) = self.resolve(call)?;
        problems(entry, &entry.spec.name, &input)
    }

    /// What a valid call needs from a person before it runs: an answer (`ask_question`)
    /// or an approval (`approval = "always"` and no `allow` pattern covers it).
    pub fn needs_input(&self, call: &ToolCall) -> Option<InputKind> {
        self.check(call).ok()?;
        let (entry, input) = self.resolve(call).ok()?;
        if entry.builtin == Some(Builtin::AskQuestion) {
            let question = input.get("question")?.as_str()?.to_string();
            let options = input
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
        if entry.exec.precheck(&input).is_some() {
            return None;
        }
        (entry.spec.approval == Approval::Always && !entry.exec.approved_by_policy(&input))
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
        let (entry, input) = match self.resolve(call) {
            Ok(resolved) => resolved,
            Err(refused) => return refused,
        };
        let name = &entry.spec.name;
        if let Some(refused) = entry.exec.precheck(&input) {
            return refused;
        }
        if !approved
            && entry.spec.approval == Approval::Always
            && !entry.exec.approved_by_policy(&input)
        {
            return ToolOutput::error(format!(
                "Refused: `{name}` needs a person's approval for every call (approval = \"always\"), and nobody can approve calls in this run. Do the task without it, or say what you would run."
            ));
        }
        if ctx.cancel.is_cancelled() {
            return ToolOutput::error(format!(
                "`{name}` was not started: the turn was interrupted"
            ));
        }
        bounded(
            name,
            Duration::from_secs(entry.spec.timeout_secs.max(1)),
            ctx,
            entry.exec.call(&input, ctx),
        )
        .await
    }

    /// The deferred tools that match `query` best, best first: an exact name, then the
    /// part after `__`, then a connection's name, then a name prefix, then the words of
    /// names and descriptions.
    pub fn search(&self, query: &str, limit: usize) -> Vec<&manifest::Tool> {
        let query = Query::new(query);
        let mut found: Vec<(u32, &Entry)> = self
            .entries
            .iter()
            .filter_map(|e| Some((e.search.as_ref()?.score(&query), e)))
            .filter(|(score, _)| *score > 0)
            .collect();
        found.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then_with(|| a.1.spec.name.cmp(&b.1.spec.name))
        });
        found
            .into_iter()
            .take(limit)
            .map(|(_, e)| &e.spec)
            .collect()
    }
}

fn entry(
    spec: manifest::Tool,
    builtin: Option<Builtin>,
    exec: Arc<dyn ToolExec>,
    kind: ToolKind,
) -> Result<Entry, String> {
    let validator = validators::get(&spec.input_schema)?;
    let search = spec.defer.then(|| SearchText::new(&spec));
    Ok(Entry {
        spec,
        builtin,
        validator,
        exec,
        kind,
        search,
    })
}

/// Compiled schema validators, shared by every registry of the process: a registry is
/// made for each turn (each step when a server's tools change), and compiling a
/// validator costs more than a whole step of the harness.
mod validators {
    use std::collections::HashMap;
    use std::hash::{Hash, Hasher};
    use std::sync::{Arc, Mutex};

    use serde_json::Value;

    /// Schemas kept at most (a server may list any number of tools): past this the
    /// cache starts again.
    const MAX: usize = 4096;

    type Cache = HashMap<u64, Vec<(Value, Arc<jsonschema::Validator>)>>;

    static CACHE: Mutex<Option<Cache>> = Mutex::new(None);

    /// The validator of `schema`, compiled once.
    pub fn get(schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        let key = digest(schema);
        if let Some(found) = crate::sync::lock(&CACHE)
            .as_ref()
            .and_then(|c| c.get(&key))
            .and_then(|same| same.iter().find(|(s, _)| s == schema))
        {
            return Ok(found.1.clone());
        }
        let validator = Arc::new(
            jsonschema::validator_for(schema)
                .map_err(|e| format!("its input schema is invalid: {e}"))?,
        );
        let mut cache = crate::sync::lock(&CACHE);
        let cache = cache.get_or_insert_with(HashMap::new);
        if cache.len() >= MAX {
            cache.clear();
        }
        cache
            .entry(key)
            .or_default()
            .push((schema.clone(), validator.clone()));
        Ok(validator)
    }

    fn digest(schema: &Value) -> u64 {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        feed(schema, &mut hasher);
        hasher.finish()
    }

    fn feed(value: &Value, h: &mut impl Hasher) {
        match value {
            Value::Null => 0u8.hash(h),
            Value::Bool(b) => (1u8, b).hash(h),
            Value::Number(n) => (2u8, n.to_string()).hash(h),
            Value::String(s) => (3u8, s).hash(h),
            Value::Array(items) => {
                (4u8, items.len()).hash(h);
                items.iter().for_each(|v| feed(v, h));
            }
            Value::Object(map) => {
                (5u8, map.len()).hash(h);
                for (k, v) in map {
                    k.hash(h);
                    feed(v, h);
                }
            }
        }
    }
}

/// The arguments' mismatches with a tool's schema, as a result for the model.
fn problems(entry: &Entry, name: &str, input: &Value) -> Result<(), ToolOutput> {
    let problems: Vec<String> = entry
        .validator
        .iter_errors(input)
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
            "Invalid arguments for `{name}`:\n{}\nCall it again with arguments that match its input schema.",
            problems.join("\n")
        )))
    }
}

/// A `search_tools` query, lowercased and split into words.
struct Query {
    text: String,
    words: Vec<String>,
}

impl Query {
    fn new(text: &str) -> Query {
        let text = text.trim().to_lowercase();
        let words = words(&text);
        Query { text, words }
    }
}

fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The deferred skills of `skills` that match `query` best, best first, ranked as
/// [`Registry::search`] ranks tools (a skill has no connection).
pub fn search_skills<'a>(
    skills: &'a [manifest::Skill],
    query: &str,
    limit: usize,
) -> Vec<&'a manifest::Skill> {
    let query = Query::new(query);
    let mut found: Vec<(u32, &manifest::Skill)> = skills
        .iter()
        .filter(|s| s.deferred)
        .map(|s| (SearchText::named(&s.name, &s.description).score(&query), s))
        .filter(|(score, _)| *score > 0)
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    found.into_iter().take(limit).map(|(_, s)| s).collect()
}

/// A deferred tool's (or skill's) name and description, prepared once for every search.
#[derive(Debug)]
struct SearchText {
    name: String,
    /// The part after `<connection>__`.
    short: String,
    connection: Option<String>,
    name_words: Vec<String>,
    description_words: Vec<String>,
}

impl SearchText {
    fn new(tool: &manifest::Tool) -> SearchText {
        let name = tool.name.to_lowercase();
        let (connection, short) = match &tool.executor {
            Executor::Mcp {
                connection,
                tool: server,
                ..
            } => (Some(connection.to_lowercase()), server.to_lowercase()),
            _ => (None, name.clone()),
        };
        SearchText {
            name_words: words(&name),
            description_words: words(&tool.description),
            name,
            short,
            connection,
        }
    }

    /// The search text of a skill: a name and a description, no connection.
    fn named(name: &str, description: &str) -> SearchText {
        let name = name.to_lowercase();
        SearchText {
            name_words: words(&name),
            description_words: words(description),
            short: name.clone(),
            name,
            connection: None,
        }
    }

    fn score(&self, query: &Query) -> u32 {
        if query.text.is_empty() {
            return 0;
        }
        if self.name == query.text {
            return 1000;
        }
        if self.short == query.text {
            return 900;
        }
        if self.connection.as_deref() == Some(query.text.as_str()) {
            return 800;
        }
        if self.name.starts_with(&query.text) || self.short.starts_with(&query.text) {
            return 700;
        }
        let mut score = 0;
        for word in &query.words {
            if self.name_words.contains(word) {
                score += 30;
            } else if self.name.contains(word.as_str()) {
                score += 20;
            }
            if self.description_words.contains(word) {
                score += 10;
            } else if self
                .description_words
                .iter()
                .any(|w| w.starts_with(word.as_str()))
            {
                score += 5;
            }
        }
        score.min(699)
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

    #[test]
    fn skills_are_searched_only_when_deferred_and_by_rank() {
        let skill = |name: &str, description: &str, deferred: bool| manifest::Skill {
            name: name.into(),
            description: description.into(),
            path: format!("skills/{name}.md"),
            deferred,
            license: None,
            metadata: serde_json::json!({}),
            body_hash: String::new(),
            body_offset: 0,
            resources: Vec::new(),
            linked: None,
        };
        let skills = [
            skill("invoice-check", "Checks an invoice", true),
            skill("pay-invoice", "Pays a checked invoice", true),
            skill("listed-invoice", "An invoice skill that is listed", false),
            skill("tidy", "Tidies a folder", true),
        ];
        let found = |query: &str| -> Vec<&str> {
            search_skills(&skills, query, 5)
                .iter()
                .map(|s| s.name.as_str())
                .collect()
        };
        assert_eq!(found("pay-invoice"), ["pay-invoice", "invoice-check"]);
        assert_eq!(found("invoice"), ["invoice-check", "pay-invoice"]);
        assert_eq!(found("folder"), ["tidy"]);
        assert_eq!(found("nothing like it"), Vec::<&str>::new());
        assert_eq!(search_skills(&skills, "invoice", 1).len(), 1);
    }
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
        let child = Registry::for_provider(&Arc::new(manifest()), false, false, None);
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
            registry.runs_in_parallel(&call("git_history", json!({}))),
            "declared read_only"
        );
        assert!(registry.runs_in_parallel(&call("nope", json!({}))));
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

#[cfg(test)]
mod catalog_tests {
    use super::*;
    use futures_util::FutureExt;
    use futures_util::future::BoxFuture;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    /// Answers every call with its input.
    #[derive(Debug)]
    struct Echo;

    impl ToolExec for Echo {
        fn call<'a>(
            &'a self,
            input: &'a Value,
            _ctx: &'a ToolContext,
        ) -> BoxFuture<'a, ToolOutput> {
            async move { ToolOutput::ok(input.to_string()) }.boxed()
        }
    }

    fn tool(name: &str, description: &str, read_only: bool, approval: Approval) -> manifest::Tool {
        let (connection, server) = name.split_once("__").unwrap_or(("", name));
        manifest::Tool {
            name: name.into(),
            description: description.into(),
            input_schema: json!({"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}),
            source: manifest::ToolSource::Connection,
            approval,
            timeout_secs: 5,
            read_only,
            executor: Executor::Mcp {
                connection: connection.into(),
                tool: server.into(),
                annotations: Default::default(),
            },
            settings: Default::default(),
            defer: true,
        }
    }

    fn registry() -> Registry {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("agent.toml"),
            "model = \"openai/gpt-4.1\"\ndefault_tools = false\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("instructions.md"), "Hi.\n").unwrap();
        std::fs::create_dir(dir.path().join("tools")).unwrap();
        std::fs::write(dir.path().join("tools/todo.toml"), "defer = true\n").unwrap();
        let manifest = crate::compiler::compile(dir.path(), &crate::tools::builtin::CATALOG)
            .manifest
            .unwrap();
        let external = [
            tool(
                "gh__get_issue",
                "Get an issue by number",
                true,
                Approval::Never,
            ),
            tool(
                "gh__search_issues",
                "Search the issues of a repository",
                true,
                Approval::Never,
            ),
            tool("gh__close_issue", "Close an issue", false, Approval::Always),
            tool("fs__read_file", "Read a file", true, Approval::Never),
            tool(
                "weather__now",
                "The forecast for a city",
                true,
                Approval::Never,
            ),
        ]
        .into_iter()
        .map(|tool| External {
            tool,
            exec: Arc::new(Echo),
        })
        .collect();
        Registry::with_external(&Arc::new(manifest), false, true, None, external, Vec::new())
    }

    fn call_tool(name: &str, input: Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: "call_tool".into(),
            input: json!({"name": name, "input": input}),
        }
    }

    #[test]
    fn deferred_tools_are_out_of_the_list_and_searched_by_rank() {
        let registry = registry();
        assert_eq!(registry.names(), ["search_tools", "call_tool"]);
        assert_eq!(registry.deferred().len(), 6, "{:?}", registry.deferred());
        let found = |q: &str| -> Vec<String> {
            registry
                .search(q, 5)
                .iter()
                .map(|t| t.name.clone())
                .collect()
        };
        assert_eq!(found("gh__get_issue")[0], "gh__get_issue", "exact name");
        assert_eq!(found("get_issue")[0], "gh__get_issue", "the part after __");
        assert_eq!(
            found("gh"),
            ["gh__close_issue", "gh__get_issue", "gh__search_issues"],
            "a connection"
        );
        assert_eq!(found("fs__re")[0], "fs__read_file", "a prefix");
        assert_eq!(
            found("city forecast")[0],
            "weather__now",
            "words of the description"
        );
        assert_eq!(found("todo")[0], "todo", "a deferred built-in");
        assert!(found("zebra").is_empty());
        assert_eq!(registry.search("issue", 2).len(), 2, "the limit holds");
    }

    #[test]
    fn call_tool_is_checked_approved_and_scheduled_as_the_tool_it_names() {
        let registry = registry();
        assert!(
            registry
                .check(&call_tool("gh__get_issue", json!({"n": 1})))
                .is_ok()
        );
        let invalid = registry
            .check(&call_tool("gh__get_issue", json!({})))
            .unwrap_err();
        assert!(
            invalid
                .content
                .starts_with("Invalid arguments for `gh__get_issue`:"),
            "{}",
            invalid.content
        );
        assert_eq!(
            registry
                .check(&call_tool("gh__nope", json!({})))
                .unwrap_err()
                .content,
            "There is no tool named `gh__nope`. Find the name with search_tools first."
        );
        assert_eq!(
            registry
                .check(&call_tool("search_tools", json!({"query": "x"})))
                .unwrap_err()
                .content,
            "`search_tools` is in your tool list: call it directly instead of through call_tool."
        );
        assert!(registry.runs_in_parallel(&call_tool("gh__get_issue", json!({"n": 1}))));
        assert!(!registry.runs_in_parallel(&call_tool("gh__close_issue", json!({"n": 1}))));
        assert_eq!(
            registry.needs_input(&call_tool("gh__close_issue", json!({"n": 1}))),
            Some(InputKind::Approval)
        );
        assert_eq!(
            registry.needs_input(&call_tool("gh__get_issue", json!({"n": 1}))),
            None
        );
        assert_eq!(
            registry
                .connection_of(&call_tool("gh__get_issue", json!({"n": 1})))
                .as_deref(),
            Some("gh")
        );
    }

    #[tokio::test]
    async fn call_tool_runs_the_named_tool_and_refuses_what_needs_an_approval() {
        let registry = Arc::new(registry());
        let mut ctx = ToolContext::new("/w".into(), "/a".into());
        ctx.catalog = Some(registry.clone());
        let out = registry
            .call(&call_tool("gh__get_issue", json!({"n": 7})), &ctx)
            .await;
        assert_eq!(out, ToolOutput::ok("{\"n\":7}"));
        let refused = registry
            .call(&call_tool("gh__close_issue", json!({"n": 7})), &ctx)
            .await;
        assert!(
            refused
                .content
                .starts_with("Refused: `gh__close_issue` needs a person's approval"),
            "{}",
            refused.content
        );
        let approved = registry
            .call_approved(&call_tool("gh__close_issue", json!({"n": 7})), &ctx)
            .await;
        assert_eq!(approved, ToolOutput::ok("{\"n\":7}"));
        let searched = registry
            .call(
                &ToolCall {
                    id: "s".into(),
                    name: "search_tools".into(),
                    input: json!({"query": "forecast"}),
                },
                &ctx,
            )
            .await;
        assert!(
            searched.content.contains("\"name\": \"weather__now\""),
            "{}",
            searched.content
        );
    }
}
