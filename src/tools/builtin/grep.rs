//! `grep`: searches file contents for a regular expression with ripgrep's engine.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::FutureExt;
use futures_util::future::BoxFuture;
use globset::GlobMatcher;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::Deserialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::glob::{compile, timed_out_note};
use crate::catalog::{Availability, BuiltinTool};
use crate::tools::beneath::{Entry, describe};
use crate::tools::files::{Stopped, blocking};
use crate::tools::walk::{Start, walk};
use crate::tools::workspace::Access;
use crate::tools::{ToolContext, ToolExec, ToolOutput, parse_input};

/// What the model is told about `grep`, its schema and its settings.
pub const SPEC: BuiltinTool = BuiltinTool {
    name: "grep",
    description: "Searches file contents for a regular expression with ripgrep's engine and \
        syntax (Rust regex: no look-around or backreferences; escape literal braces and \
        parentheses, e.g. `fn main\\(`). Patterns match within a single line. It searches \
        path (a file or folder, default the workspace root), honours .gitignore and skips \
        binary files; glob restricts which files are searched, e.g. `*.py` or \
        `**/*.{ts,tsx}`. output_mode chooses the answer: files_with_matches (the default) \
        lists the paths of matching files, content shows the matching lines with their line \
        numbers (plus context lines around each match when context is set), and count gives \
        the number of matches per file. Results are capped; head_limit caps them lower. \
        Start with files_with_matches to locate code, then read_file or content mode to see \
        it. Prefer this over grep or rg in bash.",
    input_schema: r#"{
        "type": "object",
        "properties": {
            "pattern": {
                "type": "string",
                "description": "The regular expression to search for (Rust regex / ripgrep syntax)."
            },
            "path": {
                "type": "string",
                "description": "The file or folder to search, relative to the workspace root (an absolute path inside the workspace is also accepted). Omit it to search the whole workspace."
            },
            "glob": {
                "type": "string",
                "description": "Only search files whose paths match this glob pattern, e.g. *.rs or src/**/*.{ts,tsx}."
            },
            "output_mode": {
                "type": "string",
                "enum": ["content", "files_with_matches", "count"],
                "default": "files_with_matches",
                "description": "content: matching lines with line numbers; files_with_matches: paths of matching files (default); count: number of matches per file."
            },
            "case_insensitive": {
                "type": "boolean",
                "default": false,
                "description": "Ignore case when matching (default false)."
            },
            "context": {
                "type": "integer",
                "minimum": 0,
                "maximum": 20,
                "description": "Lines of context to show before and after each match (0 to 20); only used in content mode."
            },
            "head_limit": {
                "type": "integer",
                "minimum": 1,
                "description": "Return at most this many results (lines, files or counts, depending on output_mode)."
            }
        },
        "required": ["pattern"],
        "additionalProperties": false
    }"#,
    read_only: true,
    timeout_secs: 60,
    settings: &[],
    availability: Availability::Always,
};

/// Lines shown in content mode unless head_limit says otherwise.
pub const MAX_CONTENT_LINES: usize = 250;
/// Files (or counts) listed unless head_limit says otherwise.
pub const MAX_ENTRIES: usize = 200;
/// Longer output lines are cut.
pub const MAX_LINE_CHARS: usize = 500;
/// The most context lines asked for.
const MAX_CONTEXT: usize = 20;
/// A file with a line longer than this is skipped (the searcher holds a whole line).
pub const MAX_LINE_BYTES: usize = 8 * 1024 * 1024;
/// Skipped files named at most in a note.
const MAX_NAMED: usize = 5;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Mode {
    Content,
    #[default]
    FilesWithMatches,
    Count,
}

#[derive(Debug, Deserialize)]
struct Input {
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    #[serde(default)]
    output_mode: Mode,
    #[serde(default)]
    case_insensitive: bool,
    #[serde(default)]
    context: usize,
    head_limit: Option<usize>,
}

/// The `grep` tool.
#[derive(Debug, Clone)]
pub struct GrepTool {
    /// The search stops after this long and shows what it found so far.
    pub timeout: Duration,
}

impl Default for GrepTool {
    fn default() -> GrepTool {
        GrepTool {
            timeout: Duration::from_secs(60),
        }
    }
}

