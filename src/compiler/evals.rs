//! `evals/**/*.toml`: eval cases, every key checked, every name checked against the
//! compiled agent (its tools, connection tools included, its skills and subagents).

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use toml_edit::Item;

use super::diagnostic::{Diagnostic, Diagnostics, code};
use super::inputs::Loaded;
use super::shape::eval::END_REASONS;
use super::source::SourceFile;
use super::toml_reader::{self, Spanned, TableReader, TomlFile};
use crate::manifest::Manifest;
use crate::manifest::eval::{
    Called, Case, DEFAULT_TIMEOUT_SECS, EventChecks, Expect, FileCheck, Judge, Outcome, ReplyCheck,
    Sequence, SequenceMode, Stub, ToolChecks, Turn, TurnInput, Workspace,
};
use crate::manifest::script::{CALL_FIELDS, REPLY_FIELDS, Reply};
use crate::protocol::event::EVENT_TYPES;
use crate::suggest;

/// Whether a case id's segment is valid: letters, digits, `.`, `_` and `-`, starting
/// with a letter or digit (ids name folders of the artifacts and JUnit test cases).
fn is_valid_segment(segment: &str) -> bool {
    let mut chars = segment.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// What the checks of one case need to know about the agent.
struct Agent<'m> {
    manifest: &'m Manifest,
    tools: Vec<&'m str>,
    skills: Vec<&'m str>,
    subagents: Vec<&'m str>,
    root: &'m Path,
    boundary: &'m Path,
}

/// What a case's expectations are checked against: the agent, and for a scripted case
/// the tools its replies call and the skills they load.
struct Scope<'a, 'm> {
    agent: &'a Agent<'m>,
    scripted: Option<Scripted>,
}

struct Scripted {
    tools: BTreeSet<String>,
    skills: BTreeSet<String>,
}

impl Scope<'_, '_> {
    /// Warns when a scripted case expects a call its replies never make.
    fn expect_call(&self, toml: &TomlFile, key: &str, name: &str, span: Option<Range<usize>>) {
        if let Some(scripted) = &self.scripted
            && !scripted.tools.contains(name)
        {
            never_holds(
                toml,
                format!("`{key}` expects a call of `{name}`, but no scripted reply calls it"),
                span,
            );
        }
    }
}

fn never_holds(toml: &TomlFile, message: String, span: Option<Range<usize>>) {
    toml.report(
        Diagnostic::warning(code::EVAL_NEVER_HOLDS, message)
            .at(&toml.src, span)
            .note("the model is scripted, so a call the replies never make never happens"),
    );
}

/// Compiles every case file against `manifest`, the agent built from `root` (whose
/// canonical path is `boundary`).
pub fn compile(
    files: &[Loaded],
    manifest: &Manifest,
    root: &Path,
    boundary: &Path,
    diags: &mut Diagnostics,
) -> Vec<Case> {
    let agent = Agent {
        manifest,
        tools: manifest.tools.iter().map(|t| t.name.as_str()).collect(),
        skills: manifest.skills.iter().map(|s| s.name.as_str()).collect(),
        subagents: manifest.subagents.iter().map(|s| s.name.as_str()).collect(),
        root,
        boundary,
    };
    let mut cases = Vec::new();
    for file in files {
        let id = file
            .path
            .trim_start_matches("evals/")
            .trim_end_matches(".toml")
            .to_string();
        if !id.split('/').all(is_valid_segment) {
            diags.push(
                Diagnostic::error(code::INVALID_EVAL_NAME, format!("invalid eval case name `{id}`"))
                    .file(file.display.clone())
                    .note("a case is named by its path below `evals/`: letters, digits, `.`, `_` and `-`, each folder and the file name starting with a letter or digit"),
            );
            continue;
        }
        let toml = match TomlFile::parse(SourceFile::new(&file.display, &file.text)) {
            Ok(toml) => toml,
            Err(diagnostic) => {
                diags.push(*diagnostic);
                continue;
            }
        };
        let before = diags.error_count();
        let case = {
            let mut root = toml.root(&super::shape::eval::CASE);
            let case = read_case(&id, file, &agent, &mut root);
            root.finish();
            case
        };
        diags.extend(toml.into_diagnostics());
        if let Some(case) = case.filter(|_| diags.error_count() == before) {
            cases.push(case);
        }
    }
    cases
}

