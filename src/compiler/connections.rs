//! `connections/<name>.toml`: an MCP server's settings, every key checked with its span;
//! then, with the server's listing, every tool name the file and `tools/` mention.

use std::collections::BTreeMap;
use std::ops::Range;

use sha2::{Digest, Sha256};

use super::diagnostic::{Diagnostic, Diagnostics, code};
use super::inputs::Loaded;
use super::listing::Known;
use super::shape::connection::{CALL_TIMEOUT_SECS, STARTUP_TIMEOUT_SECS};
use super::source::SourceFile;
use super::templates::check_template;
use super::toml_reader::{Spanned, TableReader, TomlFile};
use crate::compiler::connection_tools::{self, Pattern};
use crate::manifest::connection::{Connection, Listing, ToolOverride, Transport};
use crate::manifest::{Approval, Tool};
use crate::suggest;

/// Headers eve's MCP client sets itself.
pub const RESERVED_HEADERS: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// A connection file read, with what the checks against the listing need.
#[derive(Debug, Clone)]
pub struct Read {
    pub connection: Connection,
    src: SourceFile,
    /// `tools.allow` / `tools.block` entries and `tools.approval` keys, with their spans.
    entries: Vec<(&'static str, Spanned<String>)>,
}

/// A `tools/<connection>__<tool>.toml` override, read by the tool files' compiler.
#[derive(Debug, Clone)]
pub struct RoutedOverride {
    pub connection: String,
    pub final_name: String,
    pub over: ToolOverride,
    pub src: SourceFile,
    pub span: Option<Range<usize>>,
}

/// Reads every connection file of one agent directory.
pub fn read_all(files: &[Loaded], diags: &mut Diagnostics) -> Vec<Read> {
    files.iter().filter_map(|f| read(f, diags)).collect()
}

fn read(file: &Loaded, diags: &mut Diagnostics) -> Option<Read> {
    let name = file
        .path
        .trim_start_matches("connections/")
        .trim_end_matches(".toml")
        .to_string();
    if !super::skills::is_valid_name(&name) {
        diags.push(
            Diagnostic::error(
                code::INVALID_CONNECTION_NAME,
                format!("invalid connection name `{name}`"),
            )
            .file(file.display.clone())
            .note("connection names are lowercase letters, digits, `-` and `_`, starting with a letter or digit, at most 64 characters"),
        );
        return None;
    }
    let src = SourceFile::new(&file.display, &file.text);
    let toml = match TomlFile::parse(src.clone()) {
        Ok(toml) => toml,
        Err(diagnostic) => {
            diags.push(*diagnostic);
            return None;
        }
    };
    let mut root = toml.root(&super::shape::connection::CONNECTION);
    let read = read_connection(&name, &mut root, file);
    root.finish();
    let problems = toml.into_diagnostics();
    let ok = !problems.has_errors();
    diags.extend(problems);
    let (connection, entries) = read?;
    ok.then_some(Read {
        connection,
        src,
        entries,
    })
}

type Entries = Vec<(&'static str, Spanned<String>)>;

fn read_connection(
    name: &str,
    root: &mut TableReader<'_>,
    file: &Loaded,
) -> Option<(Connection, Entries)> {
    let toml = root.file();
    let description = root.string("description").and_then(|d| {
        if d.value.trim().is_empty() {
            toml.error(
                code::INVALID_VALUE,
                "`description` must not be empty",
                d.span,
            );
            None
        } else {
            Some(d.value)
        }
    });
    let transport = read_transport(name, root, file);
    let required = root.bool("required").is_none_or(|b| b.value);
    let startup_timeout_secs = root
        .positive_int("startup_timeout_secs")
        .map_or(STARTUP_TIMEOUT_SECS, |t| t.value);
    let timeout_secs = root
        .positive_int("timeout_secs")
        .map_or(CALL_TIMEOUT_SECS, |t| t.value);
    let defer = root.bool("defer").is_some_and(|b| b.value);
    let tools = root.table("tools").map(read_tools).unwrap_or_default();
    let connection = Connection {
        name: name.to_string(),
        description,
        transport: transport?,
        required,
        startup_timeout_secs,
        timeout_secs,
        defer,
        allow: tools.allow,
        block: tools.block,
        approval: tools.approval,
        overrides: BTreeMap::new(),
        key: key(&file.text),
        file: file.display.clone(),
    };
    Some((connection, tools.entries))
}

/// `command` (a local server, stdio) or `url` (a remote one, HTTP): exactly one.
fn read_transport(name: &str, root: &mut TableReader<'_>, file: &Loaded) -> Option<Transport> {
    let toml = root.file();
    let command_span = root.key_span("command");
    let command = root.string_array("command");
    let url = root.string("url");
    match (command, url) {
        (Some(command), None) => read_stdio(root, command, command_span),
        (None, Some(url)) => read_http(root, url),
        (Some(_), Some(_)) => {
            toml.report(
                Diagnostic::error(
                    code::CONNECTION_TRANSPORT,
                    format!("connection `{name}` has both `command` and `url`"),
                )
                .at(&toml.src, root.key_span("url"))
                .help("keep one: `command` starts a local server (stdio), `url` reaches a remote one (HTTP)"),
            );
            None
        }
        (None, None) => {
            if !root.contains("command") && !root.contains("url") {
                toml.report(
                    Diagnostic::error(
                        code::CONNECTION_TRANSPORT,
                        format!("connection `{name}` has neither `command` nor `url`"),
                    )
                    .file(file.display.clone())
                    .help("add `command = [\"npx\", \"-y\", \"@modelcontextprotocol/server-everything\"]` for a local server, or `url = \"https://…/mcp\"` for a remote one"),
                );
            }
            None
        }
    }
}

/// What `[tools]` says of the server's tools.
#[derive(Default)]
struct ToolRules {
    allow: Vec<String>,
    block: Vec<String>,
    approval: BTreeMap<String, Approval>,
    /// Every valid entry, with its span, for the checks against the listing.
    entries: Entries,
}

/// `[tools]`: `allow` and `block` patterns, and `[tools.approval]`.
fn read_tools(mut tools: TableReader<'_>) -> ToolRules {
    let toml = tools.file();
    let mut rules = ToolRules::default();
    for (key, list) in [("allow", &mut rules.allow), ("block", &mut rules.block)] {
        for pattern in tools.string_array(key).unwrap_or_default() {
            if check_pattern(toml, &format!("tools.{key}"), &pattern) {
                list.push(pattern.value.clone());
                rules.entries.push((key, pattern));
            }
        }
    }
    if let Some(mut table) = tools.table("approval") {
        read_approvals(&mut table, &mut rules);
        table.finish();
    }
    tools.finish();
    rules
}

/// `[tools.approval]`: a tool name or pattern, `"never"` or `"always"`.
fn read_approvals(table: &mut TableReader<'_>, rules: &mut ToolRules) {
    let toml = table.file();
    for (tool, item) in table.entries() {
        let span = table.key_span(tool);
        let key = Spanned {
            value: tool.to_string(),
            span: span.clone(),
        };
        if !check_pattern(toml, "tools.approval", &key) {
            continue;
        }
        match item.as_str() {
            Some("never") => {
                rules.approval.insert(tool.to_string(), Approval::Never);
            }
            Some("always") => {
                rules.approval.insert(tool.to_string(), Approval::Always);
            }
            Some(other) => toml.report(
                Diagnostic::error(
                    code::UNKNOWN_APPROVAL,
                    format!("unknown approval `{other}`"),
                )
                .at(&toml.src, item.span())
                .note("an approval is `never` (run without asking) or `always` (ask before each call)")
                .suggest(suggest::closest(other, super::shape::APPROVALS.iter().copied())),
            ),
            None => toml.error(
                code::WRONG_TYPE,
                format!("`tools.approval.{tool}` must be `\"never\"` or `\"always\"`"),
                item.span().or(span.clone()),
            ),
        }
        rules.entries.push(("approval", key));
    }
}

/// The cache key of a connection file: a hash of its bytes.
pub fn key(text: &str) -> String {
    let mut hasher = Sha256::new();
    hasher.update(b"eve connection listing v1\0");
    hasher.update(text.as_bytes());
    format!("sha256:{}", crate::text::hex(&hasher.finalize()))
}

fn read_stdio(
    root: &mut TableReader<'_>,
    command: Vec<Spanned<String>>,
    command_span: Option<Range<usize>>,
) -> Option<Transport> {
    let toml = root.file();
    let mut ok = true;
    if command.is_empty() || command[0].value.trim().is_empty() {
        toml.report(
            Diagnostic::error(code::EMPTY_COMMAND, "`command` is empty")
                .at(&toml.src, command_span)
                .help("name the server program and its arguments, e.g. `command = [\"npx\", \"-y\", \"@modelcontextprotocol/server-filesystem\", \".\"]`"),
        );
        ok = false;
    }
    for arg in &command {
        ok &= no_reference(toml, "command", arg);
        ok &= check_template(toml, "command", arg, &["agent_dir", "workspace"]);
    }
    let cwd = root.string("cwd");
    if let Some(cwd) = &cwd {
        ok &= no_reference(toml, "cwd", cwd);
        ok &= check_template(toml, "cwd", cwd, &["agent_dir", "workspace"]);
    }
    let env = read_values(root, "env", super::config::is_env_name);
    let sandbox = root.bool("sandbox").is_none_or(|b| b.value);
    if root.contains("headers") {
        toml.report(
            Diagnostic::error(
                code::WRONG_TRANSPORT_KEY,
                "`headers` is only for HTTP connections",
            )
            .at(&toml.src, root.key_span("headers"))
            .note(
                "this connection starts a local server with `command`; pass what it needs in `env`",
            ),
        );
        root.item("headers");
        ok = false;
    }
    let env = env?;
    ok.then(|| Transport::Stdio {
        command: command.into_iter().map(|a| a.value).collect(),
        env,
        cwd: cwd.map(|c| c.value),
        sandbox,
    })
}

fn read_http(root: &mut TableReader<'_>, url: Spanned<String>) -> Option<Transport> {
    let toml = root.file();
    let mut ok = no_reference(toml, "url", &url);
    match reqwest::Url::parse(&url.value) {
        Ok(parsed) if matches!(parsed.scheme(), "http" | "https") && parsed.host().is_some() => {}
        Ok(parsed) => {
            toml.report(
                Diagnostic::error(
                    code::INVALID_URL,
                    format!(
                        "`url` must be an http or https URL, not `{}:`",
                        parsed.scheme()
                    ),
                )
                .at(&toml.src, url.span.clone())
                .help("to start a local server, use `command = [...]` instead"),
            );
            ok = false;
        }
        Err(e) => {
            toml.error(
                code::INVALID_URL,
                format!("`url` is not a URL: {e}"),
                url.span.clone(),
            );
            ok = false;
        }
    }
    for key in ["env", "cwd"] {
        if root.contains(key) {
            toml.report(
                Diagnostic::error(
                    code::WRONG_TRANSPORT_KEY,
                    format!("`{key}` is only for connections that start a server with `command`"),
                )
                .at(&toml.src, root.key_span(key))
                .note("this connection reaches a server over HTTP; credentials go in `headers`"),
            );
            ok = false;
        }
    }
    if root.contains("sandbox") {
        toml.report(
            Diagnostic::error(
                code::WRONG_TRANSPORT_KEY,
                "`sandbox` is only for connections that start a server with `command`",
            )
            .at(&toml.src, root.key_span("sandbox"))
            .note("this connection reaches a server over HTTP: eve starts no process it could confine"),
        );
        ok = false;
    }
    root.item("env");
    root.item("cwd");
    root.item("sandbox");
    let headers = read_values(root, "headers", |name| {
        reqwest::header::HeaderName::from_bytes(name.as_bytes()).is_ok()
            && !RESERVED_HEADERS.contains(&name.to_ascii_lowercase().as_str())
    });
    let headers = headers?;
    ok.then_some(Transport::Http {
        url: url.value,
        headers,
    })
}

/// A table of string values (`env`, `headers`) whose values may hold `${VAR}`.
fn read_values(
    root: &mut TableReader<'_>,
    key: &'static str,
    valid_name: impl Fn(&str) -> bool,
) -> Option<BTreeMap<String, String>> {
    let toml = root.file();
    let mut out = BTreeMap::new();
    let Some(mut table) = root.table(key) else {
        return Some(out);
    };
    let mut ok = true;
    for (name, item) in table.entries() {
        if !valid_name(name) {
            let what = if key == "env" {
                format!("`{name}` is not an environment variable name")
            } else {
                format!(
                    "`{name}` cannot be sent as a header: eve sets it, or it is not a header name"
                )
            };
            toml.error(code::INVALID_VALUE, what, table.key_span(name));
            ok = false;
            continue;
        }
        let Some(value) = item.as_str() else {
            toml.error(
                code::WRONG_TYPE,
                format!("`{key}.{name}` must be a string"),
                item.span().or_else(|| table.key_span(name)),
            );
            ok = false;
            continue;
        };
        if let Err(problem) = check_references(value) {
            toml.report(
                Diagnostic::error(code::INVALID_REFERENCE, format!("`{key}.{name}`: {problem}"))
                    .at(&toml.src, item.span())
                    .note("`${NAME}` is replaced by the variable NAME of eve's environment when the server starts; `$$` is a literal `$`"),
            );
            ok = false;
            continue;
        }
        out.insert(name.to_string(), value.to_string());
    }
    table.finish();
    ok.then_some(out)
}

/// Checks the `${VAR}` references of a value: closed, and naming a variable.
pub fn check_references(value: &str) -> Result<(), String> {
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            let Some(end) = tail.find('}') else {
                return Err("`${` is not closed with `}`".into());
            };
            let name = &tail[..end];
            if !super::config::is_env_name(name) {
                return Err(format!(
                    "`${{{name}}}` does not name an environment variable"
                ));
            }
            rest = &tail[end + 1..];
        } else {
            rest = after;
        }
    }
    Ok(())
}

