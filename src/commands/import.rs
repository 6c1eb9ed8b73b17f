//! `eve import claude`: plan the import, write it, print the report, check the result
//! builds.

use super::out;
use std::process::ExitCode;

use crate::cli::{ImportArgs, ImportFrom};
use crate::compiler::{self, render};

pub fn run(args: &ImportArgs) -> anyhow::Result<ExitCode> {
    let ImportFrom::Claude(args) = &args.from;
    if !args.path.exists() {
        eprintln!("error: `{}` does not exist", args.path.display());
        return Ok(ExitCode::from(out::USAGE));
    }
    let options = crate::import::Options {
        plugin: args.plugin.clone(),
    };
    let plan = match crate::import::plan(&args.path, &options) {
        Ok(plan) => plan,
        Err(e) => {
            eprintln!("error: {e:#}");
            // A marketplace whose plugin is not picked: the command needs `--plugin`.
            let pick = e
                .downcast_ref::<crate::import::marketplace::Pick>()
                .is_some();
            return Ok(ExitCode::from(if pick { out::USAGE } else { 1 }));
        }
    };
    let into = args
        .into
        .clone()
        .unwrap_or_else(|| crate::import::default_into(&plan));
    let report = match crate::import::write(plan, &into, args.force) {
        Ok(report) => report,
        Err(e) => {
            eprintln!("error: {e:#}");
            return Ok(ExitCode::FAILURE);
        }
    };
    out(&report.render());
    let (changed, dropped) = report.counts();
    // Like `eve init`, check the output by building it (no server starts: that is
    // `eve build`'s to do, with the variables set).
    let shown = into.display().to_string();
    let build = compiler::compile(&into, &crate::tools::builtin::CATALOG);
    if build.diagnostics.has_errors() || build.manifest.is_none() {
        eprint!(
            "{}",
            render::human_report(build.diagnostics.iter(), &shown, false, false)
        );
        eprintln!(
            "error: the imported agent does not build yet: {} (above)",
            build.diagnostics.error_count()
        );
        return Ok(ExitCode::FAILURE);
    }
    out(&format!(
        "{changed} changed, {dropped} dropped; it builds: next, `eve build {}`\n",
        crate::text::shell_word(&shown)
    ));
    Ok(ExitCode::SUCCESS)
}

/// Prints on stdout; a closed pipe (`| head`) just ends the output.
fn out(text: &str) {
    use std::io::Write as _;
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
}
