//! `eve schema`: print the JSON Schema of a kind of file, or write them all.

use super::out;
use std::process::ExitCode;

use anyhow::Context as _;

use crate::cli::{SchemaArgs, SchemaKind};
use crate::compiler::schema::{self, Schema};
use crate::tools::builtin::CATALOG;

pub fn run(args: &SchemaArgs) -> anyhow::Result<ExitCode> {
    if let Some(dir) = &args.write {
        schema::write_all(dir, &CATALOG)
            .with_context(|| format!("cannot write the schemas into `{}`", dir.display()))?;
        eprintln!(
            "wrote {} schemas into {}",
            Schema::all(&CATALOG).len(),
            dir.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    let schema = match (args.kind, args.tool.as_deref()) {
        (None, _) => return usage("name a kind of file, or pass `--write DIR`"),
        (Some(SchemaKind::Tool), Some(name)) => match CATALOG.find(name) {
            Some(tool) => Schema::Builtin(tool),
            None => {
                let names: Vec<&str> = CATALOG.names().collect();
                let hint = match crate::suggest::closest(name, names.iter().copied()) {
                    Some(near) => format!("did you mean `{near}`?"),
                    None => "without a name, `eve schema tool` prints the schema of a new tool"
                        .to_string(),
                };
                return usage(&format!(
                    "`{name}` is not a built-in tool\n  = note: built-in tools: {}\n  = help: {hint}",
                    names.join(", ")
                ));
            }
        },
        (Some(_), Some(name)) => {
            return usage(&format!(
                "`{name}`: only `eve schema tool` takes a tool name"
            ));
        }
        (Some(kind), None) => match kind {
            SchemaKind::Agent => Schema::Agent,
            SchemaKind::Tool => Schema::Tool,
            SchemaKind::ConnectionTool => Schema::ConnectionTool,
            SchemaKind::Connection => Schema::Connection,
            SchemaKind::Eval => Schema::Eval,
            SchemaKind::Skill => Schema::Skill,
            SchemaKind::Hook => Schema::Hook,
        },
    };
    out::print_all(schema.text().as_bytes())
}

fn usage(problem: &str) -> anyhow::Result<ExitCode> {
    eprintln!("error: {problem}");
    Ok(ExitCode::from(out::USAGE))
}
