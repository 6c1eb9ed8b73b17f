//! `eve connections`: what a person checks after adding a server. Every server is
//! started (side by side) and listed afresh, and each tool is shown with the name the
//! model sees and whether it is deferred, left out, or needs approval.

use std::path::Path;
use std::time::Duration;

use super::lister::{BuildLister, Record};
use crate::compiler::connection_tools::{self, LeftOut};
use crate::compiler::{self, Build, listing};
use crate::manifest::Approval;
use crate::manifest::connection::{Connection, Transport};

/// Every connection of an agent, as its server answered just now.
#[derive(Debug)]
pub struct Report {
    pub build: Build,
    pub connections: Vec<Entry>,
    /// Why no server was started: a change the person has not seen
    /// ([`crate::review::unseen`]).
    pub held: Option<crate::review::Pending>,
}

/// One connection.
#[derive(Debug)]
pub struct Entry {
    pub name: String,
    /// `stdio: <command>` or `http: <url>`.
    pub transport: String,
    pub defer: bool,
    pub required: bool,
    /// How its server is confined (stdio only): `workspace-write, network on`, or why
    /// it is not.
    pub sandbox: Option<String>,
    pub status: ServerStatus,
    pub tools: Vec<ToolLine>,
}

/// Whether the server started.
#[derive(Debug, Clone)]
pub enum ServerStatus {
    Started {
        transport: &'static str,
        elapsed: Duration,
        server: Option<String>,
    },
    Failed {
        elapsed: Duration,
        error: String,
    },
}

/// One listed tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolLine {
    /// The name the model sees.
    pub name: String,
    /// What it is: read-only, deferred, needs approval, left out and why.
    pub notes: Vec<String>,
}

/// Builds `dir` listing every server again, and reports on each connection.
pub fn report(dir: &Path) -> Report {
    // Nothing of a definition the person has not seen starts, as in every build.
    let held = crate::review::held(dir, || {
        compiler::compile(dir, &crate::tools::builtin::CATALOG)
            .manifest
            .map(|m| m.inputs_hash)
    });
    let lister = BuildLister::default();
    let build = compiler::compile_with(
        dir,
        &crate::tools::builtin::CATALOG,
        listing::Options {
            lister: held.is_none().then_some(&lister as &dyn listing::Lister),
            refresh: true,
            ..listing::Options::default()
        },
    );
    let records = lister.records();
    let connections = build
        .connections
        .iter()
        .map(|c| {
            let settings = build.manifest.as_ref().map(|m| &m.agent.sandbox);
            entry(
                dir,
                c,
                settings,
                records.iter().find(|r| r.connection == c.name),
            )
        })
        .collect();
    Report {
        build,
        connections,
        held,
    }
}

fn entry(
    dir: &Path,
    connection: &Connection,
    settings: Option<&crate::manifest::Sandbox>,
    record: Option<&Record>,
) -> Entry {
    let sandbox = match (&connection.transport, settings) {
        (Transport::Stdio { sandbox: false, .. }, _) => {
            Some("off (`sandbox = false` in its file)".to_string())
        }
        (Transport::Stdio { .. }, Some(settings)) => Some(match settings.mode {
            crate::manifest::SandboxMode::Off => "off (`[sandbox] mode = \"off\"`)".to_string(),
            mode => format!(
                "{}, network {}",
                mode.as_str(),
                if settings.network { "on" } else { "off" }
            ),
        }),
        _ => None,
    };
    let transport = match &connection.transport {
        Transport::Stdio { command, .. } => format!(
            "stdio: {}",
            command
                .iter()
                .map(|a| crate::text::shell_word(a))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Transport::Http { url, .. } => format!("http: {url}"),
    };
    let status = match record {
        Some(Record {
            error: Some(error),
            elapsed,
            ..
        }) => ServerStatus::Failed {
            elapsed: *elapsed,
            error: error.clone(),
        },
        Some(record) => ServerStatus::Started {
            transport: record.transport.unwrap_or("?"),
            elapsed: record.elapsed,
            server: record.server.clone(),
        },
        None => ServerStatus::Failed {
            elapsed: Duration::ZERO,
            error: "it was not started: the connection file has errors".into(),
        },
    };
    let mut tools = Vec::new();
    if let Some(listing) = listing::read_cache(dir, connection) {
        for offer in connection_tools::offer(connection, &listing.tools) {
            let mut notes = Vec::new();
            match &offer.left_out {
                Some(LeftOut::NotAllowed) => notes.push("left out (not in `allow`)".to_string()),
                Some(LeftOut::Blocked(pattern)) => notes.push(format!("blocked (`{pattern}`)")),
                Some(LeftOut::Disabled(file)) => notes.push(format!("disabled ({file})")),
                None => {
                    if offer.tool.read_only {
                        notes.push("read-only".into());
                    }
                    if offer.tool.defer {
                        notes.push("deferred".into());
                    }
                    if offer.tool.approval == Approval::Always {
                        notes.push("needs approval".into());
                    }
                }
            }
            tools.push(ToolLine {
                name: offer.final_name,
                notes,
            });
        }
        for left in listing.left_out {
            tools.push(ToolLine {
                name: crate::text::shorten(&left.name, 64),
                notes: vec![format!("left out: {}", left.reason)],
            });
        }
    }
    Entry {
        name: connection.name.clone(),
        transport,
        defer: connection.defer,
        required: connection.required,
        sandbox,
        status,
        tools,
    }
}

impl Report {
    /// The report as a person reads it.
    pub fn text(&self) -> String {
        if self.connections.is_empty() {
            return "no connections: add `connections/<name>.toml` to use an MCP server's tools (see docs/connections.md)\n".into();
        }
        let mut out = String::new();
        for entry in &self.connections {
            let mut flags = Vec::new();
            if entry.defer {
                flags.push("defer");
            }
            if !entry.required {
                flags.push("not required");
            }
            let flags = if flags.is_empty() {
                String::new()
            } else {
                format!(" [{}]", flags.join(", "))
            };
            out.push_str(&format!("{} ({}){flags}\n", entry.name, entry.transport));
            match &entry.status {
                ServerStatus::Started {
                    transport,
                    elapsed,
                    server,
                } => {
                    let server = server
                        .as_ref()
                        .map(|s| format!(" {s},"))
                        .unwrap_or_default();
                    out.push_str(&format!(
                        "  started in {} ms over {transport}:{server} {} listed\n",
                        elapsed.as_millis(),
                        plural(entry.tools.len(), "tool")
                    ));
                }
                ServerStatus::Failed { error, .. } => {
                    out.push_str(&format!(
                        "  did not start: {}\n",
                        error.replace('\n', "\n    ")
                    ));
                }
            }
            if let Some(sandbox) = &entry.sandbox {
                out.push_str(&format!("  sandbox: {sandbox}\n"));
            }
            let width = entry.tools.iter().map(|t| t.name.len()).max().unwrap_or(0);
            for tool in &entry.tools {
                if tool.notes.is_empty() {
                    out.push_str(&format!("  {}\n", tool.name));
                } else {
                    out.push_str(&format!(
                        "  {:width$}  {}\n",
                        tool.name,
                        tool.notes.join(", ")
                    ));
                }
            }
        }
        out
    }

    /// Whether every server started and the agent builds.
    pub fn ok(&self) -> bool {
        self.build.manifest.is_some()
            && self
                .connections
                .iter()
                .all(|c| matches!(c.status, ServerStatus::Started { .. }))
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
