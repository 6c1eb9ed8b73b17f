//! The compiler: an agent directory in, a validated manifest and diagnostics out.
//!
//! It reads the agent directory only through `inputs` and the build cache's recorded
//! reads (`cache::is_dir`, `cache::canonicalize` …): a direct read would be missing from
//! the cache's record, and a later build would not see its file change. `clippy.toml`
//! lists the reads this module denies; `inputs.rs` and `cache.rs` are where they are made.
#![cfg_attr(not(test), deny(clippy::disallowed_methods))]

pub mod budget;
pub mod cache;
pub mod config;
pub mod connection_tools;
pub mod connections;
pub mod diagnostic;
pub mod evals;
pub mod executed;
pub mod hooks;
pub mod inputs;
pub mod instructions;
pub mod listing;
mod loaded;
pub mod render;
pub mod schema;
pub mod shape;
pub mod skills;
pub mod source;
mod templates;
pub mod toml_reader;
pub mod tools;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context as _;

pub use diagnostic::{Diagnostic, Diagnostics, Severity};
use inputs::AgentFiles;

use crate::catalog::Catalog;
use crate::manifest::{Approval, Executor, Manifest, SCHEMA_VERSION, Subagent, Tool, ToolSource};

/// Timeout of a subagent tool call.
pub const SUBAGENT_TIMEOUT_SECS: u64 = 3600;

/// The result of compiling an agent directory.
#[derive(Debug)]
pub struct Build {
    /// Present when there were no errors.
    pub manifest: Option<Manifest>,
    /// The eval cases of `evals/`, checked against the manifest (empty when the build
    /// came from the cache: [`compile`] gives them).
    pub evals: Vec<crate::manifest::eval::Case>,
    /// How many eval cases there are.
    pub eval_count: usize,
    pub diagnostics: Diagnostics,
    /// Whether nothing changed since the last build, whose manifest this is (it is on
    /// disk already).
    pub cached: bool,
    /// How many entries of `skills/` came from the build cache instead of their files.
    pub reused_skills: usize,
    /// The agent's connections as compiled, errors or not (`eve connections` shows them).
    pub connections: Vec<crate::manifest::connection::Connection>,
}

/// The manifest's name in `.eve/`.
const MANIFEST_FILE: &str = "manifest.json";

/// Where the manifest of an agent directory is written.
pub fn manifest_path(dir: &Path) -> PathBuf {
    dir.join(crate::statedir::NAME).join(MANIFEST_FILE)
}

/// Compiles the agent directory at `dir` in memory, against the built-in tools of
/// `catalog`, with the connections' cached listings only (no server starts).
pub fn compile(dir: &Path, catalog: &Catalog) -> Build {
    compile_with(dir, catalog, listing::Options::default())
}

/// Compiles the agent directory at `dir`, listing the connections' tools as `options`
/// say (a listing from a server is cached in `.eve/connections/`).
pub fn compile_with(dir: &Path, catalog: &Catalog, options: listing::Options<'_>) -> Build {
    let files = AgentFiles::load(dir);
    let mut diagnostics = Diagnostics::default();
    let mut keys = config::KeyVariables::default();
    let manifest = compile_files(
        &files,
        agent_name(dir),
        None,
        catalog,
        &mut keys,
        options,
        &mut diagnostics,
    );
    keys.check(&mut diagnostics);
    let evals = match &manifest {
        Some(manifest) => evals::compile(
            &files.evals,
            manifest,
            &files.root,
            &files.boundary,
            &mut diagnostics,
        ),
        None => Vec::new(),
    };
    diagnostics.sort();
    diagnostics.cap(diagnostic::MAX_PER_CODE_AND_FILE);
    let connections = manifest
        .as_ref()
        .map(|m| m.connections.clone())
        .unwrap_or_default();
    let manifest = manifest.filter(|_| !diagnostics.has_errors());
    let evals = if manifest.is_some() {
        evals
    } else {
        Vec::new()
    };
    Build {
        eval_count: evals.len(),
        evals,
        manifest,
        diagnostics,
        cached: false,
        reused_skills: 0,
        connections,
    }
}