fn read_case(
    id: &str,
    file: &Loaded,
    agent: &Agent<'_>,
    root: &mut TableReader<'_>,
) -> Option<Case> {
    let toml = root.file();
    let replies = read_replies(root, agent);
    let scope = Scope {
        agent,
        scripted: replies.as_deref().map(scripted),
    };
    let description = root.string("description").map(|d| d.value);
    let tags = root
        .string_array("tags")
        .map(|t| t.into_iter().map(|t| t.value).collect())
        .unwrap_or_default();
    let prompt = root.string("prompt");
    let turn_tables = root.tables("turn");
    let workspace = read_workspace(root, file, agent);
    let stubs: Vec<Stub> = root
        .tables("stub")
        .unwrap_or_default()
        .into_iter()
        .filter_map(|t| read_stub(t, agent))
        .collect();
    let repeat = root.positive_int("repeat");
    let pass = root.positive_int("pass");
    let timeout_secs = root
        .positive_int("timeout_secs")
        .map_or(DEFAULT_TIMEOUT_SECS, |t| t.value);
    let model = root.string("model");
    let expect = root
        .table("expect")
        .map(|t| read_expect(t, &scope))
        .unwrap_or_default();

    let turns = case_turns(root, prompt, turn_tables, &scope);
    let model = case_model(toml, model, replies.is_some(), agent);
    let repeat_n = repeat.as_ref().map_or(1, |r| r.value);
    let pass_n = pass_count(toml, pass.as_ref(), repeat_n);
    let turns = turns?;
    let workspace = workspace?;
    let (Ok(model), Some(pass_n)) = (model, pass_n) else {
        return None;
    };
    let clamp = |n: u64| u32::try_from(n).unwrap_or(u32::MAX);
    Some(Case {
        id: id.to_string(),
        file: file.path.clone(),
        description,
        tags,
        turns,
        expect,
        workspace,
        replies,
        stubs,
        repeat: clamp(repeat_n),
        pass: clamp(pass_n),
        timeout_secs,
        model,
    })
}

/// `[[reply]]`: the scripted model's replies, if the case has any (the valid ones).
fn read_replies(root: &mut TableReader<'_>, agent: &Agent<'_>) -> Option<Vec<Reply>> {
    if !root.contains("reply") {
        return None;
    }
    root.tables("reply").map(|tables| {
        tables
            .into_iter()
            .enumerate()
            .filter_map(|(n, t)| read_reply(n, t, agent))
            .collect::<Vec<_>>()
    })
}

/// The tools the scripted replies call and the skills they load.
fn scripted(replies: &[Reply]) -> Scripted {
    let calls = || replies.iter().flat_map(|r| r.tool_calls.iter());
    Scripted {
        tools: calls().map(|c| c.name.clone()).collect(),
        skills: calls()
            .filter(|c| c.name == "load_skill")
            .filter_map(|c| c.input.get("name").and_then(Value::as_str))
            .map(str::to_string)
            .collect(),
    }
}

/// The case's turns: one from `prompt`, or the `[[turn]]` tables; exactly one of the two.
fn case_turns(
    root: &TableReader<'_>,
    prompt: Option<Spanned<String>>,
    turn_tables: Option<Vec<TableReader<'_>>>,
    scope: &Scope<'_, '_>,
) -> Option<Vec<Turn>> {
    let toml = root.file();
    let case_span = root.keys().first().and_then(|k| root.key_span(k));
    match (prompt, turn_tables) {
        (Some(_), Some(_)) => {
            toml.report(
                Diagnostic::error(
                    code::EVAL_TURNS,
                    "a case has `prompt` or `[[turn]]`, not both",
                )
                .at(&toml.src, root.key_span("turn"))
                .help("move the prompt into the first turn as `send = \"…\"`"),
            );
            None
        }
        (None, None) => {
            toml.report(
                Diagnostic::error(code::EVAL_TURNS, "a case needs `prompt` or `[[turn]]`")
                    .at(&toml.src, case_span)
                    .help("add `prompt = \"…\"`: the message the agent gets"),
            );
            None
        }
        (Some(prompt), None) => Some(vec![Turn {
            input: TurnInput::Send(prompt.value),
            expect: Expect::default(),
        }]),
        (None, Some(tables)) => read_turns(root, tables, scope),
    }
}

/// `model`, checked against the agent's providers: the model the case runs on instead
/// of the agent's, if written. `Err` (reported) when it is not valid or the case is
/// scripted (`scripted`: it has `[[reply]]`).
fn case_model(
    toml: &TomlFile,
    model: Option<Spanned<String>>,
    scripted: bool,
    agent: &Agent<'_>,
) -> Result<Option<String>, ()> {
    let Some(model) = model else {
        return Ok(None);
    };
    if scripted {
        toml.report(
            Diagnostic::error(
                code::INVALID_VALUE,
                "a case with `[[reply]]` runs on its scripted replies, not on `model`",
            )
            .at(&toml.src, model.span.clone())
            .help("remove `model`, or remove the replies to run the case on that model"),
        );
        return Err(());
    }
    let declared: Vec<String> = agent.manifest.agent.providers.keys().cloned().collect();
    match super::config::check_model(
        toml,
        &model,
        &agent.manifest.agent.providers,
        &declared,
        agent.root,
    ) {
        Some((text, _)) => Ok(Some(text)),
        None => Err(()),
    }
}

/// How many of the `repeat_n` runs must pass: `pass`, at most `repeat_n`, which it is
/// when not written; `None` (reported) when it is more.
fn pass_count(toml: &TomlFile, pass: Option<&Spanned<u64>>, repeat_n: u64) -> Option<u64> {
    match pass {
        Some(pass) if pass.value > repeat_n => {
            toml.report(
                Diagnostic::error(
                    code::OUT_OF_RANGE,
                    format!(
                        "`pass` must be at most `repeat` ({repeat_n}), found {}",
                        pass.value
                    ),
                )
                .at(&toml.src, pass.span.clone())
                .note("`pass` is how many of the `repeat` runs must pass"),
            );
            None
        }
        Some(pass) => Some(pass.value),
        None => Some(repeat_n),
    }
}

