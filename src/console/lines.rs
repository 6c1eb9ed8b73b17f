//! The one-line forms shared by every human output: a tool call, its result, how a turn
//! ended, what a parked turn waits for.

use std::time::Duration;

use serde_json::Value;

use crate::protocol::{EndReason, InputKind, InputRequest, TurnOutcome, Usage};

/// `→ name {input}`: a tool call.
pub fn action_line(name: &str, input: &Value) -> String {
    match compact_input(input) {
        input if input.is_empty() => format!("→ {name}"),
        input => format!("→ {name} {input}"),
    }
}

/// `  ← name: 3 lines (12 ms)` or `  ✗ name failed (3 ms): …`: a tool result.
pub fn result_line(name: &str, output: &str, is_error: bool, duration_ms: u64) -> String {
    let took = format_duration(Duration::from_millis(duration_ms));
    if is_error {
        format!("  ✗ {name} failed ({took}): {}", first_line(output, 160))
    } else {
        format!("  ← {name}: {} ({took})", summary(output))
    }
}

fn compact_input(input: &Value) -> String {
    let text = input.to_string();
    if text == "{}" {
        return String::new();
    }
    crate::text::shorten(&text, 200)
}

/// The first line of `text`, at most `max` characters.
pub fn first_line(text: &str, max: usize) -> String {
    crate::text::shorten(text.lines().next().unwrap_or_default(), max)
}

fn summary(output: &str) -> String {
    match output.lines().count() {
        0 => "no output".to_string(),
        1 => format!("\"{}\"", first_line(output, 100)),
        n => format!("{n} lines"),
    }
}

