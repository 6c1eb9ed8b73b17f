//! The `eve` binary: parse arguments, dispatch, turn the outcome into an exit code.
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = eve::cli::Cli::parse();
    match eve::commands::dispatch(cli) {
        Ok(code) => code,
        Err(err) => {
            // The error may quote foreign text (a file name, a server's answer).
            eprintln!("error: {}", eve::text::for_terminal(&format!("{err:#}")));
            ExitCode::FAILURE
        }
    }
}
