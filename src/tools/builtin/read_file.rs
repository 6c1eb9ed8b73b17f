//! `read_file`: numbered lines of a text file, paged, read as a stream in bounded
//! memory; stamps the file.

use std::fs::File;
use std::io::Read;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::catalog::{Availability, BuiltinTool};
use crate::tools::beneath::Entry;
use crate::tools::files::{CHUNK, Stopped, blocking, interrupted, not_regular};
use crate::tools::state::Stamp;
use crate::tools::workspace::{Access, Resolved};
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};

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
/// Text returned by one call at most; the rest is read by paging on.
pub const MAX_PAGE_BYTES: usize = 256 * 1024;

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

/// The page being built: lines `offset..end` (1-based), each cut at
/// [`MAX_LINE_CHARS`], the whole at about [`MAX_PAGE_BYTES`]. Only the shown part of a
/// line is kept, so a line of any length costs at most a few KiB.
struct Pager {
    offset: u64,
    end: u64,
    /// Lines completed so far.
    number: u64,
    /// Whether the current line has any byte yet.
    started: bool,
    /// The current line is shown.
    shown: bool,
    kept: Vec<u8>,
    kept_chars: usize,
    /// Characters of the current line in all.
    chars: u64,
    ends_with_cr: bool,
    out: String,
    /// The last line shown.
    last: u64,
    full: bool,
}

impl Pager {
    fn new(offset: u64, limit: u64) -> Pager {
        Pager {
            offset,
            end: offset.saturating_add(limit),
            number: 0,
            started: false,
            shown: false,
            kept: Vec::new(),
            kept_chars: 0,
            chars: 0,
            ends_with_cr: false,
            out: String::new(),
            last: 0,
            full: false,
        }
    }

    /// Takes valid UTF-8 bytes of the file, in order.
    fn push(&mut self, mut bytes: &[u8]) {
        while !bytes.is_empty() {
            match memchr::memchr(b'\n', bytes) {
                Some(at) => {
                    self.add(&bytes[..at]);
                    self.end_line();
                    bytes = &bytes[at + 1..];
                }
                None => {
                    self.add(bytes);
                    bytes = &[];
                }
            }
        }
    }

    /// Starts the current line if it has not started yet.
    fn begin(&mut self) {
        if !self.started {
            self.started = true;
            let n = self.number + 1;
            self.shown = !self.full && n >= self.offset && n < self.end;
        }
    }

    /// Adds a piece of the current line (no `\n` in it).
    fn add(&mut self, piece: &[u8]) {
        self.begin();
        let Some(&last) = piece.last() else {
            return;
        };
        self.ends_with_cr = last == b'\r';
        if !self.shown {
            return;
        }
        // Whole characters are kept up to one past the limit (the line is cut when it
        // ends and its length is known); a character split between two pieces is kept
        // whole because its continuation bytes are taken until the next start.
        let mut taken = 0;
        for (i, b) in piece.iter().enumerate() {
            if (b & 0xC0) != 0x80 {
                if self.kept_chars > MAX_LINE_CHARS {
                    break;
                }
                self.kept_chars += 1;
            }
            taken = i + 1;
        }
        self.kept.extend_from_slice(&piece[..taken]);
        self.chars += piece.iter().filter(|b| (**b & 0xC0) != 0x80).count() as u64;
    }

    fn end_line(&mut self) {
        self.begin();
        self.number += 1;
        if self.shown {
            let mut chars = self.chars;
            if self.ends_with_cr {
                chars -= 1;
            }
            let mut text = String::from_utf8_lossy(&self.kept).into_owned();
            if self.ends_with_cr && text.ends_with('\r') {
                text.pop();
            }
            self.out.push_str(&format!("{:>6}\t", self.number));
            if chars > MAX_LINE_CHARS as u64 {
                let cut = text
                    .char_indices()
                    .nth(MAX_LINE_CHARS)
                    .map_or(text.len(), |(at, _)| at);
                self.out.push_str(&text[..cut]);
                self.out.push_str(&format!(
                    " … [line cut at {MAX_LINE_CHARS} of {chars} characters]"
                ));
            } else {
                self.out.push_str(&text);
            }
            self.out.push('\n');
            self.last = self.number;
            self.full = self.out.len() >= MAX_PAGE_BYTES;
        }
        self.started = false;
        self.shown = false;
        self.kept.clear();
        self.kept_chars = 0;
        self.chars = 0;
        self.ends_with_cr = false;
    }
}