/// Builds the agent directory at `dir` like [`compile`], but when nothing the last build
/// looked at has changed since (the build cache, `.eve/build-cache`), gives back that
/// build's manifest (from `.eve/manifest.json`) and diagnostics without reading any
/// input. When something changed, the entries of `skills/` none of whose files changed
/// come from the cache and only the rest is read and compiled again. A build records
/// what it looks at for the next one. The manifest is written by the caller
/// ([`write_manifest`]), except on a cache hit. With `options.refresh` nothing comes
/// from the cache: a full build, recorded for the next one.
pub fn build(dir: &Path, catalog: &Catalog, options: listing::Options<'_>) -> Build {
    build_after(dir, catalog, options, &[])
}

/// [`build`] after the files `touched` (paths relative to `dir`, with `/`) changed, as a
/// watcher reported: the skills holding them are read again whatever their metadata
/// says, and the build is not answered from the cache.
///
/// Why the unit of reuse is a skill and not the whole compiled state: a skill depends on
/// nothing but its own files, and `skills/` is what grows to thousands of files; the rest
/// of an agent is a few small files, compiled again in well under a millisecond.
pub fn build_after(
    dir: &Path,
    catalog: &Catalog,
    options: listing::Options<'_>,
    touched: &[String],
) -> Build {
    let identity = identity(dir);
    // `--refresh` trusts no cache: every file is read and every server listed again.
    let mut verdict = if options.refresh {
        cache::Verdict::default()
    } else {
        cache::check(dir, &identity, touched)
    };
    if let Some(hit) = verdict.hit.take() {
        // A strict build refuses what the last (lenient) one left out: it compiles again,
        // with every skill from the cache.
        let left_out = |d: &Diagnostic| d.code == code::SKILL_LEFT_OUT;
        let answers = !(options.strict && hit.diagnostics.iter().any(left_out));
        if let Some(manifest) =
            read_manifest(dir).filter(|m| answers && m.inputs_hash == hit.inputs_hash)
        {
            return Build {
                connections: manifest.connections.clone(),
                manifest: Some(manifest),
                evals: Vec::new(),
                eval_count: hit.eval_cases,
                diagnostics: hit.diagnostics,
                cached: true,
                reused_skills: 0,
            };
        }
        // The inputs are as recorded but the manifest is gone or another (or the build
        // is stricter): a hit hands out no units, so ask again with the manifest as the
        // change, and every skill comes from the cache.
        verdict = cache::check(
            dir,
            &identity,
            &[format!("{}/manifest.json", crate::manifest::STATE_DIR)],
        );
    }
    // `.eve/` first: creating it later would change the folder's own listing, which the
    // cache records, and spoil the next check.
    let _ = crate::statedir::create(dir, &[]);
    let seen = std::sync::Arc::new(cache::Seen::reusing(verdict.reuse));
    let mut build = cache::recording(&seen, || compile_with(dir, catalog, options));
    build.reused_skills = seen.reused();
    let outcome = build.manifest.as_ref().map(|manifest| cache::Finished {
        inputs_hash: &manifest.inputs_hash,
        diagnostics: &build.diagnostics,
        eval_cases: build.eval_count,
    });
    cache::store(dir, &seen, &identity, outcome);
    build
}

/// What the build cache of `dir` is for: the agent's name and where it is, both of
/// which the manifest depends on.
fn identity(dir: &Path) -> String {
    let canonical = cache::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    format!("{} {}", agent_name(dir), canonical.display())
}

/// Compiles the eval cases of the agent directory at `dir` against `manifest` (a build
/// already made, like the active one in `eve dev`).
pub fn compile_evals(
    dir: &Path,
    manifest: &Manifest,
) -> (Vec<crate::manifest::eval::Case>, Diagnostics) {
    let files = AgentFiles::load(dir);
    let mut diagnostics = Diagnostics::default();
    diagnostics.extend(
        files
            .problems
            .iter()
            .filter(|d| d.file.as_deref().is_some_and(|f| f.starts_with("evals/")))
            .cloned(),
    );
    let cases = evals::compile(
        &files.evals,
        manifest,
        &files.root,
        &files.boundary,
        &mut diagnostics,
    );
    diagnostics.sort();
    let cases = if diagnostics.has_errors() {
        Vec::new()
    } else {
        cases
    };
    (cases, diagnostics)
}

