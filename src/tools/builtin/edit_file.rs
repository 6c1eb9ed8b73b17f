//! `edit_file`: exact string replacement with the stamp checks; returns a unified diff.

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;

use crate::tools::files::{check_fresh, write_atomic};
use crate::tools::state::Stamp;
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};
use crate::catalog::{Availability, BuiltinTool};

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

/// The 1-based line numbers where each occurrence of `needle` starts.
fn occurrence_lines(haystack: &str, needle: &str) -> Vec<usize> {
    haystack
        .match_indices(needle)
        .map(|(at, _)| haystack[..at].matches('\n').count() + 1)
        .collect()
}

/// The lines around the line of `text` most like the first non-blank line of `wanted`.
fn closest_excerpt(text: &str, wanted: &str) -> Option<String> {
    let probe = wanted.lines().find(|l| !l.trim().is_empty())?.trim();
    let lines: Vec<&str> = text.lines().collect();
    let (best, score) = lines
        .iter()
        .take(50_000)
        .enumerate()
        .map(|(i, line)| (i, strsim::normalized_levenshtein(line.trim(), probe)))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if score < 0.5 {
        return None;
    }
    let from = best.saturating_sub(2);
    let to = (best + 3).min(lines.len());
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate().take(to).skip(from) {
        let mark = if i == best { ">" } else { " " };
        out.push_str(&format!("{mark}{:>5}\t{line}\n", i + 1));
    }
    Some(out)
}

fn edit(ctx: &ToolContext, input: Input) -> ToolOutput {
    let path = match ctx.resolve(&input.path) {
        Ok(path) => path,
        Err(e) => return e,
    };
    let shown = ctx.display(&path);
    if !path.exists() {
        return ToolOutput::error(format!(
            "`{shown}` does not exist; create it with write_file"
        ));
    }
    if input.old_string == input.new_string {
        return ToolOutput::error(
            "old_string and new_string are the same: there is nothing to change",
        );
    }
    if input.old_string.is_empty() {
        return ToolOutput::error("old_string is empty; to write a whole file use write_file");
    }
    let bytes = match check_fresh(ctx, &path) {
        Ok(Some(bytes)) => bytes,
        Ok(None) => {
            return ToolOutput::error(format!(
                "`{shown}` does not exist; create it with write_file"
            ));
        }
        Err(refused) => return refused,
    };
    let Ok(text) = String::from_utf8(bytes) else {
        return ToolOutput::error(format!(
            "`{shown}` is not UTF-8 text; edit_file only edits text"
        ));
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
    let found = occurrence_lines(&text, &old);
    if found.is_empty() {
        let mut message = format!(
            "old_string was not found in `{shown}`. It must match the file exactly, including whitespace and indentation, without read_file's line-number prefix."
        );
        if let Some(excerpt) = closest_excerpt(&text, &input.old_string) {
            message.push_str(&format!("\nThe closest text is here:\n{excerpt}"));
        }
        return ToolOutput::error(message.trim_end().to_string());
    }
    if found.len() > 1 && !input.replace_all {
        let at: Vec<String> = found.iter().map(|l| l.to_string()).collect();
        return ToolOutput::error(format!(
            "old_string occurs {} times in `{shown}` (at lines {}); include more surrounding lines to make it unique, or set replace_all to change every occurrence",
            found.len(),
            at.join(", ")
        ));
    }
    let updated = if input.replace_all {
        text.replace(&old, &new)
    } else {
        text.replacen(&old, &new, 1)
    };
    if let Err(e) = write_atomic(&path, updated.as_bytes()) {
        return ToolOutput::error(format!("cannot write `{shown}`: {e}"));
    }
    ctx.state.stamp(&path, Stamp::of(updated.as_bytes()));
    let diff = similar::TextDiff::from_lines(&text, &updated)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{shown}"), &format!("b/{shown}"))
        .to_string();
    let count = if found.len() == 1 {
        "1 replacement".to_string()
    } else {
        format!("{} replacements", found.len())
    };
    ToolOutput::ok(format!("Edited `{shown}` ({count}):\n{}", diff.trim_end()))
}

impl ToolExec for EditFile {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let input: Input = match parse_input(input) {
                Ok(input) => input,
                Err(e) => return e,
            };
            let ctx = ctx.clone();
            tokio::task::spawn_blocking(move || edit(&ctx, input))
                .await
                .unwrap_or_else(|e| ToolOutput::error(format!("edit_file stopped: {e}")))
        }
        .boxed()
    }
}

/// `edit_file` for an agent, configured by its manifest entry.
pub fn build(_tool: &crate::manifest::Tool, _manifest: &crate::manifest::Manifest) -> Result<std::sync::Arc<dyn ToolExec>, String> {
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
}
