//! Claude Code's MCP servers (`.mcp.json`, or `mcpServers` in a plugin's `plugin.json`)
//! as eve connection files: `command` and `args` become `command`, `url` stays, `env`
//! and `headers` keep their `${VAR}` references; what eve cannot express is reported.

use serde_json::Value;

use super::literal::literal;
use super::report::{Note, shown};
use super::server_files::{self, PLUGIN_ROOT};
use super::slug::{slug, unique};

/// One server as an eve connection.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// The connection's name (its file's).
    pub name: String,
    /// The name in `.mcp.json`, which `mcp__<name>__<tool>` tool names use.
    pub original: String,
    /// `stdio`, `http` or `sse`.
    pub transport: String,
    /// A stdio server's command line, as written.
    argv: Vec<String>,
    /// Where a stdio server starts, as written (`${CLAUDE_PLUGIN_ROOT}`).
    cwd: Option<String>,
    /// The folder of the agent directory `${CLAUDE_PLUGIN_ROOT}` becomes, when not the
    /// agent directory itself (`claude-plugin`, for a server run from the whole plugin).
    root: Option<String>,
    /// The rest of the file, without its `[tools]` table.
    body: String,
    /// The environment variables its `${VAR}` references read.
    pub variables: Vec<String>,
    pub notes: Vec<Note>,
}

/// A server that could not be imported, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub name: String,
    pub why: String,
}

/// The servers of one file.
#[derive(Debug, Default)]
pub struct Servers {
    pub servers: Vec<Server>,
    pub refused: Vec<Refused>,
}

impl Server {
    /// A stdio server's command line as written (`${CLAUDE_PLUGIN_ROOT}` in it).
    pub fn argv(&self) -> &[String] {
        &self.argv
    }

    /// Where a stdio server starts, as written.
    pub fn cwd(&self) -> Option<&str> {
        self.cwd.as_deref()
    }

    /// Makes `${CLAUDE_PLUGIN_ROOT}` the folder `folder` of the agent directory.
    pub fn set_root(&mut self, folder: &str) {
        self.root = Some(folder.to_string());
    }

    /// `text` with `${CLAUDE_PLUGIN_ROOT}` made `root` and the folder [`Server::set_root`]
    /// gave (for showing a command line: `root` is the agent directory's path).
    pub fn resolved(&self, text: &str, root: &str) -> String {
        let root = match &self.root {
            Some(folder) => format!("{root}/{folder}"),
            None => root.to_string(),
        };
        text.replace(PLUGIN_ROOT, &root)
    }

    /// Makes the element `index` of the command line `value` (a relative path that
    /// names a file of the plugin, made `${CLAUDE_PLUGIN_ROOT}/…`), saying why in `note`.
    pub fn rewrite(&mut self, index: usize, value: String, note: Note) {
        if let Some(arg) = self.argv.get_mut(index) {
            *arg = value;
            self.notes.push(note);
        }
    }

    /// The connection file, with `[tools] allow` and `block` when given. `up` is how
    /// many folders the agent directory that holds it is below the plugin's files (a
    /// subagent's `{{ agent_dir }}` is its own folder, two below the top agent's).
    pub fn file(
        &self,
        from: &str,
        up: usize,
        allow: Option<&[String]>,
        block: &[String],
    ) -> String {
        let mut text = format!(
            "# Imported by `eve import claude` from {from} (the server `{}`).\n",
            shown(&self.original),
        );
        if !self.argv.is_empty() {
            let folder = self
                .root
                .as_ref()
                .map(|f| format!("/{f}"))
                .unwrap_or_default();
            let root = format!("{{{{ agent_dir }}}}{}{folder}", "/..".repeat(up));
            let parts: Vec<String> = self
                .argv
                .iter()
                .map(|arg| {
                    let part = arg
                        .split(PLUGIN_ROOT)
                        .map(literal)
                        .collect::<Vec<_>>()
                        .join(&root);
                    toml_string(&part)
                })
                .collect();
            text.push_str(&format!("command = [{}]\n", parts.join(", ")));
            if let Some(cwd) = &self.cwd {
                let cwd = cwd.split(PLUGIN_ROOT).map(literal).collect::<Vec<_>>();
                text.push_str(&format!("cwd = {}\n", toml_string(&cwd.join(&root))));
            }
        }
        text.push_str(&self.body);
        let list = |names: &[String]| {
            let items: Vec<String> = names.iter().map(|n| toml_string(n)).collect();
            format!("[{}]", items.join(", "))
        };
        if allow.is_some() || !block.is_empty() {
            text.push_str("\n[tools]\n");
            if let Some(allow) = allow {
                text.push_str(&format!("allow = {}\n", list(allow)));
            }
            if !block.is_empty() {
                text.push_str(&format!("block = {}\n", list(block)));
            }
        }
        text
    }
}

