//! Opening an agent directory: the one door of every command that builds an agent to
//! use it (`eve build`, `run`, `dev`, `serve`, `eval`).
//!
//! [`open`] checks the folder, builds it (through [`crate::connections::reviewed`], so
//! no server of a change nobody has seen starts), decides what to do with such a change
//! ([`crate::review::Policy`]), and writes the manifest. What it found is returned as
//! data for the command to print: the library prints nothing. The [`Agent`] it opens
//! gives the run's [`Guard`], the only way to the review's steps after that.
//!
//! ```no_run
//! # fn main() -> anyhow::Result<()> {
//! let opening = eve::agent::open(std::path::Path::new("example-agent"), Default::default())?;
//! for diagnostic in opening.diagnostics.iter() {
//!     eprintln!("{}", diagnostic.message);
//! }
//! let agent = opening.agent.map_err(|refusal| anyhow::anyhow!("{refusal:?}"))?;
//! let guard = agent.guard()?;
//! // … run a turn of `agent.manifest`, passing each event to `guard.observe` …
//! let change = guard.finish(&agent.manifest)?;
//! # let _ = change;
//! # Ok(())
//! # }
//! ```

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::compiler::{Build, Diagnostic, Diagnostics};
use crate::manifest::Manifest;
use crate::review::{Guard, Pending, Policy};

/// How a command opens its agent.
#[derive(Debug, Default)]
pub struct Options<'a> {
    /// The sessions' workspace (`--workspace`): the build starts the connections'
    /// servers there, as the sessions will.
    pub workspace: Option<&'a Path>,
    /// What to do with a change the agent made to its own definition.
    pub changes: Changes,
    /// List every connection's tools again, cached or not (`eve build --refresh`).
    pub refresh: bool,
    /// A skill that cannot be used fails the build (`eve build --strict`).
    pub strict: bool,
    /// Compile the eval cases too (`eve eval`); the build then starts no server and
    /// uses the connections' cached listings only.
    pub evals: bool,
    /// A build already made (to learn the agent's secret variables): used when it came
    /// wholly from the cache, so nothing changed since.
    pub reuse: Option<Build>,
}

/// What [`open`] does with a change the agent made to its own definition while it ran.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Changes {
    /// Refuse to open the agent ([`Refusal::Changed`]).
    #[default]
    Refuse,
    /// Accept it: the person is shown it now (`eve build`). Its servers stay unlisted
    /// until the next build.
    Accept,
    /// Accept it and build again, listing its servers (`eve run --accept-agent-changes`).
    AcceptAndList,
}

/// What opening an agent found, for the command to show.
#[derive(Debug)]
pub struct Opening {
    /// The build's diagnostics.
    pub diagnostics: Diagnostics,
    /// A change that was accepted ([`Changes::Accept`], [`Changes::AcceptAndList`]).
    pub accepted: Option<Accepted>,
    /// The opened agent, or why not.
    pub agent: Result<Agent, Refusal>,
}

/// A change the person accepted while the agent was opened.
#[derive(Debug)]
pub struct Accepted {
    pub change: Pending,
    /// The build held the changed definition's servers back: none started, and the next
    /// build lists their tools.
    pub servers_held: bool,
    /// The diagnostics of the build after accepting ([`Changes::AcceptAndList`]) that the
    /// first build did not have.
    pub new_diagnostics: Vec<Diagnostic>,
}

/// Why an agent was not opened.
#[derive(Debug)]
pub enum Refusal {
    /// The path is not a folder.
    NotAFolder,
    /// The build has errors (in [`Opening::diagnostics`]).
    DoesNotBuild,
    /// A change to the definition waits for the person ([`Changes::Refuse`]).
    Changed(Pending),
}

