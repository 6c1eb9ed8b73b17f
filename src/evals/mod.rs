//! `eve eval`: runs an agent's eval cases, each run in its own temporary workspace and
//! session, in parallel and in process; checks what each case expects; reports.
//!
//! The case format is compiled by `compiler::evals`; this module only runs cases. It
//! drives the harness through `Harness::run_turn` and `resume_turn` like any driver,
//! replaces tool effects through the registry's stubs, and never changes the harness.

mod artifacts;
mod expect;
mod journal;
pub mod judge;
pub mod junit;
mod observed;
pub mod record;
pub mod report;
pub mod results;
mod run;
mod workspace;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::manifest::Manifest;
use crate::manifest::eval::Case;
use crate::protocol::Event;
use results::{CaseResult, RunResult, Summary};
pub use run::Suite;

/// What `eve eval` was asked for, beyond the cases.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Runs at once; 0: the number of CPUs.
    pub jobs: usize,
    /// `--model`: every case on this model.
    pub model: Option<String>,
    /// `--judge-model`.
    pub judge_model: Option<String>,
    /// `--repeat N`: each case runs N times.
    pub repeat: Option<u32>,
    /// `--strict`: soft failures fail.
    pub strict: bool,
    /// `--keep`: keep the workspaces.
    pub keep: bool,
    /// `--record`: run on a real model even where the case has replies, once.
    pub record: bool,
}

/// The cases `filters` and `tags` select, sorted by id. A filter selects the ids that
/// contain it, or that match it when it is a glob (`edits/*`); no filter selects every
/// case. A tag selects the cases that have it.
pub fn select(
    mut cases: Vec<Case>,
    filters: &[String],
    tags: &[String],
) -> Result<Vec<Case>, String> {
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    for filter in filters {
        if !cases.iter().any(|c| selects(filter, &c.id)) {
            let ids: Vec<&str> = cases.iter().map(|c| c.id.as_str()).collect();
            let hint = match crate::suggest::closest(filter, ids.iter().copied()) {
                Some(near) => format!(": did you mean `{near}`?"),
                None if ids.is_empty() => " (the agent has no eval cases)".into(),
                None => format!(" (cases: {})", ids.join(", ")),
            };
            return Err(format!("no eval case matches `{filter}`{hint}"));
        }
    }
    for tag in tags {
        if !cases.iter().any(|c| c.tags.contains(tag)) {
            let mut known: Vec<&str> = cases
                .iter()
                .flat_map(|c| c.tags.iter().map(String::as_str))
                .collect();
            known.sort_unstable();
            known.dedup();
            let hint = match crate::suggest::closest(tag, known.iter().copied()) {
                Some(near) => format!(": did you mean `{near}`?"),
                None if known.is_empty() => " (no case has tags)".into(),
                None => format!(" (tags: {})", known.join(", ")),
            };
            return Err(format!("no eval case has the tag `{tag}`{hint}"));
        }
    }
    Ok(cases
        .into_iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| selects(f, &c.id)))
        .filter(|c| tags.is_empty() || tags.iter().any(|t| c.tags.contains(t)))
        .collect())
}

fn selects(filter: &str, id: &str) -> bool {
    if filter.contains(['*', '?', '[']) {
        crate::pattern::glob_matches(filter, id)
    } else {
        id.contains(filter)
    }
}

/// What an eval run produced.
#[derive(Debug)]
pub struct EvalOutcome {
    pub results: Vec<CaseResult>,
    pub summary: Summary,
    /// The events of each case's first run, by case id (for `--record`).
    pub events: Vec<(String, Vec<Event>)>,
}

/// The runs each case makes and how many must pass, with `--repeat` applied: the
/// share of runs that must pass stays the case's own.
fn runs_of(case: &Case, repeat: Option<u32>) -> (u32, u32) {
    match repeat {
        Some(n) => {
            let n = n.max(1);
            let needed =
                (u64::from(case.pass) * u64::from(n)).div_ceil(u64::from(case.repeat.max(1)));
            (n, u32::try_from(needed.max(1)).unwrap_or(n))
        }
        None => (case.repeat.max(1), case.pass.max(1)),
    }
}

