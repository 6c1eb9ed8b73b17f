//! What an eval run found: a check per expectation, a result per run and per case, and
//! the totals (serde types: `results.jsonl`, `summary.json` and `--format json`).

use serde::Serialize;

use crate::protocol::Usage;

/// How one expectation came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    Passed,
    Failed,
    /// Failed, but only a soft expectation (a judge without `gate`): the case passes
    /// unless `--strict`.
    Soft,
    /// Not checked (a judge without `--judge-model`); never counts as passed.
    Skipped,
}

/// One expectation, with what was expected and what happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// The turn it belongs to (1-based); `None` for the case's `[expect]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<usize>,
    /// The key, as written: `expect.tools.sequence`.
    pub expectation: String,
    pub status: CheckStatus,
    pub expected: String,
    pub actual: String,
    /// A unified diff of expected and actual text, when both are text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
    /// More lines about what happened (the tool calls made, the events seen).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

impl Check {
    pub fn new(expectation: impl Into<String>, passed: bool) -> Check {
        Check {
            turn: None,
            expectation: expectation.into(),
            status: if passed {
                CheckStatus::Passed
            } else {
                CheckStatus::Failed
            },
            expected: String::new(),
            actual: String::new(),
            diff: None,
            details: Vec::new(),
        }
    }

    pub fn expected(mut self, text: impl Into<String>) -> Check {
        self.expected = text.into();
        self
    }

    pub fn actual(mut self, text: impl Into<String>) -> Check {
        self.actual = text.into();
        self
    }

    pub fn diff(mut self, diff: Option<String>) -> Check {
        self.diff = diff;
        self
    }

    pub fn details(mut self, details: Vec<String>) -> Check {
        self.details = details;
        self
    }

    /// The name shown for it: `turn 2 · expect.end`.
    pub fn label(&self) -> String {
        match self.turn {
            Some(turn) => format!("turn {turn} · {}", self.expectation),
            None => self.expectation.clone(),
        }
    }
}

/// One run of a case.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunResult {
    /// 1-based.
    pub run: u32,
    pub passed: bool,
    pub steps: u64,
    pub usage: Usage,
    pub duration_ms: u64,
    /// Why the run could not go as the case says (a timeout, a workspace that could not
    /// be made, a turn that had nothing to answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub timed_out: bool,
    pub session_id: String,
    pub checks: Vec<Check>,
    /// Where the workspace was kept (`--keep`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    /// The run's events, relative to the artifacts folder.
    pub events: String,
}

impl RunResult {
    /// The checks that did not pass, in order.
    pub fn problems(&self) -> impl Iterator<Item = &Check> {
        self.checks
            .iter()
            .filter(|c| c.status != CheckStatus::Passed)
    }
}

/// A case: its runs and whether enough of them passed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CaseResult {
    pub id: String,
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub tags: Vec<String>,
    pub passed: bool,
    /// How many runs had to pass.
    pub needed: u32,
    pub runs: Vec<RunResult>,
}

impl CaseResult {
    /// How many runs passed.
    pub fn passed_runs(&self) -> usize {
        self.runs.iter().filter(|r| r.passed).count()
    }

    /// The steps of every run.
    pub fn steps(&self) -> u64 {
        self.runs.iter().map(|r| r.steps).sum()
    }

    /// The wall time of every run.
    pub fn duration_ms(&self) -> u64 {
        self.runs.iter().map(|r| r.duration_ms).sum()
    }

    /// Checks that were skipped, over every run.
    pub fn skipped(&self) -> usize {
        self.runs
            .iter()
            .flat_map(|r| &r.checks)
            .filter(|c| c.status == CheckStatus::Skipped)
            .count()
    }

    /// Soft failures, over every run.
    pub fn soft(&self) -> usize {
        self.runs
            .iter()
            .flat_map(|r| &r.checks)
            .filter(|c| c.status == CheckStatus::Soft)
            .count()
    }
}

/// The totals of an eval run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    pub agent: String,
    pub cases: usize,
    pub passed: usize,
    pub failed: usize,
    /// Expectations not checked (a judge without `--judge-model`).
    pub skipped_checks: usize,
    /// Soft expectations that failed (a judge without `gate`).
    pub soft_failures: usize,
    /// The mean share of passing runs over the cases that ran more than once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass_at_1: Option<f64>,
    pub usage: Usage,
    pub duration_ms: u64,
    /// The artifacts folder, as given on the command line.
    pub artifacts: String,
}

impl Summary {
    /// The totals of `results`.
    pub fn of(agent: &str, results: &[CaseResult], duration_ms: u64, artifacts: String) -> Summary {
        let mut usage = Usage::default();
        for run in results.iter().flat_map(|c| &c.runs) {
            usage.add(&run.usage);
        }
        let repeated: Vec<f64> = results
            .iter()
            .filter(|c| c.runs.len() > 1)
            .map(|c| c.passed_runs() as f64 / c.runs.len() as f64)
            .collect();
        Summary {
            agent: agent.to_string(),
            cases: results.len(),
            passed: results.iter().filter(|c| c.passed).count(),
            failed: results.iter().filter(|c| !c.passed).count(),
            skipped_checks: results.iter().map(CaseResult::skipped).sum(),
            soft_failures: results.iter().map(CaseResult::soft).sum(),
            pass_at_1: (!repeated.is_empty())
                .then(|| repeated.iter().sum::<f64>() / repeated.len() as f64),
            usage,
            duration_ms,
            artifacts,
        }
    }
}
