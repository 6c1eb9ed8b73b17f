//! One run of a case: a fresh workspace and session, the harness driven turn by turn in
//! process (a parked turn resumed with the case's answer or decision), the case's
//! timeout, then every expectation checked.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use super::expect;
use super::journal::RunLog;
use super::judge::{self, JudgeModel};
use super::observed::Observed;
use super::results::{Check, CheckStatus, RunResult};
use super::workspace;
use crate::harness::{Emitter, Harness};
use crate::manifest::Manifest;
use crate::manifest::eval::{Case, Judge, TurnInput};
use crate::protocol::{Event, InputKind, Resolution, TurnOutcome, Usage};
use crate::providers::{self, Resolved};
use crate::tools::stub::Stubs;

/// How long a run that timed out gets to stop (its tools are killed) before it is dropped.
const STOP_GRACE: Duration = Duration::from_secs(10);

/// What every run of an eval run shares.
#[derive(Debug)]
pub struct Suite {
    /// The agent directory, canonical.
    pub agent_dir: PathBuf,
    pub manifest: Arc<Manifest>,
    /// `--model`: every case on this model (a `scripted:` path relative to `cwd`).
    pub model: Option<String>,
    pub cwd: PathBuf,
    pub judge: Option<JudgeModel>,
    /// The artifacts folder of this eval run.
    pub artifacts: PathBuf,
    pub keep: bool,
    pub strict: bool,
    /// Run on a real model even when a case has replies (`--record`).
    pub live: bool,
}

/// A finished run and the events it emitted.
#[derive(Debug)]
pub struct Ran {
    pub result: RunResult,
    pub events: Vec<Event>,
}

/// A turn that ran, with what the expectations saw of it.
struct TurnDone {
    outcome: TurnOutcome,
    /// The steps and tokens of this turn of the case: a resumed turn's outcome counts
    /// the steps before it parked too.
    steps: u64,
    usage: Usage,
    judge: Option<(Judge, String)>,
}

/// `a - b`, field by field.
fn minus(a: &Usage, b: &Usage) -> Usage {
    Usage {
        input_tokens: a.input_tokens.saturating_sub(b.input_tokens),
        output_tokens: a.output_tokens.saturating_sub(b.output_tokens),
        cache_read_tokens: a.cache_read_tokens.saturating_sub(b.cache_read_tokens),
        cache_write_tokens: a.cache_write_tokens.saturating_sub(b.cache_write_tokens),
        reasoning_tokens: a.reasoning_tokens.saturating_sub(b.reasoning_tokens),
    }
}

/// Runs `case` once (run number `run`, from 1).
pub async fn run_once(suite: Arc<Suite>, case: Arc<Case>, run: u32) -> Ran {
    let started = Instant::now();
    let folder = Path::new("cases").join(&case.id).join(format!("run-{run}"));
    let dir = suite.artifacts.join(&folder);
    let mut result = RunResult {
        run,
        passed: false,
        steps: 0,
        usage: Usage::default(),
        duration_ms: 0,
        error: None,
        timed_out: false,
        session_id: crate::ids::new_id("ses"),
        checks: Vec::new(),
        workspace: None,
        events: crate::compiler::inputs::slash_path(&folder.join("events.ndjson")),
    };
    let mut events = Vec::new();
    if let Err(error) = drive(&suite, &case, &dir, &mut result, &mut events).await {
        result.error = Some(error);
    }
    result.duration_ms = started.elapsed().as_millis() as u64;
    result.passed = result.error.is_none()
        && result.checks.iter().all(|c| match c.status {
            CheckStatus::Passed | CheckStatus::Skipped => true,
            CheckStatus::Soft => !suite.strict,
            CheckStatus::Failed => false,
        });
    let mut ndjson = String::new();
    for event in &events {
        if let Ok(line) = serde_json::to_string(event) {
            ndjson.push_str(&line);
            ndjson.push('\n');
        }
    }
    if let Err(e) = std::fs::write(dir.join("events.ndjson"), ndjson) {
        result
            .error
            .get_or_insert(format!("cannot write the events: {e}"));
        result.passed = false;
    }
    Ran { result, events }
}