/// A case's result from its runs (any order), `needed` of which must pass; and the
/// events of its first run.
fn case_result(
    case: &Case,
    mut ran: Vec<run::Ran>,
    needed: u32,
    observe: &dyn Fn(&Event),
) -> (CaseResult, Vec<Event>) {
    for event in ran.iter().flat_map(|r| &r.events) {
        observe(event);
    }
    ran.sort_by_key(|r| r.result.run);
    let first_events = ran
        .first_mut()
        .map(|r| std::mem::take(&mut r.events))
        .unwrap_or_default();
    let runs: Vec<RunResult> = ran.into_iter().map(|r| r.result).collect();
    let passed = runs.iter().filter(|r| r.passed).count() >= needed as usize;
    let result = CaseResult {
        id: case.id.clone(),
        file: case.file.clone(),
        description: case.description.clone(),
        tags: case.tags.clone(),
        passed,
        needed,
        runs,
    };
    (result, first_events)
}

/// What every run of an eval shares: the agent, the models, where artifacts go.
fn suite(
    agent_dir: &Path,
    manifest: &Manifest,
    options: &Options,
    artifacts: PathBuf,
) -> Result<Suite, String> {
    let cwd =
        std::env::current_dir().map_err(|e| format!("cannot read the current folder: {e}"))?;
    let judge = match &options.judge_model {
        Some(model) => Some(
            judge::JudgeModel::new(model, &manifest.agent.providers, cwd.clone())
                .map_err(|e| format!("--judge-model: {e}"))?,
        ),
        None => None,
    };
    Ok(Suite {
        agent_dir: agent_dir.to_path_buf(),
        manifest: Arc::new(manifest.clone()),
        model: options.model.clone(),
        cwd,
        judge,
        artifacts,
        keep: options.keep,
        strict: options.strict,
        live: options.record,
    })
}

/// Runs `cases` of the agent built from `agent_dir`; `on_case` sees each case as soon as
/// it and every case before it have finished (so the order is always the id order);
/// `observe` sees every event of every run, once the case is done (the review's guard
/// learns whether anything ran).
pub fn run(
    agent_dir: &Path,
    manifest: &Manifest,
    cases: Vec<Case>,
    options: &Options,
    mut on_case: impl FnMut(&CaseResult),
    observe: &dyn Fn(&Event),
) -> Result<EvalOutcome, String> {
    let started = Instant::now();
    let agent_dir = agent_dir
        .canonicalize()
        .map_err(|e| format!("`{}`: {e}", agent_dir.display()))?;
    let artifacts = artifacts::create(&agent_dir)?;
    let suite = Arc::new(suite(&agent_dir, manifest, options, artifacts.clone())?);
    let jobs = if options.jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        options.jobs
    };
    let plans: Vec<(Arc<Case>, u32, u32)> = cases
        .into_iter()
        .map(|case| {
            let (runs, needed) = if options.record {
                (1, 1)
            } else {
                runs_of(&case, options.repeat)
            };
            (Arc::new(case), runs, needed)
        })
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(jobs.max(1))
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the eval runtime: {e}"))?;
    let mut results: Vec<CaseResult> = Vec::new();
    let mut events: Vec<(String, Vec<Event>)> = Vec::new();
    runtime.block_on(async {
        let permits = Arc::new(tokio::sync::Semaphore::new(jobs.max(1)));
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(usize, run::Ran)>();
        for (index, (case, runs, _)) in plans.iter().enumerate() {
            for number in 1..=*runs {
                let (suite, case, tx, permits) =
                    (suite.clone(), case.clone(), tx.clone(), permits.clone());
                tokio::spawn(async move {
                    let Ok(_permit) = permits.acquire_owned().await else {
                        return;
                    };
                    let ran = run::run_once(suite, case, number).await;
                    let _ = tx.send((index, ran));
                });
            }
        }
        drop(tx);
        let mut done: Vec<Vec<run::Ran>> = plans.iter().map(|_| Vec::new()).collect();
        let mut next = 0;
        while let Some((index, ran)) = rx.recv().await {
            if let Some(slot) = done.get_mut(index) {
                slot.push(ran);
            }
            while let Some((case, runs, needed)) = plans.get(next) {
                if done[next].len() < *runs as usize {
                    break;
                }
                let (result, first_events) =
                    case_result(case, std::mem::take(&mut done[next]), *needed, observe);
                on_case(&result);
                if options.record {
                    events.push((case.id.clone(), first_events));
                }
                results.push(result);
                next += 1;
            }
        }
    });
    let shown = artifacts
        .strip_prefix(&agent_dir)
        .map_or_else(|_| artifacts.clone(), Path::to_path_buf);
    let summary = Summary::of(
        &manifest.agent.name,
        &results,
        started.elapsed().as_millis() as u64,
        crate::compiler::inputs::slash_path(&shown),
    );
    artifacts::write(&artifacts, &summary, &results)?;
    Ok(EvalOutcome {
        results,
        summary,
        events,
    })
}

