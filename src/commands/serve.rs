//! `eve serve`: build the agent if needed, then serve it until SIGTERM.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use super::out;
use crate::agent::{self, Agent, Refusal};
use crate::cli::ServeArgs;
use crate::runner::{RunOptions, exit};
use crate::serve::{self, Config, TOKEN_VAR, restate};

pub fn run(args: &ServeArgs) -> anyhow::Result<ExitCode> {
    serve::log::to(|line| eprintln!("{line}"));
    let chosen = crate::secrets::var(TOKEN_VAR).filter(|t| !t.trim().is_empty());
    if let Err(message) = serve::check_addr(&args.addr, chosen.is_some()) {
        return out::usage(message);
    }
    if chosen.is_none() && stderr_is_a_file() {
        return out::usage(format!(
            "eve serve makes a token when {TOKEN_VAR} is not set and prints it, but stderr is a file here, which other processes (the agent's tools among them) could read: set {TOKEN_VAR}, or let stderr be a terminal or a pipe"
        ));
    }
    let token = match serve::Token::new(chosen) {
        Ok(token) => token,
        Err(message) => return failed(message),
    };
    let dir = &args.dir;
    let base = dir.to_string_lossy().into_owned();
    // Like `eve run`: from the build cache when nothing changed, listing the
    // connections' servers that have no cached listing.
    let opening = agent::open(
        dir,
        agent::Options {
            workspace: args.workspace.as_deref(),
            ..agent::Options::default()
        },
    )?;
    out::opening(&opening, &base, false, false, |_| String::new());
    let agent = match opening.agent {
        Ok(agent) => agent,
        Err(refusal) => {
            let message = out::refusal(&refusal, dir, &base, ("", "start it again"), |change| {
                crate::review::describe(change, &base)
            });
            return match refusal {
                Refusal::DoesNotBuild => failed(message),
                Refusal::NotAFolder | Refusal::Changed(_) => out::usage(message),
            };
        }
    };
    let config = config(args, token);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let served = if args.restate {
        match restate_options(args) {
            Ok(options) => serve_on_restate(&runtime, agent, config, options)?,
            Err(message) => return out::usage(message),
        }
    } else {
        serve_here(&runtime, agent, config)?
    };
    // Turns that were cancelled may leave blocking work behind; none of it is waited for.
    runtime.shutdown_timeout(Duration::from_secs(1));
    match served {
        Ok(()) => Ok(ExitCode::SUCCESS),
        Err(message) => failed(message),
    }
}

fn failed(message: impl std::fmt::Display) -> anyhow::Result<ExitCode> {
    eprintln!("error: {message}");
    Ok(ExitCode::from(exit::FAILED))
}

fn config(args: &ServeArgs, token: serve::Token) -> Config {
    Config {
        addr: args.addr,
        token,
        cors: args.cors.clone(),
        max_turns: args.max_turns as usize,
        max_sessions: args.max_sessions as usize,
        max_readers: args.max_readers as usize,
        grace: Duration::from_secs(args.grace),
        options: RunOptions {
            model: args.model.clone(),
            workspace: args.workspace.clone(),
            sandbox_mode: args
                .sandbox
                .as_deref()
                .and_then(crate::manifest::SandboxMode::from_name),
            no_network: args.no_network,
            hidden_env: vec![TOKEN_VAR.to_string(), restate::IDENTITY_VAR.to_string()],
            ..RunOptions::default()
        },
    }
}

/// `--restate-…` checked: a usage error otherwise.
fn restate_options(args: &ServeArgs) -> Result<restate::Restate, String> {
    let identity_key = crate::secrets::var(restate::IDENTITY_VAR).filter(|k| !k.trim().is_empty());
    restate::check_endpoint(&args.restate_endpoint, identity_key.is_some())?;
    for (flag, url) in [
        ("--restate-ingress", &args.restate_ingress),
        ("--restate-admin", &args.restate_admin),
    ] {
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            return Err(format!(
                "{flag} takes an http:// or https:// URL, not `{}`",
                crate::text::shorten(url, 60)
            ));
        }
    }
    Ok(restate::Restate {
        endpoint: args.restate_endpoint,
        ingress: args.restate_ingress.clone(),
        admin: Some(args.restate_admin.clone()),
        register: args.restate_register,
        streams: args.restate_streams,
        identity_key,
    })
}

fn serve_on_restate(
    runtime: &tokio::runtime::Runtime,
    agent: Agent,
    config: Config,
    options: restate::Restate,
) -> anyhow::Result<Result<(), String>> {
    let name = agent.manifest.agent.name.clone();
    let guard = agent.guard()?;
    let manifest = Arc::unwrap_or_clone(agent.manifest);
    Ok(runtime.block_on(restate::serve(
        manifest,
        &agent.dir,
        config,
        options,
        guard,
        |ready, warnings, access| {
            for warning in warnings {
                eprintln!("warning: {warning}");
            }
            if let Some(uri) = &ready.registered {
                eprintln!("eve serve: registered {uri} with Restate");
            }
            eprintln!(
                "eve serve: `{name}` Restate worker: deployment endpoint http://{}/, API listening on http://{}/ (API under /eve/v1; SIGTERM or Ctrl-C stops it)",
                ready.endpoint, ready.api
            );
            tell(access);
        },
    )))
}

fn serve_here(
    runtime: &tokio::runtime::Runtime,
    agent: Agent,
    config: Config,
) -> anyhow::Result<Result<(), String>> {
    let name = agent.manifest.agent.name.clone();
    // Until the last check of the agent's definition: a killed server leaves its marker
    // for the next start.
    let guard = agent.guard()?;
    let manifest = Arc::unwrap_or_clone(agent.manifest);
    Ok(runtime.block_on(serve::serve(
        manifest,
        &agent.dir,
        config,
        guard,
        |addr, warnings, access| {
            for warning in warnings {
                eprintln!("warning: {warning}");
            }
            eprintln!(
                "eve serve: `{name}` listening on http://{addr}/ (API under /eve/v1; SIGTERM or Ctrl-C stops it)"
            );
            tell(access);
        },
    )))
}

/// How the person gets in, on eve's own stderr (a terminal or a pipe, never a file: see
/// [`stderr_is_a_file`]): the page's one-time link, and the token eve made, if it did.
fn tell(access: &serve::Access<'_>) {
    if stderr_is_a_file() {
        eprintln!(
            "eve serve: the page's login link is not printed to a file; type {TOKEN_VAR} into the page"
        );
        return;
    }
    eprintln!(
        "eve serve: open {} for the chat page (the link works once; after that the page asks for the token)",
        access.link
    );
    match access.made {
        Some(token) => eprintln!(
            "eve serve: API clients send `Authorization: Bearer {token}` (made for this start; set {TOKEN_VAR} to choose one)"
        ),
        None => eprintln!("eve serve: API clients send `Authorization: Bearer <{TOKEN_VAR}>`"),
    }
}

/// Whether eve's stderr is a regular file: a log other processes of this machine could
/// read later, where no secret goes.
fn stderr_is_a_file() -> bool {
    rustix::fs::fstat(std::io::stderr())
        .is_ok_and(|stat| rustix::fs::FileType::from_raw_mode(stat.st_mode).is_file())
}
