//! `read_file`: numbered lines of a text file, paged, never loaded whole; stamps the file.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::tools::state::Stamp;
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};
use crate::catalog::{Availability, BuiltinTool};

/// What the model is told about `read_file`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "read_file",
    description: "Reads a text file from the workspace and returns its lines numbered like \
        `cat -n` (line number, a tab, then the line). By default it returns the first 2000 \
        lines; for longer files pass offset (the 1-based line to start at) and limit (how \
        many lines) to read the rest in pieces. Lines longer than 2000 characters are cut. \
        Binary files are refused, and it reads files, not folders (use glob to list a \
        folder). Reading records the file's current content: write_file and edit_file on an \
        existing file require that it was read with this tool first and has not changed \
        since. The line-number prefix is not part of the file; never copy it into \
        edit_file's old_string or new_string. Prefer this over cat, head or tail in bash. \
        When you need several files, read them all in the same step; the reads run in \
        parallel.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "path": {
                "type": "string",
                "description": "The file to read, relative to the workspace root (an absolute path inside the workspace is also accepted)."
            },
            "offset": {
                "type": "integer",
                "minimum": 1,
                "description": "The 1-based line number to start reading at. Omit it to start at the first line."
            },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "default": 2000,
                "description": "The maximum number of lines to return (default 2000)."
            }
        },
        "required": ["path"],
        "additionalProperties": false
    }"#,
    read_only: true,
    timeout_secs: 30,
    settings: &[],
    availability: Availability::Always,
};

/// Lines returned when the model gives no `limit`.
pub const DEFAULT_LIMIT: u64 = 2000;
/// Characters of one line shown at most.
pub const MAX_LINE_CHARS: usize = 2000;

#[derive(Debug, Deserialize)]
struct Input {
    path: String,
    offset: Option<u64>,
    limit: Option<u64>,
}

/// The `read_file` tool.
#[derive(Debug, Clone, Copy)]
pub struct ReadFile;

/// What a read produced.
#[derive(Debug)]
struct Page {
    text: String,
    stamp: Stamp,
}

/// Reads lines `offset..offset+limit` (1-based) of `path`, hashing the whole file as it goes.
fn read(path: &Path, shown: &str, offset: u64, limit: u64) -> Result<Page, String> {
    let file = std::fs::File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => format!("`{shown}` does not exist"),
        _ => format!("cannot read `{shown}`: {e}"),
    })?;
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    if meta.is_dir() {
        return Err(format!(
            "`{shown}` is a folder, not a file: use glob to list it"
        ));
    }
    let mut reader = BufReader::with_capacity(64 * 1024, file);
    // Like git: a NUL byte near the start means binary, whatever comes before it.
    let head = reader
        .fill_buf()
        .map_err(|e| format!("cannot read `{shown}`: {e}"))?;
    if head[..head.len().min(8192)].contains(&0) {
        return Err(format!(
            "`{shown}` is a binary file (it contains NUL bytes); read_file only reads text"
        ));
    }
    let mut hasher = Sha256::new();
    let mut total_bytes: u64 = 0;
    let mut line = Vec::new();
    let mut number: u64 = 0;
    let mut out = String::new();
    let end = offset.saturating_add(limit);
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| format!("cannot read `{shown}`: {e}"))?;
        if n == 0 {
            break;
        }
        hasher.update(&line);
        total_bytes += n as u64;
        if line.contains(&0) {
            return Err(format!(
                "`{shown}` is a binary file (it contains NUL bytes); read_file only reads text"
            ));
        }
        let Ok(text) = std::str::from_utf8(&line) else {
            return Err(format!(
                "`{shown}` is not UTF-8 text (line {}); read_file only reads text",
                number + 1
            ));
        };
        number += 1;
        if number >= offset && number < end {
            let text = text.strip_suffix('\n').unwrap_or(text);
            let text = text.strip_suffix('\r').unwrap_or(text);
            out.push_str(&format!("{number:>6}\t"));
            match text.char_indices().nth(MAX_LINE_CHARS) {
                Some((cut, _)) => {
                    out.push_str(&text[..cut]);
                    out.push_str(&format!(
                        " … [line cut at {MAX_LINE_CHARS} of {} characters]",
                        text.chars().count()
                    ));
                }
                None => out.push_str(text),
            }
            out.push('\n');
        }
    }
    let stamp = Stamp {
        sha256: hasher.finalize().into(),
        len: total_bytes,
    };
    if number == 0 {
        return Ok(Page {
            text: format!("(`{shown}` is empty)"),
            stamp,
        });
    }
    if offset > number {
        return Err(format!(
            "offset {offset} is past the end of `{shown}`, which has {number} lines"
        ));
    }
    let last = number.min(end - 1);
    if offset > 1 || last < number {
        out.push_str(&format!(
            "… (lines {offset}–{last} of {number}{})",
            if last < number {
                format!("; pass offset={} to read on", last + 1)
            } else {
                String::new()
            }
        ));
    } else if out.ends_with('\n') {
        out.pop();
    }
    Ok(Page { text: out, stamp })
}