/// Reads lines `offset..offset+limit` (1-based) of `file`, hashing the whole file as it
/// goes; memory is bounded by the page, whatever the size of the file or of a line.
fn read(
    mut file: File,
    shown: &str,
    offset: u64,
    limit: u64,
    stop: &CancellationToken,
) -> Result<Result<Page, String>, Stopped> {
    let binary =
        || format!("`{shown}` is a binary file (it contains NUL bytes); read_file only reads text");
    let mut hasher = Sha256::new();
    let mut total: u64 = 0;
    let mut pager = Pager::new(offset, limit);
    let mut buf = vec![0u8; CHUNK];
    // The bytes of a character cut by the end of the last chunk.
    let mut carry: Vec<u8> = Vec::new();
    loop {
        if stop.is_cancelled() {
            return Err(Stopped);
        }
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Ok(Err(format!("cannot read `{shown}`: {e}"))),
        };
        let chunk = &buf[..n];
        hasher.update(chunk);
        total += n as u64;
        if memchr::memchr(0, chunk).is_some() {
            return Ok(Err(binary()));
        }
        let joined;
        let data: &[u8] = if carry.is_empty() {
            chunk
        } else {
            joined = [carry.as_slice(), chunk].concat();
            &joined
        };
        let valid = match valid_prefix(data, shown, pager.number) {
            Ok(valid) => valid,
            Err(message) => return Ok(Err(message)),
        };
        pager.push(&data[..valid]);
        carry = data[valid..].to_vec();
    }
    if !carry.is_empty() {
        return Ok(Err(format!(
            "`{shown}` is not UTF-8 text (line {}); read_file only reads text",
            pager.number + 1
        )));
    }
    if pager.started {
        pager.end_line();
    }
    let stamp = Stamp {
        sha256: hasher.finalize().into(),
        len: total,
    };
    let number = pager.number;
    if number == 0 {
        return Ok(Ok(Page {
            text: format!("(`{shown}` is empty)"),
            stamp,
        }));
    }
    if offset > number {
        return Ok(Err(format!(
            "offset {offset} is past the end of `{shown}`, which has {number} lines"
        )));
    }
    Ok(Ok(Page {
        text: page_text(pager, offset),
        stamp,
    }))
}

/// How much of `data` (which follows line `lines`) is whole UTF-8 characters: all of it,
/// or all but a character cut by the end of the chunk; the answer for text that is not
/// UTF-8.
fn valid_prefix(data: &[u8], shown: &str, lines: u64) -> Result<usize, String> {
    match std::str::from_utf8(data) {
        Ok(_) => Ok(data.len()),
        Err(e) if e.error_len().is_none() => Ok(e.valid_up_to()),
        Err(e) => {
            let before = memchr::memchr_iter(b'\n', &data[..e.valid_up_to()]).count();
            Err(format!(
                "`{shown}` is not UTF-8 text (line {}); read_file only reads text",
                lines + before as u64 + 1
            ))
        }
    }
}

/// The lines read from `offset` on, with a last line that says which lines of how many
/// they are when they are not the whole file.
fn page_text(pager: Pager, offset: u64) -> String {
    let number = pager.number;
    let mut out = pager.out;
    let last = pager.last;
    if offset > 1 || last < number {
        let on = if last < number {
            format!("; pass offset={} to read on", last + 1)
        } else {
            String::new()
        };
        let capped = if pager.full && last < number && last + 1 < pager.end {
            format!(
                ", as one call returns at most {} KiB",
                MAX_PAGE_BYTES / 1024
            )
        } else {
            String::new()
        };
        out.push_str(&format!(
            "… (lines {offset}–{last} of {number}{capped}{on})"
        ));
    } else if out.ends_with('\n') {
        out.pop();
    }
    out
}

/// The file `resolved` names, or the answer for what it is instead.
fn regular(
    ctx: &ToolContext,
    resolved: Resolved,
) -> Result<(File, std::path::PathBuf), ToolOutput> {
    let shown = ctx.display(&resolved.path);
    match resolved.found.entry {
        Entry::File(file) => Ok((file, resolved.path)),
        Entry::Missing => Err(ToolOutput::error(format!("`{shown}` does not exist"))),
        Entry::Dir => Err(ToolOutput::error(format!(
            "`{shown}` is a folder, not a file: use glob to list it"
        ))),
        Entry::Other(kind) => Err(not_regular(&shown, kind)),
    }
}

impl ToolExec for ReadFile {
    fn call<'a>(&'a self, input: &'a Value, ctx: &'a ToolContext) -> BoxFuture<'a, ToolOutput> {
        async move {
            let input: Input = match parse_input(input) {
                Ok(input) => input,
                Err(e) => return e,
            };
            let (file, path) = match ctx
                .resolve(&input.path, Access::Read)
                .and_then(|resolved| regular(ctx, resolved))
            {
                Ok(opened) => opened,
                Err(e) => return e,
            };
            let shown = ctx.display(&path);
            let offset = input.offset.unwrap_or(1).max(1);
            let limit = input.limit.unwrap_or(DEFAULT_LIMIT).max(1);
            match blocking(ctx, None, move |stop| {
                read(file, &shown, offset, limit, &stop)
            })
            .await
            {
                Ok((Ok(Ok(page)), _)) => {
                    ctx.state.stamp(&path, page.stamp);
                    ToolOutput::ok(page.text)
                }
                Ok((Ok(Err(e)), _)) => ToolOutput::error(e),
                Ok((Err(Stopped), _)) | Err(Stopped) => interrupted(),
            }
        }
        .boxed()
    }
}

