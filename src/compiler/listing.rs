//! What the build knows of each connection's tools: a listing from its server (through a
//! [`Lister`]), or the one cached in `.eve/connections/<name>.json`, which stays valid
//! until the connection file changes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::manifest::connection::{Connection, Listing};

/// Starts servers and lists their tools. The compiler knows only this seam; the
/// connections module implements it.
pub trait Lister: Sync {
    /// Lists each connection's tools. The connections of one agent come together, so
    /// their servers can start side by side; a failure is the reason, in one line.
    fn list(&self, wanted: &[Wanted<'_>]) -> Vec<Result<Listing, String>>;
}

/// A connection whose tools the build needs.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    /// The agent directory the connection belongs to.
    pub agent_dir: &'a Path,
    /// Where its server runs (the workspace the agent would use from here).
    pub workspace: &'a Path,
    pub connection: &'a Connection,
    /// The sandbox its server runs in (unless its file opts out).
    pub confinement: Confinement<'a>,
}

/// What a listed server is confined by: the agent's `[sandbox]` (a subagent's
/// connections use the top-level agent's, as its session does), and whether the agent
/// may change its own definition.
#[derive(Debug, Clone, Copy)]
pub struct Confinement<'a> {
    pub settings: &'a crate::manifest::Sandbox,
    pub agent_writable: bool,
    /// Entries of the agent directory that its commands run, kept read-only with the
    /// rest of its definition ([`crate::manifest::Manifest::definition_entries`]).
    pub definition: &'a [String],
}

/// How a build gets listings, and how it treats a skill that cannot be used.
#[derive(Clone, Copy, Default)]
pub struct Options<'a> {
    /// `eve build --strict`: a skill that cannot be used is an error of the agent, as for
    /// a skill's author; otherwise it is left out with a warning (W0413).
    pub strict: bool,
    /// `None`: cached listings only, no server starts.
    pub lister: Option<&'a dyn Lister>,
    /// `eve build --refresh`: list every server again, whatever is cached.
    pub refresh: bool,
    /// Where the servers run (`--workspace`); `None`: the agent's `[workspace] root`
    /// from the folder eve runs in, as its sessions would.
    pub workspace: Option<&'a Path>,
}

/// What the build knows of one connection's tools.
#[derive(Debug, Clone, PartialEq)]
pub enum Known {
    Listed {
        listing: Listing,
        cached: bool,
    },
    /// Listing failed; `stale` is a cached listing still valid for the file, if any.
    Failed {
        reason: String,
        stale: Option<Listing>,
    },
    /// Not listed and nothing cached (a build that starts no servers).
    Unlisted,
}

impl Known {
    /// The listing to check names against, if there is one.
    pub fn listing(&self) -> Option<&Listing> {
        match self {
            Known::Listed { listing, .. } => Some(listing),
            Known::Failed { stale, .. } => stale.as_ref(),
            Known::Unlisted => None,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct CacheFile {
    key: String,
    listing: Listing,
}

/// The listings' folder in `.eve/`.
const CACHE_DIR: &str = "connections";
/// A larger cached listing is not read (it is listed again).
const MAX_CACHE_BYTES: u64 = 64 * 1024 * 1024;

/// Where the listing of `name` is cached.
pub fn cache_path(agent_dir: &Path, name: &str) -> PathBuf {
    agent_dir
        .join(crate::statedir::NAME)
        .join(CACHE_DIR)
        .join(cache_file(name))
}

fn cache_file(name: &str) -> String {
    format!("{name}.json")
}

/// The cached listing of `connection`, if one exists for the file as it is now (read
/// beneath the agent directory, never through a link: [`crate::statedir`]).
pub fn read_cache(agent_dir: &Path, connection: &Connection) -> Option<Listing> {
    let bytes = crate::statedir::open(agent_dir, &[CACHE_DIR])
        .ok()??
        .read(&cache_file(&connection.name), MAX_CACHE_BYTES)
        .ok()??;
    let file: CacheFile = serde_json::from_slice(&bytes).ok()?;
    (file.key == connection.key).then_some(file.listing)
}

/// Caches a listing (temporary file, then rename). A cache that cannot be written only
/// costs a listing next time, so the error is returned for a warning, not raised.
pub fn write_cache(
    agent_dir: &Path,
    connection: &Connection,
    listing: &Listing,
) -> Result<(), String> {
    let path = cache_path(agent_dir, &connection.name);
    let file = CacheFile {
        key: connection.key.clone(),
        listing: listing.clone(),
    };
    let mut bytes = serde_json::to_vec_pretty(&file).map_err(|e| e.to_string())?;
    bytes.push(b'\n');
    crate::statedir::create(agent_dir, &[CACHE_DIR])
        .and_then(|dir| dir.write(&cache_file(&connection.name), &bytes))
        .map_err(|e| format!("cannot write `{}`: {e}", path.display()))
}

/// What the build knows of each connection of the agent in `agent_dir`: cached listings
/// where valid (unless refreshing), the others listed together through the lister.
pub fn obtain(
    agent_dir: &Path,
    workspace: &Path,
    connections: &[&Connection],
    confinement: Confinement<'_>,
    options: Options<'_>,
) -> Vec<Known> {
    let cached: Vec<Option<Listing>> = connections
        .iter()
        .map(|c| read_cache(agent_dir, c))
        .collect();
    let mut known: Vec<Known> = cached
        .iter()
        .map(|cached| match cached {
            Some(listing) if !options.refresh => Known::Listed {
                listing: listing.clone(),
                cached: true,
            },
            _ => Known::Unlisted,
        })
        .collect();
    let Some(lister) = options.lister else {
        return settle(agent_dir, connections, known);
    };
    let missing: Vec<usize> = (0..connections.len())
        .filter(|&i| known[i] == Known::Unlisted)
        .collect();
    if missing.is_empty() {
        return settle(agent_dir, connections, known);
    }
    let wanted: Vec<Wanted<'_>> = missing
        .iter()
        .map(|&i| Wanted {
            agent_dir,
            workspace,
            connection: connections[i],
            confinement,
        })
        .collect();
    let results = lister.list(&wanted);
    for (&i, result) in missing.iter().zip(results) {
        known[i] = match result {
            Ok(listing) => {
                // A cache that cannot be written costs a listing next time, nothing more.
                let _ = write_cache(agent_dir, connections[i], &listing);
                Known::Listed {
                    listing,
                    cached: false,
                }
            }
            Err(reason) => Known::Failed {
                reason,
                stale: cached[i].clone(),
            },
        };
    }
    settle(agent_dir, connections, known)
}

/// Tells the build cache what the listings depend on: each cached listing as it is now
/// (after this build wrote its own), and whether any connection went unlisted, which
/// keeps the build out of the cache so that the next one tries its server again.
fn settle(agent_dir: &Path, connections: &[&Connection], known: Vec<Known>) -> Vec<Known> {
    for connection in connections {
        let path = cache_path(agent_dir, &connection.name);
        super::cache::look(&path);
    }
    if known.iter().any(|k| !matches!(k, Known::Listed { .. })) {
        super::cache::unsettled();
    }
    known
}