impl ToolExec for GrepTool {
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

/// What one file gave.
#[derive(Debug)]
struct Hits {
    path: PathBuf,
    /// Matching lines; in content mode, matching and context lines.
    total: usize,
    /// Content mode: the first lines, as many as could be shown.
    lines: Vec<Line>,
}

#[derive(Debug)]
enum Line {
    /// A gap between groups of lines (`--`).
    Break,
    Text {
        number: u64,
        matched: bool,
        /// The start of the line, at most [`MAX_LINE_CHARS`] characters.
        text: String,
        /// The line's length in characters.
        chars: usize,
    },
}

/// Files left out of the answer, and why.
#[derive(Debug, Default)]
struct Skipped {
    /// Binary files with a match before their first NUL byte.
    binary: Vec<PathBuf>,
    /// Files with a line longer than [`MAX_LINE_BYTES`].
    long_lines: Vec<PathBuf>,
}

/// One walker thread's tools and findings.
struct Worker {
    searcher: Searcher,
    /// Searches the part of a binary file before its first NUL byte.
    prefix: Searcher,
    matcher: RegexMatcher,
    found: Vec<Hits>,
    skipped: Skipped,
}

async fn run(
    input: &Input,
    ctx: &ToolContext,
    timeout: Duration,
) -> Result<ToolOutput, ToolOutput> {
    let given = input.path.as_deref().unwrap_or(".");
    let resolved = ctx.resolve(given, Access::Search)?;
    let is_file = is_file(given, &resolved.found.entry)?;
    let root = resolved.path.clone();
    let matcher = matcher(input)?;
    // The glob is matched against paths relative to the folder searched (for a single
    // file, against its name).
    let base = if is_file {
        root.parent().unwrap_or(&root).to_path_buf()
    } else {
        root.clone()
    };
    let filter = match &input.glob {
        Some(glob) => Some(compile(glob, &ctx.workspace, &base).map_err(ToolOutput::error)?),
        None => None,
    };

    let mode = input.output_mode;
    let (context, cap) = context_and_cap(input);
    let (searcher, prefix) = searchers(mode, context);

    let agents = ctx.policy().agent_ids();
    let workspace = ctx.workspace.clone();
    let ((found, skipped), timed_out) = blocking(ctx, Some(timeout), move |stop| {
        let worker = || Worker {
            searcher: searcher.build(),
            prefix: prefix.build(),
            matcher: matcher.clone(),
            found: Vec::new(),
            skipped: Skipped::default(),
        };
        let wanted = |path: &Path| filter.as_ref().is_none_or(|f| glob_matches(f, &base, path));
        let workers = match resolved.found.entry {
            Entry::File(file) => {
                let mut single = worker();
                if wanted(&resolved.path) {
                    search(&mut single, file, resolved.path.clone(), mode, cap, &stop);
                }
                vec![single]
            }
            _ => {
                let start = Start {
                    levels: &resolved.found.levels,
                    root: &workspace,
                    path: &resolved.path,
                    agents: &agents,
                };
                walk(&start, &stop, worker, |worker: &mut Worker, entry| {
                    if wanted(entry.path)
                        && let Some(file) = entry.open()
                    {
                        search(worker, file, entry.path.to_path_buf(), mode, cap, &stop);
                    }
                })
            }
        };
        merge(workers)
    })
    .await
    .map_err(|Stopped| ToolOutput::error("the search was interrupted"))?;

    let mut text = if found.is_empty() {
        no_matches(input, ctx, &root)
    } else {
        render(found, mode, context > 0, cap, ctx)
    };
    text.push_str(&skipped_note(&skipped, ctx));
    if timed_out {
        text.push_str(&timed_out_note(timeout));
    }
    Ok(ToolOutput::ok(text))
}

/// Whether the path searched is a file (or a folder); an error for anything else.
fn is_file(given: &str, entry: &Entry) -> Result<bool, ToolOutput> {
    match entry {
        Entry::File(_) => Ok(true),
        Entry::Dir => Ok(false),
        Entry::Missing => Err(ToolOutput::error(format!("`{given}` does not exist"))),
        Entry::Other(kind) => Err(ToolOutput::error(format!(
            "`{given}` is {}, not a file or a folder: grep searches regular files",
            describe(*kind)
        ))),
    }
}

/// The lines of context around each match (content mode only) and the most lines or
/// entries shown.
fn context_and_cap(input: &Input) -> (usize, usize) {
    let mode = input.output_mode;
    let context = if mode == Mode::Content {
        input.context.min(MAX_CONTEXT)
    } else {
        0
    };
    let cap = input.head_limit.unwrap_or(match mode {
        Mode::Content => MAX_CONTENT_LINES,
        Mode::FilesWithMatches | Mode::Count => MAX_ENTRIES,
    });
    (context, cap)
}

/// The input's pattern, compiled.
fn matcher(input: &Input) -> Result<RegexMatcher, ToolOutput> {
    RegexMatcherBuilder::new()
        .case_insensitive(input.case_insensitive)
        .line_terminator(Some(b'\n'))
        .build(&input.pattern)
        .map_err(|e| {
            ToolOutput::error(format!(
                "invalid regular expression `{}`: {e}",
                input.pattern
            ))
        })
}

/// The searcher of text files (with `context` lines around each match in content
/// mode), and the one of the part of a binary file before its first NUL byte.
fn searchers(mode: Mode, context: usize) -> (SearcherBuilder, SearcherBuilder) {
    let mut searcher = SearcherBuilder::new();
    searcher
        .binary_detection(BinaryDetection::quit(b'\x00'))
        .line_number(mode == Mode::Content)
        .before_context(context)
        .after_context(context)
        .heap_limit(Some(MAX_LINE_BYTES));
    let mut prefix = SearcherBuilder::new();
    prefix
        .binary_detection(BinaryDetection::none())
        .heap_limit(Some(MAX_LINE_BYTES));
    (searcher, prefix)
}

/// The walker threads' findings, together.
fn merge(workers: Vec<Worker>) -> (Vec<Hits>, Skipped) {
    let mut found = Vec::new();
    let mut skipped = Skipped::default();
    for worker in workers {
        found.extend(worker.found);
        skipped.binary.extend(worker.skipped.binary);
        skipped.long_lines.extend(worker.skipped.long_lines);
    }
    (found, skipped)
}

/// The answer when nothing matched.
fn no_matches(input: &Input, ctx: &ToolContext, root: &Path) -> String {
    let mut text = format!(
        "No matches for `{}` in `{}`",
        input.pattern,
        ctx.display(root)
    );
    if let Some(glob) = &input.glob {
        text.push_str(&format!(" (files matching `{glob}`)"));
    }
    text.push('.');
    text
}

/// A note on the files left out, if any.
fn skipped_note(skipped: &Skipped, ctx: &ToolContext) -> String {
    let name = |paths: &[PathBuf]| {
        let mut paths: Vec<&PathBuf> = paths.iter().collect();
        paths.sort();
        let mut names: Vec<String> = paths
            .iter()
            .take(MAX_NAMED)
            .map(|p| format!("`{}`", ctx.display(p)))
            .collect();
        if paths.len() > MAX_NAMED {
            names.push(format!("and {} more", paths.len() - MAX_NAMED));
        }
        names.join(", ")
    };
    let mut note = String::new();
    if !skipped.binary.is_empty() {
        let files = files(skipped.binary.len());
        note.push_str(&format!(
            "\n({files} matched before a NUL byte and {} skipped as binary: {})",
            if skipped.binary.len() == 1 {
                "was"
            } else {
                "were"
            },
            name(&skipped.binary)
        ));
    }
    if !skipped.long_lines.is_empty() {
        let files = files(skipped.long_lines.len());
        note.push_str(&format!(
            "\n({files} skipped: a line longer than {} MiB: {})",
            MAX_LINE_BYTES / (1024 * 1024),
            name(&skipped.long_lines)
        ));
    }
    note
}

fn files(n: usize) -> String {
    if n == 1 {
        "1 file".into()
    } else {
        format!("{n} files")
    }
}

fn glob_matches(filter: &GlobMatcher, base: &Path, path: &Path) -> bool {
    filter.is_match(path.strip_prefix(base).unwrap_or(path))
}

/// A file read that fails once the search is stopped.
struct Stoppable<'a> {
    file: File,
    stop: &'a CancellationToken,
}

