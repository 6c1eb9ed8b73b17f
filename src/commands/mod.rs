//! Thin orchestration for each subcommand.

mod build;
mod dev;
mod init;
mod run;
mod sessions;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Exit code for a usage error (bad arguments), as clap uses.
pub const EXIT_USAGE: u8 = 2;

/// Runs a parsed command line and returns the process exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Init(args) => init::run(&args),
        Command::Build(args) => build::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Sessions(args) => sessions::run(&args),
        Command::Dev(args) => dev::run(&args),
    }
}
