//! A Claude Code marketplace (`.claude-plugin/marketplace.json`): the plugins it lists,
//! where each lives (a folder of the marketplace, or somewhere eve never downloads
//! from), and which one an import takes: the one named with `--plugin`, or the only
//! one listed.

use serde_json::Value;

use super::report::shown;
use super::server_files::plain;

/// Where the marketplace file is, in the marketplace's folder.
pub const FILE: &str = ".claude-plugin/marketplace.json";

/// How many of the plugins that are not in the marketplace's folder its listing shows.
const MAX_ELSEWHERE_SHOWN: usize = 10;

/// The keys of a plugin entry that are about the listing, not the plugin.
const LISTING_KEYS: &[&str] = &[
    "name",
    "source",
    "description",
    "version",
    "author",
    "homepage",
    "repository",
    "license",
    "keywords",
    "category",
    "tags",
    "strict",
    "$schema",
];

/// A marketplace file, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Marketplace {
    /// Its `name` (empty without one).
    pub name: String,
    pub plugins: Vec<Listed>,
}

/// One plugin a marketplace lists.
#[derive(Debug, Clone, PartialEq)]
pub struct Listed {
    pub name: String,
    pub description: Option<String>,
    pub place: Place,
    /// The entry itself: with `"strict": false` (or without a `plugin.json`), it is the
    /// plugin's manifest (`skills`, `agents`, `commands`, `mcpServers`, `hooks`).
    pub entry: Value,
}

/// Where a listed plugin lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// A folder of the marketplace, as plain names from its root (`""`: the root).
    Here(String),
    /// Elsewhere (GitHub, a git URL, npm…), as shown to a person: eve never fetches it.
    Remote(String),
    /// A `source` eve cannot follow (absolute, climbing out with `..`, not a source), and why.
    Unusable(String),
}

impl Listed {
    /// The entry's keys that describe the plugin itself (its parts), not its listing.
    pub fn manifest(&self) -> Value {
        let mut manifest = serde_json::Map::new();
        if let Value::Object(map) = &self.entry {
            for (key, value) in map {
                if key == "name" || key == "description" || !LISTING_KEYS.contains(&key.as_str()) {
                    manifest.insert(key.clone(), value.clone());
                }
            }
        }
        Value::Object(manifest)
    }
}

/// Reads a marketplace file's text.
pub fn read(text: &str) -> Result<Marketplace, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| format!("not valid JSON ({e})"))?;
    let Some(plugins) = value.get("plugins").and_then(Value::as_array) else {
        return Err("it has no `plugins` list".into());
    };
    let root = value
        .pointer("/metadata/pluginRoot")
        .or_else(|| value.get("pluginRoot"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut listed = Vec::new();
    for (index, entry) in plugins.iter().enumerate() {
        let name = entry
            .get("name")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| format!("(entry {})", index + 1));
        listed.push(Listed {
            name,
            description: entry
                .get("description")
                .and_then(Value::as_str)
                .map(str::to_string),
            place: place(entry.get("source"), root),
            entry: entry.clone(),
        });
    }
    Ok(Marketplace {
        name: value
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        plugins: listed,
    })
}

/// Where an entry's `source` points: a relative path (`./plugins/x`, or a bare name
/// under the marketplace's `pluginRoot`) is a folder here; an object is elsewhere.
fn place(source: Option<&Value>, plugin_root: &str) -> Place {
    match source {
        Some(Value::String(path)) => local(path, plugin_root),
        Some(Value::Object(map)) => {
            let kind = map.get("source").and_then(Value::as_str).unwrap_or("");
            let text = |key: &str| map.get(key).and_then(Value::as_str);
            match (kind, text("path")) {
                ("local" | "directory", Some(path)) => local(path, plugin_root),
                _ => {
                    let at = text("repo")
                        .or_else(|| text("url"))
                        .or_else(|| text("package"))
                        .unwrap_or("");
                    Place::Remote(format!("{} `{}`", shown(kind), shown(at)))
                }
            }
        }
        Some(_) => Place::Unusable("its `source` is not a path or a source object".into()),
        None => Place::Unusable("it has no `source`".into()),
    }
}