/// The agent name a directory gets by default: its folder name.
pub fn agent_name(dir: &Path) -> String {
    let absolute = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    let normal: PathBuf = absolute.components().collect();
    normal
        .file_name()
        .map_or_else(|| "agent".to_string(), |n| n.to_string_lossy().into_owned())
}

/// `rel` inside the agent directory at `prefix` (relative to the top-level agent
/// directory), as diagnostics show it.
fn agent_path(prefix: &str, rel: &str) -> String {
    if prefix.is_empty() {
        rel.to_string()
    } else {
        format!("{prefix}/{rel}")
    }
}

fn compile_files(
    files: &AgentFiles,
    name: String,
    inherited: Option<&config::Inherited>,
    catalog: &Catalog,
    keys: &mut config::KeyVariables,
    options: listing::Options<'_>,
    diags: &mut Diagnostics,
) -> Option<Manifest> {
    let at = |rel: &str| agent_path(&files.prefix, rel);
    report_load_problems(files, &at("skills/"), options.strict, diags);
    let mut config = config::compile(
        &files.agent_toml,
        &at("agent.toml"),
        &name,
        inherited,
        &files.root,
        diags,
    );
    keys.add(&mut config);
    let skills = compile_skills(files, config.defer_skills, options.strict, diags);
    let mut read = connections::read_all(&files.connections, diags);
    // What the commands run is part of the definition; a command whose files cannot be
    // never runs: its connection or tool is left out.
    let mut entries = executed::Entries::default();
    let whose = inherited.map_or_else(String::new, |_| format!(" of subagent `{name}`"));
    keep_runnable_connections(&mut read, &mut entries, files, &whose, diags);
    let names: Vec<&str> = read.iter().map(|r| r.connection.name.as_str()).collect();
    let compiled = tools::compile(
        &files.tools,
        &config,
        &skills,
        catalog,
        &names,
        read.iter().any(|r| r.connection.defer),
        diags,
    );
    let mut tools = compiled.tools;
    keep_runnable_tools(&mut tools, &mut entries, files, &whose, diags);
    let known = obtain_listings(files, &config, inherited, &read, &entries, options);
    let subagent = inherited.is_some().then_some(name.as_str());
    let connections =
        check_connections(&read, &known, compiled.routed, subagent, &mut tools, diags);

    let child_inherits = child_inherits(&config, inherited);
    let (subagents, children) = compile_subagents(
        files,
        &child_inherits,
        &tools,
        catalog,
        keys,
        options,
        diags,
    );
    tools.extend(subagents.iter().map(subagent_tool));
    check_collisions(&tools, &connections, diags);
    let mut hooks = hooks::compile(&files.hooks, &tools, catalog, &files.root, diags);
    let hook_file = |name: &str| agent_path(&files.prefix, &format!("hooks/{name}.toml"));
    hooks::refuse_unreachable(&mut hooks, &tools, hook_file, diags);
    refuse_unrunnable_hooks(&hooks, &mut entries, files, diags);

    let (instructions, rendered) =
        compile_instructions(files, &config, &tools, &skills, &at("agent.toml"), diags);

    let max_output_written = config.max_output_written;
    let manifest = Manifest {
        schema_version: SCHEMA_VERSION,
        agent: config.agent,
        instructions,
        tools,
        skills,
        subagents,
        connections,
        hooks,
        inputs_hash: executed::fold(&files.hash, &entries.kept(), &children),
        executed: entries.kept(),
    };
    // Measured once the rest builds: until then the numbers are of an agent that is not.
    if !diags.has_errors() {
        check_budget(
            &manifest,
            rendered.as_deref(),
            max_output_written,
            &at("agent.toml"),
            diags,
        );
    }
    Some(manifest)
}