fn read_turns(
    root: &TableReader<'_>,
    tables: Vec<TableReader<'_>>,
    scope: &Scope<'_, '_>,
) -> Option<Vec<Turn>> {
    let toml = root.file();
    let mut turns = Vec::new();
    let mut ok = true;
    if tables.is_empty() {
        toml.report(
            Diagnostic::error(code::EVAL_TURNS, "`turn` is empty")
                .at(&toml.src, root.key_span("turn"))
                .help("give each `[[turn]]` a `send = \"…\"`"),
        );
        return None;
    }
    for (n, mut table) in tables.into_iter().enumerate() {
        let present: Vec<&str> = ["send", "answer", "approve", "deny"]
            .into_iter()
            .filter(|k| table.contains(k))
            .collect();
        let send = table.string("send");
        let answer = table.string("answer");
        let approve = table.bool("approve");
        let deny = read_deny(&mut table);
        let expect = table
            .table("expect")
            .map(|t| read_expect(t, scope))
            .unwrap_or_default();
        let input = match present.as_slice() {
            [_] => match (send, answer, approve, deny) {
                (Some(send), ..) => Some(TurnInput::Send(send.value)),
                (_, Some(answer), ..) => Some(TurnInput::Answer(answer.value)),
                (_, _, Some(approve), _) if approve.value => Some(TurnInput::Approve),
                (_, _, Some(approve), _) => {
                    toml.report(
                        Diagnostic::error(code::EVAL_TURNS, "`approve` can only be `true`")
                            .at(&toml.src, approve.span)
                            .help("to refuse the call, write `deny = true` (or `deny = \"why\"`)"),
                    );
                    None
                }
                (_, _, _, Some(deny)) => deny,
                _ => None,
            },
            [] => {
                toml.report(
                    Diagnostic::error(
                        code::EVAL_TURNS,
                        format!("`{}` says nothing to send", table.path()),
                    )
                    .at(&toml.src, table.span())
                    .note("a turn has one of `send` (a message), `answer` (to a question), `approve = true` or `deny` (a call that waits for approval)"),
                );
                None
            }
            many => {
                toml.report(
                    Diagnostic::error(
                        code::EVAL_TURNS,
                        format!(
                            "`{}` has {}: a turn does one thing",
                            table.path(),
                            many.iter()
                                .map(|k| format!("`{k}`"))
                                .collect::<Vec<_>>()
                                .join(" and ")
                        ),
                    )
                    .at(&toml.src, table.key_span(many[1]))
                    .help("split it into one `[[turn]]` each"),
                );
                None
            }
        };
        if n == 0
            && input
                .as_ref()
                .is_some_and(|i| !matches!(i, TurnInput::Send(_)))
        {
            toml.report(
                Diagnostic::error(code::EVAL_TURNS, "the first turn must `send` a message")
                    .at(&toml.src, table.span())
                    .note("`answer`, `approve` and `deny` resume a turn that waits for a person, so something must start it first"),
            );
            ok = false;
        }
        table.finish();
        match input {
            Some(input) => turns.push(Turn { input, expect }),
            None => ok = false,
        }
    }
    ok.then_some(turns)
}

/// `deny = true` or `deny = "why"`.
fn read_deny(table: &mut TableReader<'_>) -> Option<Option<TurnInput>> {
    let item = table.item("deny")?;
    match item {
        Item::Value(toml_edit::Value::Boolean(b)) if *b.value() => {
            Some(Some(TurnInput::Deny(None)))
        }
        Item::Value(toml_edit::Value::String(s)) => {
            Some(Some(TurnInput::Deny(Some(s.value().clone()))))
        }
        _ => {
            table.wrong_type("deny", item, "`true` or the reason for denying");
            Some(None)
        }
    }
}

fn read_workspace(
    root: &mut TableReader<'_>,
    file: &Loaded,
    agent: &Agent<'_>,
) -> Option<Workspace> {
    let toml = root.file();
    let mut workspace = Workspace::default();
    let Some(mut table) = root.table("workspace") else {
        return Some(workspace);
    };
    let mut ok = true;
    if let Some(from) = table.string("from") {
        match resolve_from(&from.value, &file.path, agent) {
            Ok(path) => workspace.from = Some(path),
            Err(message) => {
                toml.report(
                    Diagnostic::error(code::EVAL_WORKSPACE, message)
                        .at(&toml.src, from.span.clone())
                        .note("`from` is a folder inside the agent directory, relative to this file's folder"),
                );
                ok = false;
            }
        }
    }
    if let Some(mut files) = table.table("files") {
        for (path, item) in files.entries() {
            let span = files.key_span(path);
            if let Err(why) = check_relative(path) {
                toml.report(
                    Diagnostic::error(
                        code::EVAL_WORKSPACE,
                        format!("workspace file `{path}` {why}"),
                    )
                    .at(&toml.src, span)
                    .note(
                        "workspace files are relative to the case's workspace and stay inside it",
                    ),
                );
                ok = false;
                continue;
            }
            match item.as_str() {
                Some(text) => {
                    workspace.files.insert(path.to_string(), text.to_string());
                }
                None => {
                    files.wrong_type(path, item, "a string (the file's contents)");
                    ok = false;
                }
            }
        }
        files.finish();
    }
    table.finish();
    ok.then_some(workspace)
}

