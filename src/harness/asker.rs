//! The seam to a person who answers questions and approvals (a terminal, in `eve run`).

use futures_util::future::BoxFuture;

use crate::protocol::{InputRequest, Resolution};

/// Asks the person a question or for an approval, and waits for the answer.
pub trait Asker: Send + Sync + std::fmt::Debug {
    /// The person's answer; `None` when they could not answer (input closed).
    fn ask<'a>(&'a self, request: &'a InputRequest) -> BoxFuture<'a, Option<Resolution>>;
}
