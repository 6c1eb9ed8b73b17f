//! What `eve eval` prints: a line per case as it finishes, then every problem with what
//! was expected and what happened, then the totals.

use std::fmt::Write;

use super::results::{CaseResult, Check, CheckStatus, Summary};
use crate::console::lines::{format_duration, thousands};

/// `✓ fix-typo   3 steps   12 ms`; `width` aligns the ids.
pub fn progress_line(case: &CaseResult, width: usize) -> String {
    let mark = if case.passed { "✓" } else { "✗" };
    let steps = case.steps();
    let mut line = format!(
        "{mark} {:<width$}  {steps:>3} {}  {:>8}",
        case.id,
        if steps == 1 { "step " } else { "steps" },
        format_duration(std::time::Duration::from_millis(case.duration_ms()))
    );
    if case.runs.len() > 1 {
        let _ = write!(
            line,
            "  {}/{} runs passed (needs {})",
            case.passed_runs(),
            case.runs.len(),
            case.needed
        );
    }
    let notes = [
        (case.soft(), "soft failure"),
        (case.skipped(), "skipped check"),
    ];
    for (n, what) in notes {
        if n > 0 {
            let _ = write!(line, "  ({n} {what}{})", if n == 1 { "" } else { "s" });
        }
    }
    line
}

/// Where `--keep` left a case's workspaces, one line each.
pub fn kept_lines(case: &CaseResult) -> Vec<String> {
    case.runs
        .iter()
        .filter_map(|r| {
            r.workspace.as_ref().map(|w| {
                if case.runs.len() > 1 {
                    format!("    workspace (run {}): {w}", r.run)
                } else {
                    format!("    workspace: {w}")
                }
            })
        })
        .collect()
}

fn mark(status: CheckStatus) -> &'static str {
    match status {
        CheckStatus::Passed => "✓",
        CheckStatus::Failed => "✗",
        CheckStatus::Soft => "~",
        CheckStatus::Skipped => "-",
    }
}

/// Writes one check; details already shown for the check before it are not repeated.
fn push_check(out: &mut String, check: &Check, indent: &str, shown: &mut Vec<String>) {
    let _ = writeln!(out, "{indent}{} {}", mark(check.status), check.label());
    let inner = format!("{indent}    ");
    if !check.expected.is_empty() {
        let _ = writeln!(out, "{inner}expected: {}", check.expected);
    }
    if !check.actual.is_empty() {
        let _ = writeln!(out, "{inner}actual:   {}", check.actual);
    }
    if let Some(diff) = &check.diff {
        for line in diff.lines() {
            let _ = writeln!(out, "{inner}{line}");
        }
    }
    if !check.details.is_empty() && check.details == *shown {
        let _ = writeln!(out, "{inner}(the same as above)");
        return;
    }
    for line in &check.details {
        let _ = writeln!(out, "{inner}{line}");
    }
    if !check.details.is_empty() {
        shown.clone_from(&check.details);
    }
}

/// Every run error and every check of `case` that did not pass (empty when none).
pub fn problems(case: &CaseResult) -> String {
    let mut out = String::new();
    let many = case.runs.len() > 1;
    for run in &case.runs {
        let indent = if many { "    " } else { "  " };
        let mut body = String::new();
        if let Some(error) = &run.error {
            let _ = writeln!(body, "{indent}✗ {error}");
        }
        let mut shown = Vec::new();
        for check in run.problems() {
            push_check(&mut body, check, indent, &mut shown);
        }
        if body.is_empty() {
            continue;
        }
        if many {
            let _ = writeln!(
                out,
                "  run {}: {}",
                run.run,
                if run.passed { "passed" } else { "failed" }
            );
        }
        out.push_str(&body);
    }
    out
}

/// The problems of every case that has some, in case order.
pub fn failures(results: &[CaseResult]) -> String {
    let mut out = String::new();
    for case in results {
        let problems = problems(case);
        if problems.is_empty() {
            continue;
        }
        let mark = if case.passed { "~" } else { "✗" };
        let _ = write!(out, "\n{mark} {} ({})", case.id, case.file);
        if let Some(description) = &case.description {
            let _ = write!(out, ": {description}");
        }
        out.push('\n');
        out.push_str(&problems);
    }
    out
}

fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// `4 cases: 3 passed, 1 failed · 2,000 tokens in, 80 out · 1.2 s`.
pub fn summary_line(summary: &Summary) -> String {
    let mut line = format!(
        "{}: {} passed, {} failed",
        count(summary.cases, "case"),
        summary.passed,
        summary.failed
    );
    if summary.skipped_checks > 0 {
        let _ = write!(line, ", {} skipped", count(summary.skipped_checks, "check"));
    }
    if summary.soft_failures > 0 {
        let _ = write!(line, ", {}", count(summary.soft_failures, "soft failure"));
    }
    if let Some(pass_at_1) = summary.pass_at_1 {
        let _ = write!(line, " · pass@1 {pass_at_1:.2} over repeated cases");
    }
    let _ = write!(
        line,
        " · {} tokens in, {} out · {}",
        thousands(summary.usage.input_tokens),
        thousands(summary.usage.output_tokens),
        format_duration(std::time::Duration::from_millis(summary.duration_ms))
    );
    line
}
