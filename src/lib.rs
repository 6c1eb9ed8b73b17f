//! eve: build and run AI agents declared as a directory of files.

pub mod catalog;
pub mod cli;
pub mod commands;
pub mod compiler;
pub mod console;
pub mod dev;
pub mod harness;
pub mod ids;
pub mod manifest;
pub mod net;
pub mod protocol;
pub mod providers;
pub mod review;
pub mod runner;
pub mod sandbox;
pub mod secrets;
pub mod serve;
pub mod session;
pub mod shell;
pub mod suggest;
pub mod sync;
pub mod template;
pub mod text;
pub mod textfile;
pub mod tools;
