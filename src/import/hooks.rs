//! Claude Code's hooks (a plugin's `hooks/hooks.json`, the `hooks` of its
//! `plugin.json`) as eve hook files: each command hook of an event eve has becomes
//! `hooks/<name>.toml`, its matcher the tools it applies to (Claude Code's tool names
//! as eve's, `mcp__<server>__<tool>` as the imported connection's tools), its command
//! run by `sh -c` as Claude Code runs it, with `${CLAUDE_PLUGIN_ROOT}` as the agent
//! directory. What cannot be carried (another hook type, an event eve lacks, a matcher
//! that names no tool eve has) is said per hook. Only reads JSON and writes text: the
//! planner copies the files the commands name.

use serde_json::Value;

use super::literal::literal;
use super::report::{Note, shown};
use super::server_files::PLUGIN_ROOT;
use super::tool_names::{Mapped, TOOLS};
use crate::manifest::hook::HookEvent;

/// The longest a hook may run, as eve's hook files allow.
const MAX_TIMEOUT_SECS: u64 = 600;

/// One hook file to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookFile {
    /// Its name: `hooks/<name>.toml`.
    pub name: String,
    /// Where it came from (`hooks/hooks.json` `PreToolUse` 1.1).
    pub from: String,
    /// The file's text.
    pub toml: String,
    /// The command as written, for the files it names.
    pub command: String,
    pub notes: Vec<Note>,
}

/// What the hooks of one file became.
#[derive(Debug, Default)]
pub struct Converted {
    pub files: Vec<HookFile>,
    /// The hooks not carried: where, and why.
    pub left_out: Vec<(String, String)>,
}

/// The hooks of `json` (the object of `hooks.json`, whose `hooks` holds them, or that
/// `hooks` object itself), read from `from`. `connections` maps a server's name in
/// Claude Code to its connection's; `project`: they are a project's (its
/// `.claude/settings.json`), whose `$CLAUDE_PROJECT_DIR/.claude` is the agent
/// directory. `taken` holds the hook names used already.
pub fn convert(
    json: &Value,
    from: &str,
    (connections, project): (&[(String, String)], bool),
    taken: &mut Vec<String>,
) -> Converted {
    let mut out = Converted::default();
    let events = json.get("hooks").unwrap_or(json);
    let Some(events) = events.as_object() else {
        out.left_out
            .push((from.to_string(), "its `hooks` is not a JSON object".into()));
        return out;
    };
    for (claude_event, groups) in events {
        let at = format!("{from} `{}`", shown(claude_event));
        let Some(event) = HookEvent::from_claude_name(claude_event) else {
            out.left_out
                .push((at, format!("eve has no `{}` event", shown(claude_event))));
            continue;
        };
        let Some(groups) = groups.as_array() else {
            out.left_out.push((at, "not a list of matchers".into()));
            continue;
        };
        for (g, group) in groups.iter().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str).unwrap_or("");
            let hooks = group.get("hooks").and_then(Value::as_array);
            for (h, hook) in hooks.into_iter().flatten().enumerate() {
                let at = format!("{at} {}.{}", g + 1, h + 1);
                match one(event, matcher, hook, (connections, project)) {
                    Ok((toml, command, notes)) => {
                        let name = unique_name(event, &command, taken);
                        out.files.push(HookFile {
                            name,
                            from: at,
                            toml,
                            command,
                            notes,
                        });
                    }
                    Err(why) => out.left_out.push((at, why)),
                }
            }
        }
    }
    out
}

