//! `eve sessions list|show|rm`.

use super::out;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::cli::{SessionsArgs, SessionsCommand, ShowOutput};
use crate::console::escape::for_terminal;
use crate::console::transcript::transcript;
use crate::session::{self, show, store};

/// `show` and `rm` take `ID [DIR]`; `DIR ID`, the order of every other command, is
/// understood too: a first argument that is a folder, before a second that is not.
fn id_and_dir(id: &str, dir: &Path) -> (String, PathBuf) {
    let first = Path::new(id);
    if first.is_dir() && !dir.is_dir() {
        return (dir.to_string_lossy().into_owned(), first.to_path_buf());
    }
    (id.to_string(), dir.to_path_buf())
}

pub fn run(args: &SessionsArgs) -> anyhow::Result<ExitCode> {
    match &args.command {
        SessionsCommand::List { dir } => list(dir),
        SessionsCommand::Show {
            id,
            dir,
            output,
            timeline,
        } => show(id, dir, (*output, *timeline)),
        SessionsCommand::Rm { id, dir } => rm(id, dir),
    }
}

/// `eve sessions list`: newest first.
fn list(dir: &Path) -> anyhow::Result<ExitCode> {
    if !dir.is_dir() {
        eprintln!("error: `{}` is not a folder", dir.display());
        return Ok(ExitCode::from(out::USAGE));
    }
    // Newest first, as `eve serve` lists them (ids sort by creation time).
    let mut rows = show::rows(dir)?;
    rows.reverse();
    if rows.is_empty() {
        eprintln!("no sessions yet in `{}`", store::dir(dir).display());
        return Ok(ExitCode::SUCCESS);
    }
    let id_width = rows.iter().map(|r| r.id.len()).max().unwrap_or(2);
    let status_width = rows
        .iter()
        .map(|r| r.status.chars().count())
        .max()
        .unwrap_or(6)
        .max(6);
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "{:id_width$}  {:19}  {:>5}  {:status_width$}  LAST MESSAGE",
        "ID", "STARTED", "TURNS", "STATUS"
    );
    for row in rows {
        let _ = writeln!(
            out,
            "{:id_width$}  {:19}  {:>5}  {:status_width$}  {}",
            row.id, row.started, row.turns, row.status, row.last_message
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// The session `show` and `rm` name, and its agent directory; the exit code when there
/// is none (said why).
fn find(id: &str, dir: &Path) -> Result<(String, PathBuf), ExitCode> {
    let (id, dir) = id_and_dir(id, dir);
    if id.trim().is_empty() {
        eprintln!("error: a session id is needed (`eve sessions list` shows them)");
        return Err(ExitCode::from(out::USAGE));
    }
    match store::find(&dir, &id) {
        Ok(id) => Ok((id, dir)),
        Err(e) => {
            eprintln!("error: {e}");
            Err(ExitCode::FAILURE)
        }
    }
}

/// `eve sessions show ID`: the transcript, or the events as stream-json.
fn show(id: &str, dir: &Path, (output, timeline): (ShowOutput, bool)) -> anyhow::Result<ExitCode> {
    let (id, dir) = match find(id, dir) {
        Ok(found) => found,
        Err(code) => return Ok(code),
    };
    let dir = dir.as_path();
    let replayed = match show::read(&store::path(dir, &id)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if timeline {
        let text = session::timeline::timeline(&replayed.records);
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "{}", for_terminal(&text));
        return Ok(ExitCode::SUCCESS);
    }
    match output {
        // A closed pipe (`| head`) just ends the output.
        ShowOutput::Text => {
            let text = transcript(
                &show::header(&replayed),
                &replayed.records,
                &show::status(&replayed),
            );
            let mut out = std::io::stdout().lock();
            let text = if out.is_terminal() {
                for_terminal(&text)
            } else {
                text.as_str().into()
            };
            let _ = write!(out, "{text}");
        }
        ShowOutput::StreamJson => {
            let mut out = std::io::stdout().lock();
            for event in show::events(&replayed) {
                if writeln!(out, "{}", serde_json::to_string(&event)?).is_err() {
                    break;
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `eve sessions rm ID`.
fn rm(id: &str, dir: &Path) -> anyhow::Result<ExitCode> {
    let (id, dir) = match find(id, dir) {
        Ok(found) => found,
        Err(code) => return Ok(code),
    };
    let dir = dir.as_path();
    if let Err(e) = session::remove(dir, &id) {
        eprintln!("error: cannot remove session {id}: {e}");
        return Ok(ExitCode::FAILURE);
    }
    eprintln!("removed session {id}");
    Ok(ExitCode::SUCCESS)
}