impl Read for Stoppable<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.stop.is_cancelled() {
            return Err(io::Error::other("the search was stopped"));
        }
        self.file.read(buf)
    }
}

/// Searches one opened file and records what it gave, if anything.
fn search(
    worker: &mut Worker,
    file: File,
    path: PathBuf,
    mode: Mode,
    cap: usize,
    stop: &CancellationToken,
) {
    let mut sink = FileSink {
        mode,
        keep: cap,
        kept: 0,
        total: 0,
        lines: Vec::new(),
        binary: None,
    };
    let mut reader = Stoppable { file, stop };
    let searched = worker
        .searcher
        .search_reader(&worker.matcher, &mut reader, &mut sink);
    match searched {
        Err(e) if e.to_string().contains("allocation limit") => {
            worker.skipped.long_lines.push(path);
        }
        // Unreadable files are skipped, like ripgrep's quiet mode.
        Err(_) => {}
        Ok(()) => match sink.binary {
            // The searcher stops at a NUL byte without searching the buffer it is in,
            // so the text before it is searched here, to say the file was skipped.
            Some(offset) if sink.total > 0 || matches_before(worker, &mut reader, offset) => {
                worker.skipped.binary.push(path);
            }
            Some(_) => {}
            None if sink.total > 0 => worker.found.push(Hits {
                path,
                total: sink.total,
                lines: sink.lines,
            }),
            None => {}
        },
    }
}