/// `1.2 s`, `340 ms`.
pub fn format_duration(d: Duration) -> String {
    if d.as_millis() < 1000 {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

/// `1,234,567`.
pub fn thousands(n: u64) -> String {
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

/// A hook that decided something, rewrote a call's input, or failed: `  ⚑ hook
/// no-rm-rf: deny — rm -rf is not allowed here` (its reason on one line, shortened);
/// `None` for a hook that changed nothing.
pub fn hook_line(
    hook: &str,
    decision: &str,
    reason: Option<&str>,
    failed: bool,
    rewrote: bool,
) -> Option<String> {
    let what = match (failed, decision, rewrote) {
        (true, _, _) => format!("failed, so {decision}"),
        (false, "continue", false) => return None,
        (false, "continue", true) => "rewrote the input".to_string(),
        (false, _, true) => format!("{decision}, input rewritten"),
        (false, _, false) => decision.to_string(),
    };
    Some(match reason.map(|r| first_line(r, 100)) {
        Some(reason) if !reason.is_empty() => format!("  ⚑ hook {hook}: {what} — {reason}"),
        _ => format!("  ⚑ hook {hook}: {what}"),
    })
}

/// A reply's reasoning as people read it: `✻ ` before its first line and `│ ` before
/// the others, blank lines left out, at most `max_lines` then a count of the rest;
/// `None` when there is nothing to show.
pub fn reasoning_block(reasoning: &str, max_lines: usize) -> Option<String> {
    let lines: Vec<&str> = reasoning
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    let mut block: Vec<String> = lines
        .iter()
        .take(max_lines)
        .enumerate()
        .map(|(i, l)| format!("{} {l}", if i == 0 { "✻" } else { "│" }))
        .collect();
    if lines.len() > max_lines {
        block.push(format!(
            "│ … {} more lines of reasoning",
            lines.len() - max_lines
        ));
    }
    Some(block.join("\n"))
}

/// A session's or turn's token counts in words: `12,345 tokens in (10,000 cached), 67
/// out (40 reasoning)`; `reported` is false when some call reported none.
pub fn usage_text(usage: &Usage, reported: bool) -> String {
    if !reported && *usage == Usage::default() {
        return "usage not reported".to_string();
    }
    let mut text = format!("{} tokens in", thousands(usage.input_tokens));
    if usage.cache_read_tokens > 0 {
        text.push_str(&format!(" ({} cached)", thousands(usage.cache_read_tokens)));
    }
    text.push_str(&format!(", {} out", thousands(usage.output_tokens)));
    if usage.reasoning_tokens > 0 {
        text.push_str(&format!(
            " ({} reasoning)",
            thousands(usage.reasoning_tokens)
        ));
    }
    if !reported {
        text.push_str(" (some calls reported no usage)");
    }
    text
}

/// Why a turn stopped, in words.
pub fn end_reason_text(outcome: &TurnOutcome) -> String {
    match outcome.end_reason {
        EndReason::MaxSteps => {
            format!("the turn reached max_steps ({} model calls)", outcome.steps)
        }
        EndReason::MaxTokens => "a reply reached the output token limit (max_output_tokens)".into(),
        EndReason::Aborted => "interrupted".into(),
        EndReason::Refused => format!("a hook refused the message: {}", outcome.result),
        EndReason::MaxInputTokens => {
            "the session reached [limits] max_input_tokens_per_session".into()
        }
        other => other.as_str().into(),
    }
}

/// `completed · 3 steps · 1,234 tokens in (800 cached), 56 out · 2.1 s`.
pub fn closing_line(outcome: &TurnOutcome, elapsed: Duration) -> String {
    let head = match outcome.end_reason {
        EndReason::Completed => "completed".to_string(),
        _ => format!("stopped: {}", end_reason_text(outcome)),
    };
    format!(
        "{head} · {} {} · {} · {}",
        outcome.steps,
        if outcome.steps == 1 { "step" } else { "steps" },
        usage_text(&outcome.usage, outcome.usage_reported),
        format_duration(elapsed)
    )
}

/// What a parked turn waits for, and the commands that answer it.
pub fn waiting_text(request: &InputRequest, session_id: &str, command: &str) -> String {
    let resume = format!("{command} --session {session_id}");
    match &request.kind {
        InputKind::Question { question, options } => {
            let mut out = format!(
                "waiting: the agent asks a question (session {session_id}):\n  {question}\n"
            );
            for (i, option) in options.iter().enumerate() {
                out.push_str(&format!("    {}. {option}\n", i + 1));
            }
            out.push_str(&format!("answer with:\n  {resume} --answer \"…\"\n"));
            out
        }
        InputKind::Approval => {
            let input = serde_json::to_string_pretty(&request.input).unwrap_or_default();
            let mut out = format!(
                "waiting: `{}` needs your approval (session {session_id}):\n",
                request.tool
            );
            for line in input.lines() {
                out.push_str(&format!("  {line}\n"));
            }
            out.push_str(&format!(
                "approve or deny with:\n  {resume} --approve\n  {resume} --deny --reason \"…\"\n"
            ));
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome(end_reason: EndReason) -> TurnOutcome {
        TurnOutcome {
            turn_id: "turn_1".into(),
            end_reason,
            result: "Done.".into(),
            error: None,
            steps: 2,
            usage: Usage {
                input_tokens: 12345,
                output_tokens: 67,
                cache_read_tokens: 10000,
                cache_write_tokens: 0,
                reasoning_tokens: 0,
            },
            usage_reported: true,
            pending: None,
        }
    }

    #[test]
    fn closing_lines_say_why_a_turn_stopped() {
        let line = closing_line(&outcome(EndReason::MaxSteps), Duration::from_millis(2500));
        assert_eq!(
            line,
            "stopped: the turn reached max_steps (2 model calls) · 2 steps · 12,345 tokens in (10,000 cached), 67 out · 2.5 s"
        );
        assert_eq!(thousands(1234567), "1,234,567");
        assert_eq!(thousands(12), "12");
        let mut reasoned = outcome(EndReason::Completed);
        reasoned.usage.output_tokens = 1567;
        reasoned.usage.reasoning_tokens = 1500;
        assert_eq!(
            closing_line(&reasoned, Duration::from_millis(5)),
            "completed · 2 steps · 12,345 tokens in (10,000 cached), 1,567 out (1,500 reasoning) · 5 ms"
        );
    }

    #[test]
    fn a_provider_that_reports_no_usage_is_not_shown_as_zero_tokens() {
        let silent = TurnOutcome {
            usage: Usage::default(),
            usage_reported: false,
            ..outcome(EndReason::Completed)
        };
        assert_eq!(
            closing_line(&silent, Duration::from_millis(5)),
            "completed · 2 steps · usage not reported · 5 ms"
        );
    }

    #[test]
    fn tool_lines() {
        assert_eq!(action_line("glob", &json!({})), "→ glob");
        assert_eq!(
            action_line("grep", &json!({"pattern": "x"})),
            "→ grep {\"pattern\":\"x\"}"
        );
        assert_eq!(
            result_line("grep", "a\nb\n", false, 12),
            "  ← grep: 2 lines (12 ms)"
        );
        assert_eq!(
            result_line("bash", "exit 1\nmore", true, 1500),
            "  ✗ bash failed (1.5 s): exit 1"
        );
    }
}
