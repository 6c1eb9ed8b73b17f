//! Skills: `skills/<name>.md` and packaged `skills/<name>/SKILL.md`, with YAML frontmatter.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use pulldown_cmark::{Event, Parser, Tag};

use super::diagnostic::{Diagnostic, Diagnostics, code};
use super::inputs::{Loaded, SkillFile, sha256};
use super::source::SourceFile;
use crate::manifest::Skill;

/// The longest description a skill may have, in characters (the Agent Skills limit).
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Whether a name is a valid skill or subagent name: `^[a-z0-9][a-z0-9_-]{0,63}$`.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// A Markdown file split into YAML frontmatter and body.
#[derive(Debug, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML text between the fences, if the file has frontmatter.
    pub yaml: Option<&'a str>,
    /// 1-based file line of the first YAML line.
    pub yaml_line: usize,
    /// Byte offset of the body in the file.
    pub body_offset: usize,
    pub body: &'a str,
}

/// Splits off `---` fenced frontmatter at the very start of a file.
/// Returns `Err` with a message when the opening fence is never closed.
pub fn split_frontmatter(text: &str) -> Result<Split<'_>, String> {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return Ok(Split {
            yaml: None,
            yaml_line: 1,
            body_offset: 0,
            body: text,
        });
    };
    let start = text.len() - rest.len();
    let mut offset = start;
    for line in rest.split_inclusive('\n') {
        let bare = line.trim_end_matches(['\n', '\r']);
        if bare == "---" || bare == "..." {
            let body_offset = offset + line.len();
            return Ok(Split {
                yaml: Some(&text[start..offset]),
                yaml_line: 2,
                body_offset,
                body: &text[body_offset..],
            });
        }
        offset += line.len();
    }
    Err("frontmatter starts with `---` but is never closed by a `---` line".into())
}

/// Compiles every skill; reports duplicate names.
pub fn compile(files: &[SkillFile], agent_dir: &Path, diags: &mut Diagnostics) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    let mut first_seen: BTreeMap<String, String> = BTreeMap::new();
    for entry in files {
        let (name, file, resources, packaged) = match entry {
            SkillFile::Flat { name, file } => (name, file, &Vec::new(), false),
            SkillFile::Package {
                name,
                file,
                resources,
            } => (name, file, resources, true),
        };
        let Some(skill) = compile_one(name, file, resources.clone(), packaged, agent_dir, diags)
        else {
            continue;
        };
        if let Some(first) = first_seen.get(&skill.name) {
            diags.push(
                Diagnostic::error(
                    code::DUPLICATE_SKILL,
                    format!("two skills are named `{}`", skill.name),
                )
                .file(file.display.clone())
                .note(format!("the other one is `{first}`"))
                .help("rename or remove one of them"),
            );
            continue;
        }
        first_seen.insert(skill.name.clone(), file.display.clone());
        skills.push(skill);
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills
}