/// Compiles the entries of `skills/`, all deferred when `defer` (`defer_skills`).
fn compile_skills(
    files: &AgentFiles,
    defer: bool,
    strict: bool,
    diags: &mut Diagnostics,
) -> Vec<crate::manifest::Skill> {
    let mut skills = skills::compile(&files.skills, strict, diags);
    if defer {
        for skill in &mut skills {
            skill.deferred = true;
        }
    }
    skills
}

/// Checks the room the agent's requests leave in its window ([`budget::check`]);
/// `max_output_written` says whether its `agent.toml` writes `max_output_tokens`.
fn check_budget(
    manifest: &Manifest,
    rendered: Option<&str>,
    max_output_written: bool,
    agent_toml: &str,
    diags: &mut Diagnostics,
) {
    let output = if max_output_written {
        budget::Output::Written
    } else {
        budget::Output::Default
    };
    budget::check(manifest, rendered, output, agent_toml, diags);
}

/// Reports what loading the directory found. An entry of `skills/` the listing could
/// not take (a link out of the agent directory, a name that is not UTF-8) is a skill
/// that cannot be used, like the problems of a skill's own files.
fn report_load_problems(
    files: &AgentFiles,
    skills_dir: &str,
    strict: bool,
    diags: &mut Diagnostics,
) {
    for problem in &files.problems {
        let entry = problem
            .file
            .as_deref()
            .and_then(|f| f.strip_prefix(skills_dir))
            .and_then(|rest| rest.split('/').next())
            .filter(|_| !strict && problem.is_error());
        match entry {
            Some(entry) => diags.extend(skills::left_out(
                &format!("{skills_dir}{entry}"),
                vec![problem.clone()],
            )),
            None => diags.push(problem.clone()),
        }
    }
}

/// Leaves out (W0218) each stdio connection whose command or `cwd` runs files that
/// cannot be part of the definition; `whose` names the subagent in the warning.
fn keep_runnable_connections(
    read: &mut Vec<connections::Read>,
    entries: &mut executed::Entries,
    files: &AgentFiles,
    whose: &str,
    diags: &mut Diagnostics,
) {
    read.retain(|r| {
        let crate::manifest::connection::Transport::Stdio { command, cwd, .. } =
            &r.connection.transport
        else {
            return true;
        };
        let templates = command.iter().chain(cwd.iter()).map(String::as_str);
        let named = executed::named(templates, &files.prefix);
        let Some(why) = entries.refuse(&files.boundary, &named) else {
            return true;
        };
        diags.push(
            left_out(format!("connection `{}`{whose}", r.connection.name), &why)
                .file(r.connection.file.clone()),
        );
        false
    });
}

/// Leaves out (W0218) each command tool whose command runs files that cannot be part
/// of the definition; `whose` names the subagent in the warning.
fn keep_runnable_tools(
    tools: &mut Vec<Tool>,
    entries: &mut executed::Entries,
    files: &AgentFiles,
    whose: &str,
    diags: &mut Diagnostics,
) {
    tools.retain(|tool| {
        let Executor::Command { argv, .. } = &tool.executor else {
            return true;
        };
        let named = executed::named(argv.iter().map(String::as_str), &files.prefix);
        let Some(why) = entries.refuse(&files.boundary, &named) else {
            return true;
        };
        diags.push(
            left_out(format!("tool `{}`{whose}", tool.name), &why).file(agent_path(
                &files.prefix,
                &format!("tools/{}.toml", tool.name),
            )),
        );
        false
    });
}

