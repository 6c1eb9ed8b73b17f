//! JUnit XML for CI: one `<testcase>` per case. Everything from a model, a tool or a file
//! is escaped, and characters XML cannot hold at all are written as `\u{…}`.

use std::fmt::Write;

use super::report;
use super::results::{CaseResult, Summary};

/// The JUnit document of an eval run.
pub fn document(summary: &Summary, results: &[CaseResult]) -> String {
    let secs = |ms: u64| format!("{:.3}", ms as f64 / 1000.0);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites name=\"eve eval\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" time=\"{}\">",
        summary.cases,
        summary.failed,
        secs(summary.duration_ms)
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" time=\"{}\">",
        attr(&summary.agent),
        summary.cases,
        summary.failed,
        secs(summary.duration_ms)
    );
    for case in results {
        let _ = write!(
            out,
            "    <testcase name=\"{}\" classname=\"{}\" file=\"{}\" time=\"{}\"",
            attr(&case.id),
            attr(&summary.agent),
            attr(&case.file),
            secs(case.duration_ms())
        );
        let problems = report::problems(case);
        if case.passed && problems.is_empty() {
            out.push_str("/>\n");
            continue;
        }
        out.push_str(">\n");
        if !case.passed {
            let first = case
                .runs
                .iter()
                .find_map(|r| {
                    r.error
                        .clone()
                        .or_else(|| r.problems().next().map(|c| c.label()))
                })
                .unwrap_or_else(|| "failed".into());
            let _ = writeln!(
                out,
                "      <failure message=\"{}\" type=\"expectation\">{}</failure>",
                attr(&first),
                text(&problems)
            );
        } else {
            let _ = writeln!(out, "      <system-out>{}</system-out>", text(&problems));
        }
        out.push_str("    </testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// A character XML 1.0 cannot hold, even escaped.
fn forbidden(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}' | '\u{c}' | '\u{e}'..='\u{1f}' | '\u{fffe}' | '\u{ffff}')
}

fn escape(value: &str, in_attribute: bool) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\n' if in_attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if in_attribute => out.push_str("&#9;"),
            c if forbidden(c) => out.push_str(&c.escape_unicode().to_string()),
            c => out.push(c),
        }
    }
    out
}

fn attr(value: &str) -> String {
    escape(value, true)
}

fn text(value: &str) -> String {
    escape(value, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_text_is_escaped_and_forbidden_characters_are_spelled_out() {
        assert_eq!(
            attr("a\"<b>&'\n\u{1b}[31m"),
            "a&quot;&lt;b&gt;&amp;&apos;&#10;\\u{1b}[31m"
        );
        assert_eq!(text("]]></failure>\u{0}"), "]]&gt;&lt;/failure&gt;\\u{0}");
        assert_eq!(text("tab\tnew\nline"), "tab\tnew\nline");
    }
}