/// Why a path written in a case is not a plain relative path inside the workspace.
fn check_relative(path: &str) -> Result<(), &'static str> {
    let given = Path::new(path);
    if path.trim().is_empty() {
        return Err("is empty");
    }
    if given.is_absolute() || path.starts_with('/') || path.starts_with('\\') {
        return Err("is an absolute path");
    }
    if given
        .components()
        .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
    {
        return Err("climbs out with `..`");
    }
    Ok(())
}

/// The absolute path of a `from` folder: inside the agent directory, holding no link
/// that leads out of it.
fn resolve_from(from: &str, case_file: &str, agent: &Agent<'_>) -> Result<PathBuf, String> {
    let folder = Path::new(case_file).parent().unwrap_or(Path::new(""));
    let joined = agent.root.join(folder).join(from);
    let real = super::cache::canonicalize(&joined)
        .map_err(|_| format!("workspace folder `{from}` does not exist"))?;
    if !real.starts_with(agent.boundary) {
        return Err(format!(
            "workspace folder `{from}` is outside the agent directory"
        ));
    }
    if !super::cache::is_dir(&real) {
        return Err(format!("workspace folder `{from}` is not a folder"));
    }
    for entry in walkdir::WalkDir::new(&real).follow_links(false) {
        let Ok(entry) = entry else { continue };
        if entry.file_type().is_dir() {
            // A link added inside shows as a change of its folder.
            super::cache::look(entry.path());
        }
        if entry.path_is_symlink() {
            let leads_in = super::cache::canonicalize(entry.path())
                .is_ok_and(|target| target.starts_with(&real));
            if !leads_in {
                let inner = entry.path().strip_prefix(&real).unwrap_or(entry.path());
                return Err(format!(
                    "workspace folder `{from}` holds `{}`, a symbolic link that leads out of it",
                    super::inputs::slash_path(inner)
                ));
            }
        }
    }
    Ok(real)
}

fn read_reply(n: usize, mut table: TableReader<'_>, agent: &Agent<'_>) -> Option<Reply> {
    let toml = table.file();
    let span = table.span();
    let before = toml.error_count();
    for key in REPLY_FIELDS {
        if *key != "tool_calls" {
            table.item(key);
        }
    }
    for mut call in table.tables("tool_calls").unwrap_or_default() {
        for key in CALL_FIELDS {
            if *key != "name" && *key != "input" {
                call.item(key);
            }
        }
        let name = call.string("name");
        let input = call.item("input");
        if let Some(name) = &name
            && known(
                toml,
                "tool",
                &name.value,
                name.span.clone(),
                &agent.tools,
                code::UNKNOWN_EVAL_TOOL,
            )
            && let Some(input) = input
        {
            let json = toml_reader::to_json(input);
            check_input(
                toml,
                n,
                &name.value,
                &json,
                input.span().or_else(|| call.span()),
                agent,
            );
        }
        call.finish();
    }
    let json = table.to_json();
    table.finish();
    if toml.error_count() > before {
        return None;
    }
    let reply = match serde_json::from_value::<Reply>(json) {
        Ok(reply) => reply,
        Err(e) => {
            toml.error(code::WRONG_TYPE, format!("reply {}: {e}", n + 1), span);
            return None;
        }
    };
    if let Err(e) = reply.check() {
        toml.error(code::INVALID_VALUE, format!("reply {}: {e}", n + 1), span);
        return None;
    }
    Some(reply)
}

/// Checks a scripted call's input against the tool's schema, as the registry will.
fn check_input(
    toml: &TomlFile,
    reply: usize,
    tool: &str,
    input: &Value,
    span: Option<Range<usize>>,
    agent: &Agent<'_>,
) {
    let Some(spec) = agent.manifest.tools.iter().find(|t| t.name == tool) else {
        return;
    };
    let Ok(validator) = jsonschema::validator_for(&spec.input_schema) else {
        return;
    };
    let problems: Vec<String> = validator
        .iter_errors(input)
        .map(|e| {
            let at = e.instance_path().to_string();
            if at.is_empty() {
                e.to_string()
            } else {
                format!("at `{at}`: {e}")
            }
        })
        .collect();
    if problems.is_empty() {
        return;
    }
    let mut diagnostic = Diagnostic::error(
        code::EVAL_REPLY_SCHEMA,
        format!(
            "reply {}: the input of `{tool}` does not match its input schema",
            reply + 1
        ),
    )
    .at(&toml.src, span);
    for problem in problems {
        diagnostic = diagnostic.note(problem);
    }
    toml.report(diagnostic.note(
        "the model would get an error result instead of the tool running; fix the input, or expect that error",
    ));
}

/// Whether `name` is one of `names`; reports it with "did you mean" when not.
fn known(
    toml: &TomlFile,
    what: &str,
    name: &str,
    span: Option<Range<usize>>,
    names: &[&str],
    code: &'static str,
) -> bool {
    if names.contains(&name) {
        return true;
    }
    let diagnostic = Diagnostic::error(code, format!("the agent has no {what} `{name}`"))
        .at(&toml.src, span)
        .label(format!("unknown {what}"));
    let diagnostic = match suggest::closest(name, names.iter().copied()) {
        Some(near) => diagnostic.help(format!("did you mean `{near}`?")),
        None if names.is_empty() => diagnostic.note(format!("the agent has no {what}s")),
        None => diagnostic.note(format!("its {what}s: {}", toml_reader::list(names))),
    };
    toml.report(diagnostic);
    false
}

