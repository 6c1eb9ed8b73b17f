//! `eve import claude`: Claude Code's files — a plugin folder, a plugin of a
//! marketplace, a project's `.claude/`, a folder of agent files, or one agent file —
//! turned into an eve agent directory, with a report of every field dropped or
//! changed. Everything is read first (as hostile input, beneath the imported folder)
//! into a [`tree::Tree`] held in memory, and written only when the whole import is
//! known, beneath the destination.

pub mod agent_file;
pub mod command;
pub mod copy;
pub mod frontmatter;
pub mod hooks;
pub mod literal;
pub mod marketplace;
pub mod mcp;
pub mod model;
pub mod planner;
pub mod report;
pub mod server_copy;
pub mod server_files;
pub mod skills;
pub mod slug;
pub mod source;
pub mod tool_names;
pub mod tree;

use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};

pub use planner::{Options, Plan, plan};
use report::Report;

/// The destination a plan is written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Destination {
    /// Absent or empty: a new agent.
    New,
    /// Not empty, and `--force` given: files written are replaced; an agent directory
    /// that exists (it has `agent.toml`) keeps its own `agent.toml` and instructions.
    Into { existing_agent: bool },
}

/// Where the plan goes: refuses a folder that is not empty unless `force`.
pub fn destination(into: &Path, force: bool) -> anyhow::Result<Destination> {
    match std::fs::symlink_metadata(into) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Destination::New),
        Err(e) => Err(e).with_context(|| format!("cannot look at `{}`", into.display())),
        Ok(_) if !into.is_dir() => bail!("`{}` exists and is not a folder", into.display()),
        Ok(_) => {
            let empty = std::fs::read_dir(into)
                .with_context(|| format!("cannot list `{}`", into.display()))?
                .next()
                .is_none();
            if empty {
                Ok(Destination::New)
            } else if force {
                Ok(Destination::Into {
                    existing_agent: into.join("agent.toml").exists(),
                })
            } else {
                bail!(
                    "`{}` is not empty\n  = help: pass `--force` to write into it: files the import writes are replaced, and an agent directory keeps its own `agent.toml` and instructions",
                    into.display()
                )
            }
        }
    }
}

/// Writes `plan` into `into` (see [`destination`]), and returns the report.
pub fn write(plan: Plan, into: &Path, force: bool) -> anyhow::Result<Report> {
    let Plan {
        mut tree,
        mut report,
        top,
        ..
    } = plan;
    let destination = destination(into, force)?;
    if destination
        == (Destination::Into {
            existing_agent: true,
        })
    {
        report.check.retain(|c| !c.starts_with("`instructions.md`"));
        report.check.insert(
            0,
            "the agent's own `agent.toml` and instructions are kept: tell it about its new skills and subagents".into(),
        );
    } else {
        for (path, contents) in top.files() {
            tree.add(path, contents)?;
        }
        report.items.insert(
            0,
            report::Item {
                written: "agent.toml, instructions.md".into(),
                from: "written by the import".into(),
                notes: Vec::new(),
            },
        );
    }
    std::fs::create_dir_all(into).with_context(|| format!("cannot create `{}`", into.display()))?;
    report.replaced = tree.existing(into)?;
    tree.write(into, force)?;
    report.into = into.display().to_string();
    report.root = std::fs::canonicalize(into)
        .unwrap_or_else(|_| into.to_path_buf())
        .display()
        .to_string();
    Ok(report)
}

/// Where an import goes when the person does not say: `./<name>`.
pub fn default_into(plan: &Plan) -> PathBuf {
    PathBuf::from(&plan.name)
}