async fn drive(
    suite: &Suite,
    case: &Case,
    dir: &Path,
    result: &mut RunResult,
    all_events: &mut Vec<Event>,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
    let workspace = workspace::create(&case.workspace)?;
    let root = workspace
        .path()
        .canonicalize()
        .map_err(|e| format!("cannot open the temporary workspace: {e}"))?;
    let outcome = start(suite, case, dir, &root, &result.session_id);
    let (mut harness, mut rx) = match outcome {
        Ok(ready) => ready,
        Err(e) => {
            keep(suite, workspace, result);
            return Err(e);
        }
    };
    let cancel = CancellationToken::new();
    let timeout = Duration::from_secs(case.timeout_secs);
    let mut turns: Vec<TurnDone> = Vec::new();
    let mut stopped: Option<String> = None;
    let started = Instant::now();
    let (timed_out, gave_up) = {
        let turns_run = turns_loop(
            case,
            &mut harness,
            &mut rx,
            &cancel,
            &root,
            result,
            all_events,
            &mut turns,
            &mut stopped,
        );
        tokio::pin!(turns_run);
        tokio::select! {
            () = &mut turns_run => (false, false),
            () = tokio::time::sleep(timeout) => {
                cancel.cancel();
                let stopped_in_time = tokio::time::timeout(STOP_GRACE, &mut turns_run).await.is_ok();
                (true, !stopped_in_time)
            }
        }
    };
    result.timed_out = timed_out;
    if gave_up {
        stopped = Some(format!(
            "timed out after {} s (timeout_secs) and did not stop within {} s of being cancelled",
            case.timeout_secs,
            STOP_GRACE.as_secs()
        ));
    }
    let elapsed = started.elapsed();
    if let Some(last) = turns.last() {
        harness.finish(&last.outcome);
    }
    harness.stop().await;
    while let Ok(event) = rx.try_recv() {
        all_events.push(event);
    }
    if result.timed_out && stopped.is_none() {
        stopped = Some(format!(
            "timed out after {} s (timeout_secs): the turn was cancelled",
            case.timeout_secs
        ));
    }
    if !turns.is_empty() {
        let history = case
            .expect
            .judge
            .is_some()
            .then(|| judge::transcript(harness.history()));
        let run = Scored {
            turns: &turns,
            events: all_events,
            elapsed,
            root: &root,
        };
        score(suite, case, &run, history, result).await;
    }
    keep(suite, workspace, result);
    match stopped {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// What a run of a case did, for its case-wide checks.
struct Scored<'a> {
    turns: &'a [TurnDone],
    events: &'a [Event],
    elapsed: Duration,
    root: &'a Path,
}

/// The case-wide checks of a run that played turns: the case's `[expect]` against the
/// last turn and all events, and the judges (each turn's, then the case's on `history`,
/// the whole conversation).
async fn score(
    suite: &Suite,
    case: &Case,
    run: &Scored<'_>,
    history: Option<String>,
    result: &mut RunResult,
) {
    let Some(last) = run.turns.last() else {
        return;
    };
    let mut usage = Usage::default();
    for turn in run.turns {
        usage.add(&turn.usage);
    }
    result.steps = run.turns.iter().map(|t| t.steps).sum();
    result.usage = usage.clone();
    let observed = Observed {
        end: last.outcome.end_reason,
        error: last.outcome.error.as_deref(),
        reply: &last.outcome.result,
        events: run.events,
        earlier: &[],
        steps: result.steps,
        usage,
        duration: run.elapsed,
        workspace: run.root,
    };
    let default_end = case.expect.end.is_none().then_some("completed");
    result
        .checks
        .extend(expect::check(&case.expect, &observed, default_end));
    let mut judges: Vec<(Option<usize>, Judge, String, String)> = run
        .turns
        .iter()
        .enumerate()
        .filter_map(|(n, t)| {
            t.judge
                .clone()
                .map(|(j, c)| (Some(n + 1), j, c, t.outcome.result.clone()))
        })
        .collect();
    if let (Some(judge), Some(history)) = (&case.expect.judge, history) {
        judges.push((None, judge.clone(), history, last.outcome.result.clone()));
    }
    for (turn, criteria, conversation, reply) in judges {
        let mut check = judge::judge(&criteria, suite.judge.as_ref(), &conversation, &reply).await;
        check.turn = turn;
        result.checks.push(check);
    }
}

/// The harness of one run of `case`, in the workspace `root`, logging to `dir`, and
/// the receiver of its events.
fn start(
    suite: &Suite,
    case: &Case,
    dir: &Path,
    root: &Path,
    session_id: &str,
) -> Result<(Harness, tokio::sync::mpsc::UnboundedReceiver<Event>), String> {
    let (resolved, pinned) = model(suite, case)?;
    let manifest = if pinned {
        Arc::new(pin(&suite.manifest, &resolved.reference))
    } else {
        suite.manifest.clone()
    };
    // Tools are real in an eval: the same sandbox as `eve run`, and the agent's
    // servers started in this run's own workspace, as `eve run` would.
    let (setup, _) = crate::runner::session_setup_with(
        manifest,
        suite.agent_dir.clone(),
        root.to_path_buf(),
        resolved,
        &crate::runner::RunOptions::default(),
    )?;
    let setup = setup
        .with_journal(Arc::new(RunLog::create(&dir.join("session.jsonl"))?))
        .with_stubs((!case.stubs.is_empty()).then(|| Arc::new(Stubs::new(&case.stubs))))
        .with_hook_stubs(Arc::new(case.hook_stubs.clone()));
    let (emitter, rx) = Emitter::channel();
    let harness = Harness::new(setup, emitter, session_id.to_string())?;
    Ok((harness, rx))
}

/// Keeps the workspace when asked (`--keep`), else deletes it.
fn keep(suite: &Suite, workspace: tempfile::TempDir, result: &mut RunResult) {
    if suite.keep {
        result.workspace = Some(workspace.keep().display().to_string());
    }
}

#[allow(clippy::too_many_arguments)]
async fn turns_loop(
    case: &Case,
    harness: &mut Harness,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<Event>,
    cancel: &CancellationToken,
    root: &Path,
    result: &mut RunResult,
    all_events: &mut Vec<Event>,
    turns: &mut Vec<TurnDone>,
    stopped: &mut Option<String>,
) {
    if let Err(error) = harness.start().await {
        *stopped = Some(error.to_string());
        return;
    }
    let count = case.turns.len();
    for (n, turn) in case.turns.iter().enumerate() {
        if cancel.is_cancelled() {
            return;
        }
        let started = Instant::now();
        let outcome = match play(harness, n, &turn.input, turns.last(), cancel).await {
            Ok(outcome) => outcome,
            Err(why) => {
                *stopped = Some(why);
                return;
            }
        };
        let mut events = Vec::new();
        while let Ok(event) = rx.try_recv() {
            events.push(event);
        }
        let resumed = !matches!(turn.input, TurnInput::Send(_));
        let (steps, usage) = match turns.last() {
            Some(before) if resumed => (
                outcome.steps.saturating_sub(before.outcome.steps),
                minus(&outcome.usage, &before.outcome.usage),
            ),
            _ => (outcome.steps, outcome.usage.clone()),
        };
        let next_resumes = case
            .turns
            .get(n + 1)
            .is_some_and(|t| !matches!(t.input, TurnInput::Send(_)));
        let default_end = if next_resumes {
            Some("waiting")
        } else if n + 1 < count {
            Some("completed")
        } else {
            None
        };
        let observed = Observed {
            end: outcome.end_reason,
            error: outcome.error.as_deref(),
            reply: &outcome.result,
            events: &events,
            earlier: all_events,
            steps,
            usage: usage.clone(),
            duration: started.elapsed(),
            workspace: root,
        };
        let mut checks: Vec<Check> = expect::check(&turn.expect, &observed, default_end);
        for check in &mut checks {
            check.turn = Some(n + 1);
        }
        result.checks.extend(checks);
        all_events.extend(events);
        let judge = turn
            .expect
            .judge
            .clone()
            .map(|j| (j, judge::transcript(harness.history())));
        turns.push(TurnDone {
            outcome,
            steps,
            usage,
            judge,
        });
    }
}

/// Plays turn `n` (from 0) of a case, after `before`: sends its message, or gives the
/// answer it gives. `Err`: why the case stops here.
async fn play(
    harness: &mut Harness,
    n: usize,
    input: &TurnInput,
    before: Option<&TurnDone>,
    cancel: &CancellationToken,
) -> Result<TurnOutcome, String> {
    let (resolution, verb) = match input {
        TurnInput::Send(text) => {
            if let Some(pending) = harness.pending() {
                return Err(format!(
                    "turn {} sends a message, but the agent waits for {} (`{}`): answer it first",
                    n + 1,
                    waits_for(&pending.kind),
                    pending.tool
                ));
            }
            return Ok(harness.run_turn(text.clone(), cancel.clone()).await);
        }
        TurnInput::Answer(text) => (Resolution::Answer { text: text.clone() }, "answers"),
        TurnInput::Approve => (Resolution::Approved { by: None }, "approves"),
        TurnInput::Deny(reason) => (
            Resolution::Denied {
                reason: reason.clone(),
            },
            "denies",
        ),
    };
    let Some(pending) = harness.pending() else {
        let before = before.map_or("nothing".to_string(), |t| {
            t.outcome.end_reason.as_str().to_string()
        });
        return Err(format!(
            "turn {} {verb}, but the agent is not waiting for a person (turn {} ended {before})",
            n + 1,
            n
        ));
    };
    let tool = pending.tool.clone();
    harness
        .resume_turn(resolution, cancel.clone())
        .await
        .map_err(|e| format!("turn {} {verb} `{tool}`, but {e}", n + 1))
}

fn waits_for(kind: &InputKind) -> &'static str {
    match kind {
        InputKind::Question { .. } => "an answer",
        InputKind::Approval => "an approval",
    }
}