fn compile_one(
    name: &str,
    file: &Loaded,
    resources: Vec<String>,
    packaged: bool,
    agent_dir: &Path,
    diags: &mut Diagnostics,
) -> Option<Skill> {
    let src = SourceFile::new(&file.display, &file.text);
    let mut ok = true;
    if !is_valid_name(name) {
        diags.push(
            Diagnostic::error(code::INVALID_SKILL_NAME, format!("invalid skill name `{name}`"))
                .file(file.display.clone())
                .note("skill names are lowercase letters, digits, `-` and `_`, starting with a letter or digit, at most 64 characters")
                .help(format!("rename it to `{}`", fix_name(name))),
        );
        ok = false;
    }
    let split = match split_frontmatter(&file.text) {
        Ok(split) => split,
        Err(message) => {
            diags.push(Diagnostic::error(code::FRONTMATTER, message).at_line(&src, 1, None));
            return None;
        }
    };
    let front = match split.yaml {
        Some(yaml) => read_frontmatter(yaml, split.yaml_line, &src, diags)?,
        None => Frontmatter::default(),
    };

    if let Some((declared, line)) = &front.name
        && declared != name
    {
        diags.push(
            Diagnostic::error(
                code::SKILL_NAME_MISMATCH,
                format!("skill `{name}` says its name is `{declared}`"),
            )
            .at_line(&src, *line, None)
            .note("a skill's name comes from its path; `name` in the frontmatter must match it")
            .help(format!(
                "write `name: {name}` or rename the {}",
                if packaged { "folder" } else { "file" }
            )),
        );
        ok = false;
    }

    let description = match &front.description {
        Some((description, line)) => {
            let chars = description.chars().count();
            if chars > MAX_DESCRIPTION_CHARS {
                diags.push(
                    Diagnostic::error(
                        code::DESCRIPTION_TOO_LONG,
                        format!(
                            "skill description is {chars} characters; the limit is {MAX_DESCRIPTION_CHARS}"
                        ),
                    )
                    .at_line(&src, *line, None)
                    .help("keep the description to what the skill is for and when to load it; put the rest in the body"),
                );
                ok = false;
            }
            description.trim().to_string()
        }
        None if packaged => {
            diags.push(
                Diagnostic::error(
                    code::SKILL_WITHOUT_DESCRIPTION,
                    format!("packaged skill `{name}` has no `description`"),
                )
                .at_line(&src, 1, None)
                .help("add frontmatter: `---`, `description: <when to use this skill>`, `---`"),
            );
            ok = false;
            String::new()
        }
        None => match derive_description(split.body) {
            Some(d) => d,
            None => {
                diags.push(
                    Diagnostic::error(
                        code::SKILL_WITHOUT_DESCRIPTION,
                        format!("skill `{name}` has no description"),
                    )
                    .file(file.display.clone())
                    .help("add a `description` in frontmatter, or a first line to the body"),
                );
                ok = false;
                String::new()
            }
        },
    };

    if packaged {
        let skill_dir = agent_dir.join(&file.path);
        let skill_dir = skill_dir.parent().unwrap_or(agent_dir);
        ok &= check_links(split.body, split.body_offset, skill_dir, &src, diags);
    }

    ok.then(|| Skill {
        name: name.to_string(),
        description,
        path: file.path.clone(),
        deferred: front.deferred,
        license: front.license,
        metadata: front.metadata,
        body_hash: sha256(split.body),
        body_offset: split.body_offset,
        resources,
    })
}

#[derive(Debug, Default)]
struct Frontmatter {
    name: Option<(String, usize)>,
    description: Option<(String, usize)>,
    license: Option<String>,
    metadata: BTreeMap<String, String>,
    deferred: bool,
}

fn read_frontmatter(
    yaml: &str,
    first_line: usize,
    src: &SourceFile,
    diags: &mut Diagnostics,
) -> Option<Frontmatter> {
    let value: serde_yaml::Value = match serde_yaml::from_str(yaml) {
        Ok(value) => value,
        Err(e) => {
            let message = e.to_string();
            let message = message.split(" at line ").next().unwrap_or(&message);
            let (line, column) = e.location().map_or((first_line, None), |l| {
                (first_line + l.line() - 1, Some(l.column()))
            });
            diags.push(
                Diagnostic::error(
                    code::FRONTMATTER,
                    format!("invalid YAML frontmatter: {message}"),
                )
                .at_line(src, line, column),
            );
            return None;
        }
    };
    let mapping = match value {
        serde_yaml::Value::Null => return Some(Frontmatter::default()),
        serde_yaml::Value::Mapping(mapping) => mapping,
        _ => {
            diags.push(
                Diagnostic::error(
                    code::FRONTMATTER,
                    "frontmatter must be a YAML mapping of `key: value` lines",
                )
                .at_line(src, first_line, None),
            );
            return None;
        }
    };
    let line_of = |key: &str| key_line(yaml, key).map_or(first_line, |l| first_line + l);
    let mut front = Frontmatter::default();
    let mut ok = true;
    let mut wrong = |key: &str, expected: &str| {
        diags.push(
            Diagnostic::error(
                code::FRONTMATTER,
                format!("frontmatter `{key}` must be {expected}"),
            )
            .at_line(src, line_of(key), None),
        );
        ok = false;
    };
    for (key, value) in &mapping {
        let Some(key) = key.as_str() else { continue };
        match key {
            "name" => match value.as_str() {
                Some(s) => front.name = Some((s.to_string(), line_of(key))),
                None => wrong(key, "a string"),
            },
            "description" => match value.as_str() {
                Some(s) => front.description = Some((s.to_string(), line_of(key))),
                None => wrong(key, "a string"),
            },
            "license" => match value.as_str() {
                Some(s) => front.license = Some(s.to_string()),
                None => wrong(key, "a string"),
            },
            "deferred" => match value.as_bool() {
                Some(b) => front.deferred = b,
                None => wrong(key, "true or false"),
            },
            "metadata" => match value.as_mapping() {
                Some(map) => {
                    for (k, v) in map {
                        match (k.as_str(), scalar_text(v)) {
                            (Some(k), Some(v)) => {
                                front.metadata.insert(k.to_string(), v);
                            }
                            _ => {
                                wrong(key, "a mapping of strings to strings");
                                break;
                            }
                        }
                    }
                }
                None => wrong(key, "a mapping of strings to strings"),
            },
            // Other Agent Skills fields (`allowed-tools`, `compatibility`, …) are accepted.
            _ => {}
        }
    }
    ok.then_some(front)
}

