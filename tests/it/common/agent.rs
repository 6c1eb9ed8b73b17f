//! The agents the tests write: one builder for an agent directory in a temporary folder
//! (`base/agent`, its workspace beside it at `base/ws`), and what the tests do with it.
//!
//! ```ignore
//! let agent = Agent::builder()
//!     .toml("default_tools = false\n")
//!     .tool("bash", "")
//!     .replies("- text: hi\n")
//!     .build();
//! let output = agent.run(&["hello"]);
//! assert_eq!(agent.requests().len(), 1);
//! ```

use std::path::PathBuf;

use serde_json::Value;

/// What to write; [`AgentBuilder::build`] writes it.
pub struct AgentBuilder {
    folder: PathBuf,
    name: String,
    model: String,
    toml: String,
    instructions: String,
    replies: Option<String>,
    workspace: Option<PathBuf>,
    requests_log: Option<PathBuf>,
    tools_dir: bool,
    canonical: bool,
    files: Vec<(PathBuf, Vec<u8>)>,
    workspace_files: Vec<(PathBuf, Vec<u8>)>,
}

/// An agent directory the builder wrote, kept until this is dropped.
pub struct Agent {
    _tmp: tempfile::TempDir,
    /// The temporary folder holding the agent and its workspace.
    pub base: PathBuf,
    /// The agent directory.
    pub dir: PathBuf,
    /// The workspace: the agent directory itself when it has none of its own.
    pub workspace: PathBuf,
    /// Where the scripted model logs the requests it gets (`EVE_SCRIPTED_LOG`).
    pub requests_log: PathBuf,
}

impl Agent {
    /// An agent `s` at `base/agent` (with an empty `tools/`), a scripted model
    /// (`scripted:replies.yaml`), `Help.` for instructions and its workspace at `base/ws`.
    pub fn builder() -> AgentBuilder {
        AgentBuilder {
            folder: "agent".into(),
            name: "s".into(),
            model: "scripted:replies.yaml".into(),
            toml: String::new(),
            instructions: "Help.\n".into(),
            replies: None,
            workspace: Some("ws".into()),
            requests_log: None,
            tools_dir: true,
            canonical: true,
            files: Vec::new(),
            workspace_files: Vec::new(),
        }
    }
}

impl AgentBuilder {
    /// The agent directory's place in the temporary folder (`agent`; `ws/agent` puts it
    /// inside the workspace).
    pub fn folder(mut self, path: &str) -> Self {
        self.folder = path.into();
        self
    }

    /// `name = …` in `agent.toml`.
    pub fn name(mut self, name: &str) -> Self {
        self.name = name.into();
        self
    }

    /// `model = …` in `agent.toml`.
    pub fn model(mut self, model: &str) -> Self {
        self.model = model.into();
        self
    }

    /// More of `agent.toml`, after its name and model.
    pub fn toml(mut self, toml: &str) -> Self {
        self.toml.push_str(toml);
        self
    }

    /// `instructions.md`.
    pub fn instructions(mut self, text: &str) -> Self {
        self.instructions = text.into();
        self
    }

    /// `replies.yaml`, the scripted model's script (none is written without it).
    pub fn replies(mut self, script: &str) -> Self {
        self.replies = Some(script.into());
        self
    }

    /// `tools/<name>.toml`.
    pub fn tool(self, name: &str, toml: &str) -> Self {
        self.file(&format!("tools/{name}.toml"), toml)
    }

    /// Any other file of the agent directory, its folders made as needed.
    pub fn file(mut self, path: &str, contents: impl AsRef<[u8]>) -> Self {
        self.files.push((path.into(), contents.as_ref().to_vec()));
        self
    }

    /// The workspace's place in the temporary folder (`ws`).
    pub fn workspace(mut self, path: &str) -> Self {
        self.workspace = Some(path.into());
        self
    }

    /// The agent directory is its own workspace (`cd my-agent && eve run`): no folder
    /// is made for one.
    pub fn in_place(mut self) -> Self {
        self.workspace = None;
        self
    }