impl ToolExec for ReadFile {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let input: Input = match parse_input(input) {
                Ok(input) => input,
                Err(e) => return e,
            };
            let path: PathBuf = match ctx.resolve_readable(&input.path) {
                Ok(path) => path,
                Err(e) => return e,
            };
            let shown = ctx.display(&path);
            let offset = input.offset.unwrap_or(1).max(1);
            let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
            let task_path = path.clone();
            let result =
                tokio::task::spawn_blocking(move || read(&task_path, &shown, offset, limit)).await;
            match result {
                Ok(Ok(read)) => {
                    ctx.state.stamp(&path, read.stamp);
                    ToolOutput::ok(read.text)
                }
                Ok(Err(e)) => ToolOutput::error(e),
                Err(e) => ToolOutput::error(format!("read_file stopped: {e}")),
            }
        }
        .boxed()
    }
}

/// `read_file` for an agent, configured by its manifest entry.
pub fn build(_tool: &crate::manifest::Tool, _manifest: &crate::manifest::Manifest) -> Result<std::sync::Arc<dyn ToolExec>, String> {
    Ok(std::sync::Arc::new(ReadFile))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn setup() -> (tempfile::TempDir, ToolContext) {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let ctx = ToolContext::new(root.clone(), root.join("agent"));
        (tmp, ctx)
    }

    async fn read_file(ctx: &ToolContext, input: Value) -> ToolOutput {
        ReadFile.call(&input, ctx).await
    }

    #[tokio::test]
    async fn lines_are_numbered_like_cat_n_and_the_file_is_stamped() {
        let (_tmp, ctx) = setup();
        std::fs::write(ctx.workspace.join("a.txt"), "one\ntwo\r\nthree").unwrap();
        let out = read_file(&ctx, json!({"path": "a.txt"})).await;
        assert!(!out.is_error, "{out:?}");
        assert_eq!(out.content, "     1\tone\n     2\ttwo\n     3\tthree");
        assert_eq!(
            ctx.state.stamp_of(&ctx.workspace.join("a.txt")),
            Some(Stamp::of(b"one\ntwo\r\nthree"))
        );
    }

    #[tokio::test]
    async fn offset_and_limit_page_through_a_long_file() {
        let (_tmp, ctx) = setup();
        let text: String = (1..=5000).map(|i| format!("line {i}\n")).collect();
        std::fs::write(ctx.workspace.join("long.txt"), &text).unwrap();
        let first = read_file(&ctx, json!({"path": "long.txt"})).await;
        assert_eq!(first.content.lines().count(), 2001);
        assert!(
            first
                .content
                .ends_with("… (lines 1–2000 of 5000; pass offset=2001 to read on)"),
            "{}",
            &first.content[first.content.len() - 80..]
        );
        let page = read_file(
            &ctx,
            json!({"path": "long.txt", "offset": 4999, "limit": 10}),
        )
        .await;
        assert_eq!(
            page.content,
            "  4999\tline 4999\n  5000\tline 5000\n… (lines 4999–5000 of 5000)"
        );
        let past = read_file(&ctx, json!({"path": "long.txt", "offset": 6000})).await;
        assert!(
            past.is_error && past.content.contains("past the end"),
            "{past:?}"
        );
        // The stamp covers the whole file, not only the page.
        assert_eq!(
            ctx.state
                .stamp_of(&ctx.workspace.join("long.txt"))
                .unwrap()
                .len,
            text.len() as u64
        );
    }

    #[tokio::test]
    async fn long_lines_are_cut() {
        let (_tmp, ctx) = setup();
        std::fs::write(ctx.workspace.join("wide.txt"), "é".repeat(3000)).unwrap();
        let out = read_file(&ctx, json!({"path": "wide.txt"})).await;
        assert!(
            out.content
                .ends_with("… [line cut at 2000 of 3000 characters]")
        );
        assert_eq!(out.content.chars().filter(|c| *c == 'é').count(), 2000);
    }

    #[tokio::test]
    async fn binary_and_non_utf8_files_are_refused() {
        let (_tmp, ctx) = setup();
        std::fs::write(
            ctx.workspace.join("img.png"),
            b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        )
        .unwrap();
        let out = read_file(&ctx, json!({"path": "img.png"})).await;
        assert!(out.is_error);
        assert_eq!(
            out.content,
            "`img.png` is a binary file (it contains NUL bytes); read_file only reads text"
        );
        std::fs::write(ctx.workspace.join("latin1.txt"), b"caf\xe9\n").unwrap();
        let out = read_file(&ctx, json!({"path": "latin1.txt"})).await;
        assert_eq!(
            out.content,
            "`latin1.txt` is not UTF-8 text (line 1); read_file only reads text"
        );
        assert_eq!(ctx.state.stamp_of(&ctx.workspace.join("img.png")), None);
    }

    #[tokio::test]
    async fn folders_missing_files_and_escapes_are_errors() {
        let (_tmp, ctx) = setup();
        std::fs::create_dir(ctx.workspace.join("src")).unwrap();
        assert_eq!(
            read_file(&ctx, json!({"path": "src"})).await.content,
            "`src` is a folder, not a file: use glob to list it"
        );
        assert_eq!(
            read_file(&ctx, json!({"path": "nope.txt"})).await.content,
            "`nope.txt` does not exist"
        );
        let escape = read_file(&ctx, json!({"path": "../../etc/passwd"})).await;
        assert!(
            escape.is_error && escape.content.contains("outside the workspace"),
            "{escape:?}"
        );
        let empty_path = ctx.workspace.join("empty");
        std::fs::write(&empty_path, "").unwrap();
        assert_eq!(
            read_file(&ctx, json!({"path": "empty"})).await.content,
            "(`empty` is empty)"
        );
    }
}
