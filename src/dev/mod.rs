//! `eve dev`: an interactive session that rebuilds the agent directory as it changes.
//!
//! Lines typed at the prompt are turns of one logged session; `/` commands manage it.
//! A watcher rebuilds the manifest after every change (debounced); a good build is
//! announced in one line and applies from the next turn, a failed one prints its
//! diagnostics and leaves the last good build active. Each turn reopens the session
//! from its log with the active build, so the conversation carries across reloads.

pub mod history;
pub mod reload;
pub mod watch;

use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use crate::compiler::{self, render};
use crate::console::{self, Renderer, TerminalAsker};
use crate::manifest::Manifest;
use crate::protocol::{InputKind, Resolution};
use crate::runner::{self, Action, RunOptions, SessionChoice};
use crate::session::{show, store};
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
}

/// Something the loop reacts to.
#[derive(Debug)]
pub enum Input {
    Line(String),
    /// The agent directory changed (already debounced): these paths, relative to it.
    Changed(Vec<String>),
    Eof,
}

struct Dev {
    options: DevOptions,
    base: String,
    /// The marker naming the active build while tools may run (see [`crate::review`]).
    running: crate::review::Running,
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
    let build = crate::connections::build(&options.dir, false);
    print_diagnostics(&build, &base, options.verbose);
    let build_cached = build.cached;
    let Some(active) = build.manifest else {
        eprintln!(
            "error: could not build `{}`: fix the errors above, then start eve dev again",
            compiler::agent_name(&options.dir)
        );
        return Ok(runner::exit::FAILED);
    };
    // As `eve run`: a change the agent made to its definition (also in a run that was
    // killed before its check) waits for the person before anything runs it.
    if let Some(change) = crate::review::waiting(&options.dir, &active.inputs_hash)? {
        eprintln!(
            "error: the agent's definition changed while it ran ({}): review it with `eve build {}`, then start eve dev again",
            change.summary,
            crate::text::shell_word(&base)
        );
        return Ok(runner::exit::USAGE);
    }
    if !build_cached {
        compiler::write_manifest(&options.dir, &active)?;
    }
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
    // Until the check after the last turn: a killed eve dev leaves this for the next
    // start, naming the build that was active.
    let running = crate::review::Running::start(&options.dir, &active)?;
    let mut dev = Dev {
        options,
        base,
        running,
        active,
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
                if line.is_empty() {
                    let _ = ready_tx.send(());
                    continue;
                }
                if line.starts_with('/') {
                    if !dev.command(&line, &runtime) {
                        break;
                    }
                } else {
                    dev.turn(Action::Turn(line), &runtime);
                }
                let _ = ready_tx.send(());
            }
        }
    }
    if let Some(connections) = dev.connections.take() {
        runtime.block_on(connections.stop());
        // The servers ran on after the last turn's check, as `eve run` checks once its
        // servers have stopped; against the newest build the person was shown, whose
        // edits are theirs.
        let shown = dev.pending.as_ref().map_or(&dev.active, |(m, _)| m);
        match dev.running.check(&dev.options.dir, shown) {
            Ok(Some(change)) => eprintln!(
                "note: the agent's definition changed while its servers ran ({}); it takes effect once you have seen it: `eve build {}`",
                change.summary,
                crate::text::shell_word(&dev.base)
            ),
            Ok(None) => {}
            Err(e) => eprintln!("error: cannot record the agent's changes: {e}"),
        }
    }
    dev.running.end();
    Ok(runner::exit::COMPLETED)
}

fn print_diagnostics(build: &compiler::Build, base: &str, verbose: bool) {
    eprint!(
        "{}",
        render::human_report(build.diagnostics.iter(), base, false, verbose)
    );
}

