//! `glob`: finds files by a glob pattern over their paths, newest first.
//!
//! Also home to the rule for glob patterns, which `grep`'s `glob` follows too.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use globset::{GlobBuilder, GlobMatcher};
use serde::Deserialize;
use serde_json::Value;

use crate::catalog::{Availability, BuiltinTool};
use crate::tools::beneath::{Entry, describe};
use crate::tools::files::{Stopped, blocking};
use crate::tools::walk::{Start, walk};
use crate::tools::workspace::Access;
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};

/// What the model is told about `glob`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "glob",
    description: "Finds files whose paths match a glob pattern, such as `**/*.rs` or \
        `src/**/test_*.py`, and returns their paths relative to the workspace root, most \
        recently modified first. The pattern is matched against paths relative to path (a \
        folder, default the workspace root). It honours .gitignore, so ignored files and \
        folders such as target/ or node_modules/ are skipped. The number of results is \
        capped; if the list is cut, narrow the pattern or the folder. Use it to find files by \
        name; use grep to find files by their content. Prefer it over find or ls in bash. \
        Several searches in the same step run in parallel.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "The glob pattern to match file paths against, e.g. src/**/*.rs or **/*.{ts,tsx}."
            },
            "path": {
                "type": "string",
                "description": "The folder to search in, relative to the workspace root (an absolute path inside the workspace is also accepted). Omit it to search the whole workspace."
            }
        },
        "required": ["pattern"],
        "additionalProperties": false
    }"#,
    read_only: true,
    timeout_secs: 30,
    settings: &[],
    availability: Availability::Always,
};

/// At most this many paths are listed.
pub const MAX_RESULTS: usize = 100;

#[derive(Debug, Deserialize)]
struct Input {
    pattern: String,
    path: Option<String>,
}

/// The `glob` tool.
#[derive(Debug, Clone)]
pub struct GlobTool {
    /// The search stops after this long and lists what it found so far.
    pub timeout: Duration,
}

impl Default for GlobTool {
    fn default() -> GlobTool {
        GlobTool {
            timeout: Duration::from_secs(30),
        }
    }
}

impl ToolExec for GlobTool {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let input: Input = match parse_input(input) {
                Ok(input) => input,
                Err(e) => return e,
            };
            run(&input, ctx, self.timeout)
                .await
                .unwrap_or_else(|refused| refused)
        }
        .boxed()
    }
}

async fn run(
    input: &Input,
    ctx: &ToolContext,
    timeout: Duration,
) -> Result<ToolOutput, ToolOutput> {
    let given = input.path.as_deref().unwrap_or(".");
    let resolved = ctx.resolve(given, Access::Search)?;
    match &resolved.found.entry {
        Entry::Dir => {}
        Entry::File(_) => {
            return Err(ToolOutput::error(format!(
                "`{given}` is a file, not a folder: glob searches a folder (use read_file to read a file)"
            )));
        }
        Entry::Missing => {
            return Err(ToolOutput::error(format!(
                "the folder `{given}` does not exist"
            )));
        }
        Entry::Other(kind) => {
            return Err(ToolOutput::error(format!(
                "`{given}` is {}, not a folder",
                describe(*kind)
            )));
        }
    }
    let folder = resolved.path.clone();
    let folder_name = ctx.display(&folder);
    let matcher = compile(&input.pattern, &ctx.workspace, &folder).map_err(ToolOutput::error)?;
    let agents = ctx.policy().agent_ids();
    let root = ctx.workspace.clone();
    let (mut found, timed_out) = blocking(ctx, Some(timeout), move |stop| {
        let start = Start {
            levels: &resolved.found.levels,
            root: &root,
            path: &resolved.path,
            agents: &agents,
        };
        let states = walk(
            &start,
            &stop,
            Vec::new,
            |found: &mut Vec<(SystemTime, PathBuf)>, entry| {
                let relative = entry.path.strip_prefix(&folder).unwrap_or(entry.path);
                if matcher.is_match(relative) {
                    let modified = entry.modified().unwrap_or(SystemTime::UNIX_EPOCH);
                    found.push((modified, entry.path.to_path_buf()));
                }
            },
        );
        states.into_iter().flatten().collect::<Vec<_>>()
    })
    .await
    .map_err(|Stopped| ToolOutput::error("the search was interrupted"))?;

    if found.is_empty() {
        let mut text = format!("No files matched `{}` in `{folder_name}`.", input.pattern);
        if timed_out {
            text.push_str(&timed_out_note(timeout));
        }
        return Ok(ToolOutput::ok(text));
    }
    // Newest first, ties by path; only the listed head is sorted.
    let newest_first = |a: &(SystemTime, PathBuf), b: &(SystemTime, PathBuf)| {
        b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1))
    };
    let more = found.len().saturating_sub(MAX_RESULTS);
    if more > 0 {
        found.select_nth_unstable_by(MAX_RESULTS - 1, newest_first);
        found.truncate(MAX_RESULTS);
    }
    found.sort_unstable_by(newest_first);
    let mut lines: Vec<String> = found.iter().map(|(_, path)| ctx.display(path)).collect();
    if more > 0 {
        lines.push(format!(
            "… and {more} more (narrow the pattern or the folder)"
        ));
    }
    let mut text = lines.join("\n");
    if timed_out {
        text.push_str(&timed_out_note(timeout));
    }
    Ok(ToolOutput::ok(text))
}

/// The note added when a search ran out of time.
pub(super) fn timed_out_note(timeout: Duration) -> String {
    format!(
        "\n(the search stopped after {} s, so the results are incomplete: narrow the pattern or the folder)",
        timeout.as_secs()
    )
}

/// Compiles a glob pattern the model gave, to match paths relative to `folder`.
///
/// The rule: `*`, `?` and `[…]` never cross `/`; `**` spans folders; `{a,b}` gives
/// alternatives. A pattern without `/` (`*.rs`) matches a file's name at any depth; a
/// pattern with `/` (`src/*.rs`, `./*.rs`, `src/**/*.rs`) matches from the folder down; a trailing
/// `/` means everything under that folder. `..` is refused, and an absolute pattern must
/// lie inside the folder (it is made relative to it).
pub(super) fn compile(
    pattern: &str,
    workspace: &Path,
    folder: &Path,
) -> Result<GlobMatcher, String> {
    let relative = relative_pattern(pattern, workspace, folder)?;
    GlobBuilder::new(&relative)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map(|glob| glob.compile_matcher())
        .map_err(|e| format!("invalid glob pattern `{pattern}`: {}", e.kind()))
}

/// The pattern as matched against paths relative to `folder` (see [`compile`]).
fn relative_pattern(pattern: &str, workspace: &Path, folder: &Path) -> Result<String, String> {
    let trimmed = pattern.trim();
    if trimmed.is_empty() {
        return Err("the glob pattern is empty".into());
    }
    let mut rest = trimmed;
    if trimmed.starts_with('/') {
        let inside = |dir: &Path| {
            let dir = dir.to_string_lossy();
            let dir = dir.trim_end_matches('/');
            trimmed
                .strip_prefix(dir)
                .filter(|r| r.is_empty() || r.starts_with('/'))
                .map(|r| r.trim_start_matches('/'))
        };
        if let Some(r) = inside(folder) {
            rest = r;
        } else if inside(workspace).is_some() {
            return Err(format!(
                "the pattern `{pattern}` is not inside the folder searched (`{}`): make it relative to that folder, or pass its folder as path",
                crate::tools::workspace::display(workspace, folder)
            ));
        } else {
            return Err(format!(
                "the pattern `{pattern}` is outside the workspace `{}`: use a pattern relative to the folder searched",
                workspace.display()
            ));
        }
        if rest.is_empty() {
            rest = "**";
        }
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in rest.split('/') {
        match part {
            ".." => {
                return Err(format!(
                    "the pattern `{pattern}` climbs out of the folder with `..`: patterns match paths inside the folder searched; pass another folder as path instead"
                ));
            }
            "." | "" => {}
            part => parts.push(part),
        }
    }
    if rest.ends_with('/') {
        parts.push("**");
    }
    if parts.is_empty() {
        return Err(format!("the pattern `{pattern}` names no files"));
    }
    let joined = parts.join("/");
    // A pattern with a `/` (or absolute) is anchored at the folder; one without is a name.
    Ok(if trimmed.contains('/') || joined == "**" {
        joined
    } else {
        format!("**/{joined}")
    })
}

/// `glob` for an agent, configured by its manifest entry.
pub fn build(
    tool: &crate::manifest::Tool,
    _manifest: &std::sync::Arc<crate::manifest::Manifest>,
) -> Result<std::sync::Arc<dyn ToolExec>, String> {
    Ok(std::sync::Arc::new(GlobTool {
        timeout: std::time::Duration::from_secs(tool.timeout_secs.max(1)),
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
pub(super) mod tests {
    use super::*;
    use serde_json::json;
    use std::time::{Duration, SystemTime};

    /// A workspace in a temp folder, canonical as the runner makes it.
    pub struct Fixture {
        pub tmp: tempfile::TempDir,
        pub root: PathBuf,
        pub ctx: ToolContext,
    }

    #[allow(clippy::unwrap_used)]
    pub fn fixture(files: &[(&str, &str)]) -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap().join("ws");
        std::fs::create_dir_all(&root).unwrap();
        for (path, content) in files {
            write(&root, path, content);
        }
        let ctx = ToolContext::new(root.clone(), root.join("agent"));
        Fixture { tmp, root, ctx }
    }

    #[allow(clippy::unwrap_used)]
    pub fn write(root: &Path, path: &str, content: &str) {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
    }

    #[allow(clippy::unwrap_used)]
    fn set_mtime(root: &Path, path: &str, secs_ago: u64) {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let file = std::fs::File::options()
            .write(true)
            .open(root.join(path))
            .unwrap();
        file.set_modified(now - Duration::from_secs(secs_ago))
            .unwrap();
    }

    async fn glob(f: &Fixture, input: Value) -> ToolOutput {
        GlobTool::default().call(&input, &f.ctx).await
    }

    fn lines(out: &ToolOutput) -> Vec<&str> {
        let mut lines: Vec<&str> = out.content.lines().collect();
        lines.sort_unstable();
        lines
    }

    #[tokio::test]
    async fn star_stays_in_one_folder_and_double_star_recurses() {
        let f = fixture(&[
            ("main.rs", ""),
            ("src/lib.rs", ""),
            ("src/tools/glob.rs", ""),
            ("src/notes.md", ""),
        ]);
        let out = glob(&f, json!({"pattern": "src/*.rs"})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "src/lib.rs");
        let out = glob(&f, json!({"pattern": "src/**/*.rs"})).await;
        assert_eq!(lines(&out), ["src/lib.rs", "src/tools/glob.rs"]);
        let out = glob(&f, json!({"pattern": "**/*.rs"})).await;
        assert_eq!(lines(&out), ["main.rs", "src/lib.rs", "src/tools/glob.rs"]);
        // Without a `/`, a pattern matches names at any depth.
        let out = glob(&f, json!({"pattern": "*.rs"})).await;
        assert_eq!(lines(&out), ["main.rs", "src/lib.rs", "src/tools/glob.rs"]);
        let out = glob(&f, json!({"pattern": "*.{md,txt}"})).await;
        assert_eq!(out.content, "src/notes.md");
        // Relative to path, listed relative to the workspace.
        let out = glob(&f, json!({"pattern": "*.rs", "path": "src/tools"})).await;
        assert_eq!(out.content, "src/tools/glob.rs");
        let out = glob(&f, json!({"pattern": "tools/"})).await;
        assert_eq!(
            out.content, "No files matched `tools/` in `.`.",
            "anchored: there is no top-level tools/"
        );
        let out = glob(&f, json!({"pattern": "src/tools/", "path": "."})).await;
        assert_eq!(out.content, "src/tools/glob.rs");
    }

    #[tokio::test]
    async fn ignore_files_are_honoured_without_git_and_git_is_never_listed() {
        let f = fixture(&[
            (".gitignore", "target/\n*.log\n"),
            ("target/debug/out.rs", ""),
            ("app.log", ""),
            ("src/a.rs", ""),
            ("src/.ignore", "generated.rs\n"),
            ("src/generated.rs", ""),
            (".hidden/b.rs", ""),
            (".git/config.rs", ""),
        ]);
        let out = glob(&f, json!({"pattern": "**/*"})).await;
        assert_eq!(
            lines(&out),
            [".gitignore", ".hidden/b.rs", "src/.ignore", "src/a.rs"]
        );
    }

    #[tokio::test]
    async fn newest_first_then_by_path() {
        let f = fixture(&[("a.rs", ""), ("b.rs", ""), ("c.rs", ""), ("d/e.rs", "")]);
        set_mtime(&f.root, "a.rs", 300);
        set_mtime(&f.root, "b.rs", 100);
        set_mtime(&f.root, "c.rs", 100);
        set_mtime(&f.root, "d/e.rs", 10);
        let out = glob(&f, json!({"pattern": "**/*.rs"})).await;
        assert_eq!(out.content, "d/e.rs\nb.rs\nc.rs\na.rs");
    }

    #[tokio::test]
    async fn the_list_is_capped_with_a_note_keeping_the_newest() {
        let f = fixture(&[]);
        for i in 0..142 {
            let name = format!("f{i:03}.txt");
            write(&f.root, &name, "");
            set_mtime(&f.root, &name, 1000 - i);
        }
        let out = glob(&f, json!({"pattern": "*.txt"})).await;
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines.len(), MAX_RESULTS + 1);
        assert_eq!(lines[0], "f141.txt");
        assert_eq!(lines[99], "f042.txt");
        assert_eq!(
            lines[100],
            "… and 42 more (narrow the pattern or the folder)"
        );
    }

    #[tokio::test]
    async fn nothing_matched_is_a_plain_message() {
        let f = fixture(&[("src/a.rs", "")]);
        let out = glob(&f, json!({"pattern": "*.py", "path": "src"})).await;
        assert!(!out.is_error);
        assert_eq!(out.content, "No files matched `*.py` in `src`.");
    }

    #[tokio::test]
    async fn patterns_and_folders_that_leave_the_workspace_are_refused() {
        let f = fixture(&[("src/a.rs", "")]);
        std::fs::write(f.tmp.path().join("outside.rs"), "").unwrap();
        let out = glob(&f, json!({"pattern": "../**"})).await;
        assert!(out.is_error);
        assert!(
            out.content.contains("climbs out of the folder with `..`"),
            "{}",
            out.content
        );
        let out = glob(&f, json!({"pattern": "src/../../*.rs"})).await;
        assert!(out.is_error, "{}", out.content);
        let out = glob(&f, json!({"pattern": "/etc/**"})).await;
        assert!(out.is_error);
        assert!(
            out.content.contains("outside the workspace"),
            "{}",
            out.content
        );
        let out = glob(&f, json!({"pattern": "*.rs", "path": ".."})).await;
        assert!(out.is_error);
        assert!(
            out.content.contains("outside the workspace"),
            "{}",
            out.content
        );
        // An absolute pattern inside the workspace is made relative.
        let absolute = format!("{}/src/*.rs", f.root.display());
        let out = glob(&f, json!({"pattern": absolute})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(out.content, "src/a.rs");
        let out = glob(&f, json!({"pattern": absolute, "path": "src"})).await;
        assert_eq!(out.content, "src/a.rs");
        let out = glob(
            &f,
            json!({"pattern": format!("{}/x/*.rs", f.root.display()), "path": "src"}),
        )
        .await;
        assert!(out.is_error);
        assert!(
            out.content.contains("not inside the folder searched"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn bad_folders_and_patterns_are_errors() {
        let f = fixture(&[("src/a.rs", "")]);
        let out = glob(&f, json!({"pattern": "*", "path": "src/a.rs"})).await;
        assert!(out.is_error);
        assert!(
            out.content.contains("is a file, not a folder"),
            "{}",
            out.content
        );
        let out = glob(&f, json!({"pattern": "*", "path": "nope"})).await;
        assert_eq!(out.content, "the folder `nope` does not exist");
        let out = glob(&f, json!({"pattern": "src/[a"})).await;
        assert!(out.is_error);
        assert!(
            out.content.starts_with("invalid glob pattern `src/[a`"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn an_interrupted_turn_stops_the_search() {
        let f = fixture(&[("a.rs", "")]);
        f.ctx.cancel.cancel();
        let out = glob(&f, json!({"pattern": "*.rs"})).await;
        assert!(out.is_error);
        assert_eq!(out.content, "the search was interrupted");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlinks_leading_out_are_not_followed() {
        let f = fixture(&[("src/a.rs", "")]);
        let outside = f.tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.rs"), "").unwrap();
        std::os::unix::fs::symlink(&outside, f.root.join("linked")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.rs"), f.root.join("secret.rs")).unwrap();
        let out = glob(&f, json!({"pattern": "**/*.rs"})).await;
        assert_eq!(out.content, "src/a.rs");
        let out = glob(&f, json!({"pattern": "*", "path": "linked"})).await;
        assert!(out.is_error);
        assert!(
            out.content.contains("outside the workspace"),
            "{}",
            out.content
        );
    }

    #[test]
    fn the_pattern_rule() {
        let ws = Path::new("/w");
        let rel = |p: &str| relative_pattern(p, ws, Path::new("/w/src"));
        assert_eq!(rel("*.rs").unwrap(), "**/*.rs");
        assert_eq!(rel("./*.rs").unwrap(), "*.rs", "a `/` anchors");
        assert_eq!(rel("**").unwrap(), "**");
        assert_eq!(rel("a/*.rs").unwrap(), "a/*.rs");
        assert_eq!(rel("./a//b/").unwrap(), "a/b/**");
        assert_eq!(rel("/w/src/a/*.rs").unwrap(), "a/*.rs");
        assert_eq!(rel("/w/src/*.rs").unwrap(), "*.rs");
        assert_eq!(rel("/w/src").unwrap(), "**");
        assert!(
            rel("/w/srcx/*.rs")
                .unwrap_err()
                .contains("not inside the folder")
        );
        assert!(
            rel("/x/*.rs")
                .unwrap_err()
                .contains("outside the workspace")
        );
        assert!(rel("a/../b").is_err());
        assert!(rel(" ").is_err());
        assert_eq!(rel("./").unwrap(), "**");
    }

    #[tokio::test]
    async fn fifos_and_the_agents_state_are_not_listed() {
        let f = fixture(&[
            ("a.rs", ""),
            ("agent/tools/x.toml", ""),
            ("agent/.eve/sessions/s1.jsonl", ""),
        ]);
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            f.root.join("pipe.rs"),
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .unwrap();
        let ctx = ToolContext::new(f.root.clone(), f.root.join("agent"));
        let out = GlobTool::default()
            .call(&json!({"pattern": "**/*"}), &ctx)
            .await;
        assert_eq!(lines(&out), ["a.rs", "agent/tools/x.toml"]);
        let out = GlobTool::default()
            .call(&json!({"pattern": "*", "path": "agent/.eve"}), &ctx)
            .await;
        assert!(out.content.contains("`.eve/` folder"), "{}", out.content);
    }

    #[tokio::test]
    async fn ignore_files_of_the_folders_above_apply() {
        let f = fixture(&[
            (".gitignore", "*.log\n!keep.log\n"),
            ("src/.ignore", "gen/\n"),
            ("src/a.log", ""),
            ("src/keep.log", ""),
            ("src/gen/x.rs", ""),
            ("src/b.rs", ""),
        ]);
        let out = glob(&f, json!({"pattern": "**/*", "path": "src"})).await;
        assert_eq!(lines(&out), ["src/.ignore", "src/b.rs", "src/keep.log"]);
    }
}
