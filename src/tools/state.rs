//! What tools remember within a session: the read stamps of files and the todo list.

use crate::sync::lock;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use crate::protocol::{Stamp, Todo, TodoStatus};

/// Tool state of one session, shared by every call of the session.
#[derive(Debug, Default)]
pub struct SessionState {
    stamps: Mutex<HashMap<PathBuf, Stamp>>,
    todos: Mutex<Vec<Todo>>,
}

impl SessionState {
    /// Records what was read of `path` (a resolved, absolute path).
    pub fn stamp(&self, path: &Path, stamp: Stamp) {
        lock(&self.stamps).insert(path.to_path_buf(), stamp);
    }

    /// The stamp of `path`, if it was read.
    pub fn stamp_of(&self, path: &Path) -> Option<Stamp> {
        lock(&self.stamps).get(path).copied()
    }

    /// Every stamp, sorted by path.
    pub fn stamps(&self) -> Vec<(PathBuf, Stamp)> {
        let mut all: Vec<(PathBuf, Stamp)> = lock(&self.stamps)
            .iter()
            .map(|(p, s)| (p.clone(), *s))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// Replaces every stamp (a session reopened from its log).
    pub fn set_stamps(&self, stamps: Vec<(PathBuf, Stamp)>) {
        *lock(&self.stamps) = stamps.into_iter().collect();
    }

    /// Forgets every stamp (after compaction the model no longer holds the contents).
    pub fn clear_stamps(&self) {
        lock(&self.stamps).clear();
    }

    /// The todo list.
    pub fn todos(&self) -> Vec<Todo> {
        lock(&self.todos).clone()
    }

    /// Replaces the todo list.
    pub fn set_todos(&self, todos: Vec<Todo>) {
        *lock(&self.todos) = todos;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_per_path_and_can_be_cleared() {
        let state = SessionState::default();
        let a = Path::new("/w/a");
        assert_eq!(state.stamp_of(a), None);
        state.stamp(a, Stamp::of(b"one"));
        assert_eq!(state.stamp_of(a), Some(Stamp::of(b"one")));
        assert_ne!(Stamp::of(b"one"), Stamp::of(b"two"));
        assert_eq!(Stamp::of(b"one").len, 3);
        state.clear_stamps();
        assert_eq!(state.stamp_of(a), None);
    }
}
