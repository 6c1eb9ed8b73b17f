//! Thin orchestration for each subcommand.

mod build;
mod dev;
mod doctor;
mod init;
mod run;
mod serve;
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
        Command::Run(args) => {
            isolate_secrets(&run::split_positionals(&args).0, &[]);
            run::run(&args)
        }
        Command::Sessions(args) => sessions::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Dev(args) => {
            isolate_secrets(&args.dir, &[]);
            dev::run(&args)
        }
        Command::Serve(args) => {
            isolate_secrets(&args.dir, &[crate::serve::TOKEN_VAR]);
            serve::run(&args)
        }
    }
}

/// Before a command that runs tools: the provider keys of the agent in `dir` leave eve's
/// environment (see [`crate::secrets`]), with the variables in `also`.
fn isolate_secrets(dir: &std::path::Path, also: &[&str]) {
    let known = || {
        let mut known =
            match crate::compiler::compile(dir, &crate::tools::builtin::CATALOG).manifest {
                Some(manifest) => crate::providers::key_variables(&manifest),
                None => crate::providers::key_variables_builtin(),
            };
        known.extend(also.iter().map(|v| v.to_string()));
        known
    };
    if let Err(e) = crate::secrets::isolate(known) {
        eprintln!("warning: {e}; processes the agent starts may read the provider keys");
    }
}
