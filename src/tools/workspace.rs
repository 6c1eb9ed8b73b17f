//! The workspace guard: every path a file tool takes is opened beneath the workspace.
//!
//! A path may be relative to the workspace root or absolute inside it (also through a
//! symlink to the workspace). `..` that climbs out, an absolute path elsewhere, and a
//! symlink anywhere along the path that leads out are refused, with an error that names
//! the path and says why. The path is opened component by component beneath a handle
//! of the workspace ([`super::beneath`]), and the handles are what the tools then read
//! and write, so a folder swapped for a symlink after the check cannot redirect them.
//!
//! The agent's own directory is guarded too, on the resolved folders (by device and
//! inode, whatever path or symlink led there): its `.eve/` (sessions, state) is never
//! read or written, and its definition (`agent.toml`, `instructions*`, `tools/`…) is
//! not written unless the author allows it.

use std::ffi::{OsStr, OsString};
use std::os::unix::fs::MetadataExt;
use std::path::{Component, Path, PathBuf};

use super::beneath::{self, Found, Refusal, Root};

/// What a tool means to do with a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Read a file: inside the workspace, or by absolute path inside a read root.
    Read,
    /// Search a folder or a file: inside the workspace only.
    Search,
    /// Create or change a file.
    Write,
}

use crate::manifest::DEFINITION_ENTRIES as DEFINITION;

/// The agent directory's folder of sessions and state.
const STATE: &str = ".eve";

/// An agent directory whose files the tools guard.
#[derive(Debug, Clone)]
pub struct AgentDir {
    pub path: PathBuf,
    pub id: (u64, u64),
}

/// What the tools may do with the agent's own files.
#[derive(Debug, Clone)]
pub struct Policy {
    /// The agent's own directory first, then those of the agents it is a subagent of.
    pub agents: Vec<AgentDir>,
    /// Whether the agent's own definition may be written (`[workspace] agent_writable`);
    /// the definitions of the agents above it never are.
    pub agent_writable: bool,
    /// The entries the commands run (`servers`, `subagents/x/scripts`), relative to the
    /// top agent directory (the last of `agents`): part of the definition too.
    pub executed: Vec<String>,
    /// What git reads as configuration or runs, besides any `.git` (a folder a `.git`
    /// file names, a submodule's folder while it is empty): never written.
    pub git: Vec<PathBuf>,
}

impl Policy {
    /// The policy for an agent in `agent_dir`: a subagent lives in
    /// `<parent>/subagents/<name>`, and its parents' files are guarded as well.
    pub fn new(agent_dir: &Path, agent_writable: bool) -> Policy {
        let mut agents = Vec::new();
        let mut dir = Some(agent_dir);
        while let Some(path) = dir {
            if let Ok(meta) = std::fs::metadata(path) {
                agents.push(AgentDir {
                    path: path.to_path_buf(),
                    id: (meta.dev(), meta.ino()),
                });
            }
            dir = path
                .parent()
                .filter(|p| p.file_name().is_some_and(|n| n == "subagents"))
                .and_then(Path::parent)
                .filter(|p| p.join("agent.toml").is_file());
        }
        Policy {
            agents,
            agent_writable,
            executed: Vec::new(),
            git: Vec::new(),
        }
    }

    /// The identities of the agent directories, for walks to skip their `.eve/`.
    pub fn agent_ids(&self) -> Vec<(u64, u64)> {
        self.agents.iter().map(|a| a.id).collect()
    }
}

/// Whether `name`, an entry of an agent directory, is its state folder.
pub fn is_state(name: &OsStr) -> bool {
    name.to_str().is_some_and(|n| n.eq_ignore_ascii_case(STATE))
}

/// A path the model gave, resolved and opened beneath a root.
#[derive(Debug)]
pub struct Resolved {
    /// The root it was resolved in (the workspace, or a folder it may read).
    pub root: PathBuf,
    /// Its real path: the root joined with the names walked (symlinks resolved).
    pub path: PathBuf,
    pub found: Found,
}