/// A TOML basic string (escapes done by toml_edit).
pub fn toml_string(value: &str) -> String {
    toml_edit::Value::from(value).to_string().trim().to_string()
}

/// The servers of a parsed `mcpServers` object (or a `.mcp.json` without that wrapper),
/// named apart from `taken`.
pub fn read(json: &Value, taken: &dyn Fn(&str) -> bool) -> Servers {
    let servers = json.get("mcpServers").unwrap_or(json);
    let mut out = Servers::default();
    let Some(map) = servers.as_object() else {
        out.refused.push(Refused {
            name: String::new(),
            why: "`mcpServers` is not an object of servers".into(),
        });
        return out;
    };
    let mut names: Vec<String> = Vec::new();
    for (original, config) in map {
        let Some(base) = slug(original) else {
            out.refused.push(Refused {
                name: original.clone(),
                why: "its name has no letter or digit to make a connection name of".into(),
            });
            continue;
        };
        let name = unique(&base, &|n| taken(n) || names.iter().any(|m| m == n));
        match server(original, &name, config) {
            Ok(mut server) => {
                if name != *original {
                    server.notes.insert(
                        0,
                        Note::Changed(format!(
                            "named `{name}` (connection names are lowercase letters, digits, `-` and `_`)"
                        )),
                    );
                }
                names.push(name);
                out.servers.push(server);
            }
            Err(why) => out.refused.push(Refused {
                name: original.clone(),
                why,
            }),
        }
    }
    out
}

fn server(original: &str, name: &str, config: &Value) -> Result<Server, String> {
    let config = config.as_object().ok_or("its settings are not an object")?;
    let transport = transport_of(config)?;
    let mut parts = Parts::default();
    let known: &[&str] = if transport == "stdio" {
        stdio(config, &mut parts)?;
        &["type", "command", "args", "env", "cwd"]
    } else {
        remote(config, transport, &mut parts)?;
        &["type", "url", "headers"]
    };
    parts.body.push_str(
        "# Claude Code starts without a server that fails; so does this agent.\nrequired = false\n",
    );
    for key in config.keys().filter(|k| !known.contains(&k.as_str())) {
        parts.notes.push(Note::Dropped(format!(
            "`{}` (not a setting of eve's connections)",
            shown(key)
        )));
    }
    parts.variables.sort();
    parts.variables.dedup();
    Ok(Server {
        name: name.to_string(),
        original: original.to_string(),
        transport: transport.to_string(),
        argv: parts.argv,
        cwd: parts.cwd,
        root: None,
        body: parts.body,
        variables: parts.variables,
        notes: parts.notes,
    })
}

/// A server's file as it is made.
#[derive(Default)]
struct Parts {
    argv: Vec<String>,
    cwd: Option<String>,
    body: String,
    variables: Vec<String>,
    notes: Vec<Note>,
}

