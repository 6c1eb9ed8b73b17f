//! eve as the last-resort reaper (Linux): processes eve starts are registered here, eve is a
//! child subreaper, and a process that lands on eve without being one of them — the tree of a
//! supervisor that was killed from inside its call — is killed and reaped.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::supervisor;

/// How long a sweep keeps killing what keeps landing on eve.
const SWEEP_DEADLINE: Duration = Duration::from_secs(2);

/// The direct children eve started, by pid (a count, in case a pid is reused before the
/// entry of its previous owner is removed).
fn registry() -> &'static Mutex<HashMap<u32, usize>> {
    static REGISTRY: OnceLock<Mutex<HashMap<u32, usize>>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        // Orphans of eve's processes come back to eve instead of escaping to init.
        // SAFETY: prctl on the calling process only.
        unsafe {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        Mutex::new(HashMap::new())
    })
}

/// Starts a process with `spawn` and registers it, atomically with respect to [`sweep`], so
/// that a sweep never mistakes it for an orphan.
pub fn spawn_registered<T>(
    spawn: impl FnOnce() -> std::io::Result<T>,
    pid: impl Fn(&T) -> Option<u32>,
) -> std::io::Result<T> {
    let mut registry = crate::sync::lock(registry());
    let child = spawn()?;
    if let Some(pid) = pid(&child) {
        *registry.entry(pid).or_insert(0) += 1;
    }
    Ok(child)
}

/// Forgets a process eve started, once it has been reaped.
pub fn unregister(pid: u32) {
    let mut registry = crate::sync::lock(registry());
    if let Some(count) = registry.get_mut(&pid) {
        *count -= 1;
        if *count == 0 {
            registry.remove(&pid);
        }
    }
}

/// Kills and reaps every orphan that landed on eve: a direct child that eve did not start
/// and that is not in eve's own process group. Returns how many were alive when found.
/// Blocking: run it off the async threads.
pub fn sweep() -> u32 {
    let registry = crate::sync::lock(registry());
    // SAFETY: getpid and getpgrp have no preconditions.
    let (me, group) = unsafe { (libc::getpid(), libc::getpgrp()) };
    let deadline = Instant::now() + SWEEP_DEADLINE;
    let mut killed = 0u32;
    let mut seen: Vec<libc::pid_t> = Vec::new();
    loop {
        let mut orphans = Vec::new();
        supervisor::for_each_process(|pid, state, ppid| {
            if ppid == me && !registry.contains_key(&(pid as u32)) {
                orphans.push((pid, state));
            }
        });
        orphans.retain(|(pid, _)| process_group(*pid).is_some_and(|g| g != group));
        if orphans.is_empty() || Instant::now() > deadline {
            return killed;
        }
        for (pid, state) in orphans {
            if state != b'Z' && !seen.contains(&pid) {
                seen.push(pid);
                killed = killed.saturating_add(1);
            }
            // SAFETY: `pid` is eve's own child and not reaped, so it names that process.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                let mut status = 0;
                if libc::waitpid(pid, &mut status, libc::WNOHANG) == pid {
                    seen.retain(|p| *p != pid);
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The process group of a process, from `/proc/<pid>/stat`.
fn process_group(pid: libc::pid_t) -> Option<libc::pid_t> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(2)?.parse().ok()
}