/// A hook whose command runs a file the definition cannot keep is an error, not a hook
/// left out: a hook that guards a tool must never silently stop guarding it.
fn refuse_unrunnable_hooks(
    hooks: &[crate::manifest::hook::Hook],
    entries: &mut executed::Entries,
    files: &AgentFiles,
    diags: &mut Diagnostics,
) {
    for hook in hooks {
        let mut named = executed::named(hook.command.iter().map(String::as_str), &files.prefix);
        // `hooks/` holds the scripts hooks run, however their commands name them: it is
        // part of the definition.
        let folder = agent_path(&files.prefix, "hooks");
        if !named.contains(&folder) {
            named.push(folder);
        }
        if let Some(why) = entries.refuse(&files.boundary, &named) {
            diags.push(
                Diagnostic::error(
                    code::HOOK_COMMAND_FILE,
                    format!("hook `{}` cannot run: {why}", hook.name),
                )
                .file(agent_path(&files.prefix, &format!("hooks/{}.toml", hook.name)))
                .note("what a command names as `{{ agent_dir }}/…` is part of the agent's definition, kept read-only and checked for changes; a hook that cannot run would stop guarding what it guards")
                .help("add the file to the agent directory (a real file or folder, not a link out of it), or name one that is there"),
            );
        }
    }
}

/// What the build knows of each connection in `read` (see [`listing::obtain`]), listed
/// in the agent's workspace under its sandbox (a subagent's: the top-level agent's).
fn obtain_listings(
    files: &AgentFiles,
    config: &config::Config,
    inherited: Option<&config::Inherited>,
    read: &[connections::Read],
    entries: &executed::Entries,
    options: listing::Options<'_>,
) -> Vec<listing::Known> {
    let root = options.workspace.map_or_else(
        || PathBuf::from(&config.agent.workspace.root),
        Path::to_path_buf,
    );
    let workspace = std::path::absolute(&root).unwrap_or(root);
    let wanted: Vec<&crate::manifest::connection::Connection> =
        read.iter().map(|r| &r.connection).collect();
    let definition = entries.names_below(&files.prefix);
    let confinement = listing::Confinement {
        settings: inherited.map_or(&config.agent.sandbox, |i| &i.sandbox),
        agent_writable: config.agent.workspace.agent_writable,
        definition: &definition,
    };
    listing::obtain(&files.root, &workspace, &wanted, confinement, options)
}

/// Checks each connection against what is known of it, with the tool files' overrides
/// routed to it, adds the tools it offers to `tools` and returns the connections.
fn check_connections(
    read: &[connections::Read],
    known: &[listing::Known],
    mut routed: Vec<connections::RoutedOverride>,
    subagent: Option<&str>,
    tools: &mut Vec<Tool>,
    diags: &mut Diagnostics,
) -> Vec<crate::manifest::connection::Connection> {
    let mut connections = Vec::new();
    for (read, known) in read.iter().zip(known) {
        let (mine, rest): (Vec<_>, Vec<_>) = routed
            .into_iter()
            .partition(|r| r.connection == read.connection.name);
        routed = rest;
        let (connection, offered) = connections::check(read, known, mine, subagent, diags);
        tools.extend(offered);
        connections.push(connection);
    }
    connections
}

/// What this agent's subagents take from it.
fn child_inherits(
    config: &config::Config,
    inherited: Option<&config::Inherited>,
) -> config::Inherited {
    config::Inherited {
        model: config.agent.model.clone(),
        providers: config.agent.providers.clone(),
        context_window: config.agent.limits.context_window,
        max_output_tokens: config.agent.limits.max_output_tokens,
        sandbox: inherited.map_or_else(|| config.agent.sandbox.clone(), |i| i.sandbox.clone()),
    }
}

/// Compiles each entry of `subagents/`; returns the subagents that compiled, and the
/// hashes of those whose commands run files of their own.
fn compile_subagents(
    files: &AgentFiles,
    child_inherits: &config::Inherited,
    tools: &[Tool],
    catalog: &Catalog,
    keys: &mut config::KeyVariables,
    options: listing::Options<'_>,
    diags: &mut Diagnostics,
) -> (Vec<Subagent>, Vec<String>) {
    let mut subagents = Vec::new();
    let mut children = Vec::new();
    for dir in &files.subagents {
        if let Some(subagent) =
            compile_subagent(dir, child_inherits, tools, catalog, keys, options, diags)
        {
            if subagent.manifest.inputs_hash != dir.files.hash {
                children.push(subagent.manifest.inputs_hash.clone());
            }
            subagents.push(subagent);
        }
    }
    (subagents, children)
}

