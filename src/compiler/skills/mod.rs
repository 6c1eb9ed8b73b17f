//! Skills: `skills/<name>.md` and packaged `skills/<name>/SKILL.md`, with YAML frontmatter.
//!
//! Skills are often written for other clients (Claude Code, Codex, Copilot…): whatever
//! those load builds here too. Only what makes a skill unusable is an error; a foreign
//! habit (a display name in `name:`, a long description, a link eve cannot follow) is a
//! warning.

pub mod frontmatter;
mod links;

use std::collections::BTreeMap;
use std::path::Path;

use super::cache::KeptDiagnostic;
use super::diagnostic::{Diagnostic, Diagnostics, code};
use super::loaded::{Loaded, sha256};
use super::source::SourceFile;
use crate::manifest::Skill;

pub use frontmatter::{Split, split_frontmatter};
pub use links::SKILL_DIR_PLACEHOLDERS;

/// The longest description the Agent Skills format allows, in characters; a longer one
/// is a warning.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The most characters of a description the system prompt lists; the rest is cut.
pub const LISTED_DESCRIPTION_CHARS: usize = 1536;

/// Whether a name is a valid skill or subagent name: `^[a-z0-9][a-z0-9_-]{0,63}$`.
pub fn is_valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// One entry of `skills/`, read and compiled on its own: what it compiled to, and what
/// its loading and checking reported. The build cache keeps it (see
/// [`super::cache`]) and hands it back while the files it looked at are unchanged.
#[derive(Debug, Clone)]
pub struct Unit {
    /// The entry, relative to the top-level agent directory (`skills/plan`).
    pub key: String,
    /// The skill's Markdown file as diagnostics show it, if the entry has one.
    pub file: Option<String>,
    /// The skill, unless the entry is not one or has errors.
    pub skill: Option<Skill>,
    /// Everything reported about the entry, in the order it was found.
    pub diagnostics: Vec<Diagnostic>,
    /// Its part of the agent's inputs hash (hex SHA-256 over the names and contents it
    /// read and the problems it had).
    pub digest: String,
}

/// A [`Unit`] as the build cache keeps it.
#[derive(serde::Serialize, serde::Deserialize)]
struct Kept {
    key: String,
    file: Option<String>,
    skill: Option<Skill>,
    diagnostics: Vec<KeptDiagnostic>,
    digest: String,
}

impl Unit {
    /// The unit as one line of JSON.
    pub fn encode(&self) -> Option<String> {
        let kept = Kept {
            key: self.key.clone(),
            file: self.file.clone(),
            skill: self.skill.clone(),
            diagnostics: self.diagnostics.iter().map(KeptDiagnostic::of).collect(),
            digest: self.digest.clone(),
        };
        serde_json::to_string(&kept).ok()
    }

    /// The unit `key` kept as `payload`; `None` if the payload is not one of `key`.
    pub fn decode(payload: &str, key: &str) -> Option<Unit> {
        let kept: Kept = serde_json::from_str(payload).ok()?;
        if kept.key != key || kept.digest.len() != 64 {
            return None;
        }
        let diagnostics = kept
            .diagnostics
            .into_iter()
            .map(KeptDiagnostic::back)
            .collect::<Option<Vec<_>>>()?;
        Some(Unit {
            key: kept.key,
            file: kept.file,
            skill: kept.skill,
            diagnostics,
            digest: kept.digest,
        })
    }
}