/// A stdio server's command line, `cwd` and `env`.
fn stdio(config: &serde_json::Map<String, Value>, parts: &mut Parts) -> Result<(), String> {
    parts.argv = argv_of(config)?;
    parts.cwd = match config.get("cwd") {
        None => None,
        Some(Value::String(cwd)) => {
            check_command_part(cwd)?;
            Some(cwd.clone())
        }
        Some(_) => return Err("its `cwd` is not a string".into()),
    };
    if parts
        .argv
        .iter()
        .chain(parts.cwd.iter())
        .any(|a| a.contains(PLUGIN_ROOT))
    {
        parts.notes.push(Note::Changed(format!(
            "`{PLUGIN_ROOT}` → `{{{{ agent_dir }}}}`: the plugin's files it names are copied into the agent directory"
        )));
    }
    let env = values(
        config.get("env"),
        "env",
        crate::compiler::config::is_env_name,
        &mut parts.variables,
        &mut parts.notes,
    )?;
    if !env.is_empty() {
        parts
            .body
            .push_str(&format!("env = {{ {} }}\n", env.join(", ")));
    }
    Ok(())
}

/// An HTTP server's `url` and `headers`.
fn remote(
    config: &serde_json::Map<String, Value>,
    transport: &str,
    parts: &mut Parts,
) -> Result<(), String> {
    let url = config
        .get("url")
        .and_then(Value::as_str)
        .ok_or("its `url` is not a string")?;
    check_url(url)?;
    parts
        .body
        .push_str(&format!("url = {}\n", toml_string(url)));
    let header = |n: &str| {
        reqwest::header::HeaderName::from_bytes(n.as_bytes()).is_ok()
            && !crate::compiler::connections::RESERVED_HEADERS
                .contains(&n.to_ascii_lowercase().as_str())
    };
    let headers = values(
        config.get("headers"),
        "headers",
        header,
        &mut parts.variables,
        &mut parts.notes,
    )?;
    if !headers.is_empty() {
        parts
            .body
            .push_str(&format!("headers = {{ {} }}\n", headers.join(", ")));
    }
    if transport == "sse" {
        parts.notes.push(Note::Changed(
            "`type: sse`: eve tries streamable HTTP first and falls back to HTTP+SSE by itself"
                .into(),
        ));
    }
    Ok(())
}

/// The transport a server's settings ask for: `stdio`, `http` or `sse`.
fn transport_of(config: &serde_json::Map<String, Value>) -> Result<&'static str, String> {
    let text = |key: &str| config.get(key).and_then(Value::as_str);
    let transport = match (
        text("type"),
        config.contains_key("command"),
        config.contains_key("url"),
    ) {
        (Some("stdio"), _, _) | (None, true, _) => "stdio",
        (Some("http"), _, _) | (Some("streamable-http"), _, _) | (None, false, true) => "http",
        (Some("sse"), _, _) => "sse",
        (Some(other), _, _) => {
            return Err(format!(
                "its type `{}` is not a transport eve speaks (stdio, http, sse)",
                shown(other)
            ));
        }
        (None, false, false) => return Err("it has neither `command` nor `url`".into()),
    };
    Ok(transport)
}

/// A stdio server's command line: its `command` and `args`, each checked.
fn argv_of(config: &serde_json::Map<String, Value>) -> Result<Vec<String>, String> {
    let text = |key: &str| config.get(key).and_then(Value::as_str);
    let command = text("command")
        .filter(|c| !c.trim().is_empty())
        .ok_or("its `command` is not a program name")?;
    let mut argv = vec![command.to_string()];
    match config.get("args") {
        None => {}
        Some(Value::Array(args)) => {
            for arg in args {
                let arg = arg
                    .as_str()
                    .ok_or("an entry of its `args` is not a string")?;
                argv.push(arg.to_string());
            }
        }
        Some(_) => return Err("its `args` is not a list of strings".into()),
    }
    for arg in &argv {
        check_command_part(arg)?;
    }
    Ok(argv)
}