/// Compiles the instructions, checked by a trial render with sample values (every
/// variable must exist); returns them and the render.
fn compile_instructions(
    files: &AgentFiles,
    config: &config::Config,
    tools: &[Tool],
    skills: &[crate::manifest::Skill],
    agent_toml: &str,
    diags: &mut Diagnostics,
) -> (crate::manifest::Instructions, Option<String>) {
    // A listing that cannot fit is reported as that, and the trial render goes on
    // without it: rendered by `{{ skills }}`, it would only pass the size limit of a render.
    let renders_skills = match &files.instructions {
        inputs::InstructionFiles::File(file) => file.text.contains("skills"),
        inputs::InstructionFiles::Dir(parts) => parts.iter().any(|p| p.text.contains("skills")),
        _ => false,
    };
    let overflowing = (renders_skills || tools.iter().any(|t| t.name == "load_skill"))
        && budget::check_skills(skills, &config.agent.limits, agent_toml, diags);
    // A trial render with sample values: every variable must exist. `tools` are the
    // ones the run lists (deferred tools are found through `search_tools`).
    let sample = crate::template::Context::new(
        &config.agent,
        &config.agent.model,
        tools.iter().filter(|t| !t.defer),
        if overflowing { &[] } else { skills },
        "/workspace".into(),
        "2000-01-01".into(),
        config
            .instructions_env
            .iter()
            .map(|v| (v.clone(), String::new()))
            .collect::<BTreeMap<_, _>>(),
    );
    instructions::compile(
        &files.instructions,
        &files.prefix,
        &config.instructions_env,
        &sample,
        diags,
    )
}

/// W0218: a tool or connection left out because what its command runs cannot be part
/// of the definition.
fn left_out(what: String, why: &str) -> Diagnostic {
    Diagnostic::warning(
        code::COMMAND_FILE_LEFT_OUT,
        format!("{what} is left out: {why}"),
    )
    .note("an entry of the agent directory that a command names as `{{ agent_dir }}/…` is part of the agent's definition: eve keeps it read-only and checks it for changes, and a file it cannot keep must never run")
    .help("add the file to the agent directory (a real file or folder, not a link out of it), or name one that is there")
}

/// Two tools of one name: the model could call only one of them.
fn check_collisions(
    tools: &[Tool],
    connections: &[crate::manifest::connection::Connection],
    diags: &mut Diagnostics,
) {
    let source = |tool: &Tool| match &tool.executor {
        Executor::Mcp {
            connection,
            tool: server,
            ..
        } => {
            let file = connections
                .iter()
                .find(|c| &c.name == connection)
                .map_or_else(String::new, |c| c.file.clone());
            (
                format!("tool `{server}` of connection `{connection}`"),
                file,
            )
        }
        Executor::Subagent { name } => (format!("subagent `{name}`"), format!("subagents/{name}")),
        _ => (format!("tool `{}`", tool.name), String::new()),
    };
    let mut seen: BTreeMap<&str, &Tool> = BTreeMap::new();
    for tool in tools {
        let Some(first) = seen.get(tool.name.as_str()) else {
            seen.insert(&tool.name, tool);
            continue;
        };
        let (a, _) = source(first);
        let (b, file) = source(tool);
        let diagnostic = Diagnostic::error(
            code::TOOL_NAME_COLLISION,
            format!("two tools are named `{}`: {a} and {b}", tool.name),
        )
        .note("the model tells tools apart by name alone")
        .help("rename a connection file, or leave one tool out with `block` in its `[tools]`");
        diags.push(if file.is_empty() {
            diagnostic
        } else {
            diagnostic.file(file)
        });
    }
}

