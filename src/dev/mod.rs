//! `eve dev`: an interactive session that rebuilds the agent directory as it changes.
//!
//! Lines typed at the prompt are turns of one logged session; `/` commands manage it.
//! A watcher rebuilds the manifest after every change (debounced); a good build is
//! announced in one line and applies from the next turn, a failed one prints its
//! diagnostics and leaves the last good build active. Each turn reopens the session
//! from its log with the active build, so the conversation carries across reloads.
// This module writes to the terminal (see `src/lib.rs`).
#![allow(clippy::print_stdout, clippy::print_stderr)]

pub mod history;
pub mod input;
pub mod reload;
pub mod watch;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use crate::agent::Refusal;
use crate::compiler::{self, render};
use crate::console::{self, Renderer, TerminalAsker};
use crate::manifest::Manifest;
use crate::protocol::{InputKind, Resolution};
use crate::runner::{self, Action, RunOptions, SessionChoice};
use crate::session::{show, store};
pub use input::Input;
use input::spawn_reader;
use reload::Reload;

/// The slash commands, for `/help` and "did you mean".
pub const COMMANDS: &[(&str, &str)] = &[
    (
        "/tools",
        "the tools the next turn offers (and those it does not, and why)",
    ),
    ("/skills", "the skills the next turn offers"),
    ("/reload", "rebuild now"),
    (
        "/accept",
        "use the definition the agent changed itself (agent_writable)",
    ),
    ("/new", "start a new session"),
    ("/session", "the session's id, turns and token usage"),
    ("/compact", "compact the session's history now"),
    (
        "/eval",
        "run the agent's eval cases (all, or those matching FILTER…) on the current build",
    ),
    ("/help", "this list"),
    ("/quit", "leave (Ctrl-D too)"),
];

/// What `eve dev` was asked for.
#[derive(Debug, Clone)]
pub struct DevOptions {
    pub dir: PathBuf,
    pub model: Option<String>,
    pub resume: bool,
    pub debounce: Duration,
    /// Print every diagnostic of a build (`--verbose`), not three of each code.
    pub verbose: bool,
    /// `--hide-reasoning`: the model's reasoning is not shown.
    pub hide_reasoning: bool,
}

struct Dev {
    options: DevOptions,
    base: String,
    /// The marker naming the active build while tools may run (see [`crate::review`]).
    running: crate::review::Guard,
    active: Manifest,
    /// A good build waiting for the next turn.
    pending: Option<(Manifest, String)>,
    /// The tools of the build that the last turn was not offered, and why (`/tools`).
    unavailable: Vec<(String, String)>,
    /// The active build's servers, kept running from turn to turn.
    connections: Option<Arc<crate::connections::Connections>>,
    session: Option<String>,
    interactive: bool,
    /// Turns run so far (the first one notes the tools that are not offered).
    turns: usize,
    /// Prints above the prompt while it waits for input (a terminal only).
    printer: Option<Box<dyn rustyline::ExternalPrinter + Send>>,
}

