//! Watching an agent directory: debounced change notifications for the files that make
//! the agent, never `.eve/` and never editors' temporary files.

use std::path::Path;
use std::sync::mpsc::Sender;
use std::time::Duration;

use super::Input;

/// Whether a change to `relative` (a path inside the agent directory) can change the build.
pub fn is_relevant(relative: &Path) -> bool {
    let mut components = relative.components();
    let Some(first) = components.next() else {
        return false;
    };
    let first = first.as_os_str().to_string_lossy();
    let top = matches!(
        first.as_ref(),
        "agent.toml"
            | "instructions.md"
            | "instructions"
            | "tools"
            | "skills"
            | "subagents"
            | "evals"
            | "connections"
    );
    if !top {
        return false;
    }
    let Some(name) = relative
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
    else {
        return false;
    };
    let temporary = name.ends_with('~')
        || name.ends_with(".swp")
        || name.ends_with(".swx")
        || name.ends_with(".swo")
        || name.ends_with(".tmp")
        || name.starts_with(".#")
        || (name.starts_with('#') && name.ends_with('#'))
        || name == "4913"
        || name == ".DS_Store"
        || name.starts_with(".eve-write-");
    !temporary && !relative.components().any(|c| c.as_os_str() == ".eve")
}

/// A running watcher; dropping it stops the notifications.
pub struct Watcher {
    _inner: notify::RecommendedWatcher,
}

/// Starts watching `dir`. After a relevant change, and `debounce` without another one,
/// [`Input::Changed`] is sent: a burst of events (an editor's temp file, rename and
/// write) makes one notification. Reads (the rebuild's own) are not changes.
pub fn start(dir: &Path, debounce: Duration, tx: Sender<Input>) -> notify::Result<Watcher> {
    let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let base = root.clone();
    let (raw_tx, raw_rx) = std::sync::mpsc::channel::<()>();
    let mut watcher = notify::recommended_watcher(move |result: notify::Result<notify::Event>| {
        let Ok(event) = result else {
            return;
        };
        if matches!(event.kind, notify::EventKind::Access(_)) {
            return;
        }
        let relevant = event
            .paths
            .iter()
            .any(|path| path.strip_prefix(&base).is_ok_and(is_relevant));
        if relevant {
            let _ = raw_tx.send(());
        }
    })?;
    notify::Watcher::watch(&mut watcher, &root, notify::RecursiveMode::Recursive)?;
    std::thread::spawn(move || {
        while raw_rx.recv().is_ok() {
            // Wait for quiet: every new event restarts the wait.
            loop {
                match raw_rx.recv_timeout(debounce) {
                    Ok(()) => continue,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => break,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
            if tx.send(Input::Changed).is_err() {
                return;
            }
        }
    });
    Ok(Watcher { _inner: watcher })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_agent_files_count_and_editor_droppings_do_not() {
        for path in [
            "agent.toml",
            "instructions.md",
            "instructions/a.md",
            "tools/x.toml",
            "skills/s/SKILL.md",
            "subagents/e/agent.toml",
            "evals/fix-typo.toml",
            "connections/fs.toml",
        ] {
            assert!(is_relevant(Path::new(path)), "{path}");
        }
        for path in [
            ".eve/manifest.json",
            ".eve/sessions/ses_1.jsonl",
            "replies.yaml",
            "README.md",
            "tools/.x.toml.swp",
            "tools/x.toml~",
            "tools/#x.toml#",
            "tools/.#x.toml",
            "tools/4913",
            "subagents/e/.eve/manifest.json",
        ] {
            assert!(!is_relevant(Path::new(path)), "{path}");
        }
    }
}