/// The artifacts folder of a summary, for printing: under the agent directory as named.
pub fn artifacts_path(agent_dir: &str, summary: &Summary) -> PathBuf {
    Path::new(agent_dir).join(&summary.artifacts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::eval::{Expect, Turn, TurnInput, Workspace};

    fn case(id: &str, tags: &[&str]) -> Case {
        Case {
            id: id.into(),
            file: format!("evals/{id}.toml"),
            description: None,
            tags: tags.iter().map(|t| t.to_string()).collect(),
            turns: vec![Turn {
                input: TurnInput::Send("hi".into()),
                expect: Expect::default(),
            }],
            expect: Expect::default(),
            workspace: Workspace::default(),
            hook_stubs: Vec::new(),
            replies: None,
            stubs: Vec::new(),
            repeat: 1,
            pass: 1,
            timeout_secs: 1,
            model: None,
        }
    }

    #[test]
    fn filters_and_tags_select_cases_in_id_order() {
        let cases = vec![
            case("b/two", &["slow"]),
            case("a", &[]),
            case("b/one", &["fast"]),
        ];
        let ids = |cases: Vec<Case>| cases.into_iter().map(|c| c.id).collect::<Vec<_>>();
        assert_eq!(
            ids(select(cases.clone(), &[], &[]).unwrap()),
            ["a", "b/one", "b/two"]
        );
        assert_eq!(
            ids(select(cases.clone(), &["b/*".into()], &[]).unwrap()),
            ["b/one", "b/two"]
        );
        assert_eq!(
            ids(select(cases.clone(), &["one".into()], &[]).unwrap()),
            ["b/one"]
        );
        assert_eq!(
            ids(select(cases.clone(), &[], &["slow".into()]).unwrap()),
            ["b/two"]
        );
        assert_eq!(
            select(cases.clone(), &["b/ona".into()], &[]).unwrap_err(),
            "no eval case matches `b/ona`: did you mean `b/one`?"
        );
        assert_eq!(
            select(cases, &[], &["fats".into()]).unwrap_err(),
            "no eval case has the tag `fats`: did you mean `fast`?"
        );
    }

    #[test]
    fn repeat_keeps_the_share_of_runs_that_must_pass() {
        let mut c = case("a", &[]);
        assert_eq!(runs_of(&c, None), (1, 1));
        assert_eq!(runs_of(&c, Some(5)), (5, 5));
        c.repeat = 5;
        c.pass = 3;
        assert_eq!(runs_of(&c, None), (5, 3));
        assert_eq!(runs_of(&c, Some(10)), (10, 6));
        assert_eq!(runs_of(&c, Some(1)), (1, 1));
    }
}
