//! Build diagnostics: what went wrong in an agent directory, and where.

use std::collections::HashMap;
use std::ops::Range;

use serde::Serialize;

use super::source::{Position, SourceFile};

/// How bad a diagnostic is: errors stop the build, warnings do not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// Every diagnostic code eve can report; `docs/diagnostics.md` has an example of each.
pub mod code {
    pub const UNREADABLE: &str = "E0001";
    pub const TOML_SYNTAX: &str = "E0002";
    pub const UNKNOWN_KEY: &str = "E0003";
    pub const WRONG_TYPE: &str = "E0004";
    pub const OUT_OF_RANGE: &str = "E0005";
    pub const INVALID_VALUE: &str = "E0006";
    pub const MISSING_KEY: &str = "E0007";

    pub const MISSING_AGENT_TOML: &str = "E0101";
    pub const INVALID_MODEL: &str = "E0102";
    pub const UNKNOWN_PROVIDER: &str = "E0103";
    pub const WRITABLE_NOT_FOUND: &str = "E0110";
    pub const SUBAGENT_SANDBOX: &str = "W0111";
    pub const CREDENTIALS_IN_URL: &str = "E0104";
    pub const CANNOT_REASON: &str = "E0112";

    pub const UNKNOWN_TOOL: &str = "E0201";
    pub const INVALID_TOOL_SLUG: &str = "E0202";
    pub const DISABLED_WITH_KEYS: &str = "E0203";
    pub const INCOMPLETE_TOOL: &str = "E0204";
    pub const TWO_EXECUTORS: &str = "E0205";
    pub const INVALID_SCHEMA: &str = "E0206";
    pub const SCHEMA_NOT_OBJECT: &str = "E0207";
    pub const EMPTY_COMMAND: &str = "E0208";
    pub const TOOL_TEMPLATE: &str = "E0209";
    pub const UNKNOWN_APPROVAL: &str = "E0210";
    pub const UNKNOWN_SETTING: &str = "E0211";
    pub const NOT_A_TOOL_FILE: &str = "W0212";
    pub const NEAR_BUILTIN: &str = "W0213";
    pub const EMPTY_OVERRIDE: &str = "W0214";
    pub const TOOL_NOT_AVAILABLE: &str = "W0216";
    pub const INVALID_COMMAND_PATTERN: &str = "E0217";
    pub const COMMAND_FILE_LEFT_OUT: &str = "W0218";

    pub const MISSING_INSTRUCTIONS: &str = "E0301";
    pub const TEMPLATE_SYNTAX: &str = "E0302";
    pub const UNDEFINED_VARIABLE: &str = "E0303";
    pub const TEMPLATE_RENDER: &str = "E0304";
    pub const EMPTY_INSTRUCTIONS_DIR: &str = "E0305";
    pub const UNDECLARED_ENV: &str = "E0306";
    pub const KEY_IN_INSTRUCTIONS: &str = "E0307";

    pub const FRONTMATTER: &str = "E0401";
    pub const SKILL_NAME_MISMATCH: &str = "W0402";
    pub const INVALID_SKILL_NAME: &str = "E0403";
    pub const DESCRIPTION_TOO_LONG: &str = "W0404";
    pub const SKILL_WITHOUT_DESCRIPTION: &str = "E0405";
    pub const BROKEN_SKILL_LINK: &str = "W0406";
    pub const DUPLICATE_SKILL: &str = "E0407";
    pub const NOT_A_SKILL: &str = "W0408";
    pub const PACKAGE_WITHOUT_SKILL_MD: &str = "E0409";
    pub const LINK_LEAVES_AGENT: &str = "W0410";
    pub const UNKNOWN_PLACEHOLDER: &str = "W0411";
    pub const RESOURCE_SKIPPED: &str = "W0412";
    pub const SKILL_LEFT_OUT: &str = "W0413";
    pub const SKILL_NAME_NORMALISED: &str = "W0414";
    pub const SKILL_NOT_UTF8: &str = "W0415";

    pub const SUBAGENT_WITHOUT_DESCRIPTION: &str = "E0501";
    pub const SUBAGENT_NAME_COLLISION: &str = "E0502";
    pub const INVALID_SUBAGENT_NAME: &str = "E0503";
    pub const SUBAGENTS_TOO_DEEP: &str = "E0504";
    pub const NOT_A_SUBAGENT: &str = "W0505";

    pub const INVALID_EVAL_NAME: &str = "E0701";
    pub const UNKNOWN_EVAL_TOOL: &str = "E0702";
    pub const UNKNOWN_EVAL_SKILL: &str = "E0703";
    pub const UNKNOWN_EVAL_SUBAGENT: &str = "E0704";
    pub const EVAL_REPLY_SCHEMA: &str = "E0705";
    pub const EVAL_TURNS: &str = "E0706";
    pub const EVAL_WORKSPACE: &str = "E0707";
    pub const EVAL_PATTERN: &str = "E0708";
    pub const EVAL_STUB: &str = "E0709";
    pub const EVAL_NEVER_HOLDS: &str = "W0710";
    pub const UNKNOWN_EVAL_HOOK: &str = "E0711";

