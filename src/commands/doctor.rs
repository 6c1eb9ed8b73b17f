//! `eve doctor`: what this machine supports, and what it will enforce for an agent.

use std::path::Path;
use std::process::ExitCode;

use crate::cli::DoctorArgs;
use crate::compiler;
use crate::console::escape::for_terminal;
use crate::manifest::diff::describe_sandbox;
use crate::runner;
use crate::sandbox::Support;

pub fn run(args: &DoctorArgs) -> anyhow::Result<ExitCode> {
    let support = Support::detect();
    println!("this machine:");
    for line in support.describe() {
        println!("  {line}");
    }
    if !args.dir.join("agent.toml").is_file() {
        return Ok(ExitCode::SUCCESS);
    }
    let build = compiler::compile(&args.dir, &crate::tools::builtin::CATALOG);
    let Some(manifest) = build.manifest else {
        eprintln!(
            "error: `{}` does not build: run `eve build` to see why",
            args.dir.display()
        );
        return Ok(ExitCode::FAILURE);
    };
    let agent_dir = args.dir.canonicalize()?;
    println!("agent `{}`:", manifest.agent.name);
    println!("  [sandbox] {}", describe_sandbox(&manifest.agent.sandbox));
    let workspace = match runner::workspace(&manifest, args.workspace.as_deref()) {
        Ok(workspace) => workspace,
        Err(e) => {
            println!("  workspace: {e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    println!("  workspace: {}", workspace.display());
    let mut ready = models(&manifest, &agent_dir, args.model.as_deref());
    let recipe = sandbox(&manifest, &agent_dir, &workspace, &support);
    ready &= programs(&manifest, &agent_dir, &workspace, recipe.as_ref());
    Ok(if ready {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What the sandbox of a session here enforces, one line each; its recipe, if any.
fn sandbox(
    manifest: &crate::manifest::Manifest,
    agent_dir: &Path,
    workspace: &Path,
    support: &Support,
) -> Option<crate::sandbox::Recipe> {
    let mut recipe = None;
    match crate::sandbox::for_session(manifest, agent_dir, workspace, None, false, support) {
        Ok((None, _)) => println!("  not enforced: the sandbox is off (mode = \"off\")"),
        Ok((Some(sandbox), _)) => {
            recipe = sandbox.recipe.clone();
            let enforced = &sandbox.enforced;
            let mut parts = Vec::new();
            if enforced.files {
                parts.push(match manifest.agent.sandbox.mode {
                    crate::manifest::SandboxMode::ReadOnly => "no writes".to_string(),
                    _ => format!(
                        "writes only in the workspace, $TMPDIR{}",
                        if sandbox.policy.writable.len() > 2 {
                            " and the `writable` folders"
                        } else {
                            ""
                        }
                    ),
                });
            }
            if enforced.read_only_paths && !sandbox.policy.read_only.is_empty() {
                parts.push(format!(
                    "{} read-only inside the workspace (the agent's .eve, its definition, the git directory)",
                    sandbox.policy.read_only.len()
                ));
            }
            if !sandbox.policy.network && enforced.network {
                parts.push("no IP sockets".into());
            }
            if enforced.missing.is_empty() {
                println!("  enforced: {}", parts.join("; "));
            } else {
                if !parts.is_empty() {
                    println!("  enforced: {}", parts.join("; "));
                }
                println!("  not enforced: {}", enforced.missing.join("; "));
                if let Some(why) = &sandbox.withheld {
                    println!("  bash and command tools are not offered: {why}");
                }
            }
        }
        Err(e) => println!("  sandbox: {e}"),
    }
    recipe
}

/// Whether the model (and the compaction model) can be used here: its provider known,
/// its key set, a scripted file readable. Prints one line each; nothing is sent.
fn models(manifest: &crate::manifest::Manifest, agent_dir: &Path, chosen: Option<&str>) -> bool {
    let base = match chosen {
        Some(_) => std::env::current_dir().unwrap_or_else(|_| agent_dir.to_path_buf()),
        None => agent_dir.to_path_buf(),
    };
    let main = chosen.unwrap_or(&manifest.agent.model);
    let mut checks = vec![("model", main.to_string(), base.clone())];
    if let Some(compaction) = &manifest.agent.compaction.model {
        checks.push((
            "compaction model",
            compaction.clone(),
            agent_dir.to_path_buf(),
        ));
    }
    let mut ready = true;
    for (what, reference, base) in checks {
        let shown = for_terminal(&reference);
        match crate::providers::resolve(
            &reference,
            &manifest.agent.providers,
            &base,
            &crate::secrets::var,
        ) {
            Ok(_) => println!("  {what} `{shown}`: ready"),
            Err(e) => {
                ready = false;
                println!("  {what} `{shown}`: {}", for_terminal(&e));
            }
        }
    }
    ready
}

/// Whether each stdio connection's program is installed where eve would start it from
/// (the connection's own start-up plan, so never a folder the model may write). Prints one
/// line a connection; nothing starts.
fn programs(
    manifest: &crate::manifest::Manifest,
    agent_dir: &Path,
    workspace: &Path,
    recipe: Option<&crate::sandbox::Recipe>,
) -> bool {
    let read = |name: &str| crate::secrets::var(name);
    let mut ready = true;
    for connection in &manifest.connections {
        let name = for_terminal(&connection.name);
        let place = crate::connections::client::Place {
            agent_dir,
            workspace,
            read: &read,
            sandbox: recipe,
        };
        match crate::connections::client::program(connection, place) {
            None => println!("  connection `{name}`: over HTTP (reached when a turn starts)"),
            Some(Ok(found)) => println!("  connection `{name}`: starts {}", for_terminal(&found)),
            Some(Err(e)) => {
                ready = false;
                let required = if connection.required {
                    " (required: sessions will not start)"
                } else {
                    ""
                };
                println!("  connection `{name}`: {}{required}", for_terminal(&e));
            }
        }
    }
    ready
}
