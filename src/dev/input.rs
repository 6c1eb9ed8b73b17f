//! What the `eve dev` loop reacts to, and the thread that reads the person's lines.

use std::io::BufRead;
use std::path::Path;
use std::sync::mpsc;

use super::history;

/// Something the loop reacts to.
#[derive(Debug)]
pub enum Input {
    Line(String),
    /// The agent directory changed (already debounced): these paths, relative to it.
    Changed(Vec<String>),
    Eof,
}

/// Reads lines (with line editing and history on a terminal) and sends them, one after
/// each `ready` so the prompt shows only when eve waits for input.
pub fn spawn_reader(
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
