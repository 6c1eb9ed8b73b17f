//! eve: build and run AI agents declared as a directory of files.

// `clippy.toml` lists the file reads the compiler must make through its recorded reads;
// `compiler/` denies them, the rest of eve may use them.
#![allow(clippy::disallowed_methods)]
// The library prints nothing: the commands, the console's renderers and `eve dev`'s
// loop write to the terminal; `eve serve` logs through the sink its command sets
// (`serve::log`).
#![cfg_attr(not(test), deny(clippy::print_stdout, clippy::print_stderr))]

pub mod agent;
pub mod catalog;
pub mod cli;
pub mod commands;
pub mod compiler;
pub mod connections;
pub mod console;
pub mod dev;
pub mod evals;
pub mod harness;
pub mod ids;
pub mod import;
pub mod manifest;
pub mod net;
pub mod pattern;
pub mod prompt;
pub mod protocol;
pub mod providers;
pub mod review;
pub mod runner;
pub mod sandbox;
pub mod secrets;
pub mod serve;
pub mod session;
pub mod shell;
pub mod statedir;
pub mod suggest;
pub mod sync;
pub mod telemetry;
pub mod template;
pub mod text;
pub mod textfile;
pub mod tools;
