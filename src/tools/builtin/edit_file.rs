//! `edit_file`: exact string replacement with the stamp checks; returns a unified diff.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::catalog::{Availability, BuiltinTool};
use crate::tools::beneath::Entry;
use crate::tools::files::{Stopped, blocking, check_fresh, interrupted, not_regular, write_atomic};
use crate::tools::replace::{self, closest, list_lines, occurrences};
use crate::tools::state::Stamp;
use crate::tools::workspace::Access;
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};

/// What the model is told about `edit_file`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "edit_file",
    description: "Edits a file by exact string replacement: old_string must match the file's \
        text exactly, including whitespace and indentation, and is replaced by new_string. \
        Copy old_string from read_file's output without the line-number prefix. The edit \
        fails if old_string is not found, if it occurs more than once (include more \
        surrounding lines to make it unique, or set replace_all to change every occurrence), \
        or if new_string equals old_string. The file must have been read with read_file \
        first and must not have changed since. On success it returns a unified diff of the \
        change. Prefer it over write_file for changes to existing files, and over sed or awk \
        in bash. Use replace_all to rename an identifier or string throughout the file. To \
        create a new file, use write_file.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "The file to edit, relative to the workspace root (an absolute path inside the workspace is also accepted)."
            },
            "old_string": {
                "type": "string",
                "description": "The exact text to replace; it must occur in the file exactly once unless replace_all is true."
            },
            "new_string": {
                "type": "string",
                "description": "The text to put in its place; it must differ from old_string."
            },
            "replace_all": {
                "type": "boolean",
                "default": false,
                "description": "Replace every occurrence of old_string instead of requiring exactly one (default false)."
            }
        },
        "required": ["path", "old_string", "new_string"],
        "additionalProperties": false
    }"#,
    read_only: false,
    timeout_secs: 30,
    settings: &[],
    availability: Availability::Always,
};

#[derive(Debug, Deserialize)]
struct Input {
    path: String,
    old_string: String,
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

/// The `edit_file` tool.
#[derive(Debug, Clone, Copy)]
pub struct EditFile;

/// Files larger than this are not edited (the edit holds the file in memory twice).
pub const MAX_EDIT_BYTES: u64 = 32 * 1024 * 1024;

fn edit(ctx: &ToolContext, input: Input, stop: &CancellationToken) -> Result<ToolOutput, Stopped> {
    let resolved = match ctx.resolve(&input.path, Access::Write) {
        Ok(resolved) => resolved,
        Err(e) => return Ok(e),
    };
    let shown = ctx.display(&resolved.path);
    match &resolved.found.entry {
        Entry::File(_) => {}
        Entry::Missing => {
            return Ok(ToolOutput::error(format!(
                "`{shown}` does not exist; create it with write_file"
            )));
        }
        Entry::Dir => {
            return Ok(ToolOutput::error(format!(
                "`{shown}` is a folder; give the path of a file"
            )));
        }
        Entry::Other(kind) => return Ok(not_regular(&shown, *kind)),
    }
    if input.old_string == input.new_string {
        return Ok(ToolOutput::error(
            "old_string and new_string are the same: there is nothing to change",
        ));
    }
    if input.old_string.is_empty() {
        return Ok(ToolOutput::error(
            "old_string is empty; to write a whole file use write_file",
        ));
    }
    let scanned = match check_fresh(ctx, &resolved, Some(MAX_EDIT_BYTES), stop) {
        Ok(Some(scanned)) => scanned,
        Ok(None) => {
            return Ok(ToolOutput::error(format!(
                "`{shown}` does not exist; create it with write_file"
            )));
        }
        Err(refused) => return Ok(refused),
    };
    let Some(bytes) = scanned.bytes else {
        return Ok(ToolOutput::error(format!(
            "`{shown}` is too large for edit_file ({} bytes; the limit is {} MiB): change it another way",
            scanned.stamp.len,
            MAX_EDIT_BYTES / (1024 * 1024)
        )));
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return Ok(ToolOutput::error(format!(
            "`{shown}` is not UTF-8 text; edit_file only edits text"
        )));
    };
    // A file with Windows line ends: the model's strings come with `\n`.
    let (old, new) = if !text.contains(&input.old_string) && text.contains("\r\n") {
        (
            input.old_string.replace('\n', "\r\n"),
            input.new_string.replace('\n', "\r\n"),
        )
    } else {
        (input.old_string.clone(), input.new_string.clone())
    };
    let found = occurrences(&text, &old, stop)?;
    if found.count == 0 {
        let mut message = format!(
            "old_string was not found in `{shown}`. It must match the file exactly, including whitespace and indentation, without read_file's line-number prefix."
        );
        if let Some(excerpt) = closest(&text, &input.old_string) {
            message.push_str(&format!("\nThe closest text is here:\n{excerpt}"));
        }
        return Ok(ToolOutput::error(message.trim_end().to_string()));
    }
    if found.count > 1 && !input.replace_all {
        return Ok(ToolOutput::error(format!(
            "old_string occurs {} times in `{shown}` (at lines {}); include more surrounding lines to make it unique, or set replace_all to change every occurrence",
            found.count,
            list_lines(&found)
        )));
    }
    let edited = replace::apply(&text, &old, &new, input.replace_all, &shown, stop)?;
    if stop.is_cancelled() {
        return Err(Stopped);
    }
    if let Err(e) = write_atomic(&resolved, edited.text.as_bytes()) {
        return Ok(ToolOutput::error(format!("cannot write `{shown}`: {e}")));
    }
    ctx.state
        .stamp(&resolved.path, Stamp::of(edited.text.as_bytes()));
    let count = if edited.replacements == 1 {
        "1 replacement".to_string()
    } else {
        format!("{} replacements", edited.replacements)
    };
    Ok(ToolOutput::ok(format!(
        "Edited `{shown}` ({count}):\n{}",
        edited.diff
    )))
}

impl ToolExec for EditFile {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let input: Input = match parse_input(input) {
                Ok(input) => input,
                Err(e) => return e,
            };
            let task = ctx.clone();
            match blocking(ctx, None, move |stop| edit(&task, input, &stop)).await {
                Ok((Ok(out), _)) => out,
                Ok((Err(Stopped), _)) | Err(Stopped) => interrupted(),
            }
        }
        .boxed()
    }
}

