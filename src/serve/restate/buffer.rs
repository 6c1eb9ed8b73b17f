//! Where a Restate turn's harness journals its records: kept in memory until the turn
//! takes them into a `ctx.run` of its own (see `object.rs`).

use std::sync::Mutex;

use crate::protocol::{Event, Journal, Record};

/// The records the harness journaled since they were last taken.
#[derive(Debug, Default)]
pub struct Buffer {
    records: Mutex<Vec<Record>>,
}

impl Buffer {
    /// Takes the records journaled since the last time.
    pub fn take(&self) -> Vec<Record> {
        std::mem::take(&mut *crate::sync::lock(&self.records))
    }
}

impl Journal for Buffer {
    fn append(&self, record: &Record) {
        crate::sync::lock(&self.records).push(record.clone());
    }

    fn sync(&self) {}

    fn error(&self) -> Option<String> {
        None
    }

    // Streamed pieces are not kept, and in Restate mode not sent: readers get each
    // reply's whole text as a line once its step is journaled.
    fn stream(&self, _event: &Event) {}
}