/// The skills of an agent from its units (in file-name order): their diagnostics, and
/// duplicate names reported. A skill that cannot be used (bad frontmatter, no
/// description, a second of one name…) costs that skill, not the agent: its errors
/// become one warning that it is left out ([`left_out`]), unless `strict`.
pub fn compile(units: &[Unit], strict: bool, diags: &mut Diagnostics) -> Vec<Skill> {
    let mut skills: Vec<Skill> = Vec::new();
    let mut first_seen: BTreeMap<String, String> = BTreeMap::new();
    for unit in units {
        let file = unit.file.clone().unwrap_or_else(|| unit.key.clone());
        let mut found = unit.diagnostics.clone();
        let skill = unit.skill.as_ref().filter(|skill| {
            let Some(first) = first_seen.get(&skill.name) else {
                return true;
            };
            found.push(
                Diagnostic::error(
                    code::DUPLICATE_SKILL,
                    format!("two skills are named `{}`", skill.name),
                )
                .file(file.clone())
                .note(format!("the other one is `{first}`"))
                .help("rename or remove one of them"),
            );
            false
        });
        if strict {
            found = found.into_iter().map(self::strict).collect();
        }
        let usable = !found.iter().any(Diagnostic::is_error);
        if strict || usable {
            diags.extend(found);
        } else {
            let (errors, warnings): (Vec<_>, Vec<_>) =
                found.into_iter().partition(Diagnostic::is_error);
            diags.extend(warnings);
            diags.extend(left_out(&unit.key, errors));
        }
        if let Some(skill) = skill.filter(|_| usable) {
            first_seen.insert(skill.name.clone(), file);
            skills.push(skill.clone());
        }
    }
    skills.sort_by(|a, b| a.name.cmp(&b.name));
    skills
}

/// W0413: the entry `key` (`skills/deploy`) is left out for its `errors` (at least
/// one): the first says why, where it is; the others follow as notes.
pub fn left_out(key: &str, errors: Vec<Diagnostic>) -> Option<Diagnostic> {
    let mut errors = errors.into_iter();
    let first = errors.next()?;
    let name = key.rsplit('/').next().unwrap_or(key);
    let name = name.strip_suffix(".md").unwrap_or(name);
    let mut warning = Diagnostic {
        severity: super::diagnostic::Severity::Warning,
        code: code::SKILL_LEFT_OUT,
        message: format!("skill `{name}` is left out: {}", first.message),
        ..first
    };
    for other in errors {
        warning = warning.note(format!("also: {}", other.message));
    }
    Some(warning.note(
        "a skill that cannot be used costs that skill, not the agent; `eve build --strict` refuses the agent instead",
    ))
}

/// Compiles the skill of one entry of the agent directory at `prefix` (relative to the
/// top-level directory `boundary`, which is canonical).
pub fn compile_entry(
    entry: &SkillFile,
    prefix: &str,
    boundary: &Path,
    diags: &mut Diagnostics,
) -> Option<Skill> {
    compile_one(entry, links::Place { prefix, boundary }, diags)
}

/// Compiles one skill, reporting every problem it has (a frontmatter error does not
/// hide its links); `None` when one of them is an error.
fn compile_one(
    entry: &SkillFile,
    place: links::Place<'_>,
    diags: &mut Diagnostics,
) -> Option<Skill> {
    let (name, file, walked, packaged) = match entry {
        SkillFile::Flat { name, file } => (name, file, &[][..], false),
        SkillFile::Package {
            name,
            file,
            resources,
        } => (name, file, &resources[..], true),
    };
    let src = SourceFile::new(&file.display, &file.text);
    let entry_name = name;
    let Some(name) = &loaded_name(name, file, diags) else {
        return None;
    };
    let mut ok = true;
    let split = match split_frontmatter(&file.text) {
        Ok(split) => split,
        Err(message) => {
            diags.push(Diagnostic::error(code::FRONTMATTER, message).at_line(&src, 1, None));
            return None;
        }
    };
    let front = match split.yaml {
        Some(yaml) => frontmatter::read_frontmatter(yaml, split.yaml_line, &src, diags),
        None => Some(frontmatter::Frontmatter::default()),
    };
    let front_read = front.is_some();
    ok &= front_read;
    let front = front.unwrap_or_default();

    if let Some((declared, line)) = &front.name
        && declared != name
        && declared != entry_name
    {
        check_declared_name(name, declared, *line, packaged, &src, diags);
    }

    let description = match skill_description(&front, split.body, &src, diags) {
        Some(description) => listed(&description),
        None => {
            // Frontmatter that cannot be read may well hold the description: its own
            // error says what is wrong.
            if front_read {
                report_no_description(name, file, packaged, diags);
            }
            ok = false;
            String::new()
        }
    };

    let mut resources = walked.to_vec();
    if packaged {
        let skill_dir = file
            .path
            .strip_suffix("/SKILL.md")
            .unwrap_or(&file.path)
            .to_string();
        resources.extend(links::check(
            split.body,
            split.body_offset,
            &skill_dir,
            walked,
            place,
            &src,
            diags,
        ));
        resources.sort();
        resources.dedup();
    }

    ok.then(|| Skill {
        name: name.to_string(),
        description,
        path: file.path.clone(),
        deferred: front.deferred,
        license: front.license,
        metadata: front
            .metadata
            .unwrap_or_else(|| serde_json::Value::Object(serde_json::Map::new())),
        body_hash: sha256(split.body),
        body_offset: split.body_offset,
        resources,
        linked: None,
    })
}

