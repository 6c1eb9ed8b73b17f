//! Watching an agent directory: debounced change notifications for the files that make
//! the agent, never `.eve/` and never editors' temporary files.

use std::collections::BTreeSet;
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
/// [`Input::Changed`] is sent with the paths that changed (relative to `dir`, with `/`):
/// a burst of events (an editor's temp file, rename and write) makes one notification.
/// Reads (the rebuild's own) are not changes.
pub fn start(dir: &Path, debounce: Duration, tx: Sender<Input>) -> notify::Result<Watcher> {
    let root = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
    let base = root.clone();
    let (raw_tx, raw_rx) = std::sync::mpsc::channel::<Vec<String>>();
    let mut watcher = notify::recommended_watcher(move |result: notify::Result<notify::Event>| {
        let Ok(event) = result else {
            return;
        };
        if matches!(event.kind, notify::EventKind::Access(_)) {
            return;
        }
        let relevant: Vec<String> = event
            .paths
            .iter()
            .filter_map(|path| path.strip_prefix(&base).ok())
            .filter(|relative| is_relevant(relative))
            .map(crate::compiler::inputs::slash_path)
            .collect();
        if !relevant.is_empty() {
            let _ = raw_tx.send(relevant);
        }
    })?;
    notify::Watcher::watch(&mut watcher, &root, notify::RecursiveMode::Recursive)?;
    std::thread::spawn(move || {
        while let Ok(first) = raw_rx.recv() {
            let mut changed: BTreeSet<String> = first.into_iter().collect();
            // Wait for quiet: every new event restarts the wait.
            loop {
                match raw_rx.recv_timeout(debounce) {
                    Ok(paths) => changed.extend(paths),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => break,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                }
            }
            if tx
                .send(Input::Changed(changed.into_iter().collect()))
                .is_err()
            {
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

    #[test]
    fn a_save_is_reported_with_the_paths_it_changed() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::create_dir_all(dir.join("skills/plan")).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let _watcher = start(dir, Duration::from_millis(50), tx).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        // Saved the way editors do: a temporary file, renamed over the real one.
        let swap = dir.join("skills/plan/.SKILL.md.swp");
        std::fs::write(&swap, "---\ndescription: Plans\n---\n").unwrap();
        std::fs::rename(&swap, dir.join("skills/plan/SKILL.md")).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        let mut seen = Vec::new();
        while !seen.iter().any(|p: &String| p == "skills/plan/SKILL.md") {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(Input::Changed(paths)) => seen.extend(paths),
                Ok(_) => {}
                Err(e) => panic!("no change reported ({e}); saw {seen:?}"),
            }
        }
        assert!(
            !seen.iter().any(|p| p.ends_with(".swp")),
            "the editor's temporary file is no change: {seen:?}"
        );
    }
}