/// One command hook as an eve hook file: its text, its command as written, and what
/// was changed on the way.
fn one(
    event: HookEvent,
    matcher: &str,
    hook: &Value,
    (connections, project): (&[(String, String)], bool),
) -> Result<(String, String, Vec<Note>), String> {
    let kind = hook
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("command");
    if kind != "command" {
        return Err(format!(
            "a `{}` hook: eve runs command hooks only",
            shown(kind)
        ));
    }
    let Some(command) = hook
        .get("command")
        .and_then(Value::as_str)
        .filter(|c| !c.trim().is_empty())
    else {
        return Err("a command hook with no `command`".into());
    };
    // A project's own folder is copied into the agent directory: its scripts are the
    // agent's, never run from the workspace the model writes.
    let command = if project {
        project_scripts(command)
    } else {
        command.to_string()
    };
    let command = command.as_str();
    let mut notes = Vec::new();
    if runs_project_file(command)? {
        if event == HookEvent::BeforeTool {
            return Err("a guard that runs a file of the project outside `.claude/`, in the workspace the model writes (the model could write its answer): move the file into `.claude/hooks/` and import again".into());
        }
        notes.push(Note::Warning(
            "it runs a file of the project, in the workspace the model writes: what it does, the model can change".into(),
        ));
    }
    let tools = if event.is_tool_event() {
        tools(matcher, connections, &mut notes)?
    } else {
        if !matches!(matcher, "" | "*") {
            notes.push(Note::Dropped(format!(
                "`matcher = \"{}\"`: eve runs a `{}` hook every time",
                shown(matcher),
                event.name()
            )));
        }
        Vec::new()
    };
    let timeout = hook.get("timeout").and_then(Value::as_u64);
    if timeout.is_some_and(|t| t > MAX_TIMEOUT_SECS) {
        notes.push(Note::Changed(format!(
            "`timeout` {} s → {MAX_TIMEOUT_SECS} s, the most an eve hook may run",
            timeout.unwrap_or_default()
        )));
    }
    let mut toml = if project {
        "# Imported from a Claude Code project: its `.claude/` is the agent directory.\n"
            .to_string()
    } else {
        format!("# Imported from a Claude Code plugin: `{PLUGIN_ROOT}` is the agent directory.\n")
    };
    toml.push_str(&format!("event = {}\n", quoted(event.name())));
    if !tools.is_empty() {
        let list: Vec<String> = tools.iter().map(|t| quoted(t)).collect();
        toml.push_str(&format!("tools = [{}]\n", list.join(", ")));
    }
    toml.push_str(&format!(
        "command = [\"sh\", \"-c\", {}]\n",
        quoted(&with_agent_dir(command))
    ));
    if event.is_tool_event() || event == HookEvent::InputRequested {
        toml.push_str("# The script reads Claude Code's tool names and inputs (`Bash`, `Write` with `file_path`).\nnames = \"claude\"\n");
    }
    if let Some(t) = timeout {
        toml.push_str(&format!(
            "timeout_secs = {}\n",
            t.clamp(1, MAX_TIMEOUT_SECS)
        ));
    }
    if event == HookEvent::BeforeTool {
        // Claude Code lets a call through when its guard fails; eve keeps its own
        // default (the call does not run), since the script reads eve's tool names.
        notes.push(Note::Changed(
            "a failing guard refuses the call (eve's `on_error = \"deny\"`), where Claude Code lets it through".into(),
        ));
    }
    Ok((toml, command.to_string(), notes))
}

/// The tools a tool event's `matcher` names, as eve's names and globs: `""` and `*`
/// are every tool, `A|B` each of them; a name eve lacks is noted and dropped, and a
/// matcher left with none is an error (the hook would never run).
fn tools(
    matcher: &str,
    connections: &[(String, String)],
    notes: &mut Vec<Note>,
) -> Result<Vec<String>, String> {
    if matches!(matcher.trim(), "" | "*" | ".*") {
        return Ok(Vec::new());
    }
    let mut out: Vec<String> = Vec::new();
    for name in matcher.split('|').map(str::trim).filter(|n| !n.is_empty()) {
        match tool(name, connections) {
            Ok(eve) => {
                if !out.contains(&eve) {
                    out.push(eve);
                }
            }
            Err(why) => notes.push(Note::Dropped(format!(
                "`{}` in `matcher`: {why}",
                shown(name)
            ))),
        }
    }
    if out.is_empty() {
        return Err(format!(
            "its `matcher = \"{}\"` names no tool eve has, so it would never run",
            shown(matcher)
        ));
    }
    Ok(out)
}