/// Whether the first `len` bytes of the file hold a match.
fn matches_before(worker: &mut Worker, reader: &mut Stoppable<'_>, len: u64) -> bool {
    use std::io::Seek;
    if reader.file.seek(io::SeekFrom::Start(0)).is_err() {
        return false;
    }
    let mut found = false;
    let sink = grep_searcher::sinks::Bytes(|_, _| {
        found = true;
        Ok(false)
    });
    let searched = worker
        .prefix
        .search_reader(&worker.matcher, reader.take(len), sink);
    searched.is_ok() && found
}

struct FileSink {
    mode: Mode,
    /// At most this many lines are kept (content mode).
    keep: usize,
    kept: usize,
    total: usize,
    lines: Vec<Line>,
    /// Where the first NUL byte is, in a binary file.
    binary: Option<u64>,
}

impl FileSink {
    fn keep_line(&mut self, number: Option<u64>, matched: bool, bytes: &[u8]) {
        self.total += 1;
        if self.mode == Mode::Content && self.kept < self.keep {
            self.kept += 1;
            let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
            let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
            // Only the start of a long line is kept: a few KiB, whatever its length.
            let head = &bytes[..bytes.len().min(MAX_LINE_CHARS * 4)];
            let text: String = String::from_utf8_lossy(head)
                .chars()
                .take(MAX_LINE_CHARS)
                .collect();
            let chars = if head.len() == bytes.len() {
                String::from_utf8_lossy(bytes).chars().count()
            } else {
                bytes.iter().filter(|b| (**b & 0xC0) != 0x80).count()
            };
            self.lines.push(Line::Text {
                number: number.unwrap_or(0),
                matched,
                text,
                chars,
            });
        }
    }
}

impl Sink for FileSink {
    type Error = io::Error;

