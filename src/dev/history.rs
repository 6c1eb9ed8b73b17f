//! The lines typed at `eve dev`'s prompt, kept in `.eve/dev_history` for the next session.
//!
//! Read and written by eve itself through [`crate::statedir`] (a link at `.eve` or at the
//! file is never followed), not by the line editor, which would open the path as given.

use std::path::Path;

/// The file's name in `.eve/`.
const FILE: &str = "dev_history";
/// How many lines are kept.
const KEEP: usize = 500;
/// A larger file is not read.
const MAX_BYTES: u64 = 1024 * 1024;

/// The lines of an agent directory's history, oldest first.
#[derive(Debug, Default)]
pub struct History {
    lines: Vec<String>,
}

impl History {
    /// The history of `agent_dir`: empty when there is none, or it cannot be read.
    pub fn load(agent_dir: &Path) -> History {
        let text = crate::statedir::open(agent_dir, &[])
            .ok()
            .flatten()
            .and_then(|eve| eve.read(FILE, MAX_BYTES).ok().flatten())
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .unwrap_or_default();
        let mut lines: Vec<String> = text
            .lines()
            // The line editor's own format began with a version line.
            .filter(|l| !l.is_empty() && *l != "#V2")
            .map(str::to_string)
            .collect();
        let extra = lines.len().saturating_sub(KEEP);
        lines.drain(..extra);
        History { lines }
    }

    /// The lines, oldest first.
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// Adds `line` and writes the history (best effort: a history that cannot be kept
    /// costs the next session its recall, nothing else).
    pub fn add(&mut self, agent_dir: &Path, line: &str) {
        if line.trim().is_empty() || line.contains('\n') {
            return;
        }
        if self.lines.len() >= KEEP {
            self.lines.remove(0);
        }
        self.lines.push(line.to_string());
        let mut text = self.lines.join("\n");
        text.push('\n');
        if let Ok(eve) = crate::statedir::create(agent_dir, &[]) {
            let _ = eve.write(FILE, text.as_bytes());
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_kept_and_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let mut history = History::load(tmp.path());
        assert!(history.lines().is_empty());
        history.add(tmp.path(), "first");
        history.add(tmp.path(), "  ");
        history.add(tmp.path(), "second");
        assert_eq!(History::load(tmp.path()).lines(), ["first", "second"]);
    }

    #[test]
    fn the_history_is_never_written_through_a_link() {
        let tmp = tempfile::tempdir().unwrap();
        let agent = tmp.path().join("agent");
        let elsewhere = tmp.path().join("elsewhere");
        std::fs::create_dir_all(&agent).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        std::fs::write(elsewhere.join(FILE), "planted\n").unwrap();
        std::os::unix::fs::symlink(&elsewhere, agent.join(".eve")).unwrap();
        let mut history = History::load(&agent);
        assert!(history.lines().is_empty(), "not read through the link");
        history.add(&agent, "secret question");
        assert_eq!(
            std::fs::read_to_string(elsewhere.join(FILE)).unwrap(),
            "planted\n"
        );
        assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 1);
        // A real `.eve` with the file a link: replaced, the target untouched.
        std::fs::remove_file(agent.join(".eve")).unwrap();
        std::fs::create_dir(agent.join(".eve")).unwrap();
        let victim = tmp.path().join("victim");
        std::fs::write(&victim, "precious").unwrap();
        std::os::unix::fs::symlink(&victim, agent.join(".eve").join(FILE)).unwrap();
        history.add(&agent, "again");
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
        assert_eq!(History::load(&agent).lines(), ["secret question", "again"]);
    }
}