fn read_stub(mut table: TableReader<'_>, agent: &Agent<'_>) -> Option<Stub> {
    let toml = table.file();
    let before = toml.error_count();
    let tool = table.string("tool");
    let input = table.item("match").map(|item| {
        check_globs(toml, &format!("{}.match", table.path()), item);
        toml_reader::to_json(item)
    });
    let schema = table
        .item("match_schema")
        .and_then(|item| check_schema(toml, &table.key_path("match_schema"), item));
    let mut outcomes = Vec::new();
    let present: Vec<&str> = ["response", "error", "outcomes"]
        .into_iter()
        .filter(|k| table.contains(k))
        .collect();
    if let Some(response) = table.string("response") {
        outcomes.push(Outcome::Response(response.value));
    }
    if let Some(error) = table.string("error") {
        outcomes.push(Outcome::Error(error.value));
    }
    for mut outcome in table.tables("outcomes").unwrap_or_default() {
        let response = outcome.string("response");
        let error = outcome.string("error");
        match (response, error) {
            (Some(r), None) => outcomes.push(Outcome::Response(r.value)),
            (None, Some(e)) => outcomes.push(Outcome::Error(e.value)),
            _ => toml.report(
                Diagnostic::error(
                    code::EVAL_STUB,
                    format!("`{}` needs `response` or `error`, not both", outcome.path()),
                )
                .at(&toml.src, outcome.span()),
            ),
        }
        outcome.finish();
    }
    match &tool {
        None => toml.report(
            Diagnostic::error(
                code::MISSING_KEY,
                format!("`{}` is missing `tool`", table.path()),
            )
            .at(&toml.src, table.span())
            .help("name the tool whose calls this stub answers: `tool = \"web_fetch\"`"),
        ),
        Some(tool) => {
            known(
                toml,
                "tool",
                &tool.value,
                tool.span.clone(),
                &agent.tools,
                code::UNKNOWN_EVAL_TOOL,
            );
        }
    }
    if present.len() != 1 {
        let message = if present.is_empty() {
            format!("`{}` says nothing to return", table.path())
        } else {
            format!(
                "`{}` has {}: a stub returns one of them",
                table.path(),
                present
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(" and ")
            )
        };
        toml.report(
            Diagnostic::error(code::EVAL_STUB, message)
                .at(&toml.src, table.span())
                .note("a stub has `response = \"…\"` (the tool's output), `error = \"…\"` (a failed call) or `outcomes = [{ response = \"…\" }, { error = \"…\" }]` (one per call)"),
        );
    } else if present == ["outcomes"] && outcomes.is_empty() {
        toml.report(
            Diagnostic::error(
                code::EVAL_STUB,
                format!("`{}.outcomes` is empty", table.path()),
            )
            .at(&toml.src, table.key_span("outcomes")),
        );
    }
    table.finish();
    let tool = tool?;
    (toml.error_count() == before).then_some(Stub {
        tool: tool.value,
        input,
        schema,
        outcomes,
    })
}

/// Reports the strings of a match pattern that are not valid globs.
fn check_globs(toml: &TomlFile, key: &str, item: &Item) {
    let mut bad = Vec::new();
    collect_bad_globs(&toml_reader::to_json(item), &mut bad);
    for glob in bad {
        toml.report(
            Diagnostic::error(code::EVAL_PATTERN, format!("`{key}` holds an invalid glob `{glob}`"))
                .at(&toml.src, item.span())
                .note("a string in a match is a glob: `*` matches any text, `?` one character, `[…]` one of a set; a backslash makes the next character literal (`\\\\*` in a TOML string)"),
        );
    }
}

fn collect_bad_globs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) if crate::pattern::glob(s).is_none() => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|v| collect_bad_globs(v, out)),
        Value::Object(map) => map.values().for_each(|v| collect_bad_globs(v, out)),
        _ => {}
    }
}

/// A JSON Schema written as a TOML table; `None` (reported) when it is not one.
fn check_schema(toml: &TomlFile, key: &str, item: &Item) -> Option<Value> {
    if !item.is_table_like() {
        toml.error(
            code::EVAL_PATTERN,
            format!("`{key}` must be a table holding a JSON Schema"),
            item.span(),
        );
        return None;
    }
    let schema = toml_reader::to_json(item);
    let problem = jsonschema::meta::validate(&schema)
        .err()
        .map(|e| e.to_string())
        .or_else(|| {
            jsonschema::validator_for(&schema)
                .err()
                .map(|e| e.to_string())
        });
    match problem {
        Some(problem) => {
            toml.error(
                code::EVAL_PATTERN,
                format!("`{key}` is not a valid JSON Schema: {problem}"),
                item.span(),
            );
            None
        }
        None => Some(schema),
    }
}

