//! `eve dev`: hand the options to the interactive loop.

use super::out;
use std::process::ExitCode;
use std::time::Duration;

use crate::cli::DevArgs;
use crate::dev::{self, DevOptions};

pub fn run(args: &DevArgs) -> anyhow::Result<ExitCode> {
    if !args.dir.is_dir() {
        eprintln!("error: `{}` is not a folder", args.dir.display());
        return Ok(ExitCode::from(out::USAGE));
    }
    let code = dev::run(DevOptions {
        dir: args.dir.clone(),
        model: args.model.clone(),
        resume: args.r#continue,
        debounce: Duration::from_millis(args.debounce),
        verbose: args.verbose,
        hide_reasoning: args.hide_reasoning,
    })?;
    Ok(ExitCode::from(code))
}