    fn matched(&mut self, _: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, io::Error> {
        self.keep_line(mat.line_number(), true, mat.bytes());
        // One match is enough to list the file.
        Ok(self.mode != Mode::FilesWithMatches)
    }

    fn context(&mut self, _: &Searcher, context: &SinkContext<'_>) -> Result<bool, io::Error> {
        self.keep_line(context.line_number(), false, context.bytes());
        Ok(true)
    }

    fn context_break(&mut self, _: &Searcher) -> Result<bool, io::Error> {
        if self.kept < self.keep {
            self.lines.push(Line::Break);
        }
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, offset: u64) -> Result<bool, io::Error> {
        self.binary = Some(offset);
        Ok(false)
    }
}

/// The answer: files in path order, at most `cap` lines or entries, and a note on the rest.
fn render(mut found: Vec<Hits>, mode: Mode, breaks: bool, cap: usize, ctx: &ToolContext) -> String {
    let by_path = |a: &Hits, b: &Hits| a.path.cmp(&b.path);
    // Every file gives at least one line or entry, so the first `cap` files are enough;
    // only those are sorted.
    let files = found.len();
    let total: usize = found.iter().map(|h| h.total).sum();
    if files > cap {
        found.select_nth_unstable_by(cap.saturating_sub(1), by_path);
    }
    let (head, _) = found.split_at_mut(cap.min(files));
    head.sort_unstable_by(by_path);
    let mut out = String::new();
    match mode {
        Mode::FilesWithMatches | Mode::Count => {
            for hits in head.iter() {
                let path = ctx.display(&hits.path);
                if mode == Mode::Count {
                    push_line(&mut out, &format!("{path}:{}", hits.total));
                } else {
                    push_line(&mut out, &path);
                }
            }
            if files > cap {
                let what = if mode == Mode::Count {
                    "files with matches"
                } else {
                    "files"
                };
                out.push_str(&format!(
                    "… and {} more {what} (narrow the pattern, the path or the glob)",
                    files - cap
                ));
            }
        }
        Mode::Content => {
            let mut shown = 0;
            'files: for hits in head.iter() {
                let path = ctx.display(&hits.path);
                if breaks && shown > 0 {
                    out.push_str("--\n");
                }
                for line in &hits.lines {
                    if shown == cap {
                        break 'files;
                    }
                    match line {
                        Line::Break => out.push_str("--\n"),
                        Line::Text {
                            number,
                            matched,
                            text,
                            chars,
                        } => {
                            let sep = if *matched { ':' } else { '-' };
                            let prefix = format!("{path}{sep}{number}{sep}");
                            let total = prefix.chars().count() + chars;
                            push_cut(&mut out, &format!("{prefix}{text}"), total);
                            shown += 1;
                        }
                    }
                }
            }
            if total > shown {
                out.push_str(&format!(
                    "… and {} more lines (narrow the pattern, the path or the glob, or set head_limit)",
                    total - shown
                ));
            }
        }
    }
    out.trim_end_matches('\n').to_string()
}

/// Adds a line to the output, cut if it is longer than [`MAX_LINE_CHARS`].
fn push_line(out: &mut String, line: &str) {
    push_cut(out, line, line.chars().count());
}

/// Adds the start of a line that is `total` characters long in all.
fn push_cut(out: &mut String, line: &str, total: usize) {
    match line.char_indices().nth(MAX_LINE_CHARS) {
        Some((end, _)) => {
            out.push_str(&line[..end]);
            out.push_str(&format!(" … [line cut: {total} characters in all]"));
        }
        None if total > MAX_LINE_CHARS => {
            out.push_str(line);
            out.push_str(&format!(" … [line cut: {total} characters in all]"));
        }
        None => out.push_str(line),
    }
    out.push('\n');
}