/// `edit_file` for an agent, configured by its manifest entry.
pub fn build(
    _tool: &crate::manifest::Tool,
    _manifest: &std::sync::Arc<crate::manifest::Manifest>,
) -> Result<std::sync::Arc<dyn ToolExec>, String> {
    Ok(std::sync::Arc::new(EditFile))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::tools::builtin::read_file::ReadFile;
    use serde_json::json;

    async fn setup(content: &str) -> (tempfile::TempDir, ToolContext) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let ctx = ToolContext::new(root.clone(), root.join("agent"));
        std::fs::write(root.join("lib.rs"), content).unwrap();
        ReadFile.call(&json!({"path": "lib.rs"}), &ctx).await;
        (tmp, ctx)
    }

    async fn edit(ctx: &ToolContext, old: &str, new: &str, all: bool) -> ToolOutput {
        EditFile
            .call(&json!({"path": "lib.rs", "old_string": old, "new_string": new, "replace_all": all}), ctx)
            .await
    }

    fn content(ctx: &ToolContext) -> String {
        std::fs::read_to_string(ctx.workspace.join("lib.rs")).unwrap()
    }

    #[tokio::test]
    async fn a_unique_match_is_replaced_and_the_diff_returned() {
        let (_tmp, ctx) = setup("fn a() {}\nfn b() {}\nfn c() {}\n").await;
        let out = edit(&ctx, "fn b() {}", "fn b() -> u8 { 1 }", false).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(content(&ctx), "fn a() {}\nfn b() -> u8 { 1 }\nfn c() {}\n");
        assert_eq!(
            out.content,
            "Edited `lib.rs` (1 replacement):\n--- a/lib.rs\n+++ b/lib.rs\n@@ -1,3 +1,3 @@\n fn a() {}\n-fn b() {}\n+fn b() -> u8 { 1 }\n fn c() {}"
        );
        // The edit refreshed the stamp: a second edit needs no new read.
        assert!(
            !edit(&ctx, "fn c() {}", "fn c() {} // done", false)
                .await
                .is_error
        );
    }

    #[tokio::test]
    async fn ambiguous_missing_and_no_op_edits_fail_and_change_nothing() {
        let (_tmp, ctx) = setup("let x = 1;\nlet y = 2;\nlet x = 1;\n").await;
        let twice = edit(&ctx, "let x = 1;", "let x = 3;", false).await;
        assert!(twice.is_error);
        assert!(
            twice
                .content
                .starts_with("old_string occurs 2 times in `lib.rs` (at lines 1, 3)"),
            "{twice:?}"
        );
        let missing = edit(&ctx, "let  y = 2;", "let y = 5;", false).await;
        assert!(missing.is_error);
        assert!(
            missing.content.contains("The closest text is here:\n"),
            "{missing:?}"
        );
        assert!(
            missing.content.contains(">    2\tlet y = 2;"),
            "{missing:?}"
        );
        let same = edit(&ctx, "let y = 2;", "let y = 2;", false).await;
        assert_eq!(
            same.content,
            "old_string and new_string are the same: there is nothing to change"
        );
        assert_eq!(content(&ctx), "let x = 1;\nlet y = 2;\nlet x = 1;\n");
        let all = edit(&ctx, "let x = 1;", "let x = 3;", true).await;
        assert!(
            all.content.starts_with("Edited `lib.rs` (2 replacements)"),
            "{all:?}"
        );
        assert_eq!(content(&ctx), "let x = 3;\nlet y = 2;\nlet x = 3;\n");
    }

    #[tokio::test]
    async fn edits_need_a_fresh_read() {
        let (_tmp, ctx) = setup("a\n").await;
        std::fs::write(ctx.workspace.join("lib.rs"), "a\nb\n").unwrap();
        let stale = edit(&ctx, "a", "z", false).await;
        assert!(
            stale.is_error && stale.content.contains("modified since it was last read"),
            "{stale:?}"
        );
        assert_eq!(content(&ctx), "a\nb\n");
        std::fs::write(ctx.workspace.join("other.rs"), "a\n").unwrap();
        let unread = EditFile
            .call(
                &json!({"path": "other.rs", "old_string": "a", "new_string": "b"}),
                &ctx,
            )
            .await;
        assert!(unread.content.contains("has not been read"), "{unread:?}");
        let missing = EditFile
            .call(
                &json!({"path": "none.rs", "old_string": "a", "new_string": "b"}),
                &ctx,
            )
            .await;
        assert_eq!(
            missing.content,
            "`none.rs` does not exist; create it with write_file"
        );
    }

    #[tokio::test]
    async fn windows_line_ends_are_matched_and_kept() {
        let (_tmp, ctx) = setup("one\r\ntwo\r\nthree\r\n").await;
        let out = edit(&ctx, "one\ntwo", "one\n2", false).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(content(&ctx), "one\r\n2\r\nthree\r\n");
    }

    #[tokio::test]
    async fn replace_all_with_many_matches_is_exact_and_its_diff_capped() {
        let text = "let x = 1;\n".repeat(200_000);
        let (_tmp, ctx) = setup(&text).await;
        let out = edit(&ctx, "x", "y", true).await;
        assert!(!out.is_error, "{}", &out.content[..200]);
        assert!(
            out.content.starts_with(
                "Edited `lib.rs` (200000 replacements):\n--- a/lib.rs\n+++ b/lib.rs\n@@ -1,"
            ),
            "{}",
            &out.content[..200]
        );
        assert!(out.content.lines().count() <= replace::MAX_DIFF_LINES + 5);
        assert!(
            out.content.ends_with("more replacements are not shown)"),
            "{}",
            &out.content[out.content.len() - 100..]
        );
        assert_eq!(content(&ctx), "let y = 1;\n".repeat(200_000));
    }

    #[tokio::test]
    async fn an_ambiguous_string_lists_the_first_lines_only() {
        let text = "same\n".repeat(40_000);
        let (_tmp, ctx) = setup(&text).await;
        let out = edit(&ctx, "same", "other", false).await;
        assert_eq!(
            out,
            ToolOutput::error(
                "old_string occurs 40000 times in `lib.rs` (at lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 and 39980 more); include more surrounding lines to make it unique, or set replace_all to change every occurrence"
            )
        );
        assert_eq!(content(&ctx), text);
    }

    #[tokio::test]
    async fn the_closest_text_hint_is_bounded_on_long_lines() {
        let mut text: String = (0..2000)
            .map(|i| format!("{i:04}{}\n", "abc ".repeat(750)))
            .collect();
        text.push_str("fn target() {}\n");
        let (_tmp, ctx) = setup(&text).await;
        let out = edit(&ctx, "fn  target() {}", "fn other() {}", false).await;
        assert!(out.is_error);
        assert!(
            out.content.contains("> 2001\tfn target() {}"),
            "{}",
            &out.content[..300]
        );
        // Every line of the hint is cut, whatever the length of the file's lines.
        assert!(out.content.len() < 3 * 1024, "{}", out.content.len());
    }

    #[tokio::test]
    async fn fifos_and_the_agents_definition_are_refused() {
        let (_tmp, ctx) = setup("x\n").await;
        let pipe = ctx.workspace.join("pipe");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &pipe,
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .unwrap();
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            EditFile.call(
                &json!({"path": "pipe", "old_string": "a", "new_string": "b"}),
                &ctx,
            ),
        )
        .await
        .unwrap();
        assert!(
            out.content.starts_with("`pipe` is a FIFO (named pipe)"),
            "{out:?}"
        );

        // The agent directory is the workspace.
        let agent = ToolContext::new(ctx.workspace.clone(), ctx.workspace.clone());
        std::fs::write(ctx.workspace.join("agent.toml"), "name = \"a\"\n").unwrap();
        ReadFile.call(&json!({"path": "agent.toml"}), &agent).await;
        let out = EditFile
            .call(
                &json!({"path": "AGENT.toml", "old_string": "a", "new_string": "b"}),
                &agent,
            )
            .await;
        assert!(
            out.content.contains("part of the agent's own definition"),
            "{out:?}"
        );
        let out = EditFile
            .call(
                &json!({"path": "agent.toml", "old_string": "a", "new_string": "b"}),
                &agent,
            )
            .await;
        assert!(
            out.content.contains("part of the agent's own definition"),
            "{out:?}"
        );
        assert_eq!(
            std::fs::read_to_string(ctx.workspace.join("agent.toml")).unwrap(),
            "name = \"a\"\n"
        );
    }
}
