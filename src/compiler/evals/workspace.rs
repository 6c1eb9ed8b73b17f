//! `[workspace]`: the files a case starts from.

use std::path::{Path, PathBuf};

use super::checks::check_relative;
use super::scope::Agent;
use crate::compiler::diagnostic::{Diagnostic, code};
use crate::compiler::inputs::Loaded;
use crate::compiler::toml_reader::TableReader;
use crate::manifest::eval::Workspace;

pub(super) fn read_workspace(
    root: &mut TableReader<'_>,
    file: &Loaded,
    agent: &Agent<'_>,
) -> Option<Workspace> {
    let toml = root.file();
    let mut workspace = Workspace::default();
    let Some(mut table) = root.table("workspace") else {
        return Some(workspace);
    };
    let mut ok = true;
    if let Some(from) = table.string("from") {
        match resolve_from(&from.value, &file.path, agent) {
            Ok(path) => workspace.from = Some(path),
            Err(message) => {
                toml.report(
                    Diagnostic::error(code::EVAL_WORKSPACE, message)
                        .at(&toml.src, from.span.clone())
                        .note("`from` is a folder inside the agent directory, relative to this file's folder"),
                );
                ok = false;
            }
        }
    }
    if let Some(mut files) = table.table("files") {
        for (path, item) in files.entries() {
            let span = files.key_span(path);
            if let Err(why) = check_relative(path) {
                toml.report(
                    Diagnostic::error(
                        code::EVAL_WORKSPACE,
                        format!("workspace file `{path}` {why}"),
                    )
                    .at(&toml.src, span)
                    .note(
                        "workspace files are relative to the case's workspace and stay inside it",
                    ),
                );
                ok = false;
                continue;
            }
            match item.as_str() {
                Some(text) => {
                    workspace.files.insert(path.to_string(), text.to_string());
                }
                None => {
                    files.wrong_type(path, item, "a string (the file's contents)");
                    ok = false;
                }
            }
        }
        files.finish();
    }
    table.finish();
    ok.then_some(workspace)
}

/// The absolute path of a `from` folder: inside the agent directory, holding no link
/// that leads out of it.
fn resolve_from(from: &str, case_file: &str, agent: &Agent<'_>) -> Result<PathBuf, String> {
    let folder = Path::new(case_file).parent().unwrap_or(Path::new(""));
    let joined = agent.root.join(folder).join(from);
    let real = crate::compiler::cache::canonicalize(&joined)
        .map_err(|_| format!("workspace folder `{from}` does not exist"))?;
    if !real.starts_with(agent.boundary) {
        return Err(format!(
            "workspace folder `{from}` is outside the agent directory"
        ));
    }
    if !crate::compiler::cache::is_dir(&real) {
        return Err(format!("workspace folder `{from}` is not a folder"));
    }
    // Each entry recorded: a link added inside shows as a change of its folder.
    for entry in crate::compiler::cache::walk(&real) {
        let Ok(entry) = entry else { continue };
        if entry.path_is_symlink() {
            let leads_in = crate::compiler::cache::canonicalize(entry.path())
                .is_ok_and(|target| target.starts_with(&real));
            if !leads_in {
                let inner = entry.path().strip_prefix(&real).unwrap_or(entry.path());
                return Err(format!(
                    "workspace folder `{from}` holds `{}`, a symbolic link that leads out of it",
                    crate::compiler::inputs::slash_path(inner)
                ));
            }
        }
    }
    Ok(real)
}