fn compile_subagent(
    dir: &inputs::SubagentDir,
    inherited: &config::Inherited,
    parent_tools: &[Tool],
    catalog: &Catalog,
    keys: &mut config::KeyVariables,
    options: listing::Options<'_>,
    diags: &mut Diagnostics,
) -> Option<Subagent> {
    let mut ok = true;
    let display = dir.files.prefix.clone();
    if !skills::is_valid_name(&dir.name) {
        diags.push(
            Diagnostic::error(code::INVALID_SUBAGENT_NAME, format!("invalid subagent name `{}`", dir.name))
                .file(display.clone())
                .note("subagent names are lowercase letters, digits, `-` and `_`, starting with a letter or digit, at most 64 characters"),
        );
        ok = false;
    }
    if parent_tools.iter().any(|t| t.name == dir.name) {
        diags.push(
            Diagnostic::error(
                code::SUBAGENT_NAME_COLLISION,
                format!("subagent `{}` has the same name as a tool", dir.name),
            )
            .file(display.clone())
            .note("each subagent is offered to the model as a tool named after it")
            .help(format!(
                "rename the folder, or disable the tool with `tools/{}.toml`",
                dir.name
            )),
        );
        ok = false;
    }
    let before = diags.error_count();
    let manifest = compile_files(
        &dir.files,
        dir.name.clone(),
        Some(inherited),
        catalog,
        keys,
        options,
        diags,
    )?;
    // A missing `description` is reported by `config` (E0501), only when the file was
    // read and parsed: a TOML error must not also say "no description".
    let description = manifest.agent.description.clone();
    (ok && diags.error_count() == before).then(|| Subagent {
        name: dir.name.clone(),
        description: description.unwrap_or_default(),
        path: format!("subagents/{}", dir.name),
        manifest: Box::new(manifest),
    })
}

fn subagent_tool(subagent: &Subagent) -> Tool {
    Tool {
        name: subagent.name.clone(),
        description: subagent.description.clone(),
        input_schema: serde_json::json!({
            "type": "object",
            "properties": {
                "task": {
                    "type": "string",
                    "description": "The complete task for this subagent. It sees nothing of this conversation, so include every detail it needs."
                }
            },
            "required": ["task"],
            "additionalProperties": false
        }),
        source: ToolSource::Custom,
        approval: Approval::Never,
        timeout_secs: SUBAGENT_TIMEOUT_SECS,
        read_only: false,
        executor: Executor::Subagent {
            name: subagent.name.clone(),
        },
        settings: BTreeMap::new(),
        defer: false,
    }
}

use diagnostic::code;

/// The manifest as written to disk: pretty JSON with a final newline.
pub fn manifest_bytes(manifest: &Manifest) -> anyhow::Result<Vec<u8>> {
    let mut bytes = serde_json::to_vec_pretty(manifest).context("cannot serialise the manifest")?;
    bytes.push(b'\n');
    Ok(bytes)
}

/// Writes the manifest atomically (temporary file, then rename) unless the same bytes are
/// already there. Returns whether the file changed.
pub fn write_manifest(dir: &Path, manifest: &Manifest) -> anyhow::Result<bool> {
    let path = manifest_path(dir);
    let bytes = manifest_bytes(manifest)?;
    let eve = crate::statedir::create(dir, &[])
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    if eve
        .read(MANIFEST_FILE, MAX_MANIFEST_BYTES)
        .is_ok_and(|old| old.is_some_and(|old| old == bytes))
    {
        return Ok(false);
    }
    eve.write(MANIFEST_FILE, &bytes)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(true)
}

/// The largest manifest [`read_manifest`] reads (a 1,000-skill agent's is under 1 MB).
const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;

/// Reads a manifest written by [`write_manifest`]; `None` if absent, not a regular
/// file, reached through a link (see [`cache::read_own`]), or from another eve.
pub fn read_manifest(dir: &Path) -> Option<Manifest> {
    let text = cache::read_own(dir, MANIFEST_FILE, MAX_MANIFEST_BYTES)?;
    serde_json::from_str::<Manifest>(&text)
        .ok()
        .filter(|m| m.schema_version == SCHEMA_VERSION)
}
