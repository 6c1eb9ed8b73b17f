//! What the commands' output shares: the usage exit code, a refusal on stderr, the
//! lines of an agent being opened.

use std::process::ExitCode;

use crate::agent::{Opening, Refusal};
use crate::compiler::render;

pub use crate::runner::exit::USAGE;

/// `error: MESSAGE` on stderr, and the usage exit code (2, as clap uses).
pub fn usage(message: impl std::fmt::Display) -> anyhow::Result<ExitCode> {
    eprintln!("error: {message}");
    Ok(ExitCode::from(USAGE))
}

/// `error: MESSAGE` on stderr, and exit code 1.
pub fn failure(message: impl std::fmt::Display) -> anyhow::Result<ExitCode> {
    eprintln!("error: {message}");
    Ok(ExitCode::FAILURE)
}

/// Writes `bytes` to stdout; a closed pipe just ends the output.
pub fn print_all(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(bytes);
    Ok(ExitCode::SUCCESS)
}

/// Prints what opening the agent at `base` found: its diagnostics and, when a change
/// was accepted, the line `accepted` makes of it and the diagnostics of the build after.
pub fn opening(
    opening: &Opening,
    base: &str,
    quiet: bool,
    verbose: bool,
    accepted: impl FnOnce(&crate::agent::Accepted) -> String,
) {
    eprint!(
        "{}",
        render::human_report(opening.diagnostics.iter(), base, quiet, verbose)
    );
    if let Some(change) = &opening.accepted {
        eprintln!("{}", accepted(change));
        if !change.new_diagnostics.is_empty() {
            eprint!(
                "{}",
                render::human_report(&change.new_diagnostics, base, quiet, verbose)
            );
        }
    }
}

/// A command that builds as it goes (`eve run`) says when it built, so that a first
/// run, or one after an edit, does not pass for one of the last build:
/// `built `NAME` for this first run → DIR/.eve/manifest.json`.
pub fn built(agent: &crate::agent::Agent, base: &str) {
    let why = match agent.built {
        None => return,
        Some(crate::agent::Built::First) => "for this first run",
        Some(crate::agent::Built::Changed) => "again: its files changed since the last build",
    };
    eprintln!(
        "built `{}` {why} → {}",
        agent.manifest.agent.name,
        render::join_path(base, ".eve/manifest.json")
    );
}

/// Why the agent at `dir` (as `base` shows it) could not be opened, in words: a build
/// with errors is `could not build `NAME`{what}: fix the errors above, then {then}`;
/// `changed` words a change that waits for the person.
pub fn refusal(
    refusal: &Refusal,
    dir: &std::path::Path,
    base: &str,
    (what, then): (&str, &str),
    changed: impl FnOnce(&crate::review::Pending) -> String,
) -> String {
    match refusal {
        Refusal::NotAFolder => format!("`{base}` is not a folder"),
        Refusal::DoesNotBuild => format!(
            "could not build `{}`{what}: fix the errors above, then {then}",
            crate::compiler::agent_name(dir)
        ),
        Refusal::Changed(change) => changed(change),
    }
}