/// The name the skill of the entry `name` is loaded as: its own when valid; else, as
/// Claude Code loads such a skill, the name normalised (lowercase, `-` for what a name
/// cannot hold, cut at 64 characters) with a warning that says so ([`strict`] makes it
/// the error it was); `None`, after an error, when nothing of it is left.
fn loaded_name(name: &str, file: &Loaded, diags: &mut Diagnostics) -> Option<String> {
    if is_valid_name(name) {
        return Some(name.to_string());
    }
    let rule = "skill names are lowercase letters, digits, `-` and `_`, starting with a letter or digit, at most 64 characters";
    let fixed = fix_name(name);
    if fixed.is_empty() {
        diags.push(
            Diagnostic::error(
                code::INVALID_SKILL_NAME,
                format!("invalid skill name `{name}`"),
            )
            .file(file.display.clone())
            .note(rule)
            .help("rename it to lowercase letters, digits, `-` and `_`"),
        );
        return None;
    }
    diags.push(
        Diagnostic::warning(
            code::SKILL_NAME_NORMALISED,
            format!("invalid skill name `{name}`: loaded as `{fixed}`"),
        )
        .file(file.display.clone())
        .note(rule)
        .help(format!("rename it to `{fixed}`")),
    );
    Some(fixed)
}

/// A diagnostic as `eve build --strict` reports it: what a build loads anyway, with a
/// warning, is the error it is for a skill author's CI (an invalid name, a file that is
/// not UTF-8).
fn strict(d: Diagnostic) -> Diagnostic {
    let (code, notes) = match d.code {
        code::SKILL_NAME_NORMALISED => (code::INVALID_SKILL_NAME, 1),
        code::SKILL_NOT_UTF8 => (code::UNREADABLE, 0),
        _ => return d,
    };
    // The last one: a name may hold the words itself.
    let message = match d.message.rsplit_once(": loaded as ") {
        Some((invalid, _)) => invalid.to_string(),
        None => d
            .message
            .split("; ")
            .next()
            .unwrap_or(&d.message)
            .to_string(),
    };
    Diagnostic {
        severity: super::diagnostic::Severity::Error,
        code,
        message,
        notes: d.notes.into_iter().take(notes).collect(),
        ..d
    }
}

/// The skill's description: the frontmatter's (a warning when it is over the Agent
/// Skills limit) or, without one, the body's first line.
fn skill_description(
    front: &frontmatter::Frontmatter,
    body: &str,
    src: &SourceFile,
    diags: &mut Diagnostics,
) -> Option<String> {
    let Some((description, line)) = &front.description else {
        // A skill that was written with frontmatter but no description (or a blank one)
        // is described by its first line, packaged or flat.
        return derive_description(body);
    };
    let chars = description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        let listed = if chars > LISTED_DESCRIPTION_CHARS {
            format!("the system prompt lists its first {LISTED_DESCRIPTION_CHARS} characters")
        } else {
            format!(
                "it is listed in full; eve cuts descriptions at {LISTED_DESCRIPTION_CHARS} characters"
            )
        };
        diags.push(
            Diagnostic::warning(
                code::DESCRIPTION_TOO_LONG,
                format!(
                    "skill description is {chars} characters, over the Agent Skills limit of {MAX_DESCRIPTION_CHARS}"
                ),
            )
            .at_line(src, *line, None)
            .note(listed)
            .help("keep the description to what the skill is for and when to load it; put the rest in the body"),
        );
    }
    Some(description.clone())
}

