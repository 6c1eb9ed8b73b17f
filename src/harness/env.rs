//! The environment a session reads variables from, passed in through `Setup::env`.

use std::sync::Arc;

/// An environment to read variables from, passed in through [`Setup::env`]: the
/// harness itself reads none of the process's.
#[derive(Clone)]
pub struct Env(Arc<Lookup>);

type Lookup = dyn Fn(&str) -> Option<String> + Send + Sync;

impl Env {
    /// No variables.
    pub fn empty() -> Env {
        Env(Arc::new(|_| None))
    }

    /// The process's environment (what `eve run` passes).
    pub fn process() -> Env {
        Env(Arc::new(|name| std::env::var(name).ok()))
    }

    /// Variables from `lookup`.
    pub fn from_fn(lookup: impl Fn(&str) -> Option<String> + Send + Sync + 'static) -> Env {
        Env(Arc::new(lookup))
    }

    /// The value of `name`, if set.
    pub fn var(&self, name: &str) -> Option<String> {
        (self.0)(name)
    }
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Env")
    }
}
