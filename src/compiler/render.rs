//! Renders diagnostics for a person (compiler style, optionally coloured) or as JSON.

use std::collections::HashMap;
use std::fmt::Write;

use serde::Serialize;

use super::diagnostic::{Diagnostic, Severity};

/// ANSI styles, or nothing when colour is off.
#[derive(Debug, Clone, Copy)]
pub struct Style {
    pub color: bool,
}

impl Style {
    /// Colour when the stream is a terminal and `NO_COLOR` is unset or empty.
    pub fn for_stderr() -> Style {
        use std::io::IsTerminal;
        let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Style {
            color: !no_color && std::io::stderr().is_terminal(),
        }
    }

    fn paint(&self, code: &str, text: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{text}\x1b[0m")
        } else {
            text.to_string()
        }
    }

    fn severity(&self, severity: Severity, text: &str) -> String {
        match severity {
            Severity::Error => self.paint("1;31", text),
            Severity::Warning => self.paint("1;33", text),
        }
    }

    fn blue(&self, text: &str) -> String {
        self.paint("1;34", text)
    }

    fn bold(&self, text: &str) -> String {
        self.paint("1", text)
    }
}

/// How many diagnostics of one code a report prints before it counts the rest.
pub const EXAMPLES_PER_CODE: usize = 3;

/// The diagnostics of a build in the compiler style, each followed by a newline, styled
/// for stderr; with `errors_only`, warnings are left out. Unless `verbose`, only the
/// first [`EXAMPLES_PER_CODE`] of each code are printed, and one line at the end counts
/// the rest of that code: a library of thousands of skills with one habit in common
/// prints a screenful, not 50,000 lines. The one printer every command uses.
pub fn human_report<'a>(
    diagnostics: impl IntoIterator<Item = &'a Diagnostic>,
    base: &str,
    errors_only: bool,
    verbose: bool,
) -> String {
    let style = Style::for_stderr();
    let mut out = String::new();
    let mut shown: HashMap<&str, usize> = HashMap::new();
    // Each code with more than its examples, in the order first met, and how many more.
    let mut more: Vec<(&str, Severity, usize)> = Vec::new();
    for d in diagnostics {
        if errors_only && d.severity != Severity::Error {
            continue;
        }
        let examples = shown.entry(d.code).or_default();
        // The line that stands for the rest of a file's diagnostics of this code
        // ([`super::diagnostic::Diagnostics::cap`]) is a count, never an example.
        if !verbose && (*examples >= EXAMPLES_PER_CODE || d.omitted > 0) {
            match more.iter_mut().find(|(code, _, _)| *code == d.code) {
                Some((_, _, n)) => *n += d.count(),
                None => more.push((d.code, d.severity, d.count())),
            }
            continue;
        }
        *examples += 1;
        out.push_str(&human(d, base, style));
        out.push('\n');
    }
    for (code, severity, n) in more {
        let word = match (severity, n) {
            (Severity::Error, 1) => "error",
            (Severity::Error, _) => "errors",
            (Severity::Warning, 1) => "warning",
            (Severity::Warning, _) => "warnings",
        };
        let _ = writeln!(
            out,
            "{}",
            style.bold(&format!(
                "… and {} more {code} {word} (eve build --verbose shows all)",
                super::diagnostic::thousands(n)
            ))
        );
    }
    out
}

