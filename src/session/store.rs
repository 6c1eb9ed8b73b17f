//! Where sessions live and how to find them: `<agent>/.eve/sessions/<id>.jsonl`.

use std::path::{Path, PathBuf};

/// The sessions folder's name in `.eve/`.
const SESSIONS: &str = "sessions";

/// The sessions folder of an agent directory.
pub fn dir(agent_dir: &Path) -> PathBuf {
    agent_dir.join(crate::statedir::NAME).join(SESSIONS)
}

/// The log of session `id`.
pub fn path(agent_dir: &Path, id: &str) -> PathBuf {
    dir(agent_dir).join(file_name(id))
}

fn file_name(id: &str) -> String {
    format!("{id}.jsonl")
}

/// Opens the log of session `id` to append to it, creating it (and the sessions folder)
/// if needed: beneath the agent directory, never through a link at `.eve`, at
/// `.eve/sessions` or at the log ([`crate::statedir`]).
pub fn open_log(agent_dir: &Path, id: &str) -> std::io::Result<std::fs::File> {
    crate::statedir::create(agent_dir, &[SESSIONS])?.append(&file_name(id))
}

/// Opens the existing log of session `id` to write to it (never through a link).
pub fn open_existing(agent_dir: &Path, id: &str) -> std::io::Result<std::fs::File> {
    match crate::statedir::open(agent_dir, &[SESSIONS])? {
        Some(sessions) => sessions.open_existing(&file_name(id)),
        None => Err(std::io::Error::from(std::io::ErrorKind::NotFound)),
    }
}

/// Removes the log of session `id` (never through a link).
pub fn remove_log(agent_dir: &Path, id: &str) -> std::io::Result<()> {
    if let Some(sessions) = crate::statedir::open(agent_dir, &[SESSIONS])? {
        sessions.remove(&file_name(id))?;
        // The scripted provider's place in its script, if this session used one.
        sessions.remove(&format!("{id}.scripted"))?;
    }
    Ok(())
}

/// Reads the log at `path` (one [`list`] found), never through a link planted at its
/// name and never waiting on a FIFO there (`eve sessions list` reads every log).
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                std::io::Error::other("it is a symbolic link, not a session log")
            } else {
                e
            }
        })?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("it is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Whether `id` looks like a session id (so it cannot name a path elsewhere).
pub fn is_valid_id(id: &str) -> bool {
    id.strip_prefix("ses_")
        .is_some_and(|rest| !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric()))
}

/// The session ids of an agent, oldest first (ids sort by creation time). A sessions
/// folder that is a link is an error ([`crate::statedir`]).
pub fn list(agent_dir: &Path) -> std::io::Result<Vec<String>> {
    let Some(sessions) = crate::statedir::open(agent_dir, &[SESSIONS])? else {
        return Ok(Vec::new());
    };
    let mut ids: Vec<String> = sessions
        .names()?
        .into_iter()
        .filter_map(|name| name.strip_suffix(".jsonl").map(str::to_string))
        .filter(|id| is_valid_id(id))
        .collect();
    ids.sort();
    Ok(ids)
}

/// The newest session of an agent.
pub fn latest(agent_dir: &Path) -> std::io::Result<Option<String>> {
    Ok(list(agent_dir)?.pop())
}

/// Finds a session by its id or a unique prefix of it (`ses_01JX…`).
pub fn find(agent_dir: &Path, id: &str) -> Result<String, String> {
    if id.trim().is_empty() {
        // An empty prefix matches every id: never let it pick one.
        return Err("a session id is needed (`eve sessions list` shows them)".into());
    }
    let ids = list(agent_dir).map_err(|e| e.to_string())?;
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
        assert_eq!(list(tmp.path()).unwrap(), ["ses_01A", "ses_01B", "ses_02C"]);
        assert_eq!(latest(tmp.path()).unwrap().unwrap(), "ses_02C");
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
