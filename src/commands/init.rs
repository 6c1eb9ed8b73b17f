//! `eve init`: write a working agent directory from the embedded templates.

use super::out;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::InitArgs;
use crate::compiler::schema::{self, Schema};
use crate::compiler::{self, render};
use crate::manifest::model::ModelRef;
use crate::tools::builtin::CATALOG;

/// The files `eve init` writes: path in the agent directory, template text.
const TEMPLATES: &[(&str, &str)] = &[
    ("agent.toml", include_str!("../../templates/agent.toml")),
    (
        "instructions.md",
        include_str!("../../templates/instructions.md"),
    ),
    (
        "skills/summarize-folder.md",
        include_str!("../../templates/skills/summarize-folder.md"),
    ),
    (
        "tools/bash.toml",
        include_str!("../../templates/tools/bash.toml"),
    ),
    (
        "evals/summarize-folder.toml",
        include_str!("../../templates/evals/summarize-folder.toml"),
    ),
    (
        "hooks/no-force-push.toml",
        include_str!("../../templates/hooks/no-force-push.toml"),
    ),
    (".gitignore", include_str!("../../templates/gitignore")),
];

pub fn run(args: &InitArgs) -> anyhow::Result<ExitCode> {
    let dir = &args.dir;
    let shown = dir.to_string_lossy().into_owned();
    if let Err(problem) = check_model(&args.model) {
        eprintln!("error: {problem}");
        return Ok(ExitCode::from(out::USAGE));
    }
    if dir.exists() && !dir.is_dir() {
        eprintln!("error: `{shown}` exists and is not a folder");
        return Ok(ExitCode::from(out::USAGE));
    }
    if !args.force && !is_empty(dir)? {
        eprintln!(
            "error: `{shown}` is not empty\n  = help: pass `--force` to write the agent's files into it anyway"
        );
        return Ok(ExitCode::from(out::USAGE));
    }
    let schema_files: Vec<String> = Schema::all(&CATALOG)
        .iter()
        .map(|s| format!("{}/{}", schema::AGENT_SCHEMAS_DIR, s.file()))
        .collect();
    let written = TEMPLATES
        .iter()
        .map(|(path, _)| *path)
        .chain(schema_files.iter().map(String::as_str));
    if let Some(link) = first_link(dir, written) {
        eprintln!(
            "error: `{}` is a symbolic link\n  = note: `eve init` does not write through links: one could lead it to overwrite a file outside `{shown}`\n  = help: remove the link, or pass another folder",
            render::join_path(&shown, &link)
        );
        return Ok(ExitCode::from(out::USAGE));
    }
    let name = crate::compiler::agent_name(dir);
    write_files(dir, &name, args.model.trim())?;

    // Like mdBook's init, check our own output by building it.
    let build = compiler::compile(dir, &CATALOG);
    if !build.diagnostics.is_empty() {
        eprint!(
            "{}",
            render::human_report(build.diagnostics.iter(), &shown, false, false)
        );
        return Ok(ExitCode::FAILURE);
    }
    print_created(&name, &shown);
    Ok(ExitCode::SUCCESS)
}

/// The templates rendered into `dir`, and the JSON Schemas beside them.
fn write_files(dir: &std::path::Path, name: &str, model: &str) -> anyhow::Result<()> {
    let env = minijinja::Environment::new();
    let context = minijinja::context! { name => name, model => model };
    // Editors that read `#:schema` (taplo, Even Better TOML) find the schemas offline.
    let schemas = dir.join(schema::AGENT_SCHEMAS_DIR);
    schema::write_all(&schemas, &CATALOG)
        .with_context(|| format!("cannot write the schemas into `{}`", schemas.display()))?;
    for (path, template) in TEMPLATES {
        let mut text = env
            .render_str(template, &context)
            .with_context(|| format!("cannot render the template for `{path}`"))?;
        text.push('\n');
        if path.ends_with(".toml")
            && let Some(schema) = Schema::for_file(path, &CATALOG, &[])
        {
            text = format!("{}\n{text}", schema::directive(path, &schema));
        }
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .with_context(|| format!("cannot create `{}`", parent.display()))?;
        }
        std::fs::write(&target, text)
            .with_context(|| format!("cannot write `{}`", target.display()))?;
    }

    Ok(())
}

/// What was made, and the commands to try next.
fn print_created(name: &str, shown: &str) {
    eprintln!("created agent `{name}` in {shown}");
    for (path, _) in TEMPLATES {
        eprintln!("  {}", render::join_path(shown, path));
    }
    eprintln!(
        "  {}/   JSON Schemas for editors (docs/editors.md)",
        render::join_path(shown, schema::AGENT_SCHEMAS_DIR)
    );
    let arg = if shown == "." {
        String::new()
    } else {
        format!(" {}", crate::text::shell_word(shown))
    };
    eprintln!(
        "\nnext:\n  eve run{arg} \"…\"   # one task (set the model's API key first)\n  eve dev{arg}       # talk to it while you edit its files\n  eve eval{arg}      # run its eval cases (offline: the model is scripted)"
    );
}

fn check_model(model: &str) -> Result<(), String> {
    let parsed = ModelRef::parse_hinted(model)?;
    match parsed.provider() {
        "anthropic" | "openai" | "scripted" => Ok(()),
        other => Err(format!(
            "unknown provider `{other}` in `--model {model}`\n  = help: use `anthropic/…` or `openai/…` here, then declare other providers in agent.toml's `[providers.NAME]`"
        )),
    }
}

/// The first of `paths` (`/`-separated, below `dir`) that is a symbolic link or passes
/// through one. With `--force` the folder may be a checkout of someone else's, and
/// `std::fs::write` follows links.
fn first_link<'p>(dir: &Path, paths: impl IntoIterator<Item = &'p str>) -> Option<String> {
    for path in paths {
        let mut prefix = String::new();
        for part in path.split('/') {
            if !prefix.is_empty() {
                prefix.push('/');
            }
            prefix.push_str(part);
            if std::fs::symlink_metadata(dir.join(&prefix)).is_ok_and(|m| m.is_symlink()) {
                return Some(prefix);
            }
        }
    }
    None
}

fn is_empty(dir: &Path) -> anyhow::Result<bool> {
    if !dir.exists() {
        return Ok(true);
    }
    let mut entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read `{}`", dir.display()))?;
    Ok(entries.all(|e| e.is_ok_and(|e| e.file_name() == ".git")))
}