fn check_regex(toml: &TomlFile, key: &str, value: &Spanned<String>) -> bool {
    match regex::Regex::new(&value.value) {
        Ok(_) => true,
        Err(e) => {
            let detail = e.to_string();
            let last = detail
                .lines()
                .last()
                .unwrap_or("invalid regular expression")
                .trim();
            toml.error(
                code::EVAL_PATTERN,
                format!(
                    "`{key}` is not a valid regular expression: {}",
                    last.trim_start_matches("error: ")
                ),
                value.span.clone(),
            );
            false
        }
    }
}

/// A string or an array of strings.
fn strings(table: &mut TableReader<'_>, key: &'static str) -> Vec<Spanned<String>> {
    let Some(item) = table.item(key) else {
        return Vec::new();
    };
    if let Some(s) = item.as_str() {
        return vec![Spanned {
            value: s.to_string(),
            span: item.span(),
        }];
    }
    match item.as_array() {
        Some(array) if array.iter().all(|v| v.as_str().is_some()) => array
            .iter()
            .filter_map(|v| {
                v.as_str().map(|s| Spanned {
                    value: s.to_string(),
                    span: v.span(),
                })
            })
            .collect(),
        _ => {
            table.wrong_type(key, item, "a string or an array of strings");
            Vec::new()
        }
    }
}

fn read_expect(mut table: TableReader<'_>, scope: &Scope<'_, '_>) -> Expect {
    let toml = table.file();
    let mut expect = Expect {
        end: read_end(&mut table),
        reply: read_reply_checks(&mut table),
        ..Expect::default()
    };
    if let Some(tools) = table.table("tools") {
        expect.tools = read_tools(tools, scope);
    }
    expect.skills = read_expected_skills(&mut table, scope);
    expect.subagents = read_expected_subagents(&mut table, scope);
    if let Some(events) = table.table("events") {
        expect.events = read_events(events);
    }
    if let Some(files) = table.table("files") {
        expect.files = read_file_checks(files);
    }
    expect.max_steps = table.positive_int("max_steps").map(|n| n.value);
    expect.max_input_tokens = table.positive_int("max_input_tokens").map(|n| n.value);
    expect.max_output_tokens = table.positive_int("max_output_tokens").map(|n| n.value);
    if let Some(seconds) = table.number("max_seconds") {
        if seconds.value > 0.0 && seconds.value.is_finite() {
            expect.max_seconds = Some(seconds.value);
        } else {
            toml.error(
                code::OUT_OF_RANGE,
                format!("`{}` must be more than 0", table.key_path("max_seconds")),
                seconds.span,
            );
        }
    }
    expect.judge = read_judge(&mut table);
    table.finish();
    expect
}

/// `end`: one of [`END_REASONS`].
fn read_end(table: &mut TableReader<'_>) -> Option<String> {
    let toml = table.file();
    let end = table.string("end")?;
    if END_REASONS.contains(&end.value.as_str()) {
        return Some(end.value);
    }
    toml.report(
        Diagnostic::error(
            code::INVALID_VALUE,
            format!("unknown end reason `{}`", end.value),
        )
        .at(&toml.src, end.span.clone())
        .note(format!(
            "`end` is one of {}",
            toml_reader::list(END_REASONS)
        ))
        .suggest(suggest::closest(&end.value, END_REASONS.iter().copied())),
    );
    None
}

/// `reply_contains`, `reply_not_contains`, `reply_equals`, `reply_regex` and
/// `reply_schema`, in that order.
fn read_reply_checks(table: &mut TableReader<'_>) -> Vec<ReplyCheck> {
    let toml = table.file();
    let mut reply = Vec::new();
    for text in strings(table, "reply_contains") {
        reply.push(ReplyCheck::Contains(text.value));
    }
    for text in strings(table, "reply_not_contains") {
        reply.push(ReplyCheck::NotContains(text.value));
    }
    if let Some(text) = table.string("reply_equals") {
        reply.push(ReplyCheck::Equals(text.value));
    }
    if let Some(regex) = table.string("reply_regex")
        && check_regex(toml, &table.key_path("reply_regex"), &regex)
    {
        reply.push(ReplyCheck::Regex(regex.value));
    }
    if let Some(item) = table.item("reply_schema")
        && let Some(schema) = check_schema(toml, &table.key_path("reply_schema"), item)
    {
        reply.push(ReplyCheck::Schema(schema));
    }
    reply
}

/// `skills`: the agent's skills the case expects loaded (a warning for one no scripted
/// reply loads).
fn read_expected_skills(table: &mut TableReader<'_>, scope: &Scope<'_, '_>) -> Vec<String> {
    let toml = table.file();
    let mut skills = Vec::new();
    for skill in table.string_array("skills").unwrap_or_default() {
        if known(
            toml,
            "skill",
            &skill.value,
            skill.span.clone(),
            &scope.agent.skills,
            code::UNKNOWN_EVAL_SKILL,
        ) {
            if let Some(scripted) = &scope.scripted
                && !scripted.skills.contains(&skill.value)
            {
                never_holds(
                    toml,
                    format!(
                        "`{}` expects skill `{}` loaded, but no scripted reply loads it",
                        table.key_path("skills"),
                        skill.value
                    ),
                    skill.span,
                );
            }
            skills.push(skill.value);
        }
    }
    skills
}