/// `read_file` for an agent, configured by its manifest entry.
pub fn build(
    _tool: &crate::manifest::Tool,
    _manifest: &std::sync::Arc<crate::manifest::Manifest>,
) -> Result<std::sync::Arc<dyn ToolExec>, String> {
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

    /// Fails instead of hanging when a call never returns.
    async fn returns<F: std::future::Future>(call: F) -> F::Output {
        tokio::time::timeout(std::time::Duration::from_secs(60), call)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn fifos_and_sockets_are_refused_without_blocking() {
        let (_tmp, ctx) = setup();
        let pipe = ctx.workspace.join("pipe");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &pipe,
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .unwrap();
        let out = returns(read_file(&ctx, json!({"path": "pipe"}))).await;
        assert_eq!(
            out,
            ToolOutput::error(
                "`pipe` is a FIFO (named pipe), not a regular file: file tools only read and write regular files"
            )
        );
        let _socket = std::os::unix::net::UnixListener::bind(ctx.workspace.join("sock")).unwrap();
        let out = returns(read_file(&ctx, json!({"path": "sock"}))).await;
        assert!(
            out.content
                .starts_with("`sock` is a socket, not a regular file"),
            "{out:?}"
        );
        // A device is outside the workspace, and a link to one is refused as such.
        std::os::unix::fs::symlink("/dev/zero", ctx.workspace.join("zero")).unwrap();
        let out = returns(read_file(&ctx, json!({"path": "zero"}))).await;
        assert!(
            out.content.contains("a symlink leads to `/dev/zero`"),
            "{out:?}"
        );
    }

    #[tokio::test]
    async fn a_page_is_capped_in_bytes_and_says_where_to_go_on() {
        let (_tmp, ctx) = setup();
        let line = "x".repeat(1999);
        let text: String = (0..1000).map(|_| format!("{line}\n")).collect();
        std::fs::write(ctx.workspace.join("wide.txt"), &text).unwrap();
        let out = read_file(&ctx, json!({"path": "wide.txt", "limit": 1000})).await;
        let shown = out.content.lines().count() - 1;
        assert!(
            out.content.len() <= MAX_PAGE_BYTES + 2 * 2010,
            "{}",
            out.content.len()
        );
        assert!(
            out.content.ends_with(&format!(
                "… (lines 1–{shown} of 1000, as one call returns at most 256 KiB; pass offset={} to read on)",
                shown + 1
            )),
            "{}",
            &out.content[out.content.len() - 120..]
        );
        // The stamp still covers the whole file.
        assert_eq!(
            ctx.state.stamp_of(&ctx.workspace.join("wide.txt")),
            Some(Stamp::of(text.as_bytes()))
        );
    }

    #[tokio::test]
    async fn a_long_line_costs_only_its_shown_part_and_multibyte_text_is_cut_whole() {
        let (_tmp, ctx) = setup();
        // Characters split across read chunks stay whole.
        let text = format!("{}\nend\r\n", "é€".repeat(100_000));
        std::fs::write(ctx.workspace.join("wide.txt"), &text).unwrap();
        let out = read_file(&ctx, json!({"path": "wide.txt"})).await;
        let first = out.content.lines().next().unwrap();
        assert_eq!(
            first,
            format!(
                "     1\t{} … [line cut at 2000 of 200000 characters]",
                "é€".repeat(1000)
            )
        );
        assert!(out.content.ends_with("     2\tend"), "{}", out.content);
    }

    #[tokio::test]
    async fn whole_floats_are_accepted_for_integers() {
        let (_tmp, ctx) = setup();
        std::fs::write(ctx.workspace.join("a.txt"), "one\ntwo\n").unwrap();
        let out = read_file(&ctx, json!({"path": "a.txt", "offset": 2.0, "limit": 1.0})).await;
        assert_eq!(out, ToolOutput::ok("     2\ttwo\n… (lines 2–2 of 2)"));
    }

    #[tokio::test]
    async fn the_agents_state_is_not_readable_through_any_path() {
        let (_tmp, ctx) = setup();
        let sessions = ctx.workspace.join("agent/.eve/sessions");
        std::fs::create_dir_all(&sessions).unwrap();
        std::fs::write(sessions.join("s1.jsonl"), "{\"secret\": true}\n").unwrap();
        let ctx = ToolContext::new(ctx.workspace.clone(), ctx.workspace.join("agent"));
        std::os::unix::fs::symlink("agent/.eve", ctx.workspace.join("state")).unwrap();
        for path in [
            "agent/.eve/sessions/s1.jsonl",
            "state/sessions/s1.jsonl",
            "agent/./.EVE/sessions/s1.jsonl",
        ] {
            let out = read_file(&ctx, json!({"path": path})).await;
            assert!(out.is_error, "{path}: {out:?}");
            assert!(
                out.content.contains("the agent's `.eve/` folder"),
                "{path}: {out:?}"
            );
        }
    }
}
