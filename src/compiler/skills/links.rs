//! Relative links in a packaged skill's `SKILL.md`: placeholders resolved, targets
//! checked, and linked files outside the skill's folder recorded as its resources.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::path::{Component, Path};

use pulldown_cmark::{Event, Parser, Tag};

use super::super::diagnostic::{Diagnostic, Diagnostics, code};
use super::super::source::SourceFile;

pub use crate::manifest::SKILL_DIR_PLACEHOLDERS;

/// Where a skill sits.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    /// This agent's directory relative to the top-level one (`""` at the top).
    pub prefix: &'a str,
    /// The top-level agent directory, canonical: nothing outside it is followed.
    pub boundary: &'a Path,
}

/// Checks every relative link and image of a packaged skill whose folder is `skill_dir`
/// (relative to its agent directory) and whose files are `walked` (as the loader found
/// them, relative to the agent directory). Every finding is a warning: the skill works
/// either way. Returns the existing files it links outside its own folder, relative to
/// its agent directory, to be listed as its resources.
pub fn check(
    body: &str,
    body_offset: usize,
    skill_dir: &str,
    walked: &[String],
    place: Place<'_>,
    src: &SourceFile,
    diags: &mut Diagnostics,
) -> Vec<String> {
    let mut linked = Vec::new();
    let mut walked_set: Option<HashSet<&str>> = None;
    for (event, range) in Parser::new(body).into_offset_iter() {
        let dest = match &event {
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => dest_url.to_string(),
            _ => continue,
        };
        let span = Some(body_offset + range.start..body_offset + range.end);
        let (target, placeholder) = match placeholder(&dest) {
            Placeholder::SkillDir { placeholder, rest } => match relative_target(rest) {
                Some(target) => (target, Some(placeholder)),
                None => continue,
            },
            Placeholder::Unknown(name) => {
                diags.push(
                    Diagnostic::warning(
                        code::UNKNOWN_PLACEHOLDER,
                        format!("link `{dest}` uses `{name}`, which eve does not resolve"),
                    )
                    .at(src, span)
                    .note("eve reads `{baseDir}` and `${CLAUDE_SKILL_DIR}` as the skill's folder; any other placeholder is left as written and the link is not checked")
                    .help("write the link relative to `SKILL.md`"),
                );
                continue;
            }
            Placeholder::None => match relative_target(&dest) {
                Some(target) => (target, None),
                None => continue,
            },
        };
        let Some(from_top) = normalize([place.prefix, skill_dir, &target]) else {
            diags.push(leaves(&dest, src, span.clone()).note(
                "eve reads nothing outside the agent directory, so the model is not pointed at this file",
            ));
            continue;
        };
        let shown = relative_to(&from_top, place.prefix);
        // A file the loader found in the skill's folder is there, inside the agent
        // directory, and listed already: no need to look again.
        if walked_set
            .get_or_insert_with(|| walked.iter().map(String::as_str).collect())
            .contains(shown.as_str())
        {
            continue;
        }
        let real = crate::compiler::cache::canonicalize(&place.boundary.join(&from_top));
        match real {
            Err(_) => {
                let mut diagnostic = Diagnostic::warning(
                    code::BROKEN_SKILL_LINK,
                    format!("link `{dest}` points at a file that does not exist"),
                )
                .at(src, span);
                if let Some(placeholder) = placeholder {
                    diagnostic = diagnostic.note(format!(
                        "`{placeholder}` is the skill's folder, `{skill_dir}`"
                    ));
                }
                diags.push(diagnostic.help(format!("create `{from_top}`, or fix the link")));
            }
            Ok(real) if !real.starts_with(place.boundary) => {
                diags.push(leaves(&dest, src, span).note(
                    "the path goes through a symbolic link to outside the agent directory, which eve does not follow",
                ));
            }
            Ok(real) if crate::compiler::cache::is_dir(&real) => {}
            Ok(_) => {
                // Files in the skill's folder are listed already; hidden ones never are.
                let inside_skill =
                    from_top.starts_with(&format!("{}/", join(place.prefix, skill_dir)));
                let hidden = from_top.split('/').any(|part| part.starts_with('.'));
                if !inside_skill && !hidden && !linked.contains(&shown) {
                    linked.push(shown);
                }
            }
        }
    }
    linked
}

fn leaves(dest: &str, src: &SourceFile, span: Option<std::ops::Range<usize>>) -> Diagnostic {
    Diagnostic::warning(
        code::LINK_LEAVES_AGENT,
        format!("link `{dest}` leaves the agent directory"),
    )
    .at(src, span)
    .help("copy the file into the skill's folder and link it from there")
}

#[derive(Debug, PartialEq, Eq)]
enum Placeholder<'a> {
    /// Starts with a placeholder for the skill's folder; `rest` is relative to it.
    SkillDir {
        placeholder: &'static str,
        rest: &'a str,
    },
    /// Holds a `${…}` eve does not know, such as `${CLAUDE_PLUGIN_ROOT}`.
    Unknown(&'a str),
    None,
}

