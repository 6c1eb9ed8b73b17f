//! The keys of `hooks/<name>.toml` (docs/hooks.md#the-hook-file).

use super::DefaultValue as D;
use super::{Key, Kind, NON_BLANK, STRING, Table};
use crate::manifest::hook::{HookEvent, OnError};

/// `timeout_secs` when the file does not set it.
pub const HOOK_TIMEOUT_SECS: u64 = 60;
/// The longest `timeout_secs`: a hook holds up the turn while it runs.
pub const MAX_HOOK_TIMEOUT_SECS: u64 = 600;

/// A hook file.
pub static HOOK: Table = Table {
    required: &["event", "command"],
    ..Table::of(&[
        Key::new(
            "event",
            Kind::Enum(HookEvent::NAMES),
            "Where in a turn the hook runs.",
        ),
        Key::new(
            "tools",
            Kind::Strings(NON_BLANK),
            "`before_tool` and `after_tool` only: the tools it applies to, by name or glob (`github__*`); every one must match a tool of the agent. Default: every tool.",
        ),
        Key::new(
            "command",
            Kind::Strings(STRING),
            "The program and its arguments, no shell (write `[\"sh\", \"-c\", \"…\"]` for one). `{{ agent_dir }}` and `{{ workspace }}` are replaced by the agent directory and the workspace. It gets the event as JSON on stdin.",
        ),
        Key::new(
            "cwd",
            Kind::Str(NON_BLANK),
            "Where it runs: a template over `agent_dir` and `workspace` (`{{ agent_dir }}`), or a folder relative to the workspace; it must be inside one of them. Default: the workspace.",
        ),
        Key::new(
            "names",
            Kind::Enum(&["eve", "claude"]),
            "Whose tool names and inputs the JSON on stdin holds: eve's (`bash`, `write_file` with `path`) or Claude Code's (`Bash`, `Write` with `file_path`), for scripts written for Claude Code.",
        )
        .default(D::Str("eve")),
        Key::new(
            "timeout_secs",
            Kind::PositiveInt,
            "How long it may run, in seconds, at most 600; then eve kills it and `on_error` decides.",
        )
        .default(D::Int(HOOK_TIMEOUT_SECS)),
        Key::new(
            "on_error",
            Kind::Enum(OnError::NAMES),
            "What a hook that times out, fails or answers something eve cannot read decides: `deny` (for `before_tool`, the call does not run) or `allow`. Default: `deny` for `before_tool`, `allow` for the rest.",
        ),
        Key::new(
            "description",
            Kind::Str(NON_BLANK),
            "What the hook is for, for people.",
        ),
    ])
};