/// Resolves `given` inside the workspace `root` (or, to read by absolute path, inside
/// one of `read_roots`) and checks `policy` for `access`.
pub fn resolve(
    root: &Path,
    read_roots: &[PathBuf],
    policy: &Policy,
    given: &str,
    access: Access,
) -> Result<Resolved, String> {
    if given.trim().is_empty() {
        return Err("the path is empty".into());
    }
    if given.contains('\0') {
        return Err(format!(
            "the path `{}` contains a NUL character",
            given.escape_debug()
        ));
    }
    let outside = match names_in(root, given) {
        Ok(names) => return open_in(root, root, names, policy, given, access),
        Err(outside) => outside,
    };
    if access == Access::Read && Path::new(given).is_absolute() {
        for read_root in read_roots {
            if let Ok(names) = names_in(read_root, given) {
                return open_in(read_root, root, names, policy, given, access);
            }
        }
    }
    Err(match outside {
        Outside::ClimbsOut => {
            format!("`{given}` is outside the workspace: `..` climbs above the workspace root")
        }
        Outside::Elsewhere => format!(
            "`{given}` is outside the workspace `{}`; use a path inside it",
            root.display()
        ),
    })
}

fn open_in(
    base: &Path,
    workspace: &Path,
    names: Vec<OsString>,
    policy: &Policy,
    given: &str,
    access: Access,
) -> Result<Resolved, String> {
    let opened = Root::open(base).map_err(|e| {
        format!(
            "`{given}`: the folder `{}` cannot be opened ({e}); it may have been moved or replaced",
            base.display()
        )
    })?;
    let found = beneath::resolve(&opened, &names).map_err(|refusal| match refusal {
        Refusal::SymlinkOut(target) if target.as_os_str().is_empty() => {
            format!("`{given}` is outside the workspace: `..` climbs above the workspace root")
        }
        Refusal::SymlinkOut(target) => format!(
            "`{given}` is outside the workspace: a symlink leads to `{}`",
            target.display()
        ),
        Refusal::TooManySymlinks => {
            format!("`{given}` goes through too many symlinks (they may form a loop)")
        }
        Refusal::NotAFolder(at) => format!(
            "`{given}` cannot be reached: `{}` is a file, not a folder",
            display(workspace, &base.join(at))
        ),
        Refusal::Io(e) => format!("`{given}`: {e}"),
    })?;
    let path = found.path(base);
    if access == Access::Write
        && path
            .strip_prefix(base)
            .unwrap_or(&path)
            .components()
            .any(|c| {
                c.as_os_str()
                    .to_str()
                    .is_some_and(|n| n.eq_ignore_ascii_case(".git"))
            })
    {
        return Err(format!(
            "`{given}` is inside a git repository's `.git` (its config, hooks and objects): file tools never change it, since a changed config or hook makes the next `git` command run a program; use git commands instead"
        ));
    }
    if access == Access::Write && policy.git.iter().any(|g| path.starts_with(g)) {
        return Err(format!(
            "`{given}` is part of a git repository's own files (the git directory a `.git` file names, or a submodule's folder): file tools never change them, since git would read what they hold as its configuration"
        ));
    }
    if let Some(hit) = guarded(policy, &opened, &found) {
        let shown = display(workspace, &path);
        let named = if shown == given.trim_end_matches('/') {
            format!("`{given}`")
        } else {
            format!("`{given}` (which is `{shown}`)")
        };
        let inside = &hit.inside;
        match hit.kind {
            Guarded::State => {
                return Err(format!(
                    "{named} is in the agent's `.eve/` folder, which holds its sessions and state: file tools never read or change it"
                ));
            }
            Guarded::Definition if access != Access::Write => {}
            Guarded::Definition if !hit.own => {
                return Err(format!(
                    "{named} is part of the definition of an agent above this subagent (`{inside}` in its directory), which a subagent never changes"
                ));
            }
            Guarded::Definition if !policy.agent_writable => {
                return Err(format!(
                    "{named} is part of the agent's own definition (`{inside}` in the agent directory), which the agent may not change; its author can allow it with `agent_writable = true` under `[workspace]` in agent.toml"
                ));
            }
            Guarded::Definition => {}
        }
    }
    Ok(Resolved {
        root: base.to_path_buf(),
        path,
        found,
    })
}

