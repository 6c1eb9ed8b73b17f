//! The sandbox of one session: the agent's `[sandbox]` settings, the command line's
//! overrides, and the paths inside the workspace that must stay read-only.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{Policy, Sandbox, Support};
use crate::manifest::{Manifest, Sandbox as SandboxSettings, SandboxMode};

/// The sandbox of a session: `[sandbox]` with the command line's overrides, the agent's
/// `.eve/` (and its definition, unless it may change it) and the workspace's git config
/// and hooks kept read-only. Returns `None` for `mode = "off"`, and the line that says
/// what this machine cannot enforce (with `require = true` the tools that start
/// processes are withheld instead).
pub fn for_session(
    manifest: &Manifest,
    agent_dir: &Path,
    workspace: &Path,
    mode: Option<SandboxMode>,
    no_network: bool,
    support: &Support,
) -> Result<(Option<Arc<Sandbox>>, Vec<String>), String> {
    Recipe::of(manifest, agent_dir, workspace, mode, no_network).prepare(&[], support)
}

/// The definition's folders a first file may appear in, which eve creates empty (and
/// so keeps read-only) when they are missing and a process could otherwise make them.
/// An empty folder is the same definition as none (the same inputs hash), and git does
/// not track empty folders. `instructions/` is left out: beside `instructions.md` it
/// makes the build fail, which the review records and nothing runs.
const FIRST_FOLDERS: &[&str] = &["tools", "skills", "subagents", "connections", "evals"];

/// Everything a sandbox is made from, kept so that more can be made like it: each MCP
/// server gets its own, with its private cache folder writable besides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipe {
    /// `[sandbox]` with the command line's overrides applied.
    pub settings: SandboxSettings,
    /// `[workspace] agent_writable`: the definition is not kept read-only.
    pub agent_writable: bool,
    pub agent_dir: PathBuf,
    pub workspace: PathBuf,
    /// Entries of the agent directory its commands run (`servers`): part of its
    /// definition, kept read-only with it.
    pub definition: Vec<String>,
}

impl Recipe {
    /// The recipe of a session of `manifest` (see [`Recipe::new`]), its commands' files
    /// part of the definition.
    pub fn of(
        manifest: &Manifest,
        agent_dir: &Path,
        workspace: &Path,
        mode: Option<SandboxMode>,
        no_network: bool,
    ) -> Recipe {
        let mut recipe = Recipe::new(
            &manifest.agent.sandbox,
            manifest.agent.workspace.agent_writable,
            agent_dir,
            workspace,
            mode,
            no_network,
        );
        recipe.definition = manifest.definition_entries();
        recipe
    }

    /// The recipe of `settings` for an agent in `agent_dir` working in `workspace`,
    /// with `--sandbox` (`mode`) and `--no-network` applied.
    pub fn new(
        settings: &SandboxSettings,
        agent_writable: bool,
        agent_dir: &Path,
        workspace: &Path,
        mode: Option<SandboxMode>,
        no_network: bool,
    ) -> Recipe {
        let mut settings = settings.clone();
        settings.mode = mode.unwrap_or(settings.mode);
        settings.network &= !no_network;
        Recipe {
            settings,
            agent_writable,
            agent_dir: agent_dir.to_path_buf(),
            workspace: workspace.to_path_buf(),
            definition: Vec::new(),
        }
    }

    /// Where the model's processes may have written, whatever this session's mode: the
    /// workspace and the `[sandbox] writable` folders. Programs are never looked up in
    /// them ([`super::program::resolve`]).
    pub fn writable_folders(&self) -> Vec<PathBuf> {
        std::iter::once(self.workspace.clone())
            .chain(
                self.settings
                    .writable
                    .iter()
                    .map(|w| self.workspace.join(w)),
            )
            .collect()
    }

    /// Prepares a sandbox with `extra` folders writable besides the usual ones (absolute,
    /// existing). `None` for `mode = "off"`.
    pub fn prepare(
        &self,
        extra: &[PathBuf],
        support: &Support,
    ) -> Result<(Option<Arc<Sandbox>>, Vec<String>), String> {
        let settings = &self.settings;
        let mode = settings.mode;
        if mode == SandboxMode::Off {
            return Ok((None, Vec::new()));
        }
        let mut writable = Vec::new();
        for folder in &settings.writable {
            let path = self.workspace.join(folder);
            let real = path
                .canonicalize()
                .map_err(|e| format!("`[sandbox] writable` folder `{}`: {e}", path.display()))?;
            writable.push(real);
        }
        let git_writable = writable
            .iter()
            .any(|w| w.starts_with(self.workspace.join(".git")));
        writable.extend(extra.iter().cloned());
        let protected = self.protected(mode, &writable, git_writable);
        let temp = super::temp_folder();
        let policy = Policy::new(
            mode,
            settings.network,
            &self.workspace,
            &temp,
            &writable,
            &protected,
        );
        let mut sandbox = Sandbox::prepare(&policy, temp, settings.require, support);
        sandbox.recipe = Some(self.clone());
        let warnings = sandbox.warnings();
        Ok((Some(Arc::new(sandbox)), warnings))
    }