/// The error of a skill with no description at all.
fn report_no_description(name: &str, file: &Loaded, packaged: bool, diags: &mut Diagnostics) {
    let help = if packaged {
        "add `description: <when to use this skill>` to the frontmatter of `SKILL.md`"
    } else {
        "add a `description` in frontmatter, or a first line to the body"
    };
    diags.push(
        Diagnostic::error(
            code::SKILL_WITHOUT_DESCRIPTION,
            format!("skill `{name}` has no description"),
        )
        .file(file.display.clone())
        .note("the system prompt lists each skill's description so that the model knows when to load it")
        .help(help),
    );
}

/// A `name:` that differs from the path: the path wins, so the skill still works.
fn check_declared_name(
    name: &str,
    declared: &str,
    line: usize,
    packaged: bool,
    src: &SourceFile,
    diags: &mut Diagnostics,
) {
    let what = if packaged { "folder" } else { "file" };
    let help = if is_valid_name(declared) {
        format!("to load it as `{declared}`, rename the {what}; to silence this, drop `name:`")
    } else {
        format!("drop `name:` or write `name: {name}` to silence this")
    };
    diags.push(
        Diagnostic::warning(
            code::SKILL_NAME_MISMATCH,
            format!("skill `{name}` says its name is `{declared}`"),
        )
        .at_line(src, line, None)
        .note(format!(
            "eve names a skill after its {what}: the model lists and loads this one as `{name}`"
        ))
        .help(help),
    );
}

/// A description as the system prompt lists it: at most [`LISTED_DESCRIPTION_CHARS`]
/// characters, ending in `…` when cut.
fn listed(description: &str) -> String {
    if description.chars().count() <= LISTED_DESCRIPTION_CHARS {
        return description.to_string();
    }
    let kept: String = description
        .chars()
        .take(LISTED_DESCRIPTION_CHARS - 1)
        .collect();
    format!("{}…", kept.trim_end())
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

/// `name` as a valid skill name: lowercase, `-` for what a name cannot hold, cut at a
/// word boundary to 64 characters; empty when nothing of it is left.
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
    let fixed = fixed.trim_matches(['-', '_']);
    if fixed.is_empty() {
        return String::new();
    }
    if fixed.len() <= 64 {
        return fixed.to_string();
    }
    // Too long: cut at the last word boundary that fits, never inside a word (unless
    // the first word alone is longer than the limit).
    let head = &fixed[..64];
    let cut = match fixed.as_bytes()[64] {
        b'-' | b'_' => head,
        _ => head.rfind(['-', '_']).map_or(head, |at| &head[..at]),
    };
    cut.trim_end_matches(['-', '_']).to_string()
}

/// One entry of `skills/`.
#[derive(Debug, Clone)]
pub enum SkillFile {
    /// `skills/<name>.md`
    Flat { name: String, file: Loaded },
    /// `skills/<name>/SKILL.md` and its other files (relative to the agent directory).
    Package {
        name: String,
        file: Loaded,
        resources: Vec<String>,
    },
}