    pub const INVALID_CONNECTION_NAME: &str = "E0801";
    pub const CONNECTION_TRANSPORT: &str = "E0802";
    pub const WRONG_TRANSPORT_KEY: &str = "E0803";
    pub const INVALID_REFERENCE: &str = "E0804";
    pub const NO_MATCHING_TOOL: &str = "E0805";
    pub const UNKNOWN_CONNECTION_TOOL: &str = "E0806";
    pub const SHORTENED_TOOL_NAME: &str = "W0807";
    pub const TOOL_NAME_COLLISION: &str = "E0808";
    pub const CONNECTION_NOT_LISTED: &str = "E0809";
    pub const CONNECTION_UNREACHABLE: &str = "W0810";
    pub const SERVER_TOOL_LEFT_OUT: &str = "W0811";
    pub const INVALID_URL: &str = "E0812";
    pub const NOT_A_CONNECTION_FILE: &str = "W0813";

    pub const CONTEXT_BUDGET: &str = "W0901";
    pub const CONTEXT_OVERFLOW: &str = "E0902";
    pub const SKILLS_OVERFLOW: &str = "E0903";

    pub const INVALID_HOOK_NAME: &str = "E1001";
    pub const UNKNOWN_HOOK_TOOL: &str = "E1002";
    pub const HOOK_TOOLS_NOT_FOR_EVENT: &str = "E1003";
    pub const HOOK_COMMAND_FILE: &str = "E1004";
    pub const HOOK_RUNS_WORKSPACE: &str = "E1005";
    pub const HOOK_NEVER_RUNS: &str = "E1006";

    /// Every code above, to find a code again from its text (the build cache keeps it).
    pub const ALL: &[&str] = &[
        UNREADABLE,
        TOML_SYNTAX,
        UNKNOWN_KEY,
        WRONG_TYPE,
        OUT_OF_RANGE,
        INVALID_VALUE,
        MISSING_KEY,
        MISSING_AGENT_TOML,
        INVALID_MODEL,
        UNKNOWN_PROVIDER,
        WRITABLE_NOT_FOUND,
        SUBAGENT_SANDBOX,
        CREDENTIALS_IN_URL,
        CANNOT_REASON,
        UNKNOWN_TOOL,
        INVALID_TOOL_SLUG,
        DISABLED_WITH_KEYS,
        INCOMPLETE_TOOL,
        TWO_EXECUTORS,
        INVALID_SCHEMA,
        SCHEMA_NOT_OBJECT,
        EMPTY_COMMAND,
        TOOL_TEMPLATE,
        UNKNOWN_APPROVAL,
        UNKNOWN_SETTING,
        NOT_A_TOOL_FILE,
        NEAR_BUILTIN,
        EMPTY_OVERRIDE,
        TOOL_NOT_AVAILABLE,
        INVALID_COMMAND_PATTERN,
        COMMAND_FILE_LEFT_OUT,
        MISSING_INSTRUCTIONS,
        TEMPLATE_SYNTAX,
        UNDEFINED_VARIABLE,
        TEMPLATE_RENDER,
        EMPTY_INSTRUCTIONS_DIR,
        UNDECLARED_ENV,
        KEY_IN_INSTRUCTIONS,
        FRONTMATTER,
        SKILL_NAME_MISMATCH,
        INVALID_SKILL_NAME,
        DESCRIPTION_TOO_LONG,
        SKILL_WITHOUT_DESCRIPTION,
        BROKEN_SKILL_LINK,
        DUPLICATE_SKILL,
        NOT_A_SKILL,
        PACKAGE_WITHOUT_SKILL_MD,
        LINK_LEAVES_AGENT,
        UNKNOWN_PLACEHOLDER,
        RESOURCE_SKIPPED,
        SKILL_LEFT_OUT,
        SKILL_NAME_NORMALISED,
        SKILL_NOT_UTF8,
        SUBAGENT_WITHOUT_DESCRIPTION,
        SUBAGENT_NAME_COLLISION,
        INVALID_SUBAGENT_NAME,
        SUBAGENTS_TOO_DEEP,
        NOT_A_SUBAGENT,
        INVALID_EVAL_NAME,
        UNKNOWN_EVAL_TOOL,
        UNKNOWN_EVAL_SKILL,
        UNKNOWN_EVAL_SUBAGENT,
        EVAL_REPLY_SCHEMA,
        EVAL_TURNS,
        EVAL_WORKSPACE,
        EVAL_PATTERN,
        EVAL_STUB,
        EVAL_NEVER_HOLDS,
        UNKNOWN_EVAL_HOOK,
        INVALID_CONNECTION_NAME,
        CONNECTION_TRANSPORT,
        WRONG_TRANSPORT_KEY,
        INVALID_REFERENCE,
        NO_MATCHING_TOOL,
        UNKNOWN_CONNECTION_TOOL,
        SHORTENED_TOOL_NAME,
        TOOL_NAME_COLLISION,
        CONNECTION_NOT_LISTED,
        CONNECTION_UNREACHABLE,
        SERVER_TOOL_LEFT_OUT,
        INVALID_URL,
        NOT_A_CONNECTION_FILE,
        CONTEXT_BUDGET,
        CONTEXT_OVERFLOW,
        SKILLS_OVERFLOW,
        INVALID_HOOK_NAME,
        UNKNOWN_HOOK_TOOL,
        HOOK_TOOLS_NOT_FOR_EVENT,
        HOOK_COMMAND_FILE,
        HOOK_RUNS_WORKSPACE,
        HOOK_NEVER_RUNS,
    ];