/// Renders one diagnostic in the familiar compiler style. `base` is prefixed to its path
/// (the agent directory as the user named it).
///
/// A diagnostic quotes foreign text: a server's tool names and errors, a file's name and
/// its lines, a model's values. Every part is escaped for the terminal here, the one
/// place diagnostics are written for a person, so no producer can forget it.
pub fn human(d: &Diagnostic, base: &str, style: Style) -> String {
    use crate::text::for_terminal as shown;
    let mut out = String::new();
    let word = match d.severity {
        Severity::Error => "error",
        Severity::Warning => "warning",
    };
    let _ = writeln!(
        out,
        "{}{}",
        style.severity(d.severity, &format!("{word}[{}]", d.code)),
        style.bold(&format!(": {}", shown(&d.message)))
    );
    let gutter = d.line.map_or(1, |l| l.to_string().len());
    let pad = " ".repeat(gutter);
    if let Some(file) = &d.file {
        let mut location = shown(&join_path(base, file)).into_owned();
        if let (Some(line), Some(column)) = (d.line, d.column) {
            let _ = write!(location, ":{line}:{column}");
        }
        let _ = writeln!(out, "{pad}{} {location}", style.blue("-->"));
    }
    if let (Some(line), Some(text)) = (d.line, &d.source_line) {
        let (column, width) = (d.source_column, d.width);
        let bar = style.blue("|");
        // Each character is shown as it will be printed, an escape as wide as it is.
        let printed = |c: char| shown(c.encode_utf8(&mut [0; 4])).replace('\t', "    ");
        let _ = writeln!(out, "{pad} {bar}");
        let _ = writeln!(
            out,
            "{} {bar} {}",
            style.blue(&line.to_string()),
            text.chars().map(printed).collect::<String>()
        );
        let lead: String = text
            .chars()
            .take(column.saturating_sub(1))
            .map(|c| " ".repeat(printed(c).chars().count()))
            .collect();
        let wide: usize = text
            .chars()
            .skip(column.saturating_sub(1))
            .take(width.max(1))
            .map(|c| printed(c).chars().count())
            .sum();
        let carets = "^".repeat(wide.max(1));
        let label = d
            .label
            .as_deref()
            .map(|l| format!(" {}", shown(l)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{pad} {bar} {lead}{}",
            style.severity(d.severity, &format!("{carets}{label}"))
        );
        if !d.notes.is_empty() || d.help.is_some() {
            let _ = writeln!(out, "{pad} {bar}");
        }
    }
    for note in &d.notes {
        let _ = writeln!(
            out,
            "{pad} {} {}: {}",
            style.blue("="),
            style.bold("note"),
            shown(note)
        );
    }
    if let Some(help) = &d.help {
        let _ = writeln!(
            out,
            "{pad} {} {}: {}",
            style.blue("="),
            style.bold("help"),
            shown(help)
        );
    }
    out
}

/// `base/file`, without `./` noise.
pub fn join_path(base: &str, file: &str) -> String {
    let base = base.trim_end_matches('/');
    if base.is_empty() || base == "." {
        file.to_string()
    } else {
        format!("{base}/{file}")
    }
}

/// The JSON form of a diagnostic, as `--format json` prints it.
#[derive(Debug, Serialize)]
pub struct JsonDiagnostic<'a> {
    pub severity: Severity,
    pub code: &'a str,
    pub message: &'a str,
    pub file: Option<String>,
    pub line: Option<usize>,
    pub column: Option<usize>,
    pub help: Option<&'a str>,
}

/// What `eve build --format json` prints: the diagnostics, and the context budget of a
/// build that succeeded (`null` otherwise).
pub fn json(
    diagnostics: &[Diagnostic],
    budget: Option<&super::budget::Budget>,
    base: &str,
) -> String {
    let report = serde_json::json!({
        "diagnostics": json_items(diagnostics, base),
        "budget": budget,
    });
    serde_json::to_string_pretty(&report).unwrap_or_else(|_| "{}".into())
}

