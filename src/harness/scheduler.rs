//! Runs one step's tool calls: read-only calls side by side in a bounded rolling pool,
//! calls with side effects alone as barriers, results committed in the model's order.

use std::future::Future;

use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;

/// Runs `run(index, item)` for every item and returns the results in item order.
///
/// - An item for which `exclusive` is true starts only when nothing else runs, and
///   nothing starts while it runs (a barrier).
/// - Other items run together, at most `max_parallel` at a time; a finished one makes
///   room for the next (a rolling pool).
/// - Items start in order: nothing overtakes a waiting barrier.
/// - `commit(index, &result)` is called in item order, as soon as every earlier item
///   has committed; every item is committed exactly once.
pub async fn run<T, R, Fut>(
    items: Vec<T>,
    max_parallel: usize,
    exclusive: impl Fn(&T) -> bool,
    run: impl Fn(usize, T) -> Fut,
    mut commit: impl FnMut(usize, &R),
) -> Vec<R>
where
    Fut: Future<Output = R>,
{
    let max_parallel = max_parallel.max(1);
    let count = items.len();
    let mut results: Vec<Option<R>> = (0..count).map(|_| None).collect();
    let mut next_commit = 0;
    let mut pending = items.into_iter().enumerate().peekable();
    let mut running = FuturesUnordered::new();
    let mut barrier_running = false;
    loop {
        while let Some((_, item)) = pending.peek() {
            let is_barrier = exclusive(item);
            let can_start = if is_barrier {
                running.is_empty()
            } else {
                !barrier_running && running.len() < max_parallel
            };
            if !can_start {
                break;
            }
            let Some((index, item)) = pending.next() else {
                break;
            };
            barrier_running = is_barrier;
            let future = run(index, item);
            running.push(async move { (index, future.await) });
            if is_barrier {
                break;
            }
        }
        let Some((index, result)) = running.next().await else {
            break;
        };
        if running.is_empty() {
            barrier_running = false;
        }
        results[index] = Some(result);
        while let Some(Some(result)) = results.get(next_commit) {
            commit(next_commit, result);
            next_commit += 1;
        }
    }
    results.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    /// (name, exclusive, duration in ms)
    type Job = (&'static str, bool, u64);

    struct Trace {
        log: Mutex<Vec<String>>,
        now: AtomicUsize,
        peak: AtomicUsize,
    }

    async fn schedule(
        jobs: Vec<Job>,
        max_parallel: usize,
    ) -> (Vec<&'static str>, Vec<String>, usize, Vec<usize>) {
        let trace = Arc::new(Trace {
            log: Mutex::new(Vec::new()),
            now: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        });
        let mut committed = Vec::new();
        let results = run(
            jobs,
            max_parallel,
            |job: &Job| job.1,
            |_, job: Job| {
                let trace = trace.clone();
                async move {
                    let n = trace.now.fetch_add(1, Ordering::SeqCst) + 1;
                    trace.peak.fetch_max(n, Ordering::SeqCst);
                    trace.log.lock().unwrap().push(format!("start {}", job.0));
                    tokio::time::sleep(Duration::from_millis(job.2)).await;
                    trace.log.lock().unwrap().push(format!("end {}", job.0));
                    trace.now.fetch_sub(1, Ordering::SeqCst);
                    job.0
                }
            },
            |index, _| committed.push(index),
        )
        .await;
        let log = trace.log.lock().unwrap().clone();
        (results, log, trace.peak.load(Ordering::SeqCst), committed)
    }

    #[tokio::test(start_paused = true)]
    async fn results_and_commits_follow_the_call_order_whatever_finishes_first() {
        let (results, log, peak, committed) = schedule(
            vec![("a", false, 30), ("b", false, 10), ("c", false, 20)],
            8,
        )
        .await;
        assert_eq!(results, ["a", "b", "c"]);
        assert_eq!(committed, [0, 1, 2]);
        assert_eq!(peak, 3);
        assert_eq!(log[..3], ["start a", "start b", "start c"]);
        assert_eq!(log[3..], ["end b", "end c", "end a"]);
    }

    #[tokio::test(start_paused = true)]
    async fn the_pool_never_exceeds_the_limit_and_refills_as_calls_finish() {
        let jobs = vec![
            ("a", false, 50),
            ("b", false, 10),
            ("c", false, 10),
            ("d", false, 10),
        ];
        let (results, log, peak, _) = schedule(jobs, 2).await;
        assert_eq!(results, ["a", "b", "c", "d"]);
        assert_eq!(peak, 2);
        // c starts when b finishes, without waiting for a.
        let pos = |s: &str| log.iter().position(|l| l == s).unwrap();
        assert!(pos("start c") > pos("end b"));
        assert!(pos("start c") < pos("end a"));
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_with_side_effects_runs_alone_as_a_barrier() {
        let jobs = vec![
            ("r1", false, 10),
            ("r2", false, 20),
            ("w", true, 10),
            ("r3", false, 10),
            ("r4", false, 10),
        ];
        let (results, log, _, committed) = schedule(jobs, 8).await;
        assert_eq!(results, ["r1", "r2", "w", "r3", "r4"]);
        assert_eq!(committed, [0, 1, 2, 3, 4]);
        assert_eq!(
            log,
            [
                "start r1", "start r2", "end r1", "end r2", "start w", "end w", "start r3",
                "start r4", "end r3", "end r4"
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn consecutive_barriers_run_one_at_a_time() {
        let jobs = vec![("w1", true, 10), ("w2", true, 10)];
        let (_, log, peak, _) = schedule(jobs, 8).await;
        assert_eq!(peak, 1);
        assert_eq!(log, ["start w1", "end w1", "start w2", "end w2"]);
    }

    #[tokio::test]
    async fn no_calls_is_no_results() {
        let (results, log, _, committed) = schedule(vec![], 4).await;
        assert!(results.is_empty() && log.is_empty() && committed.is_empty());
    }
}