    /// The code with this text, if eve has it.
    pub fn intern(text: &str) -> Option<&'static str> {
        ALL.iter().copied().find(|c| *c == text)
    }
}

/// One problem found in an agent directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    pub severity: Severity,
    pub code: &'static str,
    pub message: String,
    /// Path relative to the agent directory, with `/` separators.
    pub file: Option<String>,
    /// 1-based line, when the source has a position.
    pub line: Option<usize>,
    /// 1-based column in characters, when the source has a position.
    pub column: Option<usize>,
    pub help: Option<String>,
    #[serde(skip)]
    pub notes: Vec<String>,
    #[serde(skip)]
    pub label: Option<String>,
    /// The source line the position is on (cut around the position when it is long),
    /// kept so the diagnostic renders without the file.
    #[serde(skip)]
    pub source_line: Option<String>,
    /// The 1-based column of the position within `source_line`.
    #[serde(skip)]
    pub source_column: usize,
    /// Width of the underline, in characters.
    #[serde(skip)]
    pub width: usize,
    /// Set on the line that stands for this many diagnostics left out (see [`Diagnostics::cap`]).
    #[serde(skip)]
    pub omitted: usize,
}

impl Diagnostic {
    pub fn error(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(Severity::Error, code, message.into())
    }

    pub fn warning(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(Severity::Warning, code, message.into())
    }

    fn new(severity: Severity, code: &'static str, message: String) -> Self {
        Diagnostic {
            severity,
            code,
            message,
            file: None,
            line: None,
            column: None,
            help: None,
            notes: Vec::new(),
            label: None,
            source_line: None,
            source_column: 0,
            width: 0,
            omitted: 0,
        }
    }

    /// Names the file, without a position.
    pub fn file(mut self, path: impl Into<String>) -> Self {
        self.file = Some(path.into());
        self
    }

    /// Names the file and points at a byte range in it (when there is one).
    pub fn at(mut self, src: &SourceFile, span: Option<Range<usize>>) -> Self {
        self.file = Some(src.path.clone());
        if let Some(span) = span {
            self.set_position(src.locate(span));
        }
        self
    }

    fn set_position(&mut self, pos: Position) {
        self.line = Some(pos.line);
        self.column = Some(pos.column);
        self.source_line = Some(pos.excerpt);
        self.source_column = pos.excerpt_column;
        self.width = pos.width;
    }

    /// Names the file and the position of a byte range without quoting the line: for a
    /// line that holds a secret.
    pub fn at_unquoted(mut self, src: &SourceFile, span: Option<Range<usize>>) -> Self {
        self = self.at(src, span);
        self.source_line = None;
        self
    }

    /// Names the file and points at a 1-based line (and column, when known).
    pub fn at_line(mut self, src: &SourceFile, line: usize, column: Option<usize>) -> Self {
        self.file = Some(src.path.clone());
        if let Some(pos) = src.locate_line(line, column) {
            self.set_position(pos);
        }
        self
    }

    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    pub fn help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Adds "did you mean" help when a suggestion exists.
    pub fn suggest(self, suggestion: Option<&str>) -> Self {
        match suggestion {
            Some(s) => self.help(format!("did you mean `{s}`?")),
            None => self,
        }
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// How many diagnostics this one stands for.
    pub(crate) fn count(&self) -> usize {
        self.omitted.max(1)
    }
}

/// How many diagnostics of one code in one file are shown before the rest are summed up.
pub const MAX_PER_CODE_AND_FILE: usize = 10;

/// The diagnostics of one build, in the order they were found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Diagnostics(Vec<Diagnostic>);

impl Diagnostics {
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.0.push(diagnostic);
    }

