//! A case file: its keys, its turns (`prompt` or `[[turn]]`), `model`, `repeat` and
//! `pass`; and [`compile`], every case file of the agent.

use std::path::Path;

use serde_json::Value;

use super::expect::read_expect;
use super::replies::read_reply;
use super::scope::{Agent, Scope, Scripted};
use super::stubs::{read_hook_stubs, read_stub};
use super::turns::read_turns;
use super::workspace::read_workspace;
use crate::compiler::diagnostic::{Diagnostic, Diagnostics, code};
use crate::compiler::inputs::Loaded;
use crate::compiler::source::SourceFile;
use crate::compiler::toml_reader::{Spanned, TableReader, TomlFile};
use crate::manifest::Manifest;
use crate::manifest::eval::{Case, DEFAULT_TIMEOUT_SECS, Expect, Stub, Turn, TurnInput};
use crate::manifest::script::Reply;

/// Whether a case id's segment is valid: letters, digits, `.`, `_` and `-`, starting
/// with a letter or digit (ids name folders of the artifacts and JUnit test cases).
fn is_valid_segment(segment: &str) -> bool {
    let mut chars = segment.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// The names of the hooks of `manifest` and of its subagents, sorted, each once.
fn hook_names(manifest: &Manifest) -> Vec<&str> {
    let mut names: Vec<&str> = manifest.hooks.iter().map(|h| h.name.as_str()).collect();
    for sub in &manifest.subagents {
        names.extend(hook_names(&sub.manifest));
    }
    names.sort_unstable();
    names.dedup();
    names
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
        hooks: hook_names(manifest),
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
            let mut root = toml.root(&crate::compiler::shape::eval::CASE);
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
    let hook_stubs = read_hook_stubs(root, agent);
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
        hook_stubs,
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
    match crate::compiler::config::check_model(
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

#[cfg(test)]
mod tests {
    use super::super::checks::check_relative;
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