/// Why a path is outside a root before anything is opened.
enum Outside {
    ClimbsOut,
    Elsewhere,
}

/// The names of `given` below `root`, `.` and `..` resolved without touching the file
/// system. An absolute path is taken inside `root` when it starts with it, or when its
/// first folders are a symlink to `root` (a workspace given as a symlink).
fn names_in(root: &Path, given: &str) -> Result<Vec<OsString>, Outside> {
    let path = Path::new(given);
    if !path.is_absolute() {
        return normalize(path).ok_or(Outside::ClimbsOut).map(names);
    }
    let normal = normalize(path).ok_or(Outside::Elsewhere)?;
    if let Ok(rest) = normal.strip_prefix(root) {
        return Ok(names(rest.to_path_buf()));
    }
    through_link_to(root, &normal)
        .map(names)
        .ok_or(Outside::Elsewhere)
}

/// The rest of `path` after its shortest leading part that is a symlink to `root`.
fn through_link_to(root: &Path, path: &Path) -> Option<PathBuf> {
    /// Leading parts tried at most: a link to the workspace sits near the top.
    const MAX_TRIED: usize = 64;
    let mut prefix = PathBuf::new();
    let mut components = path.components();
    for _ in 0..MAX_TRIED {
        prefix.push(components.next()?);
        if prefix.canonicalize().is_ok_and(|real| real == root) {
            return Some(components.as_path().to_path_buf());
        }
    }
    None
}

fn names(path: PathBuf) -> Vec<OsString> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(name) => Some(name.to_os_string()),
            _ => None,
        })
        .collect()
}

/// Resolves `.` and `..` without touching the file system; `None` when `..` climbs
/// above the start (or above `/` for an absolute path).
fn normalize(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    let mut depth = 0usize;
    for component in path.components() {
        match component {
            Component::Prefix(p) => out.push(p.as_os_str()),
            Component::RootDir => out.push(Component::RootDir.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if depth == 0 {
                    return None;
                }
                out.pop();
                depth -= 1;
            }
            Component::Normal(name) => {
                out.push(name);
                depth += 1;
            }
        }
    }
    Some(out)
}

/// What part of an agent directory a path is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Guarded {
    State,
    Definition,
}

fn classify(name: &OsStr) -> Option<Guarded> {
    let name = name.to_str()?;
    if name.eq_ignore_ascii_case(STATE) {
        Some(Guarded::State)
    } else if DEFINITION.iter().any(|d| name.eq_ignore_ascii_case(d)) {
        Some(Guarded::Definition)
    } else {
        None
    }
}

/// A path in a guarded part of an agent directory.
struct Hit {
    kind: Guarded,
    /// Its path inside the agent directory.
    inside: String,
    /// Whether that is the calling agent's own directory (not one of its parents').
    own: bool,
}