/// `subagents`: the agent's subagents the case expects called.
fn read_expected_subagents(table: &mut TableReader<'_>, scope: &Scope<'_, '_>) -> Vec<String> {
    let toml = table.file();
    let mut subagents = Vec::new();
    for subagent in table.string_array("subagents").unwrap_or_default() {
        if known(
            toml,
            "subagent",
            &subagent.value,
            subagent.span.clone(),
            &scope.agent.subagents,
            code::UNKNOWN_EVAL_SUBAGENT,
        ) {
            scope.expect_call(
                toml,
                &table.key_path("subagents"),
                &subagent.value,
                subagent.span,
            );
            subagents.push(subagent.value);
        }
    }
    subagents
}

/// `[expect.events]`: event types `present`, `in_order` and `absent`.
fn read_events(mut events: TableReader<'_>) -> EventChecks {
    let toml = events.file();
    let mut read = |key: &'static str| -> Vec<String> {
        events
            .string_array(key)
            .unwrap_or_default()
            .into_iter()
            .filter(|name| {
                let ok = EVENT_TYPES.contains(&name.value.as_str());
                if !ok {
                    toml.report(
                        Diagnostic::error(
                            code::INVALID_VALUE,
                            format!("unknown event type `{}`", name.value),
                        )
                        .at(&toml.src, name.span.clone())
                        .note("event types are listed in docs/events.md")
                        .suggest(suggest::closest(&name.value, EVENT_TYPES.iter().copied())),
                    );
                }
                ok
            })
            .map(|name| name.value)
            .collect()
    };
    let checks = EventChecks {
        present: read("present"),
        in_order: read("in_order"),
        absent: read("absent"),
    };
    events.finish();
    checks
}

/// `[expect.files]`: a check per path inside the workspace.
fn read_file_checks(mut files: TableReader<'_>) -> Vec<(String, FileCheck)> {
    let toml = files.file();
    let mut checks = Vec::new();
    for (path, item) in files.entries() {
        let span = files.key_span(path);
        if let Err(why) = check_relative(path) {
            toml.report(
                Diagnostic::warning(
                    code::EVAL_NEVER_HOLDS,
                    format!("`{path}` in `{}` can never hold: the path {why}", files.path()),
                )
                .at(&toml.src, span)
                .note("eve reads files only inside the case's workspace, never through a path that leaves it; the case fails"),
            );
        }
        // Kept whatever the path: `eve eval` fails it rather than passing a case
        // whose expectation was dropped.
        if let Some(check) = read_file_check(&files, path, item) {
            checks.push((path.to_string(), check));
        }
    }
    files.finish();
    checks
}

/// `judge` (the criteria a judge model checks the reply against) and `gate`.
fn read_judge(table: &mut TableReader<'_>) -> Option<Judge> {
    let toml = table.file();
    let judge = table.string("judge");
    let gate = table.bool("gate");
    match (judge, gate) {
        (Some(criteria), gate) => Some(Judge {
            criteria: criteria.value,
            gate: gate.is_some_and(|g| g.value),
        }),
        (None, Some(gate)) => {
            toml.report(
                Diagnostic::error(code::MISSING_KEY, "`gate` needs a `judge`")
                    .at(&toml.src, gate.span)
                    .help(
                        "add `judge = \"…\"`: the criteria a judge model checks the reply against",
                    ),
            );
            None
        }
        (None, None) => None,
    }
}

fn read_file_check(files: &TableReader<'_>, path: &str, item: &Item) -> Option<FileCheck> {
    let toml = files.file();
    if let Some(text) = item.as_str() {
        return Some(FileCheck {
            equals: Some(text.to_string()),
            ..FileCheck::default()
        });
    }
    let mut table = files.nested(path, item)?;
    let mut check = FileCheck {
        exists: table.bool("exists").map(|b| b.value),
        equals: table.string("equals").map(|s| s.value),
        contains: strings(&mut table, "contains")
            .into_iter()
            .map(|s| s.value)
            .collect(),
        regex: None,
    };
    if let Some(absent) = table.bool("absent") {
        if check.exists.is_some() {
            toml.report(
                Diagnostic::error(
                    code::INVALID_VALUE,
                    format!("`{}` has both `exists` and `absent`", table.path()),
                )
                .at(&toml.src, absent.span),
            );
        }
        check.exists = Some(!absent.value);
    }
    if let Some(regex) = table.string("regex")
        && check_regex(toml, &table.key_path("regex"), &regex)
    {
        check.regex = Some(regex.value);
    }
    table.finish();
    Some(check)
}

fn read_tools(mut table: TableReader<'_>, scope: &Scope<'_, '_>) -> ToolChecks {
    let toml = table.file();
    let mut checks = ToolChecks::default();
    if let Some(item) = table.item("called") {
        match item.as_array() {
            Some(array) => {
                for (n, value) in array.iter().enumerate() {
                    checks.called.extend(read_called(&table, n, value, scope));
                }
            }
            None => table.wrong_type("called", item, "an array"),
        }
    }
    for name in table.string_array("never").unwrap_or_default() {
        if known(
            toml,
            "tool",
            &name.value,
            name.span,
            &scope.agent.tools,
            code::UNKNOWN_EVAL_TOOL,
        ) {
            checks.never.push(name.value);
        }
    }
    checks.sequence = read_sequence(&mut table, scope);
    checks.max_calls = table.positive_int("max_calls").map(|n| n.value);
    table.finish();
    checks
}