/// The model of a run, and whether every model call of the run (child agents,
/// compaction) must use it: `--model`, the case's replies, the case's `model`, else the
/// agent's own model as it is.
fn model(suite: &Suite, case: &Case) -> Result<(Resolved, bool), String> {
    let providers = &suite.manifest.agent.providers;
    if let Some(model) = &suite.model {
        return Ok((
            providers::resolve(model, providers, &suite.cwd, &crate::secrets::var)?,
            true,
        ));
    }
    if !suite.live
        && let Some(replies) = &case.replies
    {
        let provider = providers::scripted::ScriptedProvider::from_replies(
            Path::new(&case.file),
            replies.clone(),
        );
        return Ok((
            Resolved {
                provider: Arc::new(provider),
                model_id: case.file.clone(),
                reference: format!("scripted:{}", case.file),
            },
            true,
        ));
    }
    if let Some(model) = &case.model {
        return Ok((
            providers::resolve(model, providers, &suite.agent_dir, &crate::secrets::var)?,
            true,
        ));
    }
    let own = &suite.manifest.agent.model;
    Ok((
        providers::resolve(own, providers, &suite.agent_dir, &crate::secrets::var)?,
        false,
    ))
}

/// The manifest with every model call on `reference`: the agent, its subagents, and
/// compaction. A scripted case must never reach a real model.
fn pin(manifest: &Manifest, reference: &str) -> Manifest {
    let mut pinned = manifest.clone();
    pinned.agent.model = reference.to_string();
    pinned.agent.compaction.model = None;
    for subagent in &mut pinned.subagents {
        *subagent.manifest = pin(&subagent.manifest, reference);
    }
    pinned
}
