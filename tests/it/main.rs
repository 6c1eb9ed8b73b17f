//! eve's end-to-end tests: the real binary, run on copies of fixture folders and on
//! agents the tests write, against providers faked on 127.0.0.1 (`common::mock`) and
//! real MCP and Restate servers started on loopback. One test binary, a module a
//! feature: one link of the test build instead of two dozen, one Restate server for
//! the whole run. `tests/file_memory.rs` stays a binary of its own: its counting
//! allocator measures the whole process.
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

mod bash_rules;
mod build;
mod build_cache;
mod cli;
mod command_tools;
mod connections;
mod dev;
mod evals;
mod hooks;
mod import;
mod network;
mod page;
mod processes;
mod real_world;
mod reasoning;
mod restate;
mod run;
mod sandbox;
mod schemas;
mod security;
mod serve;
mod sessions;
mod skill_libraries;
mod special_files;
mod telemetry;
mod tools;
mod workspace_guard;
