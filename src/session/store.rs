//! Where sessions live and how to find them: `<agent>/.eve/sessions/<id>.jsonl`.

use std::path::{Path, PathBuf};

/// The sessions folder of an agent directory.
pub fn dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join(".eve").join("sessions")
}

/// The log of session `id`.
pub fn path(agent_dir: &Path, id: &str) -> PathBuf {
    dir(agent_dir).join(format!("{id}.jsonl"))
}

/// Whether `id` looks like a session id (so it cannot name a path elsewhere).
pub fn is_valid_id(id: &str) -> bool {
    id.strip_prefix("ses_")
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// The session ids of an agent, oldest first (ids sort by creation time).
pub fn list(agent_dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir(agent_dir)) else {
        return Vec::new();
    };
    let mut ids: Vec<String> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".jsonl").map(str::to_string)
        })
        .filter(|id| is_valid_id(id))
        .collect();
    ids.sort();
    ids
}

/// The newest session of an agent.
pub fn latest(agent_dir: &Path) -> Option<String> {
    list(agent_dir).pop()
}

/// Finds a session by its id or a unique prefix of it (`ses_01JX…`).
pub fn find(agent_dir: &Path, id: &str) -> Result<String, String> {
    if id.trim().is_empty() {
        // An empty prefix matches every id: never let it pick one.
        return Err("a session id is needed (`eve sessions list` shows them)".into());
    }
    let ids = list(agent_dir);
    if ids.iter().any(|i| i == id) {
        return Ok(id.to_string());
    }
    let matching: Vec<&String> = ids.iter().filter(|i| i.starts_with(id)).collect();
    match matching.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(format!(
            "no session `{id}` in `{}` (`eve sessions list` shows them)",
            dir(agent_dir).display()
        )),
        many => Err(format!(
            "`{id}` matches {} sessions; give more of the id",
            many.len()
        )),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn sessions_are_listed_oldest_first_and_found_by_prefix() {
        let tmp = tempfile::tempdir().unwrap();
        let d = dir(tmp.path());
        std::fs::create_dir_all(&d).unwrap();
        for id in ["ses_01B", "ses_01A", "ses_02C"] {
            std::fs::write(d.join(format!("{id}.jsonl")), "").unwrap();
        }
        std::fs::write(d.join("notes.txt"), "").unwrap();
        assert_eq!(list(tmp.path()), ["ses_01A", "ses_01B", "ses_02C"]);
        assert_eq!(latest(tmp.path()).unwrap(), "ses_02C");
        assert_eq!(find(tmp.path(), "ses_02").unwrap(), "ses_02C");
        assert!(
            find(tmp.path(), "ses_01")
                .unwrap_err()
                .contains("matches 2 sessions")
        );
        assert!(
            find(tmp.path(), "ses_9")
                .unwrap_err()
                .starts_with("no session `ses_9`")
        );
        assert!(!is_valid_id("ses_../../x"));
    }
}