/// Runs `eve dev` until `/quit` or the end of input; returns the exit code.
pub fn run(options: DevOptions) -> anyhow::Result<u8> {
    let base = options.dir.to_string_lossy().into_owned();
    let agent = match open(&options, &base)? {
        Ok(agent) => agent,
        Err(code) => return Ok(code),
    };
    let interactive = std::io::stdin().is_terminal() && std::io::stderr().is_terminal();
    let session = if options.resume {
        store::latest(&options.dir)?
    } else {
        None
    };
    let (tx, rx) = mpsc::channel();
    let _watcher = watch::start(&options.dir, options.debounce, tx.clone())
        .map_err(|e| anyhow::anyhow!("cannot watch `{base}`: {e}"))?;
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let (printer_tx, printer_rx) = mpsc::channel();
    spawn_reader(&options.dir, interactive, tx, ready_rx, printer_tx);
    let printer = if interactive {
        printer_rx.recv_timeout(Duration::from_secs(2)).ok()
    } else {
        None
    };
    // Until the check after the last turn: a killed eve dev leaves its marker for the
    // next start, naming the build that was active.
    let running = agent.guard()?;
    let mut dev = Dev {
        options,
        base,
        running,
        active: Arc::unwrap_or_clone(agent.manifest),
        pending: None,
        unavailable: Vec::new(),
        connections: None,
        session,
        interactive,
        turns: 0,
        printer,
    };
    eprintln!(
        "eve dev: `{}` on {} — type a message, /help for commands, Ctrl-D to leave; watching `{}` for changes",
        dev.active.agent.name,
        dev.options
            .model
            .clone()
            .unwrap_or_else(|| dev.active.agent.model.clone()),
        dev.base
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let _ = ready_tx.send(());
    while let Ok(input) = rx.recv() {
        match input {
            Input::Changed(paths) => dev.rebuild(&paths),
            Input::Eof => break,
            Input::Line(line) => {
                let line = line.trim().to_string();
                if line.starts_with('/') {
                    if !dev.command(&line, &runtime) {
                        break;
                    }
                } else if !line.is_empty() {
                    dev.turn(Action::Turn(line), &runtime);
                }
                let _ = ready_tx.send(());
            }
        }
    }
    dev.end(&runtime);
    Ok(runner::exit::COMPLETED)
}

/// Opens the agent as `eve run` does: a change the agent made to its definition (also
/// in a run that was killed before its check) waits for the person before anything
/// runs it. `Err`: the exit code, the reason printed.
fn open(options: &DevOptions, base: &str) -> anyhow::Result<Result<crate::agent::Agent, u8>> {
    let opening = crate::agent::open(&options.dir, crate::agent::Options::default())?;
    print_diagnostics(&opening.diagnostics, base, options.verbose);
    Ok(opening.agent.map_err(|refusal| match refusal {
        Refusal::NotAFolder => {
            eprintln!("error: `{}` is not a folder", options.dir.display());
            runner::exit::USAGE
        }
        Refusal::DoesNotBuild => {
            eprintln!(
                "error: could not build `{}`: fix the errors above, then start eve dev again",
                compiler::agent_name(&options.dir)
            );
            runner::exit::FAILED
        }
        Refusal::Changed(change) => {
            eprintln!(
                "error: the agent's definition changed while it ran ({}): review it with `eve build {}`, then start eve dev again",
                change.summary,
                crate::text::shell_word(base)
            );
            runner::exit::USAGE
        }
    }))
}

fn print_diagnostics(diagnostics: &compiler::Diagnostics, base: &str, verbose: bool) {
    eprint!(
        "{}",
        render::human_report(diagnostics.iter(), base, false, verbose)
    );
}

impl Dev {
    /// Prints a line about the session: above the prompt when one is waiting.
    fn say(&mut self, text: &str) {
        match &mut self.printer {
            Some(printer) => {
                if printer.print(text.to_string()).is_err() {
                    eprintln!("{text}");
                }
            }
            None => eprintln!("{text}"),
        }
    }

    /// Builds again after `touched` changed: the skills holding them are read again, the
    /// others only if their files' metadata changed too (the watcher may miss events).
    fn rebuild(&mut self, touched: &[String]) {
        let build = crate::connections::build_after(&self.options.dir, false, touched);
        let current = self.pending.as_ref().map_or(&self.active, |(m, _)| m);
        let decision = reload::decide(current, build);
        self.announce(decision);
    }

    /// Says what a rebuild decided and keeps a good build for the next turn.
    fn announce(&mut self, decision: Reload) {
        match decision {
            Reload::Unchanged => {}
            Reload::Failed { diagnostics } => {
                let mut text =
                    render::human_report(&diagnostics, &self.base, false, self.options.verbose);
                text.push_str("✗ build failed: still using the last good build");
                self.say(&text);
            }
            Reload::Apply { manifest, summary } => {
                if let Err(e) = compiler::write_manifest(&self.options.dir, &manifest) {
                    self.say(&format!("✗ cannot write the manifest: {e}"));
                    return;
                }
                self.say(&format!("↻ reloaded: {summary} (from the next turn)"));
                self.pending = Some((*manifest, summary));
            }
        }
    }

    fn options(&self) -> RunOptions {
        RunOptions {
            model: self.options.model.clone(),
            max_steps: None,
            workspace: None,
            session: self
                .session
                .clone()
                .map_or(SessionChoice::New, SessionChoice::Id),
            persist: true,
            approve_all: false,
            asker: self
                .interactive
                .then(|| Arc::new(TerminalAsker) as Arc<dyn crate::harness::Asker>),
            sandbox_mode: None,
            no_network: false,
            hidden_env: Vec::new(),
            connections: self.connections.clone(),
            sandbox: None,
            traceparent: crate::telemetry::traceparent_from_env(),
        }
    }

    /// The servers for the active build: the running ones, unless its connections
    /// changed (then they stop and new ones start with the turn).
    fn servers(&mut self, previous: Option<&Manifest>, runtime: &tokio::runtime::Runtime) {
        // New servers when the connections change, or what confines them does.
        let changed = previous.is_some_and(|p| {
            p.connections != self.active.connections
                || p.agent.sandbox != self.active.agent.sandbox
                || p.agent.workspace != self.active.agent.workspace
                || p.executed != self.active.executed
        });
        if changed && let Some(old) = self.connections.take() {
            runtime.block_on(old.stop());
        }
        if self.connections.is_none() {
            let workspace = runner::workspace(&self.active, None).ok();
            let agent_dir = self.options.dir.canonicalize().ok();
            if let (Some(workspace), Some(agent_dir)) = (workspace, agent_dir) {
                // The servers outlive a turn; each gets a sandbox of its own, made
                // like the one each turn's tools get.
                let recipe =
                    crate::sandbox::Recipe::of(&self.active, &agent_dir, &workspace, None, false);
                self.connections = crate::connections::Connections::new(
                    &self.active,
                    &agent_dir,
                    &workspace,
                    Some(recipe),
                );
            }
        }
    }

    fn turn(&mut self, action: Action, runtime: &tokio::runtime::Runtime) {
        let Some(previous) = self.apply_pending() else {
            return;
        };
        self.servers(previous.as_ref(), runtime);
        let prepared =
            match runner::prepare(self.active.clone(), &self.options.dir, &self.options()) {
                Ok(prepared) => prepared,
                Err(e) => {
                    eprintln!("error: {e}");
                    return;
                }
            };
        for note in &prepared.repaired {
            eprintln!("note: {note}");
        }
        if self.turns == 0 {
            for warning in &prepared.warnings {
                eprintln!("warning: {warning}");
            }
        }
        let action = answer(action, prepared.harness.pending());
        self.session = Some(prepared.harness.session_id().to_string());
        let mut console = console::TextRenderer::new(
            &self.console_options(),
            std::io::stdout(),
            std::io::stderr(),
        );
        self.turns += 1;
        let mut unavailable = std::mem::take(&mut self.unavailable);
        let guard = &self.running;
        let outcome = runtime.block_on(runner::run(
            prepared.harness,
            prepared.events,
            action,
            |event| {
                guard.observe(event);
                if let crate::protocol::EventKind::SessionStarted {
                    unavailable_tools, ..
                } = &event.kind
                {
                    unavailable = unavailable_tools
                        .iter()
                        .map(|t| (t.name.clone(), t.reason.clone()))
                        .collect();
                }
                console.event(event)
            },
        ));
        console.finish(&outcome);
        self.unavailable = unavailable;
        // A turn that ran nothing (no call, no server) is not checked: an edit the
        // person saves the moment the turn ends is theirs.
        match self.running.after_turn(&self.active) {
            Ok(Some(change)) => eprintln!(
                "note: the agent's definition changed during this turn ({}); /accept uses it from the next turn",
                change.summary
            ),
            Ok(None) => {}
            Err(e) => eprintln!("error: cannot record the agent's changes: {e}"),
        }
        if outcome.pending.is_some() {
            eprintln!(
                "(answer here: the next line you type is the answer; y or n for an approval)"
            );
        }
        let _ = std::io::stdout().flush();
    }

    /// Before a turn: the reloaded build waiting for it becomes the active one, unless a
    /// definition the agent changed itself waits for the person's /accept. `Some`: go on,
    /// with the build that was active before, if it changed; `None`: no turn (said why).
    fn apply_pending(&mut self) -> Option<Option<Manifest>> {
        let on_disk = self.pending.as_ref().map_or(&self.active, |(m, _)| m);
        let waiting = match self.running.waiting(on_disk) {
            Ok(waiting) => waiting,
            Err(e) => {
                eprintln!("error: cannot check the agent's definition: {e}");
                return None;
            }
        };
        if let Some(change) = waiting {
            eprintln!(
                "note: still using the last build you saw: the agent's definition changed while it ran ({}); /accept uses it",
                change.summary
            );
            return Some(None);
        }
        let Some((manifest, summary)) = self.pending.take() else {
            return Some(None);
        };
        // The marker names the new build before any of its tools can run.
        if let Err(e) = self.running.now_runs(&manifest) {
            eprintln!("error: cannot record the build this session runs: {e}");
            self.pending = Some((manifest, summary));
            return None;
        }
        Some(Some(std::mem::replace(&mut self.active, manifest)))
    }

    fn console_options(&self) -> console::Options {
        let err_tty = std::io::stderr().is_terminal();
        console::Options {
            quiet: false,
            hide_reasoning: self.options.hide_reasoning,
            spinner: err_tty,
            command: format!("eve run {}", crate::text::shell_word(&self.base)),
            notes: self.turns == 0,
            out_tty: std::io::stdout().is_terminal(),
            err_tty,
            color: console::stderr_color(err_tty),
        }
    }

    /// Leaving: the servers stop, and ran on after the last turn's check, so the
    /// definition is checked once more (as `eve run` checks once its servers have
    /// stopped), against the newest build the person was shown, whose edits are theirs.
    fn end(mut self, runtime: &tokio::runtime::Runtime) {
        if let Some(connections) = self.connections.take() {
            runtime.block_on(connections.stop());
            let shown = self.pending.as_ref().map_or(&self.active, |(m, _)| m);
            match self.running.check(shown) {
                Ok(Some(change)) => eprintln!(
                    "note: the agent's definition changed while its servers ran ({}); it takes effect once you have seen it: `eve build {}`",
                    change.summary,
                    crate::text::shell_word(&self.base)
                ),
                Ok(None) => {}
                Err(e) => eprintln!("error: cannot record the agent's changes: {e}"),
            }
        }
        self.running.end();
    }

    /// `/eval [FILTER…]`: the eval cases, checked against the build the next turn uses,
    /// run as `eve eval` runs them; prints a line per case, the problems, the summary.
    fn eval(&mut self, filters: &[String]) {
        let manifest = self
            .pending
            .as_ref()
            .map_or(&self.active, |(m, _)| m)
            .clone();
        // As a turn: nothing of a definition the agent changed itself runs before the
        // person's /accept (its cases would run its tools and start its servers).
        match self.running.waiting(&manifest) {
            Ok(None) => {}
            Ok(Some(change)) => {
                eprintln!(
                    "error: the agent's definition changed while it ran ({}): /accept uses it, then /eval again",
                    change.summary
                );
                return;
            }
            Err(e) => {
                eprintln!("error: cannot check the agent's definition: {e}");
                return;
            }
        }
        let (cases, diagnostics) = compiler::compile_evals(&self.options.dir, &manifest);
        eprint!(
            "{}",
            render::human_report(diagnostics.iter(), &self.base, false, self.options.verbose)
        );
        if diagnostics.has_errors() {
            eprintln!("✗ the eval cases have errors: fix them, then /eval again");
            return;
        }
        let cases = match crate::evals::select(cases, filters, &[]) {
            Ok(cases) if cases.is_empty() => {
                eprintln!(
                    "no eval cases: add one as `{}`",
                    render::join_path(&self.base, "evals/<name>.toml")
                );
                return;
            }
            Ok(cases) => cases,
            Err(message) => {
                eprintln!("{message}");
                return;
            }
        };
        let width = cases
            .iter()
            .map(|c| c.id.chars().count())
            .max()
            .unwrap_or(0);
        let outcome = crate::evals::run(
            &self.options.dir,
            &manifest,
            cases,
            &crate::evals::Options::default(),
            |case| eprintln!("{}", crate::evals::report::progress_line(case, width)),
            &|event| self.running.observe(event),
        );
        // Checked as a turn is: when a case had something run, or servers ran.
        match self.running.after_turn(&manifest) {
            Ok(Some(change)) => eprintln!(
                "note: the agent's definition changed during these evals ({}); /accept uses it from the next turn",
                change.summary
            ),
            Ok(None) => {}
            Err(e) => eprintln!("error: cannot record the agent's changes: {e}"),
        }
        match outcome {
            Ok(outcome) => {
                let failures = crate::evals::report::failures(&outcome.results);
                if !failures.is_empty() {
                    eprint!("{}", console::escape::for_terminal(&failures));
                }
                eprintln!("{}", crate::evals::report::summary_line(&outcome.summary));
                eprintln!(
                    "artifacts: {}",
                    crate::evals::artifacts_path(&self.base, &outcome.summary).display()
                );
            }
            Err(message) => eprintln!("error: {message}"),
        }
    }

    /// `/tools`: the tools of the build the next turn uses (a reload announced waits for
    /// it), and those not offered, with why.
    fn list_tools(&self) {
        // The build the next turn uses: a reload announced waits for it.
        let next = self.pending.as_ref().map_or(&self.active, |(m, _)| m);
        for tool in &next.tools {
            if let Some((_, why)) = self.unavailable.iter().find(|(n, _)| *n == tool.name) {
                eprintln!(
                    "  {:<14} (not offered: {})",
                    tool.name,
                    crate::text::shorten(why, 80)
                );
                continue;
            }
            let first = tool.description.lines().next().unwrap_or_default();
            eprintln!("  {:<14} {}", tool.name, crate::text::shorten(first, 90));
        }
    }

    /// Runs a slash command; `false` means leave.
    fn command(&mut self, line: &str, runtime: &tokio::runtime::Runtime) -> bool {
        let name = line.split_whitespace().next().unwrap_or(line);
        match name {
            "/quit" | "/exit" => return false,
            "/help" => {
                for (command, what) in COMMANDS {
                    eprintln!("  {command:<10} {what}");
                }
            }
            "/tools" => self.list_tools(),
            "/skills" => {
                let next = self.pending.as_ref().map_or(&self.active, |(m, _)| m);
                if next.skills.is_empty() {
                    eprintln!("  (no skills)");
                }
                for skill in &next.skills {
                    eprintln!(
                        "  {:<20} {}",
                        skill.name,
                        crate::text::shorten(&skill.description, 90)
                    );
                }
            }
            "/reload" => {
                let build = crate::connections::build(&self.options.dir, false);
                match reload::decide(&self.active, build) {
                    Reload::Unchanged => {
                        self.pending = None;
                        eprintln!("↻ up to date");
                    }
                    decision => {
                        self.pending = None;
                        self.announce(decision);
                    }
                }
            }
            "/accept" => match self.running.accept() {
                Ok(None) => eprintln!("the definition did not change while the agent ran"),
                Ok(Some(change)) => {
                    eprintln!("accepted: {} (from the next turn)", change.summary);
                    self.rebuild(&[]);
                }
                Err(e) => eprintln!("error: {e}"),
            },
            "/new" => {
                self.session = None;
                eprintln!("new session: the next message starts it");
            }
            "/session" => match &self.session {
                None => eprintln!("no session yet: the next message starts one"),
                Some(id) => match show::read(&store::path(&self.options.dir, id)) {
                    Ok(r) => eprintln!(
                        "session {id}: {} turns, {} · {}",
                        r.turns.len(),
                        crate::console::lines::usage_text(&r.usage, true),
                        show::status(&r)
                    ),
                    Err(e) => eprintln!("error: {e}"),
                },
            },
            "/compact" => {
                if self.session.is_none() {
                    eprintln!("no session yet: nothing to compact");
                } else {
                    self.turn(Action::Compact, runtime);
                }
            }
            "/eval" => {
                let filters: Vec<String> = line
                    .split_whitespace()
                    .skip(1)
                    .map(str::to_string)
                    .collect();
                self.eval(&filters);
            }
            other => {
                let names: Vec<&str> = COMMANDS.iter().map(|(c, _)| *c).collect();
                match crate::suggest::closest(other, names.iter().copied()) {
                    Some(near) => eprintln!(
                        "unknown command `{other}`: did you mean `{near}`? (/help lists them)"
                    ),
                    None => eprintln!("unknown command `{other}` (/help lists them)"),
                }
            }
        }
        true
    }
}

/// A parked session: the line typed answers it (`y` or `n` for an approval).
fn answer(action: Action, pending: Option<&crate::protocol::InputRequest>) -> Action {
    match (action, pending) {
        (Action::Turn(line), Some(request)) => Action::Resume(match request.kind {
            InputKind::Question { .. } => Resolution::Answer { text: line },
            InputKind::Approval if matches!(line.to_lowercase().as_str(), "y" | "yes") => {
                Resolution::Approved { by: None }
            }
            InputKind::Approval => Resolution::Denied {
                reason: (!matches!(line.to_lowercase().as_str(), "n" | "no")).then_some(line),
            },
        }),
        (action, _) => action,
    }
}
