//! Provider keys held in eve's memory only, never in its environment.
//!
//! A process's environment block stays readable (`/proc/PID/environ`, `ps eww`) for as
//! long as it runs, whatever it unsets later, and a process the model starts could read
//! it. So a command that runs tools calls [`isolate`] first: each secret variable is
//! copied into eve's memory, removed from the environment, and its `NAME=VALUE` bytes
//! in the environment block the kernel shows are overwritten in place. eve also marks
//! itself non-dumpable, so processes of the same user cannot read its memory or its
//! `/proc` files; the processes the model starts run without any capability (as root
//! too) and in a Landlock domain, so they cannot either. No second image of eve is
//! needed.

use std::collections::HashMap;
use std::sync::Mutex;

static STORE: Mutex<Option<HashMap<String, String>>> = Mutex::new(None);

/// The value of a variable: from the secrets eve took out of its environment, else
/// from the environment.
pub fn var(name: &str) -> Option<String> {
    crate::sync::lock(&STORE)
        .as_ref()
        .and_then(|store| store.get(name).cloned())
        .or_else(|| std::env::var(name).ok())
}

/// Whether a variable's name says it holds a key, whatever eve knows of it: a provider's
/// key, or a telemetry collector's credentials (`OTEL_EXPORTER_OTLP_HEADERS`).
pub fn looks_secret(name: &str) -> bool {
    name.ends_with("_API_KEY") || COLLECTOR_HEADER_VARIABLES.contains(&name)
}

/// The variables that may hold a telemetry collector's credentials (the OTLP exporter's
/// request headers): secrets, which the telemetry pipeline reads back with [`var`].
pub const COLLECTOR_HEADER_VARIABLES: &[&str] = &[
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
];

/// Moves the secret variables out of eve's environment (see the module docs). `known`
/// names the variables the agent reads keys from; any variable whose name
/// [`looks_secret`] counts too, and moves first (learning the others takes a build).
/// The error says why the environment block could not be overwritten (the variables
/// are out of the environment all the same), so the caller can warn.
pub fn isolate(known: impl FnOnce() -> Vec<String>) -> Result<(), String> {
    harden();
    let first = take(&looks_secret);
    let known = known();
    let second = take(&|n| known.iter().any(|k| k == n));
    first.and(second)
}

/// Moves the variables `wanted` picks into the store.
fn take(wanted: &dyn Fn(&str) -> bool) -> Result<(), String> {
    let secrets = set_vars(wanted);
    if secrets.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = secrets.iter().map(|(n, _)| n.clone()).collect();
    crate::sync::lock(&STORE)
        .get_or_insert_with(HashMap::new)
        .extend(secrets);
    scrub(&names)
}

/// The variables set (not empty) whose names `wanted` picks. The environment is read
/// as the OS holds it: `std::env::vars` panics on a name or value that is not UTF-8,
/// which anyone who starts eve can put there. A secret's value that is not UTF-8 moves
/// out all the same (read back with its bad bytes replaced: no provider takes it anyway).
fn set_vars(wanted: &dyn Fn(&str) -> bool) -> Vec<(String, String)> {
    std::env::vars_os()
        .filter_map(|(name, value)| {
            let name = name.into_string().ok()?;
            (!value.is_empty() && wanted(&name))
                .then(|| (name, value.to_string_lossy().into_owned()))
        })
        .collect()
}

/// `bytes` random bytes from the operating system's generator, as lowercase hex: a
/// secret no one can guess (a server's token, a one-time login code).
pub fn random_hex(bytes: usize) -> Result<String, String> {
    use std::io::Read;
    let mut buf = vec![0u8; bytes];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut buf))
        .map_err(|e| format!("cannot read random bytes from /dev/urandom: {e}"))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}

/// No core dumps, no same-user reads of eve's memory or `/proc` files.
fn harden() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_DUMPABLE takes plain integers and changes only this
    // process's dumpable flag.
    unsafe {
        libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    }
}

/// Removes `names` from the environment and overwrites their `NAME=VALUE` strings where
/// they lie in the environment block the process started with (what `/proc/PID/environ`
/// shows). Strings elsewhere (set by the process itself) are only removed.
fn scrub(names: &[String]) -> Result<(), String> {
    #[cfg(target_os = "linux")]
    let spans = linux::spans(names);
    for name in names {
        // SAFETY: called at start, before any thread but the build's idle workers
        // exists; none of them reads the environment.
        unsafe { std::env::remove_var(name) };
    }
    #[cfg(target_os = "linux")]
    {
        let (start, end) = linux::block()?;
        for (at, len) in spans {
            if at >= start && at.saturating_add(len) <= end {
                // SAFETY: the bytes lie in this process's own environment block (on its
                // stack, writable), and nothing points at them since the variable was
                // removed.
                unsafe { std::ptr::write_bytes(at as *mut u8, 0, len) };
            }
        }
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
    }
    Ok(())
}

#[cfg(target_os = "linux")]
mod linux {
    use std::ffi::{CStr, c_char};

    unsafe extern "C" {
        static environ: *const *const c_char;
    }

    /// Where the `NAME=VALUE` strings of `names` are (address, length).
    pub fn spans(names: &[String]) -> Vec<(usize, usize)> {
        let mut spans = Vec::new();
        // SAFETY: `environ` is the C library's array of NUL-terminated strings, ended by
        // a null pointer; nothing changes it while this reads (see `scrub`).
        unsafe {
            let mut entry = environ;
            while !entry.is_null() && !(*entry).is_null() {
                let bytes = CStr::from_ptr(*entry).to_bytes();
                if names
                    .iter()
                    .any(|n| bytes.starts_with(n.as_bytes()) && bytes.get(n.len()) == Some(&b'='))
                {
                    spans.push((*entry as usize, bytes.len()));
                }
                entry = entry.add(1);
            }
        }
        spans
    }

    /// The environment block the kernel shows: `env_start` and `env_end` of
    /// `/proc/self/stat` (its 50th and 51st fields).
    pub fn block() -> Result<(usize, usize), String> {
        let stat = std::fs::read_to_string("/proc/self/stat")
            .map_err(|e| format!("cannot read /proc/self/stat: {e}"))?;
        let after = stat
            .rfind(')')
            .map(|i| &stat[i + 1..])
            .ok_or("/proc/self/stat has no command name")?;
        // Fields from the third (the state) on.
        let fields: Vec<&str> = after.split_whitespace().collect();
        let field = |n: usize| -> Option<usize> { fields.get(n - 3)?.parse().ok() };
        match (field(50), field(51)) {
            (Some(start), Some(end)) if start < end => Ok((start, end)),
            _ => Err("/proc/self/stat does not say where the environment is".into()),
        }
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn the_environment_block_is_found_and_holds_a_variable() {
            let (start, end) = super::block().unwrap();
            let spans = super::spans(&["PATH".to_string()]);
            assert!(
                spans
                    .iter()
                    .any(|&(at, len)| at >= start && at + len <= end),
                "PATH lies in the block [{start:#x}, {end:#x}): {spans:?}"
            );
        }
    }
}
