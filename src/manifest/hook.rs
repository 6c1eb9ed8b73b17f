//! Hooks: the author's programs that eve runs at fixed points of a turn
//! (`hooks/<name>.toml`, docs/hooks.md).

use serde::{Deserialize, Serialize};

/// One hook file, compiled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hook {
    /// The file's name without `.toml`: what events and messages call it.
    pub name: String,
    pub event: HookEvent,
    /// The tools it applies to, as names or globs (`github__*`), each checked at build
    /// time against the tools the agent has; empty: every tool. Tool events only.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tools: Vec<String>,
    /// The program and its arguments; `{{ agent_dir }}` and `{{ workspace }}` are
    /// replaced when it runs.
    pub command: Vec<String>,
    /// Where it runs (a template, or a folder relative to the workspace); `None`: the
    /// workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    pub timeout_secs: u64,
    /// The script reads Claude Code's tool names and inputs (`Bash`, `Write` with
    /// `file_path`) instead of eve's (`names = "claude"`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub claude_names: bool,
    /// What a hook that fails (times out, crashes, answers garbage) decides.
    pub on_error: OnError,
}

/// Where in a turn a hook runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HookEvent {
    /// A session starts (or is reopened): may add context for the model.
    SessionStart,
    /// A message from the person, before the model sees it: may add context, or refuse
    /// it.
    UserPrompt,
    /// A tool call, before it runs (and before its approval): may allow, deny, or ask.
    BeforeTool,
    /// A tool call's result, before the model reads it: may add a note, or mark it failed.
    AfterTool,
    /// The model ends its turn: may refuse once with a reason, so it goes on.
    Stop,
    /// A subagent ends its task: may refuse once with a reason, so it goes on.
    SubagentStop,
    /// The history is about to be compacted.
    BeforeCompact,
    /// A question or an approval waits for the person.
    InputRequested,
    /// The session ends (`eve run` exits, `eve dev` quits, a served session closes).
    SessionEnd,
}

impl HookEvent {
    /// Every event, in the order of a session.
    pub const ALL: [HookEvent; 9] = [
        HookEvent::SessionStart,
        HookEvent::UserPrompt,
        HookEvent::BeforeTool,
        HookEvent::AfterTool,
        HookEvent::Stop,
        HookEvent::SubagentStop,
        HookEvent::BeforeCompact,
        HookEvent::InputRequested,
        HookEvent::SessionEnd,
    ];

    /// Every event, by its name in a hook file.
    pub const NAMES: &[&str] = &[
        "session_start",
        "user_prompt",
        "before_tool",
        "after_tool",
        "stop",
        "subagent_stop",
        "before_compact",
        "input_requested",
        "session_end",
    ];

    /// The event with this name.
    pub fn from_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.name() == name)
    }

    /// The event Claude Code calls `name`, if eve has it.
    pub fn from_claude_name(name: &str) -> Option<HookEvent> {
        HookEvent::ALL.into_iter().find(|e| e.claude_name() == name)
    }

    /// Its name in a hook file.
    pub fn name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "session_start",
            HookEvent::UserPrompt => "user_prompt",
            HookEvent::BeforeTool => "before_tool",
            HookEvent::AfterTool => "after_tool",
            HookEvent::Stop => "stop",
            HookEvent::SubagentStop => "subagent_stop",
            HookEvent::BeforeCompact => "before_compact",
            HookEvent::InputRequested => "input_requested",
            HookEvent::SessionEnd => "session_end",
        }
    }

    /// Claude Code's name for it (`hook_event_name`), which existing hook scripts read.
    pub fn claude_name(self) -> &'static str {
        match self {
            HookEvent::SessionStart => "SessionStart",
            HookEvent::UserPrompt => "UserPromptSubmit",
            HookEvent::BeforeTool => "PreToolUse",
            HookEvent::AfterTool => "PostToolUse",
            HookEvent::Stop => "Stop",
            HookEvent::SubagentStop => "SubagentStop",
            HookEvent::BeforeCompact => "PreCompact",
            HookEvent::InputRequested => "Notification",
            HookEvent::SessionEnd => "SessionEnd",
        }
    }

    /// Whether it is about one tool call (`tools` applies).
    pub fn is_tool_event(self) -> bool {
        matches!(self, HookEvent::BeforeTool | HookEvent::AfterTool)
    }

    /// What a failing hook decides unless its file says: a `before_tool` hook that
    /// cannot answer keeps the call from running; the others let the turn go on.
    pub fn default_on_error(self) -> OnError {
        match self {
            HookEvent::BeforeTool => OnError::Deny,
            _ => OnError::Allow,
        }
    }
}

/// A failing hook's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    Allow,
    Deny,
}

impl OnError {
    pub const NAMES: &[&str] = &["allow", "deny"];
}

/// eve's built-in tools and the names Claude Code gives the same tools, for hooks that
/// read Claude Code's names (`names = "claude"`).
pub const CLAUDE_TOOL_NAMES: &[(&str, &str)] = &[
    ("bash", "Bash"),
    ("read_file", "Read"),
    ("write_file", "Write"),
    ("edit_file", "Edit"),
    ("glob", "Glob"),
    ("grep", "Grep"),
    ("web_fetch", "WebFetch"),
    ("web_search", "WebSearch"),
    ("todo", "TodoWrite"),
    ("agent", "Task"),
    ("ask_question", "AskUserQuestion"),
];

/// The tools whose input names the file `path` where Claude Code's says `file_path`.
const FILE_PATH_TOOLS: &[&str] = &["read_file", "write_file", "edit_file"];

/// Claude Code's name for the tool eve calls `tool`: a built-in's (`Bash`), a
/// connection's tool as `mcp__<server>__<tool>`, any other as it is.
pub fn claude_tool_name(tool: &str) -> String {
    if let Some((_, claude)) = CLAUDE_TOOL_NAMES.iter().find(|(eve, _)| *eve == tool) {
        return (*claude).to_string();
    }
    if tool.contains("__") {
        return format!("mcp__{tool}");
    }
    tool.to_string()
}

/// `input` of eve's `tool` as Claude Code's tool takes it (`file_path` for `path`), or
/// back (`to_claude` false).
pub fn claude_tool_input(
    tool: &str,
    mut input: serde_json::Value,
    to_claude: bool,
) -> serde_json::Value {
    let (from, to) = if to_claude {
        ("path", "file_path")
    } else {
        ("file_path", "path")
    };
    if FILE_PATH_TOOLS.contains(&tool)
        && let Some(object) = input.as_object_mut()
        && let Some(value) = object.remove(from)
    {
        object.insert(to.to_string(), value);
    }
    input
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_codes_names_for_eves_tools_and_back() {
        assert_eq!(claude_tool_name("write_file"), "Write");
        assert_eq!(
            claude_tool_name("github__get_issue"),
            "mcp__github__get_issue"
        );
        assert_eq!(claude_tool_name("deploy"), "deploy");
        let input = json!({"path": "a.txt", "content": "x"});
        let claude = claude_tool_input("write_file", input.clone(), true);
        assert_eq!(claude, json!({"file_path": "a.txt", "content": "x"}));
        assert_eq!(claude_tool_input("write_file", claude, false), input);
        // `glob` and `grep` say `path` in both.
        let glob = json!({"pattern": "*", "path": "src"});
        assert_eq!(claude_tool_input("glob", glob.clone(), true), glob);
    }
}