/// Reads lines (with line editing and history on a terminal) and sends them, one after
/// each `ready` so the prompt shows only when eve waits for input.
fn spawn_reader(
    dir: &Path,
    interactive: bool,
    tx: mpsc::Sender<Input>,
    ready: mpsc::Receiver<()>,
    printer: mpsc::Sender<Box<dyn rustyline::ExternalPrinter + Send>>,
) {
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        if interactive {
            let Ok(mut editor) = rustyline::DefaultEditor::new() else {
                let _ = tx.send(Input::Eof);
                return;
            };
            let mut history = history::History::load(&dir);
            for line in history.lines() {
                let _ = editor.add_history_entry(line.as_str());
            }
            if let Ok(external) = editor.create_external_printer() {
                let _ = printer.send(Box::new(external));
            }
            while ready.recv().is_ok() {
                match editor.readline("› ") {
                    Ok(line) => {
                        let _ = editor.add_history_entry(line.as_str());
                        history.add(&dir, &line);
                        if tx.send(Input::Line(line)).is_err() {
                            return;
                        }
                    }
                    // Ctrl-C at the prompt clears the line.
                    Err(rustyline::error::ReadlineError::Interrupted) => {
                        if tx.send(Input::Line(String::new())).is_err() {
                            return;
                        }
                    }
                    Err(_) => {
                        let _ = tx.send(Input::Eof);
                        return;
                    }
                }
            }
        } else {
            let stdin = std::io::stdin();
            let mut lines = stdin.lock().lines();
            while ready.recv().is_ok() {
                match lines.next() {
                    Some(Ok(line)) => {
                        if tx.send(Input::Line(line)).is_err() {
                            return;
                        }
                    }
                    _ => {
                        let _ = tx.send(Input::Eof);
                        return;
                    }
                }
            }
        }
    });
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
        // A definition the agent changed itself waits for the person's /accept.
        let mut previous = None;
        let on_disk = self.pending.as_ref().map_or(&self.active, |(m, _)| m);
        let waiting = match crate::review::waiting(&self.options.dir, &on_disk.inputs_hash) {
            Ok(waiting) => waiting,
            Err(e) => {
                eprintln!("error: cannot check the agent's definition: {e}");
                return;
            }
        };
        if let Some(change) = waiting {
            eprintln!(
                "note: still using the last build you saw: the agent's definition changed while it ran ({}); /accept uses it",
                change.summary
            );
        } else if let Some((manifest, summary)) = self.pending.take() {
            // The marker names the new build before any of its tools can run.
            if let Err(e) = self.running.now_runs(&manifest) {
                eprintln!("error: cannot record the build this session runs: {e}");
                self.pending = Some((manifest, summary));
                return;
            }
            previous = Some(std::mem::replace(&mut self.active, manifest));
        }
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
        // A parked session: this line answers it.
        let action = match (action, prepared.harness.pending()) {
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
        };
        self.session = Some(prepared.harness.session_id().to_string());
        let options = console::Options {
            quiet: false,
            spinner: std::io::stderr().is_terminal(),
            command: format!("eve run {}", crate::text::shell_word(&self.base)),
            notes: self.turns == 0,
            out_tty: std::io::stdout().is_terminal(),
            err_tty: std::io::stderr().is_terminal(),
            color: console::stderr_color(std::io::stderr().is_terminal()),
        };
        let mut console =
            console::TextRenderer::new(&options, std::io::stdout(), std::io::stderr());
        self.turns += 1;
        // Whether the model had anything run: a call requested, or a parked one settled.
        let mut acted = false;
        let mut unavailable = std::mem::take(&mut self.unavailable);
        let outcome = runtime.block_on(runner::run(
            prepared.harness,
            prepared.events,
            action,
            |event| {
                acted |= crate::review::acted(event);
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
        // A turn that ran nothing (no call, no server) cannot have changed the
        // definition; checking anyway would take an edit the person saves the moment
        // the turn ends for one the agent made.
        let could_change = acted || crate::review::runs_servers(&self.active);
        let checked = if could_change {
            self.running.check(&self.options.dir, &self.active)
        } else {
            Ok(None)
        };
        match checked {
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

    /// `/eval [FILTER…]`: the eval cases, checked against the build the next turn uses,
    /// run as `eve eval` runs them; prints a line per case, the problems, the summary.
    fn eval(&mut self, filters: &[String]) {
        let manifest = self
            .pending
            .as_ref()
            .map_or(&self.active, |(m, _)| m)
            .clone();
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
        );
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
            "/tools" => {
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
            "/accept" => match crate::review::pending(&self.options.dir) {
                Ok(None) => eprintln!("the definition did not change while the agent ran"),
                Ok(Some(change)) => match crate::review::accept(&self.options.dir) {
                    Ok(()) => {
                        eprintln!("accepted: {} (from the next turn)", change.summary);
                        self.rebuild(&[]);
                    }
                    Err(e) => eprintln!("error: {e}"),
                },
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
                        "session {id}: {} turns, {} tokens in ({} cached), {} out · {}",
                        r.turns.len(),
                        r.usage.input_tokens,
                        r.usage.cache_read_tokens,
                        r.usage.output_tokens,
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
