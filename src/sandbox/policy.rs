//! What the processes of one session may do ([`Policy`]), and what a prepared sandbox
//! enforces of it ([`Enforced`]).

use std::path::{Path, PathBuf};

use crate::manifest::SandboxMode;

/// What the processes of one session may do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub mode: SandboxMode,
    /// Whether they may open IP sockets (Unix sockets always work).
    pub network: bool,
    /// Folders they may write beneath (absolute): the workspace, the session's temp
    /// folder and the `[sandbox] writable` ones. Empty in `read-only` mode.
    pub writable: Vec<PathBuf>,
    /// Paths beneath a writable folder that stay read-only: the agent directory's
    /// `.eve/`, and its definition unless the author made it writable.
    pub read_only: Vec<PathBuf>,
}

impl Policy {
    /// The policy of a session: `workspace`, `temp` and `extra` writable (in
    /// `workspace-write` mode), `protected` kept read-only wherever it lies beneath them.
    pub fn new(
        mode: SandboxMode,
        network: bool,
        workspace: &Path,
        temp: &Path,
        extra: &[PathBuf],
        protected: &[PathBuf],
    ) -> Policy {
        let writable: Vec<PathBuf> = match mode {
            SandboxMode::WorkspaceWrite => std::iter::once(workspace.to_path_buf())
                .chain(std::iter::once(temp.to_path_buf()))
                .chain(extra.iter().cloned())
                .collect(),
            SandboxMode::ReadOnly | SandboxMode::Off => Vec::new(),
        };
        let inside: Vec<&PathBuf> = protected
            .iter()
            .filter(|p| p.exists() && writable.iter().any(|w| p.starts_with(w)))
            .collect();
        // A path beneath another read-only one is read-only already; binding it again
        // would pin the folders between them, writable, over the outer bind.
        let read_only = inside
            .iter()
            .filter(|p| !inside.iter().any(|q| q != *p && p.starts_with(q)))
            .map(|p| (*p).clone())
            .fold(Vec::new(), |mut out: Vec<PathBuf>, p| {
                if !out.contains(&p) {
                    out.push(p);
                }
                out
            });
        Policy {
            mode,
            network,
            writable,
            read_only,
        }
    }

    /// One line for the model after a refused write or connection: the mode and what is
    /// writable, so it can adapt instead of retrying.
    pub fn refusal_note(&self, workspace: &Path) -> String {
        let network = if self.network {
            ""
        } else {
            "; the network is off (no IP sockets)"
        };
        match self.mode {
            SandboxMode::ReadOnly => format!(
                "[eve] the sandbox is read-only: nothing may be written except /dev/null{network}."
            ),
            _ => {
                let extra: Vec<String> = self
                    .writable
                    .iter()
                    .skip(2)
                    .map(|p| format!("`{}`", p.display()))
                    .collect();
                let extra = if extra.is_empty() {
                    String::new()
                } else {
                    format!(", {}", extra.join(", "))
                };
                format!(
                    "[eve] the sandbox (workspace-write) allows writes only in the workspace `{}`, $TMPDIR{extra} and /dev/null; the agent's own `.eve/` and definition stay read-only{network}.",
                    workspace.display()
                )
            }
        }
    }
}

/// What a prepared sandbox enforces, and what it cannot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enforced {
    /// Writes are confined (Landlock).
    pub files: bool,
    /// IP sockets are refused (seccomp), when the policy turns the network off.
    pub network: bool,
    /// The read-only paths inside writable folders are protected (mount namespace).
    pub read_only_paths: bool,
    /// What the kernel cannot do for this policy, one phrase each (empty: all of it).
    pub missing: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_protected_paths_inside_writable_folders_need_protecting() {
        let tmp = tempfile::tempdir().unwrap();
        let ws = tmp.path().join("ws");
        let agent_eve = ws.join("agent/.eve");
        std::fs::create_dir_all(&agent_eve).unwrap();
        let elsewhere = tmp.path().join("other/.eve");
        std::fs::create_dir_all(&elsewhere).unwrap();
        let temp = tmp.path().join("t");
        let policy = Policy::new(
            SandboxMode::WorkspaceWrite,
            false,
            &ws,
            &temp,
            &[],
            &[agent_eve.clone(), elsewhere, ws.join("agent/missing")],
        );
        assert_eq!(policy.writable, vec![ws.clone(), temp.clone()]);
        assert_eq!(policy.read_only, vec![agent_eve]);
        assert!(policy.refusal_note(&ws).contains("the network is off"));
        let read_only = Policy::new(SandboxMode::ReadOnly, true, &ws, &temp, &[], &[]);
        assert!(read_only.writable.is_empty());
        assert_eq!(
            read_only.refusal_note(&ws),
            "[eve] the sandbox is read-only: nothing may be written except /dev/null."
        );
    }
}