/// Whether the resolved path lies in a guarded part of an agent directory. The deepest
/// agent directory on the way decides (a subagent's files are its own, not just part of
/// the `subagents/` of the agent above). Names are compared without case, since the
/// file system may not tell `Tools` from `tools`.
fn guarded(policy: &Policy, root: &Root, found: &Found) -> Option<Hit> {
    let below: Vec<&OsStr> = found.levels[1..]
        .iter()
        .map(|l| l.name.as_os_str())
        .chain(found.missing.iter().map(|n| n.as_os_str()))
        .chain(found.name.iter().map(|n| n.as_os_str()))
        .collect();
    let on_the_way = found
        .levels
        .iter()
        .enumerate()
        .rev()
        .find_map(|(i, level)| {
            let agent = policy.agents.iter().position(|a| a.id == level.id)?;
            Some((agent, below[i..].to_vec()))
        });
    let (agent, names) = match on_the_way {
        Some(hit) => hit,
        // A root that itself lies inside an agent directory.
        None => {
            let (agent, rest) = policy
                .agents
                .iter()
                .enumerate()
                .filter_map(|(i, a)| root.path.strip_prefix(&a.path).ok().map(|rest| (i, rest)))
                .min_by_key(|(_, rest)| rest.iter().count())?;
            let mut names: Vec<&OsStr> = rest.iter().collect();
            names.extend(&below);
            (agent, names)
        }
    };
    // The path from the top agent directory, for the entries its commands run.
    let top = policy.agents.last()?;
    let from_top: Vec<String> = policy.agents[agent]
        .path
        .strip_prefix(&top.path)
        .ok()
        .map(|rest| {
            rest.iter()
                .map(|n| n.to_string_lossy().into_owned())
                .chain(names.iter().map(|n| n.to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default();
    let executed = policy.executed.iter().any(|entry| {
        let parts: Vec<&str> = entry.split('/').collect();
        from_top.len() >= parts.len()
            && parts
                .iter()
                .zip(&from_top)
                .all(|(a, b)| a.eq_ignore_ascii_case(b))
    });
    let kind = match classify(names.first()?) {
        Some(kind) => kind,
        None if executed => Guarded::Definition,
        None => return None,
    };
    let inside = names
        .iter()
        .map(|n| n.to_string_lossy())
        .collect::<Vec<_>>()
        .join("/");
    Some(Hit {
        kind,
        inside,
        own: agent == 0,
    })
}

/// `path` relative to the workspace root, with `/` separators, for messages to the model.
pub fn display(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    let text = relative.to_string_lossy().replace('\\', "/");
    if text.is_empty() { ".".into() } else { text }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::tools::beneath::Entry;
    use std::os::unix::fs::symlink;

    struct Fixture {
        _tmp: tempfile::TempDir,
        base: PathBuf,
        root: PathBuf,
        outside: PathBuf,
        policy: Policy,
    }

    fn fixture() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().canonicalize().unwrap();
        let root = base.join("ws");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(outside.join("secret.txt"), "secret").unwrap();
        symlink(&outside, root.join("linked_dir")).unwrap();
        symlink(outside.join("secret.txt"), root.join("link_to_secret")).unwrap();
        symlink(root.join("src/main.rs"), root.join("inner_link")).unwrap();
        symlink("src/main.rs", root.join("relative_link")).unwrap();
        symlink(outside.join("missing"), root.join("dangling")).unwrap();
        let policy = Policy::new(&root.join("agent"), false);
        Fixture {
            _tmp: tmp,
            base,
            root,
            outside,
            policy,
        }
    }

    fn resolve_in(f: &Fixture, path: &str, access: Access) -> Result<Resolved, String> {
        resolve(&f.root, &[], &f.policy, path, access)
    }

    fn path_of(f: &Fixture, path: &str) -> PathBuf {
        resolve_in(f, path, Access::Write).unwrap().path
    }

    fn err(f: &Fixture, path: &str) -> String {
        resolve_in(f, path, Access::Write).unwrap_err()
    }

    #[test]
    fn paths_inside_resolve_relative_or_absolute() {
        let f = fixture();
        assert_eq!(path_of(&f, "src/main.rs"), f.root.join("src/main.rs"));
        assert_eq!(
            path_of(&f, "./src/../src/main.rs"),
            f.root.join("src/main.rs")
        );
        let absolute = f.root.join("src/main.rs");
        assert_eq!(path_of(&f, absolute.to_str().unwrap()), absolute);
        assert_eq!(
            path_of(&f, "new/dir/file.txt"),
            f.root.join("new/dir/file.txt")
        );
        assert_eq!(path_of(&f, "."), f.root);
        // Symlinks that stay inside are followed, absolute or relative.
        assert_eq!(path_of(&f, "inner_link"), f.root.join("src/main.rs"));
        assert_eq!(path_of(&f, "relative_link"), f.root.join("src/main.rs"));
    }

    #[test]
    fn what_is_found_is_opened_and_typed() {
        let f = fixture();
        let file = resolve_in(&f, "src/main.rs", Access::Read).unwrap();
        assert!(matches!(file.found.entry, Entry::File(_)));
        let dir = resolve_in(&f, "src", Access::Read).unwrap();
        assert!(matches!(dir.found.entry, Entry::Dir));
        let new = resolve_in(&f, "a/b/c.txt", Access::Write).unwrap();
        assert!(matches!(new.found.entry, Entry::Missing));
        assert_eq!(new.found.missing, ["a", "b"]);
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            f.root.join("pipe"),
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .unwrap();
        let fifo = resolve_in(&f, "pipe", Access::Read).unwrap();
        assert!(matches!(
            fifo.found.entry,
            Entry::Other(rustix::fs::FileType::Fifo)
        ));
    }

    #[test]
    fn climbing_out_with_dot_dot_is_refused() {
        let f = fixture();
        assert_eq!(
            err(&f, "../../etc/passwd"),
            "`../../etc/passwd` is outside the workspace: `..` climbs above the workspace root"
        );
        assert!(resolve_in(&f, "src/../../outside/secret.txt", Access::Read).is_err());
        assert_eq!(err(&f, ""), "the path is empty");
        assert!(err(&f, "a\0b").contains("NUL"));
    }

    #[test]
    fn absolute_paths_elsewhere_are_refused() {
        let f = fixture();
        let e = err(&f, "/etc/passwd");
        assert!(
            e.starts_with("`/etc/passwd` is outside the workspace"),
            "{e}"
        );
        let sneaky = format!("{}/../outside/secret.txt", f.root.display());
        assert!(resolve_in(&f, &sneaky, Access::Read).is_err());
        let sibling = f.outside.join("secret.txt");
        assert!(resolve_in(&f, sibling.to_str().unwrap(), Access::Read).is_err());
    }

    #[test]
    fn symlinks_that_lead_out_are_refused_at_any_component() {
        let f = fixture();
        let e = err(&f, "link_to_secret");
        assert_eq!(
            e,
            format!(
                "`link_to_secret` is outside the workspace: a symlink leads to `{}`",
                f.outside.join("secret.txt").display()
            )
        );
        // A symlinked parent folder, for a file that exists and one that does not.
        assert!(err(&f, "linked_dir/secret.txt").contains("a symlink leads to"));
        assert!(err(&f, "linked_dir/new.txt").contains("a symlink leads to"));
        assert!(err(&f, "linked_dir/a/b/c.txt").contains("a symlink leads to"));
        assert!(err(&f, "dangling").contains("a symlink leads to"));
        // A relative link that climbs out.
        symlink("../../outside", f.root.join("src/up")).unwrap();
        assert_eq!(
            err(&f, "src/up/secret.txt"),
            "`src/up/secret.txt` is outside the workspace: a symlink leads to `../../outside`"
        );
        // One that climbs and comes back stays inside.
        symlink("../src", f.root.join("src/back")).unwrap();
        assert_eq!(path_of(&f, "src/back/main.rs"), f.root.join("src/main.rs"));
        symlink("loop_b", f.root.join("loop_a")).unwrap();
        symlink("loop_a", f.root.join("loop_b")).unwrap();
        assert!(err(&f, "loop_a/x").contains("too many symlinks"), "loop");
        assert!(err(&f, "src/main.rs/x").contains("is a file, not a folder"));
    }

    #[test]
    fn an_absolute_path_through_a_symlinked_workspace_is_inside() {
        let f = fixture();
        let link = f.base.join("ws-link");
        symlink(&f.root, &link).unwrap();
        let given = link.join("src/main.rs");
        assert_eq!(
            path_of(&f, given.to_str().unwrap()),
            f.root.join("src/main.rs")
        );
        let escape = link.join("linked_dir/secret.txt");
        assert!(err(&f, escape.to_str().unwrap()).contains("a symlink leads to"));
    }

    #[test]
    fn read_roots_are_readable_by_absolute_path_only() {
        let f = fixture();
        let skills = f.base.join("agent-skills");
        std::fs::create_dir_all(&skills).unwrap();
        std::fs::write(skills.join("a.md"), "x").unwrap();
        symlink(&f.outside, skills.join("out")).unwrap();
        let roots = [skills.clone()];
        let given = skills.join("a.md");
        let read = resolve(
            &f.root,
            &roots,
            &f.policy,
            given.to_str().unwrap(),
            Access::Read,
        );
        assert_eq!(read.unwrap().path, given);
        let write = resolve(
            &f.root,
            &roots,
            &f.policy,
            given.to_str().unwrap(),
            Access::Write,
        );
        assert!(write.unwrap_err().contains("outside the workspace"));
        let out = skills.join("out/secret.txt");
        assert!(
            resolve(
                &f.root,
                &roots,
                &f.policy,
                out.to_str().unwrap(),
                Access::Read
            )
            .is_err()
        );
    }

    #[test]
    fn a_git_config_or_hook_cannot_be_written_so_an_allowed_git_command_runs_nothing_new() {
        let f = fixture();
        std::fs::create_dir_all(f.root.join(".git/hooks")).unwrap();
        std::fs::write(f.root.join(".git/config"), "[core]\n").unwrap();
        std::fs::create_dir_all(f.root.join("sub/.GIT")).unwrap();
        symlink(".git", f.root.join("g")).unwrap();
        for path in [
            ".git/config",
            ".git/hooks/pre-commit",
            "./sub/../.git/config",
            "g/config",
            "sub/.GIT/config",
        ] {
            let e = resolve(&f.root, &[], &f.policy, path, Access::Write).unwrap_err();
            assert!(
                e.contains("inside a git repository's `.git`"),
                "{path}: {e}"
            );
        }
        assert!(resolve(&f.root, &[], &f.policy, ".git/config", Access::Read).is_ok());
        assert!(resolve(&f.root, &[], &f.policy, "gitnotes.md", Access::Write).is_ok());
    }

    /// An agent directory inside the workspace, with a symlink that leads into it.
    fn agent_fixture(writable: bool) -> Fixture {
        let mut f = fixture();
        let agent = f.root.join("my-agent");
        std::fs::create_dir_all(agent.join("tools")).unwrap();
        std::fs::create_dir_all(agent.join(".eve/sessions")).unwrap();
        std::fs::write(agent.join("agent.toml"), "").unwrap();
        std::fs::write(agent.join("tools/bash.toml"), "").unwrap();
        std::fs::write(agent.join(".eve/sessions/s.jsonl"), "").unwrap();
        std::fs::write(agent.join("notes.md"), "").unwrap();
        symlink(&agent, f.root.join("alias")).unwrap();
        symlink("my-agent/tools", f.root.join("t")).unwrap();
        f.policy = Policy::new(&agent, writable);
        f
    }

    #[test]
    fn the_agents_state_is_never_read_or_written() {
        let f = agent_fixture(true);
        for path in [
            "my-agent/.eve/sessions/s.jsonl",
            "my-agent/.EVE/sessions/s.jsonl",
            "alias/.eve/sessions/s.jsonl",
            "./my-agent/tools/../.eve/sessions/new.jsonl",
            "my-agent/.eve",
            "my-agent/.eve/",
        ] {
            for access in [Access::Read, Access::Write] {
                let e = resolve_in(&f, path, access).unwrap_err();
                assert!(e.contains("`.eve/` folder"), "{path}: {e}");
            }
        }
        let e = err(&f, "alias/.eve/sessions/s.jsonl");
        assert!(
            e.starts_with(
                "`alias/.eve/sessions/s.jsonl` (which is `my-agent/.eve/sessions/s.jsonl`) is in the agent's `.eve/` folder"
            ),
            "{e}"
        );
    }

    #[test]
    fn the_agents_definition_is_read_only_unless_the_author_allows_it() {
        let f = agent_fixture(false);
        for path in [
            "my-agent/tools/bash.toml",
            "my-agent/tools/new.toml",
            "my-agent/TOOLS/bash.toml",
            "./my-agent/tools/../tools/bash.toml",
            "my-agent/agent.toml",
            "my-agent/Agent.TOML",
            "my-agent/tools/",
            "my-agent/instructions/new.md",
            "my-agent/skills/x/SKILL.md",
            "alias/agent.toml",
            "t/bash.toml",
        ] {
            let e = err(&f, path);
            assert!(
                e.contains("part of the agent's own definition"),
                "{path}: {e}"
            );
            assert!(
                resolve_in(&f, path, Access::Read).is_ok(),
                "{path} is readable"
            );
        }
        assert_eq!(
            err(&f, "t/bash.toml"),
            "`t/bash.toml` (which is `my-agent/tools/bash.toml`) is part of the agent's own definition (`tools/bash.toml` in the agent directory), which the agent may not change; its author can allow it with `agent_writable = true` under `[workspace]` in agent.toml"
        );
        // Other files of the agent directory are the workspace's like any other.
        assert!(resolve_in(&f, "my-agent/notes.md", Access::Write).is_ok());
        assert!(resolve_in(&f, "my-agent/toolsets/x", Access::Write).is_ok());

        let allowed = agent_fixture(true);
        assert!(resolve_in(&allowed, "my-agent/tools/bash.toml", Access::Write).is_ok());
    }

    #[test]
    fn what_the_commands_run_and_the_git_directory_a_git_file_names_are_not_written() {
        let mut f = agent_fixture(false);
        std::fs::create_dir_all(f.root.join("my-agent/servers")).unwrap();
        std::fs::create_dir_all(f.root.join("my-agent/subagents/x/scripts")).unwrap();
        f.policy.executed = vec!["servers".into(), "subagents/x/scripts".into()];
        std::fs::create_dir_all(f.root.join("gitdata")).unwrap();
        std::fs::write(f.root.join(".git"), "gitdir: gitdata\n").unwrap();
        f.policy.git = crate::sandbox::git::protected(&f.root, false);
        for path in [
            "my-agent/servers/stats.mjs",
            "my-agent/Servers/new.mjs",
            "alias/servers",
        ] {
            assert!(
                err(&f, path).contains("part of the agent's own definition"),
                "{path}"
            );
        }
        let sub = Policy {
            executed: f.policy.executed.clone(),
            ..Policy::new(&f.root.join("my-agent/subagents/x"), false)
        };
        for path in ["my-agent/subagents/x/scripts/a.py", "my-agent/servers/a"] {
            let e = resolve(&f.root, &[], &sub, path, Access::Write).unwrap_err();
            assert!(e.contains("definition"), "{path}: {e}");
        }
        assert!(resolve_in(&f, "my-agent/serversx", Access::Write).is_ok());
        let e = err(&f, "gitdata/config");
        assert!(e.contains("part of a git repository's own files"), "{e}");
        assert!(resolve_in(&f, "gitdata/config", Access::Read).is_ok());
    }

    #[test]
    fn a_subagent_guards_its_parents_too() {
        let f = agent_fixture(false);
        let sub = f.root.join("my-agent/subagents/helper");
        std::fs::create_dir_all(&sub).unwrap();
        let policy = Policy::new(&sub, false);
        assert_eq!(policy.agents.len(), 2);
        let e = resolve(
            &f.root,
            &[],
            &policy,
            "my-agent/tools/bash.toml",
            Access::Write,
        )
        .unwrap_err();
        assert!(e.contains("definition"), "{e}");
        let e = resolve(&f.root, &[], &policy, "my-agent/.eve/x", Access::Read).unwrap_err();
        assert!(e.contains(".eve"), "{e}");
    }

    #[test]
    fn a_workspace_inside_the_agent_definition_is_read_only() {
        let f = agent_fixture(false);
        let tools = f.root.join("my-agent/tools");
        let e = resolve(&tools, &[], &f.policy, "bash.toml", Access::Write).unwrap_err();
        assert!(
            e.contains("`tools/bash.toml` in the agent directory"),
            "{e}"
        );
    }

    #[test]
    fn display_is_relative_to_the_root() {
        let f = fixture();
        assert_eq!(display(&f.root, &f.root.join("src/main.rs")), "src/main.rs");
        assert_eq!(display(&f.root, &f.root), ".");
    }
}
