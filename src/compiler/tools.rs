//! `tools/<slug>.toml`: disabling, overriding and adding tools, resolved against the catalog.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use super::config::Config;
use super::connections::RoutedOverride;
use super::diagnostic::{Diagnostic, Diagnostics, code};
use super::inputs::Loaded;
use super::shape::tool::{CUSTOM_TOOL_TIMEOUT_SECS, HTTP_METHODS};
use super::source::SourceFile;
use super::templates::check_template;
use super::toml_reader::{self, Spanned, TableReader, TomlFile};
use crate::catalog::{Availability, BuiltinTool, Catalog, SettingKind};
use crate::manifest::connection::ToolOverride;
use crate::manifest::{Api, Approval, Executor, Tool, ToolSource};
use crate::suggest;

/// Whether a name is a valid tool slug: `^[a-z][a-z0-9_]{0,63}$`.
pub fn is_valid_slug(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// A built-in tool's changed description, approval, timeout or settings.
#[derive(Debug, Default)]
struct Override {
    description: Option<String>,
    approval: Option<Approval>,
    timeout_secs: Option<u64>,
    defer: Option<bool>,
    settings: BTreeMap<String, serde_json::Value>,
    is_empty: bool,
    file: String,
}

/// What one tool file asks for.
enum Request {
    Disable,
    Override(Override),
    Custom(Tool),
}

/// The tool files compiled: the tools of the catalog and the agent, and the files that
/// change a connection's tools (checked with the connection).
#[derive(Debug, Default)]
pub struct Compiled {
    pub tools: Vec<Tool>,
    pub routed: Vec<RoutedOverride>,
}

/// Compiles every tool file and combines them with the built-in catalog into the tools
/// the model will see (subagent and connection tools are added by the caller).
/// `connections` are the agent's connection names: `tools/<connection>__<tool>.toml`
/// changes that connection's tool; `deferred_elsewhere` says whether a connection
/// defers its tools. `load_skill` is offered with `skills`, `search_tools` when a tool
/// or a skill is deferred, `call_tool` when a tool is.
pub fn compile(
    files: &[Loaded],
    config: &Config,
    skills: &[crate::manifest::Skill],
    catalog: &Catalog,
    connections: &[&str],
    deferred_elsewhere: bool,
    diags: &mut Diagnostics,
) -> Compiled {
    let Requests {
        disabled,
        mut overrides,
        mut customs,
        routed,
    } = read_files(files, catalog, connections, diags);

    let has_deferred = deferred_elsewhere
        || routed.iter().any(|r| r.over.defer == Some(true))
        || overrides.values().any(|o: &Override| o.defer == Some(true))
        || customs.values().any(|t: &Tool| t.defer);
    let mut tools = Vec::new();
    for builtin in catalog.iter() {
        if disabled.contains(builtin.name) {
            continue;
        }
        if let Some(custom) = customs.remove(builtin.name) {
            tools.push(custom);
            continue;
        }
        let over = overrides.remove(builtin.name);
        // Without default tools, a built-in comes back through its tool file; `load_skill`
        // also comes with the skills themselves, which are useless without it.
        let implied = matches!(
            builtin.availability,
            Availability::WithSkills | Availability::WithDeferred | Availability::WithDeferredTools
        );
        if !config.agent.default_tools && over.is_none() && !implied {
            continue;
        }
        let available = match builtin.availability {
            Availability::Always => true,
            Availability::WithSkills => !skills.is_empty(),
            Availability::WithDeferred => has_deferred || skills.iter().any(|s| s.deferred),
            Availability::WithDeferredTools => has_deferred,
            Availability::ProviderHosted => config.api.is_some_and(Api::hosts_web_search),
        };
        if !available {
            if let Some(over) = &over {
                warn_not_offered(builtin, over, config, diags);
            }
            continue;
        }
        if let Some(over) = &over
            && over.is_empty
            && config.agent.default_tools
        {
            diags.push(
                    Diagnostic::warning(
                        code::EMPTY_OVERRIDE,
                        format!("`{}` changes nothing", over.file),
                    )
                    .file(over.file.clone())
                    .help("set `description`, `approval`, `timeout_secs` or `[settings]`, `disabled = true`, or delete the file"),
                );
        }
        tools.push(builtin_tool(builtin, over));
    }
    tools.extend(customs.into_values());
    Compiled { tools, routed }
}

/// What the tool files ask for, by slug.
struct Requests {
    disabled: BTreeSet<String>,
    overrides: BTreeMap<String, Override>,
    customs: BTreeMap<String, Tool>,
    /// The files named `<connection>__<tool>`, for that connection.
    routed: Vec<RoutedOverride>,
}

/// Compiles each tool file: a file whose name starts with a connection's name and `__`
/// (the longest such name) changes that connection's tool; any other disables, overrides
/// or adds a tool.
fn read_files(
    files: &[Loaded],
    catalog: &Catalog,
    connections: &[&str],
    diags: &mut Diagnostics,
) -> Requests {
    let mut requests = Requests {
        disabled: BTreeSet::new(),
        overrides: BTreeMap::new(),
        customs: BTreeMap::new(),
        routed: Vec::new(),
    };
    for file in files {
        let slug = file
            .path
            .trim_start_matches("tools/")
            .trim_end_matches(".toml")
            .to_string();
        let owner = connections
            .iter()
            .filter(|c| slug.starts_with(&format!("{c}__")))
            .max_by_key(|c| c.len());
        if let Some(owner) = owner {
            requests
                .routed
                .extend(compile_connection_override(owner, &slug, file, diags));
            continue;
        }
        match compile_file(&slug, file, catalog, diags) {
            Some(Request::Disable) => {
                requests.disabled.insert(slug);
            }
            Some(Request::Override(o)) => {
                requests.overrides.insert(slug, o);
            }
            Some(Request::Custom(tool)) => {
                requests.customs.insert(slug, tool);
            }
            None => {}
        }
    }
    requests
}

/// W0216: a tool file overrides a built-in the model is not offered; says why not.
fn warn_not_offered(
    builtin: &BuiltinTool,
    over: &Override,
    config: &Config,
    diags: &mut Diagnostics,
) {
    let why = match builtin.availability {
        Availability::WithSkills => "the agent has no skills".to_string(),
        Availability::WithDeferred => {
            "no tool has `defer = true` and no skill is deferred".to_string()
        }
        Availability::WithDeferredTools => "no tool has `defer = true`".to_string(),
        _ => format!(
            "it is only offered where the provider runs it (Anthropic's Messages API, OpenAI's Responses API), and the model is `{}`",
            config.agent.model
        ),
    };
    diags.push(
        Diagnostic::warning(
            code::TOOL_NOT_AVAILABLE,
            format!("`{}` is not offered to the model: {why}", builtin.name),
        )
        .file(over.file.clone())
        .note("this file has no effect"),
    );
}

/// `tools/<connection>__<tool>.toml`: the description, approval or deferral of one tool
/// of a connection, or `disabled = true`. Whether the tool exists is checked with the
/// server's listing.
fn compile_connection_override(
    connection: &str,
    slug: &str,
    file: &Loaded,
    diags: &mut Diagnostics,
) -> Option<RoutedOverride> {
    if !super::connection_tools::is_provider_name(slug) {
        diags.push(
            Diagnostic::error(code::INVALID_TOOL_SLUG, format!("invalid tool name `{slug}`"))
                .file(file.display.clone())
                .note("tool names are at most 64 letters, digits, `_` and `-`; `eve connections` shows the names a connection's tools have"),
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
    let mut root = toml.root(&super::shape::tool::CONNECTION_TOOL);
    let span = root.keys().first().and_then(|k| root.key_span(k));
    let mut over = ToolOverride {
        file: file.display.clone(),
        ..ToolOverride::default()
    };
    over.disabled = root.bool("disabled").is_some_and(|d| d.value);
    if let Some(description) = root.string("description") {
        over.description = non_empty(&toml, "description", description);
    }
    over.approval = read_approval(&mut root);
    over.defer = root.bool("defer").map(|d| d.value);
    if over.disabled {
        root.reject_all_but(
            &["disabled"],
            "cannot be set on a disabled tool",
            code::DISABLED_WITH_KEYS,
        );
    } else {
        root.finish();
    }
    let problems = toml.into_diagnostics();
    let ok = !problems.has_errors();
    diags.extend(problems);
    ok.then(|| RoutedOverride {
        connection: connection.to_string(),
        final_name: slug.to_string(),
        over,
        src,
        span,
    })
}

fn builtin_tool(builtin: &BuiltinTool, over: Option<Override>) -> Tool {
    let source = match &over {
        Some(o) if !o.is_empty => ToolSource::Override,
        _ => ToolSource::Builtin,
    };
    let over = over.unwrap_or_default();
    Tool {
        name: builtin.name.to_string(),
        description: over
            .description
            .unwrap_or_else(|| builtin.description.to_string()),
        input_schema: builtin.schema(),
        source,
        approval: over.approval.unwrap_or(Approval::Never),
        timeout_secs: over.timeout_secs.unwrap_or(builtin.timeout_secs),
        read_only: builtin.read_only,
        executor: Executor::Builtin,
        settings: over.settings,
        defer: over.defer.unwrap_or(false),
    }
}

/// `defer = true`: the tool is reached through the catalog. The catalog's own tools
/// cannot be, or nothing would reach the rest.
fn read_defer(slug: &str, root: &mut TableReader<'_>) -> Option<bool> {
    let defer = root.bool("defer")?;
    if defer.value && CATALOG_TOOLS.contains(&slug) {
        root.file().error(
            code::INVALID_VALUE,
            format!("`{slug}` cannot be deferred: it is how the model reaches deferred tools"),
            defer.span,
        );
        return None;
    }
    Some(defer.value)
}

/// The built-ins through which the model reaches deferred tools.
const CATALOG_TOOLS: &[&str] = &["search_tools", "call_tool"];

fn compile_file(
    slug: &str,
    file: &Loaded,
    catalog: &Catalog,
    diags: &mut Diagnostics,
) -> Option<Request> {
    let src = SourceFile::new(&file.display, &file.text);
    if !is_valid_slug(slug) {
        diags.push(
            Diagnostic::error(code::INVALID_TOOL_SLUG, format!("invalid tool name `{slug}`"))
                .file(file.display.clone())
                .note("a tool file is named `<slug>.toml`, where the slug is a lowercase letter followed by up to 63 lowercase letters, digits or `_`")
                .help(suggest_slug(slug)),
        );
        return None;
    }
    let toml = match TomlFile::parse(src) {
        Ok(toml) => toml,
        Err(diagnostic) => {
            diags.push(*diagnostic);
            return None;
        }
    };
    let builtin = catalog.find(slug);
    let mut root = toml.root(&super::shape::tool::OVERRIDE);
    let (request, check_keys) = read_tool(slug, builtin, catalog, &mut root, &file.display);
    if check_keys {
        root.finish();
    }
    diags.extend(toml.into_diagnostics());
    request
}

fn read_tool(
    slug: &str,
    builtin: Option<&'static BuiltinTool>,
    catalog: &Catalog,
    root: &mut TableReader<'_>,
    display: &str,
) -> (Option<Request>, bool) {
    let toml = root.file();
    let keys = root.keys();
    if root.contains("disabled") {
        let disabled = root.bool("disabled");
        if disabled.as_ref().is_some_and(|d| d.value) {
            if builtin.is_none() {
                unknown_tool(toml, slug, root.key_span("disabled"), "disables", catalog);
                return (None, false);
            }
            let others: Vec<&str> = keys.iter().copied().filter(|k| *k != "disabled").collect();
            if !others.is_empty() {
                root.reject_all_but(
                    &["disabled"],
                    "cannot be set on a disabled tool",
                    code::DISABLED_WITH_KEYS,
                );
                return (None, false);
            }
            return (Some(Request::Disable), true);
        }
        if disabled.is_none() {
            return (None, true);
        }
    }
    let is_custom = super::shape::tool::NEW_TOOL_KEYS
        .iter()
        .any(|k| root.contains(k));
    if is_custom {
        root.set_shape(&super::shape::tool::NEW);
        return (
            read_custom(slug, root, display, catalog).map(Request::Custom),
            true,
        );
    }
    let Some(builtin) = builtin else {
        let span = keys.first().and_then(|k| root.key_span(k));
        unknown_tool(toml, slug, span, "overrides", catalog);
        return (None, false);
    };
    let mut over = Override {
        file: display.to_string(),
        is_empty: keys.iter().all(|k| *k == "disabled"),
        ..Override::default()
    };
    if let Some(description) = root.string("description") {
        over.description = non_empty(toml, "description", description);
    }
    over.approval = read_approval(root);
    over.timeout_secs = root.positive_int("timeout_secs").map(|t| t.value);
    over.defer = read_defer(slug, root);
    if let Some(settings) = root.table("settings") {
        over.settings = read_settings(builtin, settings);
    }
    (Some(Request::Override(over)), true)
}

fn unknown_tool(
    toml: &TomlFile,
    slug: &str,
    span: Option<Range<usize>>,
    verb: &str,
    catalog: &Catalog,
) {
    let diagnostic = Diagnostic::error(code::UNKNOWN_TOOL, format!("unknown tool `{slug}`"))
        .at(&toml.src, span)
        .note(format!(
            "this file {verb} a built-in tool, but no built-in tool has that name"
        ));
    let diagnostic = match suggest::closest(slug, catalog.names()) {
        Some(s) => diagnostic.help(format!("did you mean `{s}`?")),
        None => diagnostic.help(
            "to add a new tool, give it `description`, `[input_schema]` and `command` or `[http]`",
        ),
    };
    toml.report(diagnostic);
}

fn non_empty(toml: &TomlFile, key: &str, value: Spanned<String>) -> Option<String> {
    if value.value.trim().is_empty() {
        toml.error(
            code::INVALID_VALUE,
            format!("`{key}` must not be empty"),
            value.span,
        );
        None
    } else {
        Some(value.value)
    }
}

fn read_approval(root: &mut TableReader<'_>) -> Option<Approval> {
    let approval = root.string("approval")?;
    match approval.value.as_str() {
        "never" => Some(Approval::Never),
        "always" => Some(Approval::Always),
        other => {
            let toml = root.file();
            toml.report(
                Diagnostic::error(
                    code::UNKNOWN_APPROVAL,
                    format!("unknown approval `{other}`"),
                )
                .at(&toml.src, approval.span)
                .note(
                    "`approval` is `never` (run without asking) or `always` (ask before each call)",
                )
                .suggest(suggest::closest(
                    other,
                    super::shape::APPROVALS.iter().copied(),
                )),
            );
            None
        }
    }
}

fn read_settings(
    builtin: &BuiltinTool,
    mut settings: TableReader<'_>,
) -> BTreeMap<String, serde_json::Value> {
    let toml = settings.file();
    let mut out = BTreeMap::new();
    let known: Vec<&str> = builtin.settings.iter().map(|s| s.name).collect();
    for (key, item) in settings.entries() {
        let Some(setting) = builtin.setting(key) else {
            let diagnostic = Diagnostic::error(
                code::UNKNOWN_SETTING,
                format!("`{}` has no setting `{key}`", builtin.name),
            )
            .at(&toml.src, settings.key_span(key));
            let diagnostic = match (
                suggest::closest(key, known.iter().copied()),
                known.is_empty(),
            ) {
                (Some(s), _) => diagnostic.help(format!("did you mean `{s}`?")),
                (None, true) => diagnostic.note(format!("`{}` takes no settings", builtin.name)),
                (None, false) => diagnostic.note(format!(
                    "`{}` settings: {}",
                    builtin.name,
                    toml_reader::list(&known)
                )),
            };
            toml.report(diagnostic);
            continue;
        };
        let json = toml_reader::to_json(item);
        let ok = match setting.kind {
            SettingKind::Bool => json.is_boolean(),
            SettingKind::PositiveInt => json.as_u64().is_some_and(|n| n > 0),
            SettingKind::StringList => json
                .as_array()
                .is_some_and(|a| a.iter().all(serde_json::Value::is_string)),
            SettingKind::IntRange { min, max, .. } => {
                json.as_u64().is_some_and(|n| (min..=max).contains(&n))
            }
            SettingKind::CommandPatterns => match item.as_array() {
                Some(array) if array.iter().all(|v| v.as_str().is_some()) => {
                    if command_patterns(toml, key, array) {
                        out.insert(key.to_string(), json);
                    }
                    continue;
                }
                _ => false,
            },
        };
        if ok {
            out.insert(key.to_string(), json);
        } else if let (SettingKind::IntRange { min, max, .. }, Some(n)) =
            (setting.kind, json.as_i64())
        {
            toml.report(
                Diagnostic::error(
                    code::OUT_OF_RANGE,
                    format!("`settings.{key}` must be from {min} to {max}, found {n}"),
                )
                .at(&toml.src, item.span().or_else(|| settings.key_span(key)))
                .note(format!("`{key}` is {}", setting.description)),
            );
        } else {
            let expected = match setting.kind {
                SettingKind::Bool => "true or false",
                SettingKind::PositiveInt => "a positive integer",
                SettingKind::StringList | SettingKind::CommandPatterns => "an array of strings",
                SettingKind::IntRange { .. } => "an integer",
            };
            toml.error(
                code::WRONG_TYPE,
                format!("`settings.{key}` must be {expected}"),
                item.span().or_else(|| settings.key_span(key)),
            );
        }
    }
    settings.finish();
    out
}

/// Checks each pattern of `bash`'s `allow` or `deny`; false when one is not valid.
fn command_patterns(toml: &TomlFile, key: &str, array: &toml_edit::Array) -> bool {
    let mut ok = true;
    for value in array.iter() {
        let Some(text) = value.as_str() else { continue };
        if let Err(e) = crate::shell::pattern::CommandPattern::parse(text) {
            toml.report(
                Diagnostic::error(
                    code::INVALID_COMMAND_PATTERN,
                    format!("`{text}` in `settings.{key}` is not a valid command pattern"),
                )
                .at(&toml.src, value.span())
                .label(e)
                .help("a pattern is the words of one command, each a glob, e.g. `git log`, `git show *` or `rm -rf*` (see the `bash` tool in docs/tools.md)"),
            );
            ok = false;
        }
    }
    ok
}

fn read_custom(
    slug: &str,
    root: &mut TableReader<'_>,
    display: &str,
    catalog: &Catalog,
) -> Option<Tool> {
    let toml = root.file();
    let mut ok = true;
    let description = match root.string("description") {
        Some(d) => non_empty(toml, "description", d),
        None => None,
    };
    let approval = read_approval(root).unwrap_or(Approval::Never);
    let timeout_secs = root
        .positive_int("timeout_secs")
        .map_or(CUSTOM_TOOL_TIMEOUT_SECS, |t| t.value);
    let read_only = root.bool("read_only").is_some_and(|b| b.value);
    let defer = read_defer(slug, root).unwrap_or(false);
    let schema = read_schema(root);
    let allow_options = root.bool("allow_option_arguments");
    let command = read_command(root, allow_options.as_ref().is_some_and(|b| b.value));
    let http = read_http(root);
    if let Some(flag) = &allow_options
        && !root.contains("command")
    {
        toml.report(
            Diagnostic::error(
                code::INVALID_VALUE,
                "`allow_option_arguments` applies only to command tools",
            )
            .at(&toml.src, flag.span.clone())
            .note("it lets an argument of `command` built from the input start with `-`"),
        );
        ok = false;
    }

    let mut missing = Vec::new();
    if description.is_none() && !root.contains("description") {
        missing.push("`description`");
    }
    if !root.contains("input_schema") {
        missing.push("`[input_schema]`");
    }
    if !root.contains("command") && !root.contains("http") {
        missing.push("an executor (`command = [...]` or `[http]`)");
    }
    if !missing.is_empty() {
        toml.report(
            Diagnostic::error(
                code::INCOMPLETE_TOOL,
                format!("tool `{slug}` is missing {}", join_and(&missing)),
            )
            .file(display)
            .note("a new tool needs `description`, `[input_schema]` and `command` or `[http]`"),
        );
        ok = false;
    }
    if root.contains("command") && root.contains("http") {
        toml.report(
            Diagnostic::error(
                code::TWO_EXECUTORS,
                format!("tool `{slug}` has both `command` and `[http]`"),
            )
            .at(&toml.src, root.key_span("http"))
            .help("keep one executor: a command to run, or an HTTP request to send"),
        );
        ok = false;
    }
    if catalog.find(slug).is_none()
        && let Some(near) = catalog.names().find(|b| suggest::one_edit_apart(slug, b))
    {
        toml.report(
            Diagnostic::warning(
                code::NEAR_BUILTIN,
                format!("new tool `{slug}` is one letter away from the built-in `{near}`"),
            )
            .file(display)
            .note("this file adds a new tool; it does not change the built-in")
            .help(format!(
                "if you meant to change the built-in, rename the file to `tools/{near}.toml`"
            )),
        );
    }
    let executor = command.or(http);
    match (ok, description, schema, executor) {
        (true, Some(description), Some(input_schema), Some(executor)) => Some(Tool {
            name: slug.to_string(),
            description,
            input_schema,
            source: ToolSource::Custom,
            approval,
            timeout_secs,
            read_only,
            executor,
            settings: BTreeMap::new(),
            defer,
        }),
        _ => None,
    }
}

fn join_and(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_string(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn read_schema(root: &mut TableReader<'_>) -> Option<serde_json::Value> {
    let toml = root.file();
    let span = root.key_span("input_schema");
    let item = root.item("input_schema")?;
    if !item.is_table_like() {
        toml.error(
            code::INVALID_SCHEMA,
            "`input_schema` must be a table holding a JSON Schema",
            span,
        );
        return None;
    }
    let schema = toml_reader::to_json(item);
    if let Err(e) = jsonschema::meta::validate(&schema) {
        let at = e.instance_path().to_string();
        let at = if at.is_empty() {
            String::new()
        } else {
            format!(" at `{at}`")
        };
        toml.error(
            code::INVALID_SCHEMA,
            format!("`input_schema` is not a valid JSON Schema{at}: {e}"),
            span,
        );
        return None;
    }
    if let Err(e) = jsonschema::validator_for(&schema) {
        toml.error(
            code::INVALID_SCHEMA,
            format!("`input_schema` is not a valid JSON Schema: {e}"),
            span,
        );
        return None;
    }
    if schema.get("type").and_then(|t| t.as_str()) != Some("object") {
        toml.report(
            Diagnostic::error(
                code::SCHEMA_NOT_OBJECT,
                "`input_schema` must describe an object (`type = \"object\"`)",
            )
            .at(&toml.src, span)
            .note(
                "models send tool arguments as a JSON object; put each argument under `properties`",
            ),
        );
        return None;
    }
    Some(schema)
}

fn read_command(root: &mut TableReader<'_>, allow_option_arguments: bool) -> Option<Executor> {
    let toml = root.file();
    let span = root.key_span("command");
    let argv = root.string_array("command")?;
    if argv.is_empty() || argv[0].value.trim().is_empty() {
        toml.report(
            Diagnostic::error(code::EMPTY_COMMAND, "`command` is empty")
                .at(&toml.src, span)
                .help("name the program and its arguments, e.g. `command = [\"python3\", \"{{ agent_dir }}/scripts/tool.py\"]`"),
        );
        return None;
    }
    let mut ok = true;
    for arg in &argv {
        ok &= check_template(toml, "command", arg, &["input", "agent_dir"]);
    }
    ok.then(|| Executor::Command {
        argv: argv.into_iter().map(|a| a.value).collect(),
        allow_option_arguments,
    })
}

fn read_http(root: &mut TableReader<'_>) -> Option<Executor> {
    let toml = root.file();
    let mut http = root.table("http")?;
    let allowed = ["input", "agent_dir", "env"];
    let mut ok = true;
    let url = http.string("url");
    match &url {
        Some(url) => ok &= check_template(toml, "http.url", url, &allowed),
        None => {
            toml.report(
                Diagnostic::error(code::MISSING_KEY, "`[http]` is missing `url`")
                    .at(&toml.src, root.key_span("http")),
            );
            ok = false;
        }
    }
    let method = match http.string("method") {
        None => "GET".to_string(),
        Some(m) if HTTP_METHODS.contains(&m.value.to_uppercase().as_str()) => {
            m.value.to_uppercase()
        }
        Some(m) => {
            toml.report(
                Diagnostic::error(
                    code::INVALID_VALUE,
                    format!("unknown HTTP method `{}`", m.value),
                )
                .at(&toml.src, m.span)
                .note(format!("`method` is one of {}", HTTP_METHODS.join(", "))),
            );
            ok = false;
            String::new()
        }
    };
    let mut headers = BTreeMap::new();
    if let Some(mut table) = http.table("headers") {
        for (name, item) in table.entries() {
            match item.as_str() {
                Some(value) => {
                    let value = Spanned {
                        value: value.to_string(),
                        span: item.span(),
                    };
                    ok &= check_template(toml, "http.headers", &value, &allowed);
                    headers.insert(name.to_string(), value.value);
                }
                None => {
                    toml.error(
                        code::WRONG_TYPE,
                        format!("header `{name}` must be a string"),
                        item.span(),
                    );
                    ok = false;
                }
            }
        }
        table.finish();
    }
    let body = http.string("body");
    if let Some(body) = &body {
        ok &= check_template(toml, "http.body", body, &allowed);
    }
    let allow_private = http.bool("allow_private").is_some_and(|b| b.value);
    http.finish();
    match (ok, url) {
        (true, Some(url)) => Some(Executor::Http {
            method,
            url: url.value,
            headers,
            body: body.map(|b| b.value),
            allow_private,
        }),
        _ => None,
    }
}

fn suggest_slug(slug: &str) -> String {
    let fixed: String = slug
        .to_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let fixed = fixed.trim_start_matches(|c: char| !c.is_ascii_lowercase());
    if is_valid_slug(fixed) {
        format!("rename the file to `tools/{fixed}.toml`")
    } else {
        "rename the file, e.g. `tools/my_tool.toml`".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validates_and_fixes_slugs() {
        assert!(is_valid_slug("get_weather2"));
        for bad in ["Get", "2x", "get-weather", "", &"a".repeat(65)] {
            assert!(!is_valid_slug(bad), "{bad}");
        }
        assert_eq!(
            suggest_slug("Get-Weather"),
            "rename the file to `tools/get_weather.toml`"
        );
        assert_eq!(
            suggest_slug("---"),
            "rename the file, e.g. `tools/my_tool.toml`"
        );
    }

    #[test]
    fn lists_missing_parts_in_prose() {
        assert_eq!(join_and(&["a"]), "a");
        assert_eq!(join_and(&["a", "b", "c"]), "a, b and c");
    }
}