fn local(path: &str, plugin_root: &str) -> Place {
    if path.starts_with('/') {
        return Place::Unusable(format!(
            "its `source` `{}` is an absolute path, not a folder of the marketplace",
            shown(path)
        ));
    }
    let joined = if path.starts_with("./") || path.starts_with("../") || path == "." {
        path.to_string()
    } else {
        format!("{plugin_root}/{path}")
    };
    match plain(&joined) {
        Some(rel) => Place::Here(rel),
        None => Place::Unusable(format!(
            "its `source` `{}` leads outside the marketplace",
            shown(path)
        )),
    }
}

/// Why no plugin was taken: the person must pick one, or the one picked cannot be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pick(pub String);

impl std::fmt::Display for Pick {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Pick {}

impl Marketplace {
    /// The plugin to import: `wanted`, or the only one listed when it is here. `shown`
    /// is the marketplace's folder as the person named it, for the messages.
    pub fn choose(&self, wanted: Option<&str>, shown_as: &str) -> Result<&Listed, Pick> {
        let Some(wanted) = wanted else {
            return match self.plugins.as_slice() {
                [one] if matches!(one.place, Place::Here(_)) => Ok(one),
                _ => Err(Pick(self.listing(shown_as))),
            };
        };
        let Some(listed) = self.plugins.iter().find(|p| p.name == wanted) else {
            let names = self.plugins.iter().map(|p| p.name.as_str());
            let hint = crate::suggest::closest(wanted, names)
                .map(|n| format!(" (did you mean `{n}`?)"))
                .unwrap_or_default();
            return Err(Pick(format!(
                "the marketplace lists no plugin `{}`{hint}\n{}",
                shown(wanted),
                self.listing(shown_as)
            )));
        };
        match &listed.place {
            Place::Here(_) => Ok(listed),
            Place::Remote(at) => Err(Pick(format!(
                "the plugin `{}` is not in `{shown_as}`: the marketplace fetches it from {at}, and eve never downloads\n  = help: fetch it yourself (`git clone`), then `eve import claude` the folder you fetched",
                shown(&listed.name)
            ))),
            Place::Unusable(why) => Err(Pick(format!(
                "the plugin `{}` cannot be imported: {why}",
                shown(&listed.name)
            ))),
        }
    }

