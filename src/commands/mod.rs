//! Thin orchestration for each subcommand.
// This module writes to the terminal (see `src/lib.rs`).
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod build;
mod connections;
mod dev;
mod doctor;
mod eval;
mod import;
mod init;
mod out;
mod run;
mod schema;
mod serve;
mod sessions;

use std::process::ExitCode;

use crate::cli::{Cli, Command};

/// Runs a parsed command line and returns the process exit code.
pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let result = dispatch_command(cli);
    // What the sessions exported is sent before eve exits (a short deadline at most).
    if let Some(line) = crate::telemetry::shutdown() {
        eprintln!("warning: {line}");
    }
    result
}

fn dispatch_command(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Init(args) => init::run(&args),
        Command::Build(args) => build::run(&args),
        Command::Run(args) => {
            let built = isolate_secrets(&run::split_positionals(&args).0, &[]);
            run::run(&args, built)
        }
        Command::Sessions(args) => sessions::run(&args),
        Command::Doctor(args) => doctor::run(&args),
        Command::Completions(args) => {
            use clap::CommandFactory;
            // Into memory first: the generator panics on a closed pipe (`| head`).
            let mut script = Vec::new();
            clap_complete::generate(args.shell, &mut Cli::command(), "eve", &mut script);
            out::print_all(&script)
        }
        Command::Man => {
            use clap::CommandFactory;
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page)?;
            out::print_all(&page)
        }
        Command::Schema(args) => schema::run(&args),
        Command::Dev(args) => {
            isolate_secrets(&args.dir, &[]);
            dev::run(&args)
        }
        Command::Eval(args) => {
            let args = eval::split_positionals(args);
            isolate_secrets(&args.dir, &[]);
            eval::run(&args)
        }
        Command::Connections(args) => connections::run(&args),
        Command::Import(args) => import::run(&args),
        Command::Serve(args) => {
            isolate_secrets(&args.dir, &[crate::serve::TOKEN_VAR]);
            serve::run(&args)
        }
    }
}

/// Before a command that runs tools: the provider keys of the agent in `dir` leave eve's
/// environment (see [`crate::secrets`]), with the variables in `also`. Returns the build
/// made to learn their names, if one was made (it starts no server: a connection
/// without a listing leaves it unsettled, never cached).
fn isolate_secrets(dir: &std::path::Path, also: &[&str]) -> Option<crate::compiler::Build> {
    let mut built = None;
    // The variables connections read with `${VAR}` are secrets too.
    let known = || {
        let build = crate::compiler::build(
            dir,
            &crate::tools::builtin::CATALOG,
            crate::compiler::listing::Options::default(),
        );
        let mut known = match &build.manifest {
            Some(manifest) => {
                let mut known = crate::providers::key_variables(manifest);
                known.extend(crate::connections::variables(manifest));
                known
            }
            None => crate::providers::key_variables_builtin(),
        };
        known.extend(also.iter().map(|v| v.to_string()));
        built = Some(build);
        known
    };
    if let Err(e) = crate::secrets::isolate(known) {
        eprintln!("warning: {e}; processes the agent starts may read the provider keys");
    }
    built
}
