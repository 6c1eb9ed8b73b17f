//! `eve connections`: start each MCP server of an agent and show its tools.

use super::out;
use std::process::ExitCode;

use crate::cli::ConnectionsArgs;
use crate::compiler::render;

pub fn run(args: &ConnectionsArgs) -> anyhow::Result<ExitCode> {
    let base = args.dir.to_string_lossy().into_owned();
    if !args.dir.is_dir() {
        eprintln!("error: `{base}` is not a folder");
        return Ok(ExitCode::from(out::USAGE));
    }
    let report = crate::connections::report::report(&args.dir);
    if let Some(held) = &report.held {
        eprintln!("error: {}", crate::review::describe(held, &base));
        return Ok(ExitCode::from(out::USAGE));
    }
    eprint!(
        "{}",
        render::human_report(report.build.diagnostics.iter(), &base, false, false)
    );
    print!("{}", report.text());
    Ok(if report.ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
