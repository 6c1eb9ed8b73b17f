//! `hooks/<name>.toml`: each hook file read against its shape, and the tools it names
//! checked against the tools the agent has — a hook that could never fire is an error,
//! as a misspelled tool file is. A hook's command never runs what the workspace holds:
//! the model writes there.

use std::path::Path;

use super::diagnostic::{Diagnostic, Diagnostics, code};
use super::loaded::Loaded;
use super::shape::hook::{HOOK, HOOK_TIMEOUT_SECS, MAX_HOOK_TIMEOUT_SECS};
use super::source::SourceFile;
use super::toml_reader::{Spanned, TableReader, TomlFile};
use crate::catalog::{Availability, Catalog};
use crate::manifest::hook::{Hook, HookEvent, OnError};
use crate::manifest::{Executor, Tool};
use crate::suggest;

/// The hooks of `files`, in file-name order; `tools` are the agent's compiled tools
/// (its connections' included), of which those eve runs can be hooked; `root` is the
/// agent directory. A file with an error gives no hook.
pub fn compile(
    files: &[Loaded],
    tools: &[Tool],
    catalog: &Catalog,
    root: &Path,
    diags: &mut Diagnostics,
) -> Vec<Hook> {
    let hookable: Vec<&str> = tools
        .iter()
        .filter(|t| is_hookable(t, catalog))
        .map(|t| t.name.as_str())
        .collect();
    files
        .iter()
        .filter_map(|file| compile_one(file, &hookable, root, diags))
        .collect()
}

/// Keeps the hooks that can run, reporting the others: a `subagent_stop` hook in an
/// agent that starts no child agent (no subagent, no `agent` tool). `display` names a
/// hook's file.
pub fn refuse_unreachable(
    hooks: &mut Vec<Hook>,
    tools: &[Tool],
    display: impl Fn(&str) -> String,
    diags: &mut Diagnostics,
) {
    let has_children = tools.iter().any(|t| match &t.executor {
        Executor::Subagent { .. } => true,
        Executor::Builtin => t.name == "agent",
        _ => false,
    });
    hooks.retain(|hook| {
        if hook.event != HookEvent::SubagentStop || has_children {
            return true;
        }
        diags.push(
            Diagnostic::error(
                code::HOOK_NEVER_RUNS,
                format!("hook `{}` never runs: the agent starts no subagent", hook.name),
            )
            .file(display(&hook.name))
            .note("a `subagent_stop` hook runs when one of the agent's subagents (`subagents/`, or the `agent` tool) ends its task")
            .help("add a subagent, or make it a `stop` hook (the agent's own turn)"),
        );
        false
    });
}

/// Whether eve runs the tool's calls, so that hooks can see them: not a tool the
/// provider runs (`web_search`), nor `call_tool` (the deferred tool it names is hooked
/// as itself).
fn is_hookable(tool: &Tool, catalog: &Catalog) -> bool {
    !matches!(tool.executor, Executor::Builtin)
        || catalog.find(&tool.name).is_none_or(|b| {
            !matches!(
                b.availability,
                Availability::ProviderHosted | Availability::WithDeferredTools
            )
        })
}

fn compile_one(
    file: &Loaded,
    tools: &[&str],
    root: &Path,
    diags: &mut Diagnostics,
) -> Option<Hook> {
    let name = file
        .path
        .trim_start_matches("hooks/")
        .trim_end_matches(".toml")
        .to_string();
    if !super::skills::is_valid_name(&name) {
        diags.push(
            Diagnostic::error(
                code::INVALID_HOOK_NAME,
                format!("invalid hook name `{name}`"),
            )
            .file(file.display.clone())
            .note("hook names are lowercase letters, digits, `-` and `_`, starting with a letter or digit, at most 64 characters"),
        );
        return None;
    }
    let src = SourceFile::new(&file.display, &file.text);
    let toml = match TomlFile::parse(src) {
        Ok(toml) => toml,
        Err(diagnostic) => {
            diags.push(*diagnostic);
            return None;
        }
    };
    let agent_dir = root;
    let mut root = toml.root(&HOOK);
    let hook = read(name, &mut root, tools, agent_dir);
    root.finish();
    let problems = toml.into_diagnostics();
    let ok = !problems.has_errors();
    diags.extend(problems);
    hook.filter(|_| ok)
}

