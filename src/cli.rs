//! Command-line definitions (clap).

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Build and run AI agents declared as a directory of files.
#[derive(Debug, Parser)]
#[command(name = "eve", version, about, propagate_version = true)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create a new agent directory that builds and runs as it is
    Init(InitArgs),
    /// Compile an agent directory into .eve/manifest.json, reporting every mistake
    Build(BuildArgs),
}

/// Arguments of `eve init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// The folder to create (default: the current folder); its name becomes the agent's name
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// The model, as provider/model-id
    #[arg(long, short, default_value = crate::compiler::config::DEFAULT_MODEL)]
    pub model: String,
    /// Write into a folder that is not empty, replacing files eve writes
    #[arg(long)]
    pub force: bool,
}

/// Arguments of `eve build`.
#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// The agent directory
    #[arg(default_value = ".")]
    pub dir: PathBuf,
    /// How to print diagnostics
    #[arg(long, value_enum, default_value_t = Format::Human)]
    pub format: Format,
}

/// Output format of diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Compiler-style messages on stderr
    Human,
    /// A JSON array on stdout, for editors and scripts
    Json,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
