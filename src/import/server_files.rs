//! What a stdio server's command line and `cwd` name of the plugin: the paths after
//! `${CLAUDE_PLUGIN_ROOT}` (the plugin's files, copied into the agent directory), the
//! paths that climb out of it, absolute paths and relative ones. Only reads text: the
//! planner looks each path up beneath the imported folder.

/// Claude Code's name for the plugin's own folder in a server's command line.
pub const PLUGIN_ROOT: &str = "${CLAUDE_PLUGIN_ROOT}";

/// The entries of an eve agent directory a server's files must not be copied over.
pub const EVE_ENTRIES: &[&str] = &[
    "agent.toml",
    "instructions.md",
    "instructions",
    "subagents",
    "connections",
    "tools",
    "evals",
    "hooks",
    ".eve",
    ".gitignore",
];

/// One path found in an element of a command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// `${CLAUDE_PLUGIN_ROOT}/<path>`: a path of plain names inside the plugin.
    Inside(String),
    /// `${CLAUDE_PLUGIN_ROOT}` alone: the plugin's folder itself.
    Whole,
    /// A path after `${CLAUDE_PLUGIN_ROOT}` with a `..` in it, or glued to it
    /// (`${CLAUDE_PLUGIN_ROOT}x`): it may lead out of the plugin.
    Escaping(String),
    /// A whole element that is an absolute path (`/opt/mcp/server.js`).
    Absolute(String),
    /// A whole element that reads as a relative path (`./start.mjs`, `dist/index.js`).
    Relative(String),
}

/// The paths one element of a command line names (a `sh -c` script may name several
/// after `${CLAUDE_PLUGIN_ROOT}`).
pub fn named(part: &str) -> Vec<Named> {
    if part.contains(PLUGIN_ROOT) {
        return part
            .split(PLUGIN_ROOT)
            .skip(1)
            .map(|after| {
                let end = after
                    .find(|c: char| c.is_whitespace() || "\"'`;:,)|&<>$".contains(c))
                    .unwrap_or(after.len());
                after_root(&after[..end])
            })
            .collect();
    }
    if part.starts_with('/') {
        return vec![Named::Absolute(part.to_string())];
    }
    if looks_relative(part) {
        return vec![Named::Relative(part.to_string())];
    }
    Vec::new()
}

/// What the text right after `${CLAUDE_PLUGIN_ROOT}` names.
fn after_root(path: &str) -> Named {
    if path.is_empty() || path == "/" {
        return Named::Whole;
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Named::Escaping(format!("{PLUGIN_ROOT}{path}"));
    };
    match plain(rest) {
        Some(plain) if plain.is_empty() => Named::Whole,
        Some(plain) => Named::Inside(plain),
        None => Named::Escaping(format!("{PLUGIN_ROOT}{path}")),
    }
}

/// `path` as plain names joined by `/` (`.` and empty names dropped); `None` when a
/// name is `..` or holds a NUL.
pub fn plain(path: &str) -> Option<String> {
    let mut names = Vec::new();
    for name in path.split('/') {
        match name {
            "" | "." => {}
            ".." => return None,
            n if n.contains('\0') => return None,
            n => names.push(n),
        }
    }
    Some(names.join("/"))
}

/// Whether a whole element reads as a relative path rather than a word, a flag, a
/// package (`@scope/pkg`, `pkg@1`) or a URL.
fn looks_relative(part: &str) -> bool {
    if part.starts_with("./") || part.starts_with("../") {
        return true;
    }
    let word = !part.is_empty()
        && !part.starts_with(['-', '@', '~'])
        && !part.contains("://")
        && !part.contains(['=', '@', ' ', '$', '{']);
    let script = [".js", ".mjs", ".cjs", ".ts", ".py", ".sh", ".rb", ".jar"]
        .iter()
        .any(|ext| part.ends_with(ext));
    word && (part.contains('/') || script)
}

/// The entry at the top of the plugin a path inside it belongs to (`servers` of
/// `servers/db/index.js`): what is copied, so that the server finds its neighbours.
pub fn top_entry(path: &str) -> &str {
    path.split('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn paths_after_the_plugin_root_are_found_and_checked() {
        assert_eq!(
            named("${CLAUDE_PLUGIN_ROOT}/servers/./db/index.js"),
            [Named::Inside("servers/db/index.js".into())]
        );
        assert_eq!(
            named("--config=${CLAUDE_PLUGIN_ROOT}/config.json"),
            [Named::Inside("config.json".into())]
        );
        assert_eq!(named("${CLAUDE_PLUGIN_ROOT}"), [Named::Whole]);
        assert_eq!(named("${CLAUDE_PLUGIN_ROOT}/"), [Named::Whole]);
        assert_eq!(
            named("${CLAUDE_PLUGIN_ROOT}/../shared/x.js"),
            [Named::Escaping(
                "${CLAUDE_PLUGIN_ROOT}/../shared/x.js".into()
            )]
        );
        assert_eq!(
            named("${CLAUDE_PLUGIN_ROOT}/a/../../x"),
            [Named::Escaping("${CLAUDE_PLUGIN_ROOT}/a/../../x".into())]
        );
        assert_eq!(
            named("${CLAUDE_PLUGIN_ROOT}x"),
            [Named::Escaping("${CLAUDE_PLUGIN_ROOT}x".into())]
        );
        assert_eq!(
            named("cd \"${CLAUDE_PLUGIN_ROOT}/srv\" && exec node ${CLAUDE_PLUGIN_ROOT}/bin/run.js"),
            [
                Named::Inside("srv".into()),
                Named::Inside("bin/run.js".into())
            ]
        );
    }

    #[test]
    fn absolute_and_relative_paths_are_told_from_words_flags_and_packages() {
        assert_eq!(
            named("/opt/mcp/server.js"),
            [Named::Absolute("/opt/mcp/server.js".into())]
        );
        for relative in ["./start.mjs", "../x", "dist/index.js", "server.py"] {
            assert_eq!(named(relative), [Named::Relative(relative.into())]);
        }
        for word in [
            "node",
            "-y",
            "--stdio",
            "@modelcontextprotocol/server-memory",
            "mcp-server-time@1.0",
            "https://example.com/a/b",
            "--dir=./x",
            "run",
        ] {
            assert_eq!(named(word), [], "{word}");
        }
    }

    #[test]
    fn plain_paths_hold_no_parent() {
        assert_eq!(plain("a/./b//c").as_deref(), Some("a/b/c"));
        assert_eq!(plain("a/../b"), None);
        assert_eq!(top_entry("servers/db/index.js"), "servers");
        assert_eq!(top_entry("run.sh"), "run.sh");
    }
}