impl SkillFile {
    /// The skill's Markdown file.
    pub fn file(&self) -> &Loaded {
        match self {
            SkillFile::Flat { file, .. } | SkillFile::Package { file, .. } => file,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

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
    fn long_descriptions_are_cut_for_the_listing() {
        let long = "word ".repeat(400);
        let cut = listed(&long);
        assert!(cut.chars().count() <= LISTED_DESCRIPTION_CHARS);
        assert!(cut.ends_with("word…"), "{cut}");
        let unbroken = "x".repeat(2000);
        assert_eq!(listed(&unbroken).chars().count(), LISTED_DESCRIPTION_CHARS);
        let fits = "é".repeat(LISTED_DESCRIPTION_CHARS);
        assert_eq!(listed(&fits), fits);
    }

    fn unit(key: &str, skill: Option<&str>, diagnostics: Vec<Diagnostic>) -> Unit {
        Unit {
            key: key.into(),
            file: Some(format!("{key}.md")),
            skill: skill.map(|name| Skill {
                name: name.into(),
                description: "Does it".into(),
                path: format!("{key}.md"),
                deferred: false,
                license: None,
                metadata: serde_json::json!({}),
                body_hash: String::new(),
                body_offset: 0,
                resources: Vec::new(),
                linked: None,
            }),
            diagnostics,
            digest: "0".repeat(64),
        }
    }

    #[test]
    fn a_skill_with_errors_is_left_out_with_one_warning_unless_strict() {
        let src = SourceFile::new("skills/bad.md", "---\ndescription: [x\n---\n");
        let units = [
            unit("skills/good", Some("good"), Vec::new()),
            unit(
                "skills/bad",
                None,
                vec![
                    Diagnostic::error(code::FRONTMATTER, "invalid YAML frontmatter")
                        .at_line(&src, 2, None)
                        .help("close the list"),
                    Diagnostic::warning(code::BROKEN_SKILL_LINK, "link `x.md` is broken"),
                    Diagnostic::error(
                        code::SKILL_WITHOUT_DESCRIPTION,
                        "skill `bad` has no description",
                    ),
                ],
            ),
            unit("skills/good-again", Some("good"), Vec::new()),
        ];
        let mut lenient = Diagnostics::default();
        let skills = compile(&units, false, &mut lenient);
        assert_eq!(
            skills.iter().map(|s| s.path.as_str()).collect::<Vec<_>>(),
            ["skills/good.md"]
        );
        let shown: Vec<_> = lenient
            .iter()
            .map(|d| {
                (
                    d.code,
                    d.message.as_str(),
                    d.line,
                    d.notes.len(),
                    d.help.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            [
                (
                    code::BROKEN_SKILL_LINK,
                    "link `x.md` is broken",
                    None,
                    0,
                    None
                ),
                (
                    code::SKILL_LEFT_OUT,
                    "skill `bad` is left out: invalid YAML frontmatter",
                    Some(2),
                    2,
                    Some("close the list"),
                ),
                (
                    code::SKILL_LEFT_OUT,
                    "skill `good-again` is left out: two skills are named `good`",
                    None,
                    2,
                    Some("rename or remove one of them"),
                ),
            ]
        );
        assert!(!lenient.has_errors());
        assert_eq!(
            lenient.iter().nth(1).map(|d| d.notes[0].as_str()),
            Some("also: skill `bad` has no description")
        );

        let mut strict = Diagnostics::default();
        compile(&units, true, &mut strict);
        let codes: Vec<_> = strict.iter().map(|d| d.code).collect();
        assert_eq!(
            codes,
            [
                code::FRONTMATTER,
                code::BROKEN_SKILL_LINK,
                code::SKILL_WITHOUT_DESCRIPTION,
                code::DUPLICATE_SKILL
            ]
        );
    }

    #[test]
    fn frontmatter_that_cannot_be_read_is_not_also_a_missing_description() {
        let entry = SkillFile::Flat {
            name: "ship".into(),
            file: Loaded {
                path: "skills/ship.md".into(),
                display: "skills/ship.md".into(),
                text: "---\ndescription: [oops\n---\n".into(),
            },
        };
        let mut diags = Diagnostics::default();
        let boundary = std::env::temp_dir();
        assert!(compile_entry(&entry, "", &boundary, &mut diags).is_none());
        let codes: Vec<_> = diags.iter().map(|d| d.code).collect();
        assert_eq!(codes, [code::FRONTMATTER]);
    }

    #[test]
    fn validates_names() {
        assert!(is_valid_name("plan-a-trip_2"));
        assert!(!is_valid_name("Plan"));
        assert!(!is_valid_name("-x"));
        assert!(!is_valid_name(&"a".repeat(65)));
        assert_eq!(fix_name("Plan A Trip"), "plan-a-trip");
        // Over 64 characters: cut at a word boundary, not inside a word.
        let long =
            "this-is-a-very-long-skill-folder-name-that-goes-beyond-the-sixty-four-character-limit";
        let fixed = fix_name(long);
        assert_eq!(
            fixed,
            "this-is-a-very-long-skill-folder-name-that-goes-beyond-the-sixty"
        );
        assert!(is_valid_name(&fixed) && long.starts_with(&format!("{fixed}-")));
        assert_eq!(fix_name(&"a".repeat(70)), "a".repeat(64));
        assert_eq!(fix_name(&format!("{}-b", "a".repeat(64))), "a".repeat(64));
    }
}