    /// What stays read-only wherever it lies beneath the `writable` folders: the agent's
    /// `.eve/`; its definition (the fixed entries and the files its commands run) unless
    /// the author lets the agent change it; and what git reads as configuration or runs
    /// ([`super::git::protected`]). A first folder of the definition that a process
    /// could create is created empty first, so that it is kept read-only too.
    fn protected(
        &self,
        mode: SandboxMode,
        writable: &[PathBuf],
        git_writable: bool,
    ) -> Vec<PathBuf> {
        let agent_dir = &self.agent_dir;
        let mut protected = vec![agent_dir.join(crate::manifest::STATE_DIR)];
        if !self.agent_writable {
            let inside = mode == SandboxMode::WorkspaceWrite
                && std::iter::once(&self.workspace)
                    .chain(writable)
                    .any(|w| agent_dir.starts_with(w));
            if inside {
                for folder in FIRST_FOLDERS {
                    let path = agent_dir.join(folder);
                    if std::fs::symlink_metadata(&path).is_err() {
                        // Best effort: one that cannot be made is recorded by the review.
                        let _ = std::fs::create_dir(&path);
                    }
                }
            }
            protected.extend(
                crate::manifest::DEFINITION_ENTRIES
                    .iter()
                    .copied()
                    .chain(self.definition.iter().map(String::as_str))
                    .map(|entry| agent_dir.join(entry)),
            );
        }
        protected.extend(super::git::protected(&self.workspace, git_writable));
        protected
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::manifest::Manifest;

    fn agent(sandbox: &str) -> (tempfile::TempDir, Manifest) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(
            tmp.path().join("agent.toml"),
            format!("model = \"openai/gpt-4.1\"\n{sandbox}"),
        )
        .unwrap();
        std::fs::write(tmp.path().join("instructions.md"), "Hi.").unwrap();
        let manifest = crate::compiler::compile(tmp.path(), &crate::tools::builtin::CATALOG)
            .manifest
            .unwrap();
        (tmp, manifest)
    }

    #[test]
    fn without_the_kernels_help_eve_warns_once_or_withholds_the_process_tools() {
        let (tmp, manifest) = agent("");
        let (sandbox, warnings) = for_session(
            &manifest,
            tmp.path(),
            tmp.path(),
            None,
            false,
            &Support::NONE,
        )
        .unwrap();
        let sandbox = sandbox.unwrap();
        assert_eq!(sandbox.withheld, None);
        assert_eq!(warnings.len(), 1);
        assert!(warnings[0].starts_with("the sandbox (workspace-write) is only partly enforced on this machine: it lacks Landlock"), "{}", warnings[0]);

        let (tmp, manifest) = agent("[sandbox]\nrequire = true\n");
        let (sandbox, warnings) = for_session(
            &manifest,
            tmp.path(),
            tmp.path(),
            None,
            false,
            &Support::NONE,
        )
        .unwrap();
        assert!(warnings.is_empty());
        let reason = sandbox.unwrap().withheld.clone().unwrap();
        assert!(
            reason.starts_with(
                "`[sandbox] require = true`, and this machine cannot confine processes"
            ),
            "{reason}"
        );
        let registry = crate::tools::Registry::for_provider(
            &std::sync::Arc::new(manifest.clone()),
            false,
            true,
            Some(&reason),
        );
        assert!(!registry.names().contains(&"bash".to_string()));
        let bash = registry
            .unavailable()
            .iter()
            .find(|u| u.name == "bash")
            .unwrap();
        assert_eq!(bash.reason, reason);
        assert!(registry.names().contains(&"read_file".to_string()));
    }

    #[test]
    fn the_git_directory_and_the_definitions_first_folders_stay_read_only() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().canonicalize().unwrap();
        std::fs::create_dir_all(ws.join(".git/objects")).unwrap();
        std::fs::write(ws.join(".git/config"), "[core]\n").unwrap();
        let agent_dir = ws.join("agent");
        std::fs::create_dir_all(agent_dir.join("servers")).unwrap();
        let read_only = |writable: &[&str]| {
            let settings = SandboxSettings {
                writable: writable.iter().map(|w| w.to_string()).collect(),
                ..SandboxSettings::default()
            };
            let mut recipe = Recipe::new(&settings, false, &agent_dir, &ws, None, false);
            recipe.definition = vec!["servers".into()];
            let (sandbox, _) = recipe.prepare(&[], &Support::NONE).unwrap();
            sandbox.unwrap().policy.read_only.clone()
        };
        let all = read_only(&[]);
        assert!(all.contains(&ws.join(".git")), "{all:?}");
        assert!(
            !all.contains(&ws.join(".git/config")),
            "inside `.git` already"
        );
        assert!(all.contains(&agent_dir.join("servers")), "{all:?}");
        // The folders a first tool or connection would go in exist now, read-only.
        for folder in FIRST_FOLDERS {
            assert!(agent_dir.join(folder).is_dir(), "{folder}");
            assert!(all.contains(&agent_dir.join(folder)), "{folder}");
        }
        assert!(!agent_dir.join("instructions").exists());
        // The author made `.git` writable: its configuration stays read-only.
        let opted = read_only(&[".git"]);
        assert!(!opted.contains(&ws.join(".git")), "{opted:?}");
        assert!(opted.contains(&ws.join(".git/config")), "{opted:?}");
    }

    #[test]
    fn mode_off_needs_no_kernel_support() {
        let (tmp, manifest) = agent("[sandbox]\nmode = \"off\"\nrequire = true\n");
        let (sandbox, warnings) = for_session(
            &manifest,
            tmp.path(),
            tmp.path(),
            None,
            false,
            &Support::NONE,
        )
        .unwrap();
        assert!(sandbox.is_none() && warnings.is_empty());
    }
}