/// An agent directory, built, its manifest written.
#[derive(Debug)]
pub struct Agent {
    pub dir: PathBuf,
    /// Shared with the sessions, which read it through their turns: no copy of a
    /// manifest that may list thousands of skills.
    pub manifest: Arc<Manifest>,
    /// The eval cases, checked against the manifest ([`Options::evals`]).
    pub evals: Vec<crate::manifest::eval::Case>,
    /// How many eval cases the agent has.
    pub eval_count: usize,
    /// Whether opening it built the agent and wrote its manifest, and why; `None` when
    /// the last build's manifest stands (nothing changed).
    pub built: Option<Built>,
}

/// Why [`open`] wrote the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Built {
    /// There was none: the agent's first build.
    First,
    /// Its files changed since the last build.
    Changed,
}

impl Agent {
    /// The review of a run of this agent: its marker is written now, before anything of
    /// the definition runs.
    pub fn guard(&self) -> std::io::Result<Guard> {
        Guard::start(&self.dir, &self.manifest)
    }
}

/// Opens the agent directory `dir` as `options` say.
pub fn open(dir: &Path, mut options: Options<'_>) -> anyhow::Result<Opening> {
    if !dir.is_dir() {
        return Ok(Opening {
            diagnostics: Diagnostics::default(),
            accepted: None,
            agent: Err(Refusal::NotAFolder),
        });
    }
    let reuse = options.reuse.take();
    let (mut build, held) = build(dir, &options, reuse);
    let diagnostics = build.diagnostics.clone();
    let mut accepted = None;
    let Some(manifest) = build.manifest.as_ref() else {
        return Ok(refused(diagnostics, Refusal::DoesNotBuild));
    };
    let servers_held = held.is_some() && !manifest.connections.is_empty();
    let policy = match options.changes {
        Changes::Refuse => Policy::Refuse,
        Changes::Accept | Changes::AcceptAndList => Policy::Accept,
    };
    if let Some(change) = crate::review::admit(dir, &manifest.inputs_hash, policy)? {
        if options.changes == Changes::Refuse {
            return Ok(refused(diagnostics, Refusal::Changed(change)));
        }
        let mut new_diagnostics = Vec::new();
        if options.changes == Changes::AcceptAndList {
            // Accepted: now its servers may be listed.
            build = crate::connections::build_in(dir, options.workspace);
            new_diagnostics = build
                .diagnostics
                .iter()
                .filter(|d| !diagnostics.iter().any(|s| s == *d))
                .cloned()
                .collect();
        }
        accepted = Some(Accepted {
            change,
            servers_held,
            new_diagnostics,
        });
    }
    let Some(manifest) = build.manifest else {
        return Ok(Opening {
            diagnostics,
            accepted,
            agent: Err(Refusal::DoesNotBuild),
        });
    };
    let mut built = None;
    if !build.cached {
        let first = !dir
            .join(crate::manifest::STATE_DIR)
            .join("manifest.json")
            .exists();
        // An unchanged manifest is not written again: the build changed nothing.
        if crate::compiler::write_manifest(dir, &manifest)? {
            built = Some(if first { Built::First } else { Built::Changed });
        }
    }
    Ok(Opening {
        diagnostics,
        accepted,
        agent: Ok(Agent {
            dir: dir.to_path_buf(),
            manifest: Arc::new(manifest),
            evals: build.evals,
            eval_count: build.eval_count,
            built,
        }),
    })
}

/// The build `options` ask for, and the change that held its servers back, if one did.
fn build(dir: &Path, options: &Options<'_>, reuse: Option<Build>) -> (Build, Option<Pending>) {
    if options.evals {
        // Cases run the agent's tools and servers: what the build lists comes from the
        // cache only, and nothing of a change nobody has seen runs (refused after).
        return (
            crate::compiler::compile(dir, &crate::tools::builtin::CATALOG),
            None,
        );
    }
    if let Some(build) = reuse.filter(|b| b.cached) {
        return (build, None);
    }
    crate::connections::reviewed(dir, options.refresh, options.strict, &[], options.workspace)
}

fn refused(diagnostics: Diagnostics, refusal: Refusal) -> Opening {
    Opening {
        diagnostics,
        accepted: None,
        agent: Err(refusal),
    }
}