/// `${VAR}` is read only where eve passes values on by itself (`env`, `headers`).
fn no_reference(toml: &TomlFile, key: &str, value: &Spanned<String>) -> bool {
    if !value.value.contains("${") {
        return true;
    }
    toml.report(
        Diagnostic::error(
            code::INVALID_REFERENCE,
            format!("`{key}` cannot read variables: `${{…}}` is only replaced in `env` and `headers` values"),
        )
        .at(&toml.src, value.span.clone())
        .help("pass the value in `env` (or `headers`) and let the server read it from there"),
    );
    false
}

fn check_pattern(toml: &TomlFile, key: &str, pattern: &Spanned<String>) -> bool {
    if pattern.value.is_empty() {
        toml.error(
            code::INVALID_VALUE,
            format!("`{key}` entries must not be empty"),
            pattern.span.clone(),
        );
        return false;
    }
    if pattern.value.contains(['*', '?', '[', '{'])
        && let Err(e) = globset::Glob::new(&pattern.value)
    {
        toml.error(
            code::INVALID_VALUE,
            format!(
                "`{}` in `{key}` is not a valid pattern: {}",
                pattern.value,
                e.kind()
            ),
            pattern.span.clone(),
        );
        return false;
    }
    true
}

/// Checks what a connection file and its tool overrides say against the server's
/// listing, and returns the tools it offers (none when there is no listing).
/// `subagent` names the subagent whose connection it is (`None`: the agent's own).
pub fn check(
    read: &Read,
    known: &Known,
    overrides: Vec<RoutedOverride>,
    subagent: Option<&str>,
    diags: &mut Diagnostics,
) -> (Connection, Vec<Tool>) {
    let mut connection = read.connection.clone();
    let name = connection.name.clone();
    match known {
        Known::Failed { reason, stale } => {
            // Subagents may each have a connection of the same name: say whose it is.
            let whose = subagent.map_or_else(String::new, |s| format!(" of subagent `{s}`"));
            let message = format!("cannot list the tools of connection `{name}`{whose}: {reason}");
            let diagnostic = if connection.required && stale.is_none() {
                Diagnostic::error(code::CONNECTION_NOT_LISTED, message)
                .help("check that the server starts (`eve connections` shows it), or set `required = false` to build without it")
            } else {
                let then = if stale.is_some() {
                    "the tools it listed before are used"
                } else {
                    "its tool names are checked when a session starts it"
                };
                Diagnostic::warning(code::CONNECTION_UNREACHABLE, message).note(then)
            };
            diags.push(diagnostic.file(connection.file.clone()));
        }
        Known::Listed { .. } | Known::Unlisted => {}
    }
    let Some(listing) = known.listing() else {
        for routed in overrides {
            connection.overrides.insert(routed.final_name, routed.over);
        }
        return (connection, Vec::new());
    };
    for left in &listing.left_out {
        diags.push(
            Diagnostic::warning(
                code::SERVER_TOOL_LEFT_OUT,
                format!(
                    "tool `{}` of connection `{name}` is left out: {}",
                    crate::text::shorten(&left.name, 80),
                    left.reason
                ),
            )
            .file(connection.file.clone()),
        );
    }
    check_entries(read, listing, diags);
    let finals: Vec<String> = listing
        .tools
        .iter()
        .map(|t| connection_tools::final_name(&name, &t.name))
        .collect();
    for routed in overrides {
        if finals.contains(&routed.final_name) {
            connection.overrides.insert(routed.final_name, routed.over);
            continue;
        }
        let diagnostic = Diagnostic::error(
            code::UNKNOWN_CONNECTION_TOOL,
            format!("unknown tool `{}`", routed.final_name),
        )
        .at(&routed.src, routed.span.clone())
        .note(format!(
            "this file changes a tool of connection `{name}`, but its server lists no tool with that name"
        ));
        let diagnostic =
            match suggest::likely(&routed.final_name, finals.iter().map(String::as_str)) {
                Some(near) => diagnostic.help(format!("did you mean `{near}`?")),
                None => diagnostic.note(format!("`{name}` offers {}", some_names(&finals))),
            };
        diags.push(diagnostic);
    }
    let offers = connection_tools::offer(&connection, &listing.tools);
    for offer in &offers {
        if offer.final_name != format!("{name}__{}", offer.server_name) {
            diags.push(
                Diagnostic::warning(
                    code::SHORTENED_TOOL_NAME,
                    format!(
                        "tool `{}` of connection `{name}` is offered as `{}`",
                        crate::text::shorten(&offer.server_name, 80),
                        offer.final_name
                    ),
                )
                .file(connection.file.clone())
                .note("models take tool names of at most 64 letters, digits, `_` and `-`; eve shortens the others the same way every time"),
            );
        }
    }
    let tools = offers
        .into_iter()
        .filter(|o| o.left_out.is_none())
        .map(|o| o.tool)
        .collect();
    (connection, tools)
}