    /// The plugins, one a line, and how to pick one.
    fn listing(&self, shown_as: &str) -> String {
        let title = if self.name.is_empty() {
            String::new()
        } else {
            format!(" `{}`", shown(&self.name))
        };
        let mut out = format!(
            "`{shown_as}` is the Claude Code marketplace{title}, which lists {} plugin{}; eve imports one plugin as one agent: pick it with `--plugin NAME`\n",
            self.plugins.len(),
            if self.plugins.len() == 1 { "" } else { "s" }
        );
        // The plugins here first, every one; of those elsewhere, a few and a count.
        let (here, elsewhere): (Vec<&Listed>, Vec<&Listed>) = self
            .plugins
            .iter()
            .partition(|p| matches!(p.place, Place::Here(_)));
        let shown_elsewhere = elsewhere.len().min(MAX_ELSEWHERE_SHOWN);
        let listed: Vec<&Listed> = here
            .into_iter()
            .chain(elsewhere.iter().copied().take(shown_elsewhere))
            .collect();
        let width = listed
            .iter()
            .map(|p| shown(&p.name).chars().count())
            .max()
            .unwrap_or(0);
        for plugin in listed {
            let place = match &plugin.place {
                Place::Here(rel) if rel.is_empty() => "./ (the marketplace's own folder)".into(),
                Place::Here(rel) => format!("./{rel}"),
                Place::Remote(at) => format!("{at}: not here, eve never downloads it"),
                Place::Unusable(why) => format!("cannot be imported: {why}"),
            };
            let about = plugin
                .description
                .as_deref()
                .map(|d| format!(" — {}", shown(d)))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {:<width$}  {place}{about}\n",
                shown(&plugin.name)
            ));
        }
        if elsewhere.len() > shown_elsewhere {
            out.push_str(&format!(
                "  … and {} more that are not in this folder either\n",
                elsewhere.len() - shown_elsewhere
            ));
        }
        out.push_str(&self.help(shown_as));
        out
    }

    /// How to pick a plugin: an example with the first one here.
    fn help(&self, shown_as: &str) -> String {
        self
            .plugins
            .iter()
            .find(|p| matches!(p.place, Place::Here(_)))
            .map(|p| {
                let name = crate::text::shell_word(&shown(&p.name));
                format!(
                    "  = help: `eve import claude {} --plugin {name} --into {name}`; each plugin is an agent of its own",
                    crate::text::shell_word(shown_as)
                )
            })
            .unwrap_or_else(|| {
                "  = help: none of them is in this folder: fetch one yourself, then import its folder".into()
            })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn market() -> Marketplace {
        read(
            r#"{
              "name": "acme",
              "metadata": { "pluginRoot": "./plugins" },
              "plugins": [
                { "name": "review", "source": "./plugins/review", "description": "Reviews" },
                { "name": "docs", "source": "docs", "category": "x", "skills": ["./s"] },
                { "name": "cloud", "source": { "source": "github", "repo": "acme/cloud" } },
                { "name": "up", "source": "../../etc" },
                { "name": "abs", "source": "/etc" },
                { "name": "self", "source": "./" }
              ]
            }"#,
        )
        .unwrap()
    }

    #[test]
    fn sources_are_folders_here_or_elsewhere() {
        let places: Vec<Place> = market().plugins.into_iter().map(|p| p.place).collect();
        assert_eq!(places[0], Place::Here("plugins/review".into()));
        assert_eq!(places[1], Place::Here("plugins/docs".into()));
        assert_eq!(places[2], Place::Remote("github `acme/cloud`".into()));
        assert!(matches!(&places[3], Place::Unusable(w) if w.contains("outside")));
        assert!(matches!(&places[4], Place::Unusable(w) if w.contains("absolute")));
        assert_eq!(places[5], Place::Here(String::new()));
        assert!(read("{}").unwrap_err().contains("`plugins`"));
        assert!(read("{").unwrap_err().contains("not valid JSON"));
    }

    #[test]
    fn a_plugin_is_picked_by_name_and_a_remote_one_is_never_fetched() {
        let market = market();
        assert_eq!(market.choose(Some("review"), "m").unwrap().name, "review");
        let listing = market.choose(None, "m").unwrap_err().0;
        assert!(listing.contains("lists 6 plugins"), "{listing}");
        assert!(
            listing.contains("--plugin review --into review"),
            "{listing}"
        );
        let remote = market.choose(Some("cloud"), "m").unwrap_err().0;
        assert!(remote.contains("eve never downloads"), "{remote}");
        let typo = market.choose(Some("reveiw"), "m").unwrap_err().0;
        assert!(typo.contains("did you mean `review`"), "{typo}");
        assert_eq!(
            market.plugins[1].manifest(),
            serde_json::json!({ "name": "docs", "skills": ["./s"] })
        );
    }

    #[test]
    fn the_only_plugin_here_is_taken_without_asking() {
        let one = read(r#"{"plugins": [{"name": "x", "source": "./"}]}"#).unwrap();
        assert_eq!(one.choose(None, "m").unwrap().name, "x");
        let remote =
            read(r#"{"plugins": [{"name": "x", "source": {"source": "url", "url": "u"}}]}"#)
                .unwrap();
        assert!(remote.choose(None, "m").is_err());
    }

    #[test]
    fn a_long_marketplace_shows_every_plugin_here_and_a_few_of_the_others() {
        let mut plugins = vec![serde_json::json!({"name": "local", "source": "./local"})];
        for n in 0..30 {
            plugins.push(serde_json::json!({
                "name": format!("remote-{n}"),
                "source": {"source": "github", "repo": format!("o/r{n}")}
            }));
        }
        let market = read(&serde_json::json!({ "plugins": plugins }).to_string()).unwrap();
        let listing = market.choose(None, "m").unwrap_err().0;
        assert!(listing.contains("lists 31 plugins"), "{listing}");
        assert!(
            listing.lines().nth(1).unwrap().starts_with("  local "),
            "{listing}"
        );
        assert!(
            listing.contains("remote-9 ") && !listing.contains("remote-10 "),
            "{listing}"
        );
        assert!(
            listing.contains("… and 20 more that are not in this folder either"),
            "{listing}"
        );
        assert_eq!(listing.lines().count(), 14, "{listing}");
    }
}
