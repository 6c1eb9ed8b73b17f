//! The artifacts of an eval run: `.eve/evals/<timestamp>/` with `summary.json`,
//! `results.jsonl` (one line per case) and each run's events and session log.

use std::path::{Path, PathBuf};

use super::results::{CaseResult, Summary};

/// Creates a new artifacts folder under `agent_dir`, named after the time (UTC).
pub fn create(agent_dir: &Path) -> Result<PathBuf, String> {
    // Beneath the agent directory, never through a link ([`crate::statedir`]); the
    // folder made in it is new, so nothing can have been planted inside.
    let base = crate::statedir::create(agent_dir, &["evals"])
        .map_err(|e| format!("cannot create the eval artifacts folder: {e}"))?;
    let stamp: String = crate::ids::now_rfc3339()
        .chars()
        .take(19)
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect();
    for n in 1..1000 {
        let name = if n == 1 {
            format!("{stamp}Z")
        } else {
            format!("{stamp}Z-{n}")
        };
        match base.make_dir(&name) {
            Ok(dir) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("cannot create an eval artifacts folder: {e}")),
        }
    }
    Err(format!(
        "cannot create an artifacts folder in `{}`",
        base.path().display()
    ))
}

/// Writes `summary.json` and `results.jsonl`.
pub fn write(dir: &Path, summary: &Summary, results: &[CaseResult]) -> Result<(), String> {
    let mut json = serde_json::to_string_pretty(summary).map_err(|e| e.to_string())?;
    json.push('\n');
    let summary_path = dir.join("summary.json");
    std::fs::write(&summary_path, json)
        .map_err(|e| format!("cannot write `{}`: {e}", summary_path.display()))?;
    let mut lines = String::new();
    for result in results {
        lines.push_str(&serde_json::to_string(result).map_err(|e| e.to_string())?);
        lines.push('\n');
    }
    let results_path = dir.join("results.jsonl");
    std::fs::write(&results_path, lines)
        .map_err(|e| format!("cannot write `{}`: {e}", results_path.display()))
}