fn json_items<'a>(diagnostics: &'a [Diagnostic], base: &str) -> Vec<JsonDiagnostic<'a>> {
    diagnostics
        .iter()
        .map(|d| JsonDiagnostic {
            severity: d.severity,
            code: d.code,
            message: &d.message,
            file: d.file.as_deref().map(|f| join_path(base, f)),
            line: d.line,
            column: d.column,
            help: d.help.as_deref(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compiler::diagnostic::code;
    use crate::compiler::source::SourceFile;
    use pretty_assertions::assert_eq;

    #[test]
    fn foreign_text_in_every_part_is_escaped_and_the_caret_still_points_at_it() {
        let src = SourceFile::new("tools/\u{202e}x.toml", "a\u{200b} = \"\u{1b}[2J\"\n");
        let d = Diagnostic::warning(code::UNKNOWN_KEY, "tool `\u{202e}gnp.exe` is odd")
            .at(&src, Some(0..4))
            .label("\u{2066}here")
            .note("server says \u{feff}hi")
            .help("try `\u{7}`");
        let out = human(&d, ".", Style { color: false });
        assert_eq!(
            out,
            "warning[E0003]: tool `\\u{202e}gnp.exe` is odd\n \
             --> tools/\\u{202e}x.toml:1:1\n  \
             |\n\
             1 | a\\u{200b} = \"\\u{1b}[2J\"\n  \
             | ^^^^^^^^^ \\u{2066}here\n  \
             |\n  \
             = note: server says \\u{feff}hi\n  \
             = help: try `\\u{7}`\n"
        );
    }

    #[test]
    fn renders_position_caret_note_and_help() {
        let src = SourceFile::new("agent.toml", "name = \"x\"\nmodle = \"a/b\"\n");
        let d = Diagnostic::error(code::UNKNOWN_KEY, "unknown key `modle`")
            .at(&src, Some(11..16))
            .label("unknown key")
            .help("did you mean `model`?");
        assert_eq!(
            human(&d, "demo", Style { color: false }),
            "error[E0003]: unknown key `modle`\n \
             --> demo/agent.toml:2:1\n  \
             |\n\
             2 | modle = \"a/b\"\n  \
             | ^^^^^ unknown key\n  \
             |\n  \
             = help: did you mean `model`?\n"
        );
    }

    #[test]
    fn renders_a_file_without_position() {
        let d = Diagnostic::warning(code::NOT_A_TOOL_FILE, "`tools/x.txt` is not a tool file")
            .file("tools/x.txt")
            .note("why");
        assert_eq!(
            human(&d, ".", Style { color: false }),
            "warning[W0212]: `tools/x.txt` is not a tool file\n --> tools/x.txt\n  = note: why\n"
        );
    }

    #[test]
    fn a_report_prints_three_of_each_code_and_counts_the_rest_unless_verbose() {
        let mut diags = crate::compiler::Diagnostics::default();
        for i in 0..5 {
            diags.push(Diagnostic::warning(
                code::SKILL_NAME_MISMATCH,
                format!("m{i}"),
            ));
        }
        diags.push(Diagnostic::error(code::UNKNOWN_KEY, "k"));
        for i in 0..12 {
            diags.push(Diagnostic::error(code::WRONG_TYPE, format!("t{i}")).file("agent.toml"));
        }
        diags.cap(10);
        let report = human_report(diags.iter(), ".", false, false);
        let firsts: Vec<&str> = report
            .lines()
            .filter(|l| l.starts_with("warning[") || l.starts_with("error[") || l.starts_with('…'))
            .collect();
        assert_eq!(
            firsts,
            [
                "warning[W0402]: m0",
                "warning[W0402]: m1",
                "warning[W0402]: m2",
                "error[E0003]: k",
                "error[E0004]: t0",
                "error[E0004]: t1",
                "error[E0004]: t2",
                "… and 2 more W0402 warnings (eve build --verbose shows all)",
                "… and 9 more E0004 errors (eve build --verbose shows all)",
            ]
        );
        let verbose = human_report(diags.iter(), ".", false, true);
        assert_eq!(verbose.matches("warning[W0402]").count(), 5);
        assert_eq!(
            verbose.matches("error[E0004]").count(),
            11,
            "ten and the count of the rest"
        );
        assert!(!verbose.contains("--verbose"));
        let errors = human_report(diags.iter(), ".", true, false);
        assert!(!errors.contains("W0402"), "{errors}");
    }

    #[test]
    fn colours_only_when_asked() {
        let d = Diagnostic::error(code::UNKNOWN_KEY, "x");
        assert!(human(&d, ".", Style { color: true }).contains("\x1b[1;31m"));
        assert!(!human(&d, ".", Style { color: false }).contains('\x1b'));
    }
}