/// An `allow`, `block` or `approval` entry that matches no listed tool is a mistake.
fn check_entries(read: &Read, listing: &Listing, diags: &mut Diagnostics) {
    let names: Vec<&str> = listing.tools.iter().map(|t| t.name.as_str()).collect();
    let name = &read.connection.name;
    for (key, entry) in &read.entries {
        if *key == "approval" && entry.value == "*" {
            continue;
        }
        let pattern = Pattern::new(&entry.value);
        if names.iter().any(|n| pattern.matches(n)) {
            continue;
        }
        let diagnostic = Diagnostic::error(
            code::NO_MATCHING_TOOL,
            format!(
                "`{}` in `tools.{key}` matches no tool of connection `{name}`",
                entry.value
            ),
        )
        .at(&read.src, entry.span.clone());
        let diagnostic = match suggest::likely(&entry.value, names.iter().copied()) {
            Some(near) => diagnostic.help(format!("did you mean `{near}`?")),
            None => diagnostic.note(format!("`{name}` lists {}", some_names(&names))),
        };
        diags.push(diagnostic);
    }
}

/// Up to ten names, for a note.
fn some_names<S: AsRef<str>>(names: &[S]) -> String {
    if names.is_empty() {
        return "no tools".into();
    }
    let mut shown: Vec<String> = names
        .iter()
        .take(10)
        .map(|n| format!("`{}`", n.as_ref()))
        .collect();
    if names.len() > 10 {
        shown.push(format!("and {} more", names.len() - 10));
    }
    shown.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_must_be_closed_and_name_a_variable() {
        assert!(check_references("Bearer ${TOKEN}").is_ok());
        assert!(check_references("$$ $5 ${A_1}").is_ok());
        assert_eq!(
            check_references("Bearer ${TOKEN").unwrap_err(),
            "`${` is not closed with `}`"
        );
        assert_eq!(
            check_references("${1X}").unwrap_err(),
            "`${1X}` does not name an environment variable"
        );
    }

    #[test]
    fn the_key_changes_with_every_byte() {
        assert_ne!(key("command = [\"a\"]"), key("command = [\"b\"]"));
        assert_eq!(key("x"), key("x"));
    }
}