/// An HTTP server's `url` is an http or https URL and reads no variable.
fn check_url(url: &str) -> Result<(), String> {
    if url.contains("${") {
        return Err(format!(
            "its `url` reads environment variables (`{}`), and eve reads them only in `env` and `headers`",
            shown(url)
        ));
    }
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(format!(
            "its `url` `{}` is not an http or https URL",
            shown(url)
        ));
    }
    Ok(())
}

/// One element of a stdio command line may read `${CLAUDE_PLUGIN_ROOT}` (it becomes the
/// agent directory) and no other variable: eve keeps variables out of command lines,
/// which every process can read.
fn check_command_part(arg: &str) -> Result<(), String> {
    for named in server_files::named(arg) {
        if let server_files::Named::Escaping(path) = named {
            return Err(format!(
                "its command line reaches outside the plugin (`{}`): eve copies only the plugin's own files, and will not run one from outside the agent directory",
                shown(&path)
            ));
        }
    }
    if arg.split(PLUGIN_ROOT).any(|p| p.contains("${")) {
        return Err(format!(
            "its command line reads environment variables (`{}`), which eve refuses: command lines are visible to every process; pass them in `env` and let the server read them there",
            shown(arg)
        ));
    }
    Ok(())
}

/// `env` or `headers` as `KEY = "value"` entries of an inline table: `${VAR}` kept,
/// `${VAR:-default}` without its default, `$$` kept a `$$`; an entry eve cannot send is
/// dropped with a note.
fn values(
    table: Option<&Value>,
    key: &str,
    valid: impl Fn(&str) -> bool,
    variables: &mut Vec<String>,
    notes: &mut Vec<Note>,
) -> Result<Vec<String>, String> {
    let Some(table) = table else {
        return Ok(Vec::new());
    };
    let table = table
        .as_object()
        .ok_or(format!("its `{key}` is not an object of strings"))?;
    let mut out = Vec::new();
    for (name, value) in table {
        let Some(value) = value.as_str() else {
            notes.push(Note::Dropped(format!(
                "`{key}.{}`: not a string",
                shown(name)
            )));
            continue;
        };
        if !valid(name) {
            notes.push(Note::Dropped(format!(
                "`{key}.{}`: eve cannot send it (not a valid name, or eve sets it itself)",
                shown(name)
            )));
            continue;
        }
        match reference_value(value, variables) {
            Ok((converted, defaults)) => {
                for default in defaults {
                    notes.push(Note::Changed(format!(
                        "`{key}.{}`: the default of `{}` is dropped (eve has no defaults: the variable must be set)",
                        shown(name),
                        shown(&default)
                    )));
                }
                out.push(format!("{} = {}", toml_key(name), toml_string(&converted)));
            }
            Err(why) => notes.push(Note::Dropped(format!("`{key}.{}`: {why}", shown(name)))),
        }
    }
    Ok(out)
}

fn toml_key(name: &str) -> String {
    toml_edit::Key::new(name).display_repr().to_string()
}