fn scalar_text(value: &serde_yaml::Value) -> Option<String> {
    match value {
        serde_yaml::Value::String(s) => Some(s.clone()),
        serde_yaml::Value::Number(n) => Some(n.to_string()),
        serde_yaml::Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// The 0-based line of the YAML text where a top-level `key:` is written.
fn key_line(yaml: &str, key: &str) -> Option<usize> {
    yaml.lines().position(|line| {
        line.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with(':'))
    })
}

/// The first non-empty, non-fence line of a body, with leading `#`, `>`, `*`, `-` stripped.
pub fn derive_description(body: &str) -> Option<String> {
    body.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("```") && !l.starts_with("~~~"))
        .map(|l| {
            l.trim_start_matches(['#', '>', '*', '-', ' '])
                .trim()
                .to_string()
        })
        .find(|l| !l.is_empty())
}

/// Checks that relative links and images in a packaged skill point at files in its folder.
fn check_links(
    body: &str,
    body_offset: usize,
    skill_dir: &Path,
    src: &SourceFile,
    diags: &mut Diagnostics,
) -> bool {
    let mut ok = true;
    for (event, range) in Parser::new(body).into_offset_iter() {
        let dest = match &event {
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => dest_url.to_string(),
            _ => continue,
        };
        let Some(target) = relative_target(&dest) else {
            continue;
        };
        let span = Some(body_offset + range.start..body_offset + range.end);
        match resolve_inside(skill_dir, &target) {
            None => {
                diags.push(
                    Diagnostic::error(
                        code::BROKEN_SKILL_LINK,
                        format!("link `{dest}` leaves the skill's folder"),
                    )
                    .at(src, span)
                    .note("a packaged skill is copied and loaded as a unit; its links must stay inside its folder"),
                );
                ok = false;
            }
            Some(path) if !path.exists() => {
                diags.push(
                    Diagnostic::error(
                        code::BROKEN_SKILL_LINK,
                        format!("link `{dest}` points at a file that does not exist"),
                    )
                    .at(src, span)
                    .help(format!(
                        "create `{target}` next to `SKILL.md`, or fix the link"
                    )),
                );
                ok = false;
            }
            Some(_) => {}
        }
    }
    ok
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

/// Joins a relative path to a folder lexically; `None` if it climbs out of it.
fn resolve_inside(dir: &Path, target: &str) -> Option<PathBuf> {
    let mut parts: Vec<&std::ffi::OsStr> = Vec::new();
    for component in Path::new(target).components() {
        match component {
            Component::Normal(part) => parts.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(parts.iter().fold(dir.to_path_buf(), |p, part| p.join(part)))
}

fn fix_name(name: &str) -> String {
    let fixed: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let fixed = fixed.trim_matches('-');
    if fixed.is_empty() {
        "my-skill".into()
    } else {
        fixed.chars().take(64).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn splits_frontmatter_and_body() {
        let text = "---\nname: a\n---\n# Title\n";
        let split = split_frontmatter(text).unwrap();
        assert_eq!(split.yaml, Some("name: a\n"));
        assert_eq!(split.body, "# Title\n");
        assert_eq!(split.body_offset, 16);
        assert!(split_frontmatter("---\nname: a\n").is_err());
        assert_eq!(split_frontmatter("no front\n").unwrap().yaml, None);
    }

    #[test]
    fn derives_a_description_from_the_first_line() {
        assert_eq!(
            derive_description("\n```\ncode\n```\n# Plan a trip\nmore"),
            Some("code".into())
        );
        assert_eq!(
            derive_description("\n\n> - Check the weather\n"),
            Some("Check the weather".into())
        );
        assert_eq!(derive_description("  \n"), None);
    }

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
    fn refuses_links_that_climb_out() {
        let dir = Path::new("/s");
        assert_eq!(
            resolve_inside(dir, "a/../b.md"),
            Some(PathBuf::from("/s/b.md"))
        );
        assert_eq!(resolve_inside(dir, "../other/x.md"), None);
    }

    #[test]
    fn validates_names() {
        assert!(is_valid_name("plan-a-trip_2"));
        assert!(!is_valid_name("Plan"));
        assert!(!is_valid_name("-x"));
        assert!(!is_valid_name(&"a".repeat(65)));
        assert_eq!(fix_name("Plan A Trip"), "plan-a-trip");
    }
}