/// The `n`th (0-based) entry of `called`: a tool name, or a table `{ name, input, times }`;
/// `None` when it is not one of the agent's tools or not valid (reported).
fn read_called(
    table: &TableReader<'_>,
    n: usize,
    value: &toml_edit::Value,
    scope: &Scope<'_, '_>,
) -> Option<Called> {
    let toml = table.file();
    let agent = scope.agent;
    if let Some(name) = value.as_str() {
        if known(
            toml,
            "tool",
            name,
            value.span(),
            &agent.tools,
            code::UNKNOWN_EVAL_TOOL,
        ) {
            scope.expect_call(toml, &table.key_path("called"), name, value.span());
            return Some(Called {
                name: name.to_string(),
                input: None,
                times: None,
            });
        }
        return None;
    }
    let path = format!("{}[{}]", table.key_path("called"), n + 1);
    let Some(mut call) = table.value_table("called", path, value) else {
        toml.error(
            code::WRONG_TYPE,
            format!(
                "`{}` must hold tool names or tables `{{ name = \"…\", input = {{…}}, times = N }}`, found {}",
                table.key_path("called"),
                toml_reader::describe_value(value)
            ),
            value.span(),
        );
        return None;
    };
    let name = call.string("name");
    let input = call.item("input").map(|item| {
        check_globs(toml, &call.key_path("input"), item);
        toml_reader::to_json(item)
    });
    let times = call.positive_int("times").map(|t| t.value);
    let mut called = None;
    match name {
        Some(name) => {
            if known(
                toml,
                "tool",
                &name.value,
                name.span.clone(),
                &agent.tools,
                code::UNKNOWN_EVAL_TOOL,
            ) {
                scope.expect_call(toml, &table.key_path("called"), &name.value, name.span);
                called = Some(Called {
                    name: name.value,
                    input,
                    times,
                });
            }
        }
        None => toml.report(
            Diagnostic::error(
                code::MISSING_KEY,
                format!("`{}` is missing `name`", call.path()),
            )
            .at(&toml.src, call.span()),
        ),
    }
    call.finish();
    called
}

/// `sequence` and its `mode` (in order, by default); `None` without a `sequence`, or
/// when one of its tools is not the agent's or the mode is not known (reported).
fn read_sequence(table: &mut TableReader<'_>, scope: &Scope<'_, '_>) -> Option<Sequence> {
    let toml = table.file();
    let sequence = table.string_array("sequence");
    let mode = table.string("mode");
    let mode = match &mode {
        None => Some(SequenceMode::InOrder),
        Some(mode) => read_sequence_mode(toml, mode),
    };
    match (sequence, mode) {
        (Some(sequence), Some(mode)) => {
            let mut ok = true;
            for name in &sequence {
                let known_tool = known(
                    toml,
                    "tool",
                    &name.value,
                    name.span.clone(),
                    &scope.agent.tools,
                    code::UNKNOWN_EVAL_TOOL,
                );
                if known_tool && mode != SequenceMode::Subset {
                    scope.expect_call(
                        toml,
                        &table.key_path("sequence"),
                        &name.value,
                        name.span.clone(),
                    );
                }
                ok &= known_tool;
            }
            ok.then(|| Sequence {
                tools: sequence.into_iter().map(|s| s.value).collect(),
                mode,
            })
        }
        (None, _) if table.contains("mode") => {
            toml.report(
                Diagnostic::error(
                    code::MISSING_KEY,
                    format!("`{}` needs a `sequence`", table.key_path("mode")),
                )
                .at(&toml.src, table.key_span("mode")),
            );
            None
        }
        _ => None,
    }
}

/// A written sequence `mode`, one of [`SequenceMode::NAMES`].
fn read_sequence_mode(toml: &TomlFile, mode: &Spanned<String>) -> Option<SequenceMode> {
    let parsed = SequenceMode::parse(&mode.value);
    if parsed.is_none() {
        toml.report(
            Diagnostic::error(
                code::INVALID_VALUE,
                format!("unknown sequence mode `{}`", mode.value),
            )
            .at(&toml.src, mode.span.clone())
            .note(format!(
                "`mode` is one of {}",
                toml_reader::list(SequenceMode::NAMES)
            ))
            .suggest(suggest::closest(
                &mode.value,
                SequenceMode::NAMES.iter().copied(),
            )),
        );
    }
    parsed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_names_and_paths() {
        for good in ["fix-typo", "v1.2_edge", "A"] {
            assert!(is_valid_segment(good), "{good}");
        }
        for bad in ["", "-x", ".hidden", "a b", "é"] {
            assert!(!is_valid_segment(bad), "{bad}");
        }
        assert_eq!(check_relative("a/b.txt"), Ok(()));
        assert_eq!(check_relative("../x"), Err("climbs out with `..`"));
        assert_eq!(check_relative("a/../../x"), Err("climbs out with `..`"));
        assert_eq!(check_relative("/etc/passwd"), Err("is an absolute path"));
        assert_eq!(check_relative(" "), Err("is empty"));
    }
}