fn placeholder(dest: &str) -> Placeholder<'_> {
    let dest = dest.trim();
    for placeholder in SKILL_DIR_PLACEHOLDERS {
        if let Some(rest) = dest.strip_prefix(placeholder)
            && (rest.is_empty() || rest.starts_with('/'))
        {
            return Placeholder::SkillDir {
                placeholder,
                rest: rest.trim_start_matches('/'),
            };
        }
    }
    if let Some(start) = dest.find("${") {
        let end = dest[start..]
            .find('}')
            .map_or(dest.len(), |e| start + e + 1);
        return Placeholder::Unknown(&dest[start..end]);
    }
    Placeholder::None
}

/// The file part of a link if it is relative (no scheme, not absolute, not a bare anchor).
fn relative_target(dest: &str) -> Option<String> {
    let dest = dest.trim();
    if dest.is_empty() || dest.starts_with('#') || dest.starts_with('/') || dest.starts_with('\\') {
        return None;
    }
    let scheme_end = dest.find(':');
    let path_start = dest.find(['/', '?', '#']);
    if let Some(colon) = scheme_end
        && path_start.is_none_or(|p| colon < p)
    {
        return None;
    }
    let file = dest.split(['#', '?']).next().unwrap_or("");
    (!file.is_empty()).then(|| file.replace("%20", " "))
}

/// Joins relative paths lexically into one path relative to the top-level agent
/// directory, with `/` separators; `None` if it climbs out of it.
fn normalize<'a>(parts: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut out: Vec<&OsStr> = Vec::new();
    for part in parts {
        for component in Path::new(part).components() {
            match component {
                Component::Normal(part) => out.push(part),
                Component::CurDir => {}
                Component::ParentDir => {
                    out.pop()?;
                }
                Component::RootDir | Component::Prefix(_) => return None,
            }
        }
    }
    Some(
        out.iter()
            .map(|p| p.to_string_lossy())
            .collect::<Vec<_>>()
            .join("/"),
    )
}

/// A path relative to the top-level directory, made relative to the agent directory at
/// `prefix` (a subagent's skill may link a file of its parent: `../../NOTES.md`).
fn relative_to(from_top: &str, prefix: &str) -> String {
    let path: Vec<&str> = from_top.split('/').filter(|p| !p.is_empty()).collect();
    let base: Vec<&str> = prefix.split('/').filter(|p| !p.is_empty()).collect();
    let common = path.iter().zip(&base).take_while(|(a, b)| a == b).count();
    let mut out: Vec<&str> = vec![".."; base.len() - common];
    out.extend(&path[common..]);
    out.join("/")
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        b.to_string()
    } else {
        format!("{a}/{b}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn tells_relative_links_from_others() {
        assert_eq!(relative_target("template.md"), Some("template.md".into()));
        assert_eq!(relative_target("./a b.md#x"), Some("./a b.md".into()));
        assert_eq!(
            relative_target("docs/a%20b.md?x=1"),
            Some("docs/a b.md".into())
        );
        for other in [
            "https://x.dev/a",
            "mailto:a@b.c",
            "#anchor",
            "/abs/path",
            "",
        ] {
            assert_eq!(relative_target(other), None, "{other}");
        }
    }

    #[test]
    fn reads_placeholders_for_the_skill_folder() {
        assert_eq!(
            placeholder("{baseDir}/references/x.md"),
            Placeholder::SkillDir {
                placeholder: "{baseDir}",
                rest: "references/x.md"
            }
        );
        assert_eq!(
            placeholder("${CLAUDE_SKILL_DIR}/../other/SKILL.md"),
            Placeholder::SkillDir {
                placeholder: "${CLAUDE_SKILL_DIR}",
                rest: "../other/SKILL.md"
            }
        );
        assert_eq!(
            placeholder("${CLAUDE_PLUGIN_ROOT}/docs/a.md"),
            Placeholder::Unknown("${CLAUDE_PLUGIN_ROOT}")
        );
        assert_eq!(placeholder("docs/${X"), Placeholder::Unknown("${X"));
        assert_eq!(placeholder("{baseDirX}/a.md"), Placeholder::None);
        assert_eq!(placeholder("a.md"), Placeholder::None);
    }

    #[test]
    fn normalizes_within_the_top_level_directory_only() {
        assert_eq!(
            normalize(["", "skills/a", "../b/SKILL.md"]),
            Some("skills/b/SKILL.md".into())
        );
        assert_eq!(
            normalize(["", "skills/a", "../../NOTES.md"]),
            Some("NOTES.md".into())
        );
        assert_eq!(normalize(["", "skills/a", "../../../x.md"]), None);
        assert_eq!(
            normalize(["subagents/r", "skills/a", "./x/../y.md"]),
            Some("subagents/r/skills/a/y.md".into())
        );
    }

    #[test]
    fn paths_are_shown_relative_to_their_agent() {
        assert_eq!(relative_to("NOTES.md", ""), "NOTES.md");
        assert_eq!(
            relative_to("subagents/r/NOTES.md", "subagents/r"),
            "NOTES.md"
        );
        assert_eq!(relative_to("NOTES.md", "subagents/r"), "../../NOTES.md");
    }
}