/// One name of a matcher as an eve tool name or glob.
fn tool(name: &str, connections: &[(String, String)]) -> Result<String, String> {
    if let Some(rest) = name.strip_prefix("mcp__") {
        let (server, tool) = rest.split_once("__").unwrap_or((rest, ".*"));
        let Some((_, connection)) = connections.iter().find(|(claude, _)| claude == server) else {
            return Err(format!("the server `{}` is not imported", shown(server)));
        };
        let tool = match tool {
            ".*" | "*" | "" => "*".to_string(),
            t if t
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-') =>
            {
                t.to_string()
            }
            _ => return Err("a regular expression eve cannot read as a name or a glob".into()),
        };
        return Ok(format!("{connection}__{tool}"));
    }
    match TOOLS.iter().find(|(claude, _)| *claude == name) {
        Some((_, Mapped::Builtin("web_search"))) => {
            Err("the provider runs `web_search`, so eve's hooks never see it".into())
        }
        Some((_, Mapped::Builtin(eve))) => Ok((*eve).to_string()),
        Some((_, Mapped::Dropped(why))) => Err((*why).to_string()),
        None if name.chars().all(|c| c.is_ascii_alphanumeric()) => {
            Err("not a Claude Code tool eve knows".into())
        }
        None => Err("a regular expression eve cannot read as a name or a glob".into()),
    }
}

/// Whether `command` runs a file of the project (`$CLAUDE_PROJECT_DIR/scripts/x.sh`,
/// after a project's own `.claude/` was made the agent directory): one in the
/// workspace the model writes. A path that climbs out of the plugin
/// (`${CLAUDE_PLUGIN_ROOT}/../x`), which the agent directory cannot hold, is an error.
fn runs_project_file(command: &str) -> Result<bool, String> {
    use super::server_files::{Named, named};
    let root = PLUGIN_ROOT;
    let scanned = command
        .replace("$CLAUDE_PLUGIN_ROOT", root)
        .replace(&format!("\"{root}\""), root);
    for path in named(&scanned) {
        if let Named::Escaping(path) = path {
            return Err(format!(
                "it runs `{}`, a path out of the plugin's folder, which the agent directory cannot hold",
                shown(&path)
            ));
        }
    }
    Ok([
        "$CLAUDE_PROJECT_DIR/",
        "${CLAUDE_PROJECT_DIR}/",
        "$CLAUDE_PROJECT_DIR\"/",
        "${CLAUDE_PROJECT_DIR}\"/",
    ]
    .iter()
    .any(|written| command.contains(written)))
}

/// `command` of a project with `$CLAUDE_PROJECT_DIR/.claude` (however it is quoted)
/// written as the plugin root, which the agent directory stands for.
fn project_scripts(command: &str) -> String {
    let quoted = format!("\"{PLUGIN_ROOT}\"");
    let mut out = command.to_string();
    for (written, root) in [
        ("\"$CLAUDE_PROJECT_DIR\"/.claude", quoted.as_str()),
        ("\"${CLAUDE_PROJECT_DIR}\"/.claude", quoted.as_str()),
        ("${CLAUDE_PROJECT_DIR}/.claude", PLUGIN_ROOT),
        ("$CLAUDE_PROJECT_DIR/.claude", PLUGIN_ROOT),
    ] {
        out = out.replace(written, root);
    }
    out
}

/// `command` as an eve template: `${CLAUDE_PLUGIN_ROOT}` (and `$CLAUDE_PLUGIN_ROOT`)
/// becomes `{{ agent_dir }}`, and the rest renders to itself.
fn with_agent_dir(command: &str) -> String {
    let command = command.replace("$CLAUDE_PLUGIN_ROOT", PLUGIN_ROOT);
    command
        .split(PLUGIN_ROOT)
        .map(literal)
        .collect::<Vec<_>>()
        .join("{{ agent_dir }}")
}

