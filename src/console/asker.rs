//! Asking the person at the terminal: questions with numbered options, approvals as y/n.

use std::io::Write;

use futures_util::future::BoxFuture;

use super::escape::for_terminal;
use crate::harness::Asker;
use crate::protocol::{InputKind, InputRequest, Resolution};

/// Asks on stderr and reads the answer from stdin.
#[derive(Debug, Clone, Copy)]
pub struct TerminalAsker;

impl Asker for TerminalAsker {
    fn ask<'a>(&'a self, request: &'a InputRequest) -> BoxFuture<'a, Option<Resolution>> {
        let request = request.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || ask_on_terminal(&request))
                .await
                .ok()
                .flatten()
        })
    }
}

fn ask_on_terminal(request: &InputRequest) -> Option<Resolution> {
    let mut err = std::io::stderr();
    let stdin = std::io::stdin();
    match &request.kind {
        InputKind::Question { question, options } => {
            let _ = writeln!(err, "? {}", for_terminal(question));
            for (i, option) in options.iter().enumerate() {
                let _ = writeln!(err, "  {}. {}", i + 1, for_terminal(option));
            }
            loop {
                let _ = write!(err, "> ");
                let _ = err.flush();
                let mut line = String::new();
                if stdin.read_line(&mut line).ok()? == 0 {
                    return None;
                }
                let line = line.trim();
                if line.is_empty() {
                    continue;
                }
                let text = line
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| options.get(n.wrapping_sub(1)))
                    .map_or_else(|| line.to_string(), Clone::clone);
                return Some(Resolution::Answer { text });
            }
        }
        InputKind::Approval => {
            let input = serde_json::to_string_pretty(&request.input).unwrap_or_default();
            let _ = writeln!(err, "? `{}` wants to run with:", request.tool);
            for line in input.lines() {
                let _ = writeln!(err, "    {}", for_terminal(line));
            }
            loop {
                let _ = write!(err, "  allow it? [y/n] ");
                let _ = err.flush();
                let mut line = String::new();
                if stdin.read_line(&mut line).ok()? == 0 {
                    return None;
                }
                match line.trim().to_lowercase().as_str() {
                    "y" | "yes" => return Some(Resolution::Approved { by: None }),
                    "n" | "no" => return Some(Resolution::Denied { reason: None }),
                    _ => {}
                }
            }
        }
    }
}
