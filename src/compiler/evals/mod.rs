//! `evals/**/*.toml`: eval cases, every key checked, every name checked against the
//! compiled agent (its tools, connection tools included, its skills and subagents).
//!
//! One file per table: `case` (the file's own keys, and [`compile`]), `turns`,
//! `workspace`, `replies`, `stubs`, `expect` and `tool_checks` (`[expect.tools]`);
//! `scope` is what they are checked against, `checks` what they share.

mod case;
mod checks;
mod expect;
mod replies;
mod scope;
mod stubs;
mod tool_checks;
mod turns;
mod workspace;

pub use case::compile;
