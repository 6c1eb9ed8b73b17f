//! The session log of an eval run: the same JSONL records as `.eve/sessions/`, kept in
//! the artifacts folder and written without waiting for the disk (a run is not resumed
//! after a crash, and a hundred cases must not wait for a thousand syncs).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::protocol::{Journal, Record};
use crate::sync::lock;

/// A session log written through a buffer.
#[derive(Debug)]
pub struct RunLog {
    path: PathBuf,
    out: Mutex<BufWriter<File>>,
    error: Mutex<Option<String>>,
}

impl RunLog {
    /// Creates the log at `path`.
    pub fn create(path: &Path) -> Result<RunLog, String> {
        let file = File::create(path)
            .map_err(|e| format!("cannot create the session log `{}`: {e}", path.display()))?;
        Ok(RunLog {
            path: path.to_path_buf(),
            out: Mutex::new(BufWriter::new(file)),
            error: Mutex::new(None),
        })
    }

    fn fail(&self, e: impl std::fmt::Display) {
        let mut error = lock(&self.error);
        if error.is_none() {
            *error = Some(format!(
                "cannot write the session log `{}`: {e}",
                self.path.display()
            ));
        }
    }
}

impl Journal for RunLog {
    fn append(&self, record: &Record) {
        let written = serde_json::to_vec(record)
            .map_err(std::io::Error::other)
            .and_then(|mut line| {
                line.push(b'\n');
                lock(&self.out).write_all(&line)
            });
        if let Err(e) = written {
            self.fail(e);
        }
    }

    fn sync(&self) {
        if let Err(e) = lock(&self.out).flush() {
            self.fail(e);
        }
    }

    fn error(&self) -> Option<String> {
        lock(&self.error).clone()
    }
}