fn read(
    name: String,
    root: &mut TableReader<'_>,
    tools: &[&str],
    agent_dir: &Path,
) -> Option<Hook> {
    let toml = root.file();
    let event = root.string("event").and_then(|e| {
        let event = HookEvent::from_name(&e.value);
        if event.is_none() {
            toml.report(
                Diagnostic::error(
                    code::INVALID_VALUE,
                    format!("unknown hook event `{}`", e.value),
                )
                .at(&toml.src, e.span)
                .note(format!(
                    "`event` is one of {}",
                    HookEvent::NAMES
                        .iter()
                        .map(|n| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
                .suggest(suggest::closest(&e.value, HookEvent::NAMES.iter().copied())),
            );
        }
        event
    });
    let command = root.string_array("command").and_then(|argv| {
        if argv.first().is_none_or(|p| p.value.trim().is_empty()) {
            toml.error(
                code::INVALID_VALUE,
                "`command` must name a program",
                root.key_span("command"),
            );
            return None;
        }
        check_command(toml, &argv, agent_dir)
            .then(|| argv.into_iter().map(|a| a.value).collect::<Vec<_>>())
    });
    let timeout_secs = match root.positive_int("timeout_secs") {
        Some(t) if t.value > MAX_HOOK_TIMEOUT_SECS => {
            toml.error(
                code::OUT_OF_RANGE,
                format!(
                    "`timeout_secs` is at most {MAX_HOOK_TIMEOUT_SECS} (a hook holds up the turn), found {}",
                    t.value
                ),
                t.span,
            );
            None
        }
        Some(t) => Some(t.value),
        None => Some(HOOK_TIMEOUT_SECS),
    };
    let cwd = root.string("cwd").and_then(|cwd| {
        super::templates::check_template(toml, "cwd", &cwd, &["agent_dir", "workspace"])
            .then_some(cwd.value)
    });
    let claude_names = root.string("names").and_then(|n| match n.value.as_str() {
        "eve" => Some(false),
        "claude" => Some(true),
        other => {
            toml.report(
                Diagnostic::error(
                    code::INVALID_VALUE,
                    format!("unknown `names` value `{other}`"),
                )
                .at(&toml.src, n.span.clone())
                .note("`names` is `eve` or `claude`")
                .suggest(suggest::closest(other, ["eve", "claude"])),
            );
            None
        }
    });
    let on_error = read_on_error(root);
    let _ = root.string("description");
    let patterns = root.string_array("tools").unwrap_or_default();
    let event = event?;
    if !check_tools(event, &patterns, root, tools) {
        return None;
    }
    let on_error = match on_error {
        Some(Some(on_error)) => on_error,
        Some(None) => return None,
        None => event.default_on_error(),
    };
    Some(Hook {
        name,
        event,
        tools: patterns.into_iter().map(|p| p.value).collect(),
        command: command?,
        cwd,
        timeout_secs: timeout_secs?,
        claude_names: claude_names.unwrap_or(false),
        on_error,
    })
}

/// Whether the hook's command runs nothing the workspace holds (reported when it
/// would): its program is looked up on `PATH`, absolute, or in the agent directory, and
/// no argument names a file of the agent directory by a path relative to the workspace
/// (where the hook runs). Each argument uses no template variable but `agent_dir` and
/// `workspace`.
fn check_command(toml: &TomlFile, argv: &[Spanned<String>], agent_dir: &Path) -> bool {
    let mut ok = true;
    for arg in argv {
        ok &= super::templates::check_template(toml, "command", arg, &["agent_dir", "workspace"]);
    }
    if !ok {
        return false;
    }
    let program = &argv[0];
    let why = match program_place(&program.value) {
        Some(Place::Workspace) => {
            Some("its program is in the workspace, which the model can write".to_string())
        }
        Some(Place::Relative(text)) => Some(format!(
            "`{text}` resolves in the workspace (where hooks run), which the model can write"
        )),
        _ => None,
    };
    if let Some(why) = why {
        toml.report(
            Diagnostic::error(code::HOOK_RUNS_WORKSPACE, format!("the hook's command runs a program the model could replace: {why}"))
                .at(&toml.src, program.span.clone())
                .help("name a program on `PATH`, an absolute path, or a file of the agent directory as `{{ agent_dir }}/…`"),
        );
        return false;
    }
    for arg in argv {
        if rendered(&arg.value).is_some_and(|r| r.contains(&format!("{AGENT}/.."))) {
            ok = false;
            toml.report(
                Diagnostic::error(
                    code::HOOK_RUNS_WORKSPACE,
                    "the hook's command names a path that climbs out of the agent directory",
                )
                .at(&toml.src, arg.span.clone())
                .note("what a hook runs is part of the agent's definition, kept with it")
                .help("put the file in the agent directory and name it as `{{ agent_dir }}/…`"),
            );
        }
    }
    for arg in &argv[1..] {
        let text = arg.value.as_str();
        if text.contains("{{") || text.starts_with('-') || Path::new(text).is_absolute() {
            continue;
        }
        if super::cache::is_file(&agent_dir.join(text)) {
            ok = false;
            toml.report(
                Diagnostic::error(
                    code::HOOK_RUNS_WORKSPACE,
                    format!("`{text}` is read from the workspace (where hooks run), not from the agent directory"),
                )
                .at(&toml.src, arg.span.clone())
                .note("the model can write the workspace: a hook that runs a file from it runs what the model wrote")
                .help(format!("write `{{{{ agent_dir }}}}/{text}`")),
            );
        }
    }
    ok
}

/// Where a hook's program is, rendered as it will be.
#[derive(Debug, PartialEq)]
enum Place {
    /// Under the workspace.
    Workspace,
    /// A relative path with a folder in it (`./check.sh`): in the workspace, where the
    /// hook starts.
    Relative(String),
    /// Anywhere else: on `PATH`, absolute, in the agent directory.
    Elsewhere,
}

/// The stand-ins a command is rendered with at build time.
const AGENT: &str = "/eve-agent-dir";
const WORKSPACE: &str = "/eve-workspace";

/// `template` rendered with the stand-ins; `None` when it cannot be (reported already).
fn rendered(template: &str) -> Option<String> {
    let mut env = minijinja::Environment::new();
    env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
    env.render_str(
        template,
        minijinja::context! { agent_dir => AGENT, workspace => WORKSPACE },
    )
    .ok()
}

/// Where the program `template` names, rendered as it will be.
fn program_place(template: &str) -> Option<Place> {
    let text = rendered(template)?;
    let path = Path::new(text.trim());
    Some(if path.starts_with(WORKSPACE) {
        Place::Workspace
    } else if !path.is_absolute() && text.contains('/') {
        Place::Relative(text.trim().to_string())
    } else {
        Place::Elsewhere
    })
}

/// `on_error`: `None` when not written, `Some(None)` when unknown (reported).
fn read_on_error(root: &mut TableReader<'_>) -> Option<Option<OnError>> {
    let toml = root.file();
    root.string("on_error").map(|o| match o.value.as_str() {
        "allow" => Some(OnError::Allow),
        "deny" => Some(OnError::Deny),
        _ => {
            toml.report(
                Diagnostic::error(
                    code::INVALID_VALUE,
                    format!("unknown `on_error` value `{}`", o.value),
                )
                .at(&toml.src, o.span)
                .note("`on_error` is `allow` or `deny`")
                .suggest(suggest::closest(&o.value, OnError::NAMES.iter().copied())),
            );
            None
        }
    })
}

/// Whether the hook's `tools` fit its event and each names a tool of the agent
/// (reported when not).
fn check_tools(
    event: HookEvent,
    patterns: &[Spanned<String>],
    root: &TableReader<'_>,
    names: &[&str],
) -> bool {
    let toml = root.file();
    if !patterns.is_empty() && !event.is_tool_event() {
        toml.report(
            Diagnostic::error(
                code::HOOK_TOOLS_NOT_FOR_EVENT,
                format!("`tools` does not apply to `{}` hooks", event.name()),
            )
            .at(&toml.src, root.key_span("tools"))
            .help("only `before_tool` and `after_tool` hooks are about a tool: remove `tools`"),
        );
        return false;
    }
    let mut ok = true;
    for pattern in patterns {
        if !matches_a_tool(&pattern.value, names) {
            ok = false;
            toml.report(
                Diagnostic::error(
                    code::UNKNOWN_HOOK_TOOL,
                    format!("`{}` matches no tool of this agent", pattern.value),
                )
                .at(&toml.src, pattern.span.clone())
                .note(if matches!(pattern.value.as_str(), "web_search" | "call_tool") {
                    "`web_search` (the provider runs it) and `call_tool` (the deferred tool it names is hooked as itself) cannot be hooked"
                } else {
                    "a hook on a tool the agent does not have would never run"
                })
                .suggest(suggest::closest(&pattern.value, names.iter().copied())),
            );
        }
    }
    ok
}

/// Whether `pattern` (a name, or a glob when it holds `*`, `?` or `[`) names a tool.
fn matches_a_tool(pattern: &str, names: &[&str]) -> bool {
    if pattern.contains(['*', '?', '[']) {
        names
            .iter()
            .any(|name| crate::pattern::glob_matches(pattern, name))
    } else {
        names.contains(&pattern)
    }
}

/// Whether the hook applies to a call of `tool`.
pub fn applies_to(hook: &Hook, tool: &str) -> bool {
    hook.tools.is_empty()
        || hook.tools.iter().any(|p| {
            if p.contains(['*', '?', '[']) {
                crate::pattern::glob_matches(p, tool)
            } else {
                p == tool
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_is_judged_where_it_renders() {
        for (template, place) in [
            ("{{ workspace }}/x", Place::Workspace),
            ("{{- workspace }}/x", Place::Workspace),
            ("{{workspace}}", Place::Workspace),
            ("{{ \"./x\" }}", Place::Relative("./x".into())),
            ("scripts/x.sh", Place::Relative("scripts/x.sh".into())),
            ("{{ agent_dir }}/hooks/x.sh", Place::Elsewhere),
            ("python3", Place::Elsewhere),
            ("/usr/bin/env", Place::Elsewhere),
        ] {
            assert_eq!(program_place(template), Some(place), "{template}");
        }
    }
}