    pub fn extend(&mut self, other: impl IntoIterator<Item = Diagnostic>) {
        self.0.extend(other);
    }

    pub fn has_errors(&self) -> bool {
        self.0.iter().any(Diagnostic::is_error)
    }

    /// Errors found, those left out by [`Diagnostics::cap`] included.
    pub fn error_count(&self) -> usize {
        self.0
            .iter()
            .filter(|d| d.is_error())
            .map(Diagnostic::count)
            .sum()
    }

    /// Warnings found, those left out by [`Diagnostics::cap`] included.
    pub fn warning_count(&self) -> usize {
        self.0
            .iter()
            .filter(|d| !d.is_error())
            .map(Diagnostic::count)
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Diagnostic> {
        self.0.iter()
    }

    /// Orders diagnostics by file and position so output does not depend on directory order.
    pub fn sort(&mut self) {
        self.0.sort_by(|a, b| {
            (a.file.as_deref(), a.line, a.column, a.code).cmp(&(
                b.file.as_deref(),
                b.line,
                b.column,
                b.code,
            ))
        });
    }
}

impl Diagnostics {
    /// Keeps the first `limit` diagnostics of each code in each file and puts one line
    /// after them that stands for the rest (`… and 59,990 more like this`), so a file
    /// with thousands of the same mistake prints a screenful, not megabytes.
    pub fn cap(&mut self, limit: usize) {
        let key = |d: &Diagnostic| (d.code, d.file.clone());
        let mut totals: HashMap<(&'static str, Option<String>), usize> = HashMap::new();
        for d in &self.0 {
            *totals.entry(key(d)).or_default() += 1;
        }
        if totals.values().all(|&n| n <= limit) {
            return;
        }
        let mut shown: HashMap<(&'static str, Option<String>), usize> = HashMap::new();
        let mut out = Vec::new();
        for d in std::mem::take(&mut self.0) {
            let key = key(&d);
            let seen = shown.entry(key.clone()).or_default();
            *seen += 1;
            if *seen > limit {
                continue;
            }
            let total = totals.get(&key).copied().unwrap_or(0);
            let last = *seen == limit && total > limit;
            let summary = last.then(|| {
                let mut more = Diagnostic::new(
                    d.severity,
                    d.code,
                    format!("… and {} more like this", thousands(total - limit)),
                );
                more.file = d.file.clone();
                more.omitted = total - limit;
                more
            });
            out.push(d);
            out.extend(summary);
        }
        self.0 = out;
    }
}

/// `59990` as `59,990`.
pub(crate) fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn caps_each_code_in_each_file_and_counts_what_it_left_out() {
        let mut diags = Diagnostics::default();
        for i in 0..25 {
            diags.push(Diagnostic::error(code::UNKNOWN_KEY, format!("k{i}")).file("agent.toml"));
        }
        diags.push(Diagnostic::error(code::WRONG_TYPE, "w").file("agent.toml"));
        for i in 0..3 {
            diags.push(Diagnostic::error(code::UNKNOWN_KEY, format!("t{i}")).file("tools/x.toml"));
        }
        diags.push(Diagnostic::warning(code::NOT_A_TOOL_FILE, "n").file("tools/y"));
        diags.cap(2);
        let shown: Vec<(&str, &str, Option<&str>)> = diags
            .iter()
            .map(|d| (d.code, d.message.as_str(), d.file.as_deref()))
            .collect();
        assert_eq!(
            shown,
            vec![
                ("E0003", "k0", Some("agent.toml")),
                ("E0003", "k1", Some("agent.toml")),
                ("E0003", "… and 23 more like this", Some("agent.toml")),
                ("E0004", "w", Some("agent.toml")),
                ("E0003", "t0", Some("tools/x.toml")),
                ("E0003", "t1", Some("tools/x.toml")),
                ("E0003", "… and 1 more like this", Some("tools/x.toml")),
                ("W0212", "n", Some("tools/y")),
            ]
        );
        assert_eq!((diags.error_count(), diags.warning_count()), (29, 1));
    }

    #[test]
    fn numbers_get_thousands_separators() {
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(59_990), "59,990");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn every_code_is_in_the_list_the_cache_looks_codes_up_in() {
        let source = include_str!("diagnostic.rs");
        let module = &source[source.find("pub mod code {").unwrap()..];
        let module = &module[..module.find("pub const ALL").unwrap()];
        let declared: Vec<&str> = module
            .lines()
            .filter_map(|l| l.trim().strip_prefix("pub const "))
            .filter_map(|l| l.split('"').nth(1))
            .collect();
        assert!(declared.len() > 40, "{declared:?}");
        for text in &declared {
            assert_eq!(code::intern(text), Some(*text));
        }
        assert_eq!(code::ALL.len(), declared.len());
        assert_eq!(code::intern("E9999"), None);
    }
}
