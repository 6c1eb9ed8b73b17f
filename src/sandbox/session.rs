//! The sandbox of one session: the agent's `[sandbox]` settings, the command line's
//! overrides, and the paths inside the workspace that must stay read-only ([`Recipe`]);
//! the [`Sandbox`] prepared from them, and [`spawn`], the one door its processes start
//! through.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use super::{Child, Command, Enforced, Launcher, Policy, Support, linux};
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
const FIRST_FOLDERS: &[&str] = &[
    "tools",
    "skills",
    "subagents",
    "connections",
    "hooks",
    "evals",
];

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
    /// Where its skills linked from outside the agent directory lead: part of its
    /// definition too ([`Manifest::linked_skills`]).
    pub linked: Vec<PathBuf>,
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
        recipe.linked = manifest.linked_skills();
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
            linked: Vec::new(),
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
        let temp = temp_folder();
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
                    .map(|entry| agent_dir.join(entry))
                    .chain(self.linked.iter().cloned()),
            );
        }
        protected.extend(super::git::protected(&self.workspace, git_writable));
        protected
    }
}

/// A session's sandbox: its policy, what this machine enforces of it, and the launcher
/// its processes start through.
#[derive(Debug)]
pub struct Sandbox {
    /// The policy it enforces.
    pub policy: Policy,
    /// The session's private temp folder (`TMPDIR` of every sandboxed process), made at
    /// the first process and removed with the sandbox.
    pub temp: PathBuf,
    made: OnceLock<Result<(), String>>,
    /// Why the tools that start processes are not offered (`require = true` and the
    /// kernel cannot confine them), if they are not.
    pub withheld: Option<String>,
    launcher: Launcher,
    /// What is really enforced on this machine, for warnings and `eve doctor`.
    pub enforced: Enforced,
    /// What it was made from, to make more like it (an MCP server's own sandbox).
    pub recipe: Option<Recipe>,
}

impl Sandbox {
    /// Prepares `policy` with what `support` says this kernel can do; sandboxed
    /// processes get `temp` (a folder that does not exist yet, beneath which `policy`
    /// allows writes) as their `TMPDIR`. With `require`, a policy the kernel cannot
    /// fully enforce withholds the tools that start processes. Nothing is started or
    /// made until the first process.
    pub fn prepare(policy: &Policy, temp: PathBuf, require: bool, support: &Support) -> Sandbox {
        let enforced = linux::enforced(policy, support);
        let withheld = (require && !enforced.missing.is_empty()).then(|| {
            format!(
                "`[sandbox] require = true`, and this machine cannot confine processes: it lacks {}",
                enforced.missing.join(", ")
            )
        });
        let launcher =
            Launcher::new((policy.mode != SandboxMode::Off).then_some((policy, support)));
        Sandbox {
            policy: policy.clone(),
            temp,
            made: OnceLock::new(),
            withheld,
            launcher,
            enforced,
            recipe: None,
        }
    }

    /// The line that says what this machine cannot enforce, once a session (none with
    /// `require = true`: the tools that start processes are withheld instead).
    pub fn warnings(&self) -> Vec<String> {
        let missing = &self.enforced.missing;
        if missing.is_empty() || self.withheld.is_some() {
            return Vec::new();
        }
        vec![format!(
            "the sandbox ({}) is only partly enforced on this machine: it lacks {}; set `[sandbox] require = true` to refuse to run without it",
            self.policy.mode.as_str(),
            missing.join(", ")
        )]
    }

    /// Whether the sandbox confines anything.
    pub fn is_on(&self) -> bool {
        self.policy.mode != SandboxMode::Off
    }

    /// The line for the model after a sandboxed command failed, when its output says a
    /// write or a connection was refused; `None` otherwise.
    pub fn explain_refusal(
        &self,
        workspace: &Path,
        failed: bool,
        output: &[&str],
    ) -> Option<String> {
        const REFUSED: &[&str] = &[
            "Permission denied",
            "Read-only file system",
            "Operation not permitted",
        ];
        (self.is_on() && failed && output.iter().any(|o| REFUSED.iter().any(|r| o.contains(r))))
            .then(|| self.policy.refusal_note(workspace))
    }

    /// Makes the temp folder, once (private to eve's user).
    fn make_temp(&self) -> std::io::Result<()> {
        let made = self.made.get_or_init(|| {
            use std::os::unix::fs::DirBuilderExt;
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&self.temp)
                .map_err(|e| {
                    format!(
                        "cannot create the session's temp folder `{}`: {e}",
                        self.temp.display()
                    )
                })
        });
        made.clone().map_err(std::io::Error::other)
    }
}

impl Drop for Sandbox {
    fn drop(&mut self) {
        if matches!(self.made.get(), Some(Ok(()))) {
            let _ = std::fs::remove_dir_all(&self.temp);
        }
    }
}

/// A new name for a session's temp folder, beneath the system's temp folder: not made.
pub fn temp_folder() -> PathBuf {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNT: AtomicU64 = AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(COUNT.fetch_add(1, Ordering::Relaxed));
    hasher.write_u32(std::process::id());
    let base = std::env::temp_dir();
    let base = base.canonicalize().unwrap_or(base);
    base.join(format!("eve-session-{:016x}", hasher.finish()))
}

/// Starts `command` — the one door for every process eve runs for the model: through
/// `sandbox`'s launcher, confined, with the session's temp folder as `TMPDIR`; or,
/// without a sandbox (`mode = "off"`), through eve's unconfined launcher. Either way
/// nothing the program starts outlives the [`Child`]: dropping it, or [`Child::stop`],
/// ends the whole call.
pub async fn spawn(sandbox: Option<&Sandbox>, command: &mut Command) -> std::io::Result<Child> {
    match sandbox.filter(|s| s.is_on()) {
        Some(sandbox) => {
            sandbox.make_temp()?;
            // The session's private temp folder, like every sandboxed process (a
            // program's own `env` cannot point it elsewhere: that would not be writable).
            command.env("TMPDIR", &sandbox.temp);
            sandbox.launcher.spawn(command).await
        }
        None => {
            static UNCONFINED: OnceLock<Launcher> = OnceLock::new();
            UNCONFINED
                .get_or_init(|| Launcher::new(None))
                .spawn(command)
                .await
        }
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