    /// A file of the workspace, its folders made as needed.
    pub fn workspace_file(mut self, path: &str, contents: impl AsRef<[u8]>) -> Self {
        self.workspace_files
            .push((path.into(), contents.as_ref().to_vec()));
        self
    }

    /// Where the scripted model's requests are logged, in the temporary folder
    /// (`agent/requests.jsonl`, in the agent directory, by default).
    pub fn requests_log(mut self, path: &str) -> Self {
        self.requests_log = Some(path.into());
        self
    }

    /// No empty `tools/` folder.
    pub fn no_tools_dir(mut self) -> Self {
        self.tools_dir = false;
        self
    }

    /// The paths as the temporary folder is named (by default they are canonical, so
    /// that they compare equal to the paths eve prints).
    pub fn not_canonical(mut self) -> Self {
        self.canonical = false;
        self
    }

    pub fn build(self) -> Agent {
        let tmp = tempfile::tempdir().unwrap();
        let base = if self.canonical {
            tmp.path().canonicalize().unwrap()
        } else {
            tmp.path().to_path_buf()
        };
        let dir = base.join(&self.folder);
        let workspace = match &self.workspace {
            Some(path) => base.join(path),
            None => dir.clone(),
        };
        let requests_log = match &self.requests_log {
            Some(path) => base.join(path),
            None => dir.join("requests.jsonl"),
        };
        std::fs::create_dir_all(&dir).unwrap();
        if self.tools_dir {
            std::fs::create_dir_all(dir.join("tools")).unwrap();
        }
        std::fs::create_dir_all(&workspace).unwrap();
        std::fs::write(
            dir.join("agent.toml"),
            format!(
                "name = \"{}\"\nmodel = \"{}\"\n{}",
                self.name, self.model, self.toml
            ),
        )
        .unwrap();
        std::fs::write(dir.join("instructions.md"), &self.instructions).unwrap();
        if let Some(script) = &self.replies {
            std::fs::write(dir.join("replies.yaml"), script).unwrap();
        }
        for (root, files) in [(&dir, &self.files), (&workspace, &self.workspace_files)] {
            for (path, contents) in files {
                let path = root.join(path);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, contents).unwrap();
            }
        }
        Agent {
            _tmp: tmp,
            base,
            dir,
            workspace,
            requests_log,
        }
    }
}

impl Agent {
    /// [`super::eve`] with the scripted model logging its requests to `requests_log`.
    pub fn eve(&self) -> assert_cmd::Command {
        let mut cmd = super::eve();
        cmd.env("EVE_SCRIPTED_LOG", &self.requests_log);
        cmd
    }

    /// `eve run <dir> --workspace <workspace>`, requests logged; more arguments follow.
    pub fn run_cmd(&self) -> assert_cmd::Command {
        let mut cmd = self.eve();
        cmd.arg("run")
            .arg(&self.dir)
            .args(["--workspace", self.workspace.to_str().unwrap()]);
        cmd
    }

    /// `eve run <dir> --workspace <workspace> ARGS`, with nothing on stdin.
    pub fn run(&self, args: &[&str]) -> std::process::Output {
        self.run_cmd().args(args).write_stdin("").output().unwrap()
    }

    /// `tools/<name>.toml`, written now.
    pub fn tool(&self, name: &str, toml: &str) {
        std::fs::write(self.dir.join("tools").join(format!("{name}.toml")), toml).unwrap();
    }

    /// The requests the scripted model got, in order (none if it logged none).
    pub fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.requests_log)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    /// The session logs in `.eve/sessions`, in the order of their names.
    pub fn sessions(&self) -> Vec<PathBuf> {
        let mut logs: Vec<PathBuf> = std::fs::read_dir(self.dir.join(".eve/sessions"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        logs.sort();
        logs
    }

    /// The log of the agent's one session.
    pub fn session_log(&self) -> PathBuf {
        self.sessions().into_iter().next().unwrap()
    }

    /// `.eve/manifest.json`, as the last build wrote it.
    pub fn manifest(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.dir.join(".eve/manifest.json")).unwrap())
            .unwrap()
    }
}
