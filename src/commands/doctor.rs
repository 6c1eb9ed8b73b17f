//! `eve doctor`: what this machine supports, and what it will enforce for an agent.

use std::process::ExitCode;

use crate::cli::DoctorArgs;
use crate::compiler;
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
    match crate::sandbox::for_session(&manifest, &agent_dir, &workspace, None, false, &support) {
        Ok((None, _)) => println!("  not enforced: the sandbox is off (mode = \"off\")"),
        Ok((Some(sandbox), _)) => {
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
    Ok(ExitCode::SUCCESS)
}