/// `grep` for an agent, configured by its manifest entry.
pub fn build(
    tool: &crate::manifest::Tool,
    _manifest: &std::sync::Arc<crate::manifest::Manifest>,
) -> Result<std::sync::Arc<dyn ToolExec>, String> {
    Ok(std::sync::Arc::new(GrepTool {
        timeout: std::time::Duration::from_secs(tool.timeout_secs.max(1)),
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::tools::builtin::glob::tests::{Fixture, fixture, write};
    use serde_json::json;

    async fn grep(f: &Fixture, input: Value) -> ToolOutput {
        GrepTool::default().call(&input, &f.ctx).await
    }

    fn sample() -> Fixture {
        fixture(&[
            ("src/main.rs", "fn main() {\n    run();\n}\n\nfn run() {}\n"),
            ("src/lib.rs", "pub fn Run() {}\n// no match here\n"),
            ("README.md", "Run it with cargo run.\n"),
            ("web/app.ts", "run()\n"),
            ("web/app.tsx", "run()\n"),
            ("web/app.js", "run()\n"),
        ])
    }

    #[tokio::test]
    async fn files_with_matches_is_the_default_sorted_by_path() {
        let f = sample();
        let out = grep(&f, json!({"pattern": "run\\("})).await;
        assert!(!out.is_error, "{}", out.content);
        assert_eq!(
            out.content,
            "src/main.rs\nweb/app.js\nweb/app.ts\nweb/app.tsx"
        );
    }

    #[tokio::test]
    async fn count_gives_matching_lines_per_file() {
        let f = sample();
        let out = grep(&f, json!({"pattern": "run", "output_mode": "count"})).await;
        assert_eq!(
            out.content,
            "README.md:1\nsrc/main.rs:2\nweb/app.js:1\nweb/app.ts:1\nweb/app.tsx:1"
        );
    }

    #[tokio::test]
    async fn content_shows_numbered_lines_and_case_insensitive_widens() {
        let f = sample();
        let out = grep(
            &f,
            json!({"pattern": "fn \\w+", "output_mode": "content", "path": "src"}),
        )
        .await;
        assert_eq!(
            out.content,
            "src/lib.rs:1:pub fn Run() {}\nsrc/main.rs:1:fn main() {\nsrc/main.rs:5:fn run() {}"
        );
        let out = grep(&f, json!({"pattern": "fn run", "output_mode": "content"})).await;
        assert_eq!(out.content, "src/main.rs:5:fn run() {}");
        let out = grep(
            &f,
            json!({"pattern": "fn run", "output_mode": "content", "case_insensitive": true}),
        )
        .await;
        assert_eq!(
            out.content,
            "src/lib.rs:1:pub fn Run() {}\nsrc/main.rs:5:fn run() {}"
        );
    }

    #[tokio::test]
    async fn context_lines_and_group_separators() {
        let text: String = (1..=20).map(|i| format!("line {i}\n")).collect();
        let f = fixture(&[("a.txt", &text), ("b.txt", "x\nline 7\ny\n")]);
        let out = grep(
            &f,
            json!({"pattern": "^line (3|4|15)$", "output_mode": "content", "context": 1}),
        )
        .await;
        assert_eq!(
            out.content,
            "a.txt-2-line 2\na.txt:3:line 3\na.txt:4:line 4\na.txt-5-line 5\n--\n\
             a.txt-14-line 14\na.txt:15:line 15\na.txt-16-line 16"
        );
        let out = grep(
            &f,
            json!({"pattern": "line 7", "output_mode": "content", "context": 1}),
        )
        .await;
        assert_eq!(
            out.content,
            "a.txt-6-line 6\na.txt:7:line 7\na.txt-8-line 8\n--\nb.txt-1-x\nb.txt:2:line 7\nb.txt-3-y"
        );
        // Context is for content mode only.
        let out = grep(
            &f,
            json!({"pattern": "line 7", "output_mode": "count", "context": 3}),
        )
        .await;
        assert_eq!(out.content, "a.txt:1\nb.txt:1");
    }

    #[tokio::test]
    async fn the_glob_restricts_the_files_searched() {
        let f = sample();
        let out = grep(&f, json!({"pattern": "run", "glob": "*.{ts,tsx}"})).await;
        assert_eq!(out.content, "web/app.ts\nweb/app.tsx");
        let out = grep(&f, json!({"pattern": "run", "glob": "**/*.{ts,tsx}"})).await;
        assert_eq!(out.content, "web/app.ts\nweb/app.tsx");
        let out = grep(&f, json!({"pattern": "run", "glob": "src/*.rs"})).await;
        assert_eq!(out.content, "src/main.rs");
        let out = grep(&f, json!({"pattern": "run", "glob": "*.rs", "path": "src"})).await;
        assert_eq!(out.content, "src/main.rs");
        let out = grep(
            &f,
            json!({"pattern": "run", "glob": "main.rs", "path": "src/lib.rs"}),
        )
        .await;
        assert_eq!(
            out.content,
            "No matches for `run` in `src/lib.rs` (files matching `main.rs`)."
        );
        let out = grep(&f, json!({"pattern": "run", "glob": "../*"})).await;
        assert!(out.is_error);
    }

    #[tokio::test]
    async fn a_single_file_can_be_searched() {
        let f = sample();
        let out = grep(
            &f,
            json!({"pattern": "run", "path": "src/main.rs", "output_mode": "content"}),
        )
        .await;
        assert_eq!(
            out.content,
            "src/main.rs:2:    run();\nsrc/main.rs:5:fn run() {}"
        );
    }

    #[tokio::test]
    async fn binary_and_ignored_files_are_skipped() {
        let f = sample();
        std::fs::write(f.root.join("web/blob.bin"), b"run()\n\x00\x01\x02run()\n").unwrap();
        write(&f.root, ".gitignore", "dist/\n");
        write(&f.root, "dist/app.js", "run()\n");
        write(&f.root, ".git/HEAD", "run()\n");
        write(&f.root, ".config/x.toml", "run()\n");
        let out = grep(&f, json!({"pattern": "run\\(", "path": "web"})).await;
        assert_eq!(
            out.content,
            "web/app.js\nweb/app.ts\nweb/app.tsx\n(1 file matched before a NUL byte and was skipped as binary: `web/blob.bin`)"
        );
        let out = grep(&f, json!({"pattern": "run\\(", "glob": "*.{toml,js}"})).await;
        assert_eq!(out.content, ".config/x.toml\nweb/app.js");
    }

    #[tokio::test]
    async fn an_invalid_regex_is_an_error_quoting_the_problem() {
        let f = sample();
        let out = grep(&f, json!({"pattern": "fn main("})).await;
        assert!(out.is_error);
        assert!(
            out.content
                .starts_with("invalid regular expression `fn main(`: "),
            "{}",
            out.content
        );
        assert!(out.content.contains("unclosed group"), "{}", out.content);
    }

    #[tokio::test]
    async fn results_are_capped_with_a_note() {
        let f = fixture(&[]);
        for i in 0..100 {
            write(&f.root, &format!("f{i:03}.txt"), "hit\nhit\nmiss\n");
        }
        let out = grep(&f, json!({"pattern": "hit", "head_limit": 3})).await;
        assert_eq!(
            out.content,
            "f000.txt\nf001.txt\nf002.txt\n… and 97 more files (narrow the pattern, the path or the glob)"
        );
        let out = grep(
            &f,
            json!({"pattern": "hit", "output_mode": "count", "head_limit": 2}),
        )
        .await;
        assert_eq!(
            out.content,
            "f000.txt:2\nf001.txt:2\n… and 98 more files with matches (narrow the pattern, the path or the glob)"
        );
        let out = grep(
            &f,
            json!({"pattern": "hit", "output_mode": "content", "head_limit": 3}),
        )
        .await;
        assert_eq!(
            out.content,
            "f000.txt:1:hit\nf000.txt:2:hit\nf001.txt:1:hit\n… and 197 more lines (narrow the pattern, the path or the glob, or set head_limit)"
        );
        // Without head_limit: 250 lines in content mode.
        let out = grep(&f, json!({"pattern": "hit|miss", "output_mode": "content"})).await;
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines.len(), MAX_CONTENT_LINES + 1);
        assert_eq!(lines[MAX_CONTENT_LINES - 1], "f083.txt:1:hit");
        assert!(
            lines[MAX_CONTENT_LINES].starts_with("… and 50 more lines"),
            "{}",
            lines[MAX_CONTENT_LINES]
        );
        let out = grep(&f, json!({"pattern": "hit"})).await;
        assert_eq!(out.content.lines().count(), 100, "200 files by default");
    }

    #[tokio::test]
    async fn long_lines_are_cut_and_bad_utf8_is_replaced() {
        let long = format!("needle {}\n", "x".repeat(2000));
        let f = fixture(&[("long.txt", &long)]);
        std::fs::write(f.root.join("latin1.txt"), b"caf\xe9 needle\n").unwrap();
        let out = grep(&f, json!({"pattern": "needle", "output_mode": "content"})).await;
        let lines: Vec<&str> = out.content.lines().collect();
        assert_eq!(lines[0], "latin1.txt:1:caf\u{fffd} needle");
        assert!(lines[1].starts_with("long.txt:1:needle xxx"));
        assert!(
            lines[1].ends_with("x … [line cut: 2018 characters in all]"),
            "{}",
            lines[1]
        );
        assert_eq!(
            lines[1].chars().count(),
            MAX_LINE_CHARS + " … [line cut: 2018 characters in all]".chars().count()
        );
    }

    #[tokio::test]
    async fn no_match_is_a_plain_message() {
        let f = sample();
        let out = grep(&f, json!({"pattern": "nowhere to be found"})).await;
        assert!(!out.is_error);
        assert_eq!(out.content, "No matches for `nowhere to be found` in `.`.");
    }

    #[tokio::test]
    async fn paths_outside_the_workspace_are_refused() {
        let f = sample();
        std::fs::write(f.tmp.path().join("secret.txt"), "run()\n").unwrap();
        let out = grep(&f, json!({"pattern": "run", "path": ".."})).await;
        assert!(out.is_error);
        assert!(
            out.content.contains("outside the workspace"),
            "{}",
            out.content
        );
        let out = grep(&f, json!({"pattern": "run", "path": "/etc"})).await;
        assert!(out.is_error);
        let out = grep(&f, json!({"pattern": "run", "path": "missing"})).await;
        assert_eq!(out.content, "`missing` does not exist");
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn symlinks_leading_out_are_not_searched() {
        let f = fixture(&[("in.txt", "secret\n")]);
        let outside = f.tmp.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret.txt"), "secret\n").unwrap();
        std::os::unix::fs::symlink(&outside, f.root.join("linked")).unwrap();
        std::os::unix::fs::symlink(outside.join("secret.txt"), f.root.join("file_link")).unwrap();
        let out = grep(&f, json!({"pattern": "secret"})).await;
        assert_eq!(out.content, "in.txt");
        let out = grep(&f, json!({"pattern": "secret", "path": "linked"})).await;
        assert!(out.is_error);
        let out = grep(&f, json!({"pattern": "secret", "path": "file_link"})).await;
        assert!(out.is_error);
    }

    #[tokio::test]
    async fn a_binary_file_that_matches_is_said_to_be_skipped() {
        let f = fixture(&[("a.txt", "nothing\n")]);
        let mut blob = b"needle\n".repeat(2000);
        blob.extend_from_slice(&[0, 1, 2]);
        blob.extend_from_slice(b"needle\n");
        std::fs::write(f.root.join("blob.bin"), &blob).unwrap();
        std::fs::write(f.root.join("other.bin"), b"\x00no match\n").unwrap();
        let out = grep(&f, json!({"pattern": "needle"})).await;
        assert_eq!(
            out.content,
            "No matches for `needle` in `.`.\n(1 file matched before a NUL byte and was skipped as binary: `blob.bin`)"
        );
        let out = grep(&f, json!({"pattern": "needle", "path": "blob.bin"})).await;
        assert!(
            out.content.ends_with("skipped as binary: `blob.bin`)"),
            "{}",
            out.content
        );
    }

    #[tokio::test]
    async fn a_file_with_a_huge_line_is_skipped_saying_so() {
        let f = fixture(&[("small.txt", "needle\n")]);
        let mut huge = vec![b'x'; MAX_LINE_BYTES + 1024];
        huge.extend_from_slice(b" needle\n");
        std::fs::write(f.root.join("huge.txt"), &huge).unwrap();
        let out = grep(&f, json!({"pattern": "needle"})).await;
        assert_eq!(
            out.content,
            "small.txt\n(1 file skipped: a line longer than 8 MiB: `huge.txt`)"
        );
    }

    #[tokio::test]
    async fn fifos_are_skipped_or_refused_without_blocking() {
        let f = fixture(&[("a.txt", "needle\n")]);
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            f.root.join("pipe"),
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .unwrap();
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            grep(&f, json!({"pattern": "needle"})),
        )
        .await
        .unwrap();
        assert_eq!(out.content, "a.txt");
        let out = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            grep(&f, json!({"pattern": "needle", "path": "pipe"})),
        )
        .await
        .unwrap();
        assert_eq!(
            out.content,
            "`pipe` is a FIFO (named pipe), not a file or a folder: grep searches regular files"
        );
    }

    #[tokio::test]
    async fn the_agents_state_is_never_searched() {
        let f = fixture(&[
            ("agent/agent.toml", "needle\n"),
            ("agent/.eve/sessions/s1.jsonl", "needle\n"),
        ]);
        let ctx = ToolContext::new(f.root.clone(), f.root.join("agent"));
        let out = GrepTool::default()
            .call(&json!({"pattern": "needle"}), &ctx)
            .await;
        assert_eq!(out.content, "agent/agent.toml");
        let out = GrepTool::default()
            .call(&json!({"pattern": "needle", "path": "agent/.eve"}), &ctx)
            .await;
        assert!(out.content.contains("`.eve/` folder"), "{}", out.content);
    }
}