/// A hook name for `command` at `event`: its script's name when it runs one
/// (`security_reminder_hook.py` → `security-reminder-hook`), else the event's, made
/// unique among `taken` (which it joins).
fn unique_name(event: HookEvent, command: &str, taken: &mut Vec<String>) -> String {
    let script = command
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
        .find(|w| w.contains(PLUGIN_ROOT) || w.contains("$CLAUDE_PLUGIN_ROOT"))
        .and_then(|w| w.rsplit('/').next())
        .map(|file| file.split('.').next().unwrap_or(file).to_string());
    let base = script
        .and_then(|s| super::slug::slug(&s))
        .unwrap_or_else(|| event.name().to_string())
        .replace('_', "-");
    let mut name = base.clone();
    let mut n = 2;
    while taken.contains(&name) {
        name = format!("{base}-{n}");
        n += 1;
    }
    taken.push(name.clone());
    name
}

fn quoted(text: &str) -> String {
    super::mcp::toml_string(text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn command_hooks_become_hook_files_and_the_rest_is_said() {
        let json = json!({
            "description": "guards",
            "hooks": {
                "PreToolUse": [{
                    "matcher": "Edit|Write|MultiEdit|NotebookEdit",
                    "hooks": [{"type": "command", "command": "python3 ${CLAUDE_PLUGIN_ROOT}/hooks/security_reminder_hook.py", "timeout": 900}]
                }],
                "Stop": [{"hooks": [
                    {"type": "command", "command": "\"$CLAUDE_PLUGIN_ROOT/hooks/stop-hook.sh\""},
                    {"type": "prompt", "prompt": "Is the work done?"}
                ]}],
                "PostToolUse": [{"matcher": "mcp__github__.*", "hooks": [{"type": "command", "command": "echo {{x}}"}]}],
                "PermissionRequest": [{"hooks": [{"type": "command", "command": "true"}]}],
                "Notification": [{"matcher": "WebSearch", "hooks": [{"type": "command", "command": "true"}]}]
            }
        });
        let connections = vec![("github".to_string(), "github".to_string())];
        let mut taken = Vec::new();
        let out = convert(&json, "hooks/hooks.json", (&connections, false), &mut taken);
        let names: Vec<&str> = out.files.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "input-requested",
                "after-tool",
                "security-reminder-hook",
                "stop-hook"
            ]
        );
        let guard = &out.files[2];
        assert!(
            guard.toml.contains("event = \"before_tool\""),
            "{}",
            guard.toml
        );
        assert!(
            guard
                .toml
                .contains("tools = [\"edit_file\", \"write_file\"]")
        );
        assert!(guard.toml.contains(
            "command = [\"sh\", \"-c\", \"python3 {{ agent_dir }}/hooks/security_reminder_hook.py\"]"
        ));
        assert!(guard.toml.contains("timeout_secs = 600"));
        // A failing guard refuses, as eve's own do (said in a note).
        assert!(!guard.toml.contains("on_error"));
        assert_eq!(guard.notes.len(), 3, "{:?}", guard.notes);
        let post = &out.files[1];
        assert!(
            post.toml.contains("tools = [\"github__*\"]"),
            "{}",
            post.toml
        );
        assert!(
            post.toml.contains("{% raw %}echo {{x}}{% endraw %}"),
            "{}",
            post.toml
        );
        let stop = &out.files[3];
        assert!(
            stop.toml
                .contains(r#"'"{{ agent_dir }}/hooks/stop-hook.sh"'"#),
            "{}",
            stop.toml
        );
        let left: Vec<&str> = out.left_out.iter().map(|(_, why)| why.as_str()).collect();
        assert_eq!(
            left,
            [
                "eve has no `PermissionRequest` event",
                "a `prompt` hook: eve runs command hooks only"
            ]
        );
        // Every file is a hook eve reads.
        for file in &out.files {
            let doc: toml_edit::DocumentMut = file.toml.parse().unwrap();
            assert!(doc.contains_key("event"), "{}", file.toml);
        }
    }

    #[test]
    fn a_matcher_that_names_no_tool_eve_has_leaves_the_hook_out() {
        let json =
            json!({"PreToolUse": [{"matcher": "NotebookEdit", "hooks": [{"command": "true"}]}]});
        let out = convert(&json, "plugin.json", (&[], false), &mut Vec::new());
        assert!(out.files.is_empty());
        assert!(out.left_out[0].1.contains("names no tool eve has"));
    }
}