/// Converts one value's references; returns the value and the `${VAR:-default}` forms
/// whose defaults were dropped.
fn reference_value(
    value: &str,
    variables: &mut Vec<String>,
) -> Result<(String, Vec<String>), String> {
    let mut out = String::new();
    let mut defaults = Vec::new();
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push_str("$$$$");
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            let end = tail.find('}').ok_or("a `${` is not closed")?;
            let inner = &tail[..end];
            let name = match inner.split_once(":-") {
                Some((name, _)) => {
                    defaults.push(format!("${{{inner}}}"));
                    name
                }
                None => inner,
            };
            if name == "CLAUDE_PLUGIN_ROOT" || name == "CLAUDE_PLUGIN_DATA" {
                return Err(format!(
                    "`${{{name}}}` is a folder of Claude Code's; set the value by hand"
                ));
            }
            if !crate::compiler::config::is_env_name(name) {
                return Err(format!(
                    "`${{{}}}` does not name an environment variable",
                    shown(inner)
                ));
            }
            variables.push(name.to_string());
            out.push_str(&format!("${{{name}}}"));
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok((out, defaults))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    fn one(config: Value) -> Result<Server, String> {
        let servers = read(&json!({ "mcpServers": { "My Server": config } }), &|_| {
            false
        });
        match (servers.servers.first(), servers.refused.first()) {
            (Some(s), _) => Ok(s.clone()),
            (_, Some(r)) => Err(r.why.clone()),
            _ => Err("nothing".into()),
        }
    }

    #[test]
    fn a_stdio_server_becomes_a_command_with_env() {
        let server = one(json!({
            "command": "${CLAUDE_PLUGIN_ROOT}/servers/db",
            "args": ["--config", "{{x}}.json"],
            "env": { "TOKEN": "${API_TOKEN}", "URL": "${BASE:-http://localhost}", "PRICE": "$$5", "bad-name": "x" },
            "timeout": 5
        }))
        .unwrap();
        assert_eq!(server.name, "my-server");
        assert_eq!(server.variables, ["API_TOKEN", "BASE"]);
        assert_eq!(
            server.file(".mcp.json", 0, None, &[]),
            "# Imported by `eve import claude` from .mcp.json (the server `My Server`).\n\
             command = [\"{{ agent_dir }}/servers/db\", \"--config\", \"{% raw %}{{x}}.json{% endraw %}\"]\n\
             env = { PRICE = \"$$$$5\", TOKEN = \"${API_TOKEN}\", URL = \"${BASE}\" }\n\
             # Claude Code starts without a server that fails; so does this agent.\n\
             required = false\n"
        );
        assert!(
            server
                .file(".mcp.json", 2, None, &[])
                .contains("command = [\"{{ agent_dir }}/../../servers/db\", ")
        );
        let notes: Vec<String> = server.notes.iter().map(|n| format!("{n:?}")).collect();
        assert_eq!(notes.len(), 5, "{notes:?}");
        assert!(notes.iter().any(|n| n.contains("bad-name")));
        assert!(notes.iter().any(|n| n.contains("`timeout`")));
        assert!(
            notes
                .iter()
                .any(|n| n.contains("default of `${BASE:-http://localhost}`"))
        );
    }

    #[test]
    fn http_and_sse_servers_keep_their_url_and_headers() {
        let server = one(json!({
            "type": "sse",
            "url": "https://mcp.example.com/sse",
            "headers": { "Authorization": "Bearer ${TOKEN}", "Host": "x" }
        }))
        .unwrap();
        assert_eq!(
            server.file(".mcp.json", 0, Some(&["search".into()]), &["delete".into()]),
            "# Imported by `eve import claude` from .mcp.json (the server `My Server`).\n\
             url = \"https://mcp.example.com/sse\"\n\
             headers = { Authorization = \"Bearer ${TOKEN}\" }\n\
             # Claude Code starts without a server that fails; so does this agent.\n\
             required = false\n\
             \n[tools]\nallow = [\"search\"]\nblock = [\"delete\"]\n"
        );
        assert_eq!(server.transport, "sse");
    }

    #[test]
    fn what_eve_cannot_express_is_refused_with_the_reason() {
        let refused = |config: Value| one(config).unwrap_err();
        assert!(
            refused(json!({"command": "npx", "args": ["--key", "${KEY}"]}))
                .contains("command line reads")
        );
        assert!(refused(json!({"url": "https://${HOST}/mcp"})).contains("`url` reads"));
        assert!(refused(json!({"type": "ws", "url": "ws://x"})).contains("not a transport"));
        assert!(refused(json!({"url": "ftp://x"})).contains("not an http"));
        assert!(refused(json!({})).contains("neither"));
        assert!(refused(json!("npx")).contains("not an object"));
    }

    #[test]
    fn names_are_made_apart() {
        let servers = read(
            &json!({ "a.b": {"command": "x"}, "a b": {"command": "y"}, "!!!": {"command": "z"} }),
            &|n| n == "taken",
        );
        let names: Vec<&str> = servers.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["a-b", "a-b-2"]);
        assert_eq!(servers.refused.len(), 1);
    }
}
