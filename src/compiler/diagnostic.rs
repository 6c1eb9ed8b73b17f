//! Build diagnostics: what went wrong in an agent directory, and where.

use std::ops::Range;

use serde::Serialize;

use super::source::SourceFile;

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

    pub const MISSING_INSTRUCTIONS: &str = "E0301";
    pub const TEMPLATE_SYNTAX: &str = "E0302";
    pub const UNDEFINED_VARIABLE: &str = "E0303";
    pub const TEMPLATE_RENDER: &str = "E0304";
    pub const EMPTY_INSTRUCTIONS_DIR: &str = "E0305";
    pub const UNDECLARED_ENV: &str = "E0306";

    pub const FRONTMATTER: &str = "E0401";
    pub const SKILL_NAME_MISMATCH: &str = "E0402";
    pub const INVALID_SKILL_NAME: &str = "E0403";
    pub const DESCRIPTION_TOO_LONG: &str = "E0404";
    pub const SKILL_WITHOUT_DESCRIPTION: &str = "E0405";
    pub const BROKEN_SKILL_LINK: &str = "E0406";
    pub const DUPLICATE_SKILL: &str = "E0407";
    pub const NOT_A_SKILL: &str = "W0408";
    pub const PACKAGE_WITHOUT_SKILL_MD: &str = "E0409";

    pub const SUBAGENT_WITHOUT_DESCRIPTION: &str = "E0501";
    pub const SUBAGENT_NAME_COLLISION: &str = "E0502";
    pub const INVALID_SUBAGENT_NAME: &str = "E0503";
    pub const SUBAGENTS_TOO_DEEP: &str = "E0504";
    pub const NOT_A_SUBAGENT: &str = "W0505";

    pub const INVALID_CONNECTION_NAME: &str = "E0701";
    pub const CONNECTION_TRANSPORT: &str = "E0702";
    pub const WRONG_TRANSPORT_KEY: &str = "E0703";
    pub const INVALID_REFERENCE: &str = "E0704";
    pub const NO_MATCHING_TOOL: &str = "E0705";
    pub const UNKNOWN_CONNECTION_TOOL: &str = "E0706";
    pub const SHORTENED_TOOL_NAME: &str = "W0707";
    pub const TOOL_NAME_COLLISION: &str = "E0708";
    pub const CONNECTION_NOT_LISTED: &str = "E0709";
    pub const CONNECTION_UNREACHABLE: &str = "W0710";
    pub const SERVER_TOOL_LEFT_OUT: &str = "W0711";
    pub const INVALID_URL: &str = "E0712";
    pub const NOT_A_CONNECTION_FILE: &str = "W0713";
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
    /// The source line the position is on, kept so the diagnostic renders without the file.
    #[serde(skip)]
    pub source_line: Option<String>,
    /// Width of the underline, in characters.
    #[serde(skip)]
    pub width: usize,
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
            width: 0,
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
            let pos = src.locate(span);
            self.line = Some(pos.line);
            self.column = Some(pos.column);
            self.source_line = Some(pos.line_text);
            self.width = pos.width;
        }
        self
    }

    /// Names the file and points at a 1-based line (and column, when known).
    pub fn at_line(mut self, src: &SourceFile, line: usize, column: Option<usize>) -> Self {
        self.file = Some(src.path.clone());
        if let Some(text) = src.line_text(line) {
            self.line = Some(line);
            self.column = Some(column.unwrap_or(1));
            self.width = if column.is_some() {
                1
            } else {
                text.chars().count().max(1)
            };
            self.source_line = Some(text.to_string());
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
}

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

    pub fn error_count(&self) -> usize {
        self.0.iter().filter(|d| d.is_error()).count()
    }

    pub fn warning_count(&self) -> usize {
        self.0.len() - self.error_count()
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

impl IntoIterator for Diagnostics {
    type Item = Diagnostic;
    type IntoIter = std::vec::IntoIter<Diagnostic>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}
