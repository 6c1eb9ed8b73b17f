//! The context budget: what the model is sent before the first user message — the
//! rendered system prompt, the skills listing, the tool definitions — estimated in
//! tokens from the manifest, and checked against the agent's `context_window`.
//!
//! The estimate is one token per 4 characters (Unicode scalar values, rounded up per
//! part and per tool): no tokenizer of Anthropic's is public, an OpenAI one would be
//! another model's count and costs more to load than a cached build may take, and the
//! question the budget answers (which part costs how much, and is it too much) needs
//! proportions, not exact counts. Everything is computed from the manifest alone, so a
//! build answered from the cache measures the same numbers again without reading an
//! input.

use std::collections::BTreeMap;

use serde::Serialize;

use super::diagnostic::{Diagnostic, Diagnostics, code, thousands};
use crate::manifest::Manifest;

/// Characters per estimated token.
pub const CHARS_PER_TOKEN: u64 = 4;
/// Past this share of the context window the build warns.
pub const WARN_SHARE: f64 = 0.25;
/// How many of the largest tools are named.
const LARGEST: usize = 5;

/// The build's sample values, as in its trial render: the budget must not depend on
/// where or when it is measured.
const SAMPLE_WORKSPACE: &str = "/workspace";
const SAMPLE_DATE: &str = "2000-01-01";

/// The fixed part of every request of one agent, in estimated tokens.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budget {
    /// The instructions, rendered with the build's sample values.
    pub instructions: u64,
    /// The skills listing the system prompt adds when `load_skill` is offered (with the
    /// note on finding deferred skills, when there are some).
    pub skills_listing: u64,
    /// How many skills it lists (deferred skills are not).
    pub skills_listed: usize,
    /// The note on `search_tools` and `call_tool`, when something is deferred.
    pub tool_catalog: u64,
    /// The definitions of the tools in the tool list (deferred ones are not).
    pub tools: u64,
    pub tools_listed: usize,
    /// The sum of the parts.
    pub total: u64,
    pub context_window: u64,
    /// `total` as a share of `context_window` (0.25 is a quarter).
    pub share: f64,
    pub max_output_tokens: u64,
    /// The largest tools, largest first (ties by name).
    pub largest_tools: Vec<ToolCost>,
    /// Each subagent's own budget: it starts its own conversation, with its own system
    /// prompt, tools and window.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub subagents: Vec<SubagentBudget>,
}

/// One tool's definition, in estimated tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolCost {
    pub name: String,
    pub tokens: u64,
}

/// A subagent's budget, under its name.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SubagentBudget {
    pub name: String,
    #[serde(flatten)]
    pub budget: Budget,
}

/// The estimated tokens of `text`.
pub fn tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(CHARS_PER_TOKEN)
}

impl Budget {
    /// The budget of the agent of `manifest` and, nested, of each of its subagents.
    pub fn of(manifest: &Manifest) -> Budget {
        let mut budget = measure(manifest, None);
        budget.subagents = manifest
            .subagents
            .iter()
            .map(|s| SubagentBudget {
                name: s.name.clone(),
                budget: Budget::of(&s.manifest),
            })
            .collect();
        budget
    }

    /// What is left of the window for the conversation and the reply.
    pub fn room(&self) -> u64 {
        self.context_window.saturating_sub(self.total)
    }

    /// The lines `eve build` prints under its summary line (no final line break).
    pub fn lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "context: ~{} tokens before the first message, {} of the {}-token window",
            thousands(self.total as usize),
            percent(self.share),
            thousands(self.context_window as usize),
        )];
        let parts = self.parts();
        let numbers: Vec<String> = parts
            .iter()
            .map(|(_, n, _)| format!("~{}", thousands(*n as usize)))
            .collect();
        let name_width = parts.iter().map(|(p, _, _)| p.len()).max().unwrap_or(0);
        let number_width = numbers.iter().map(String::len).max().unwrap_or(0);
        for ((part, _, what), number) in parts.iter().zip(&numbers) {
            lines.push(format!(
                "  {part:<name_width$}  {number:>number_width$}{what}"
            ));
        }
        if let Some(largest) = self.largest() {
            lines.push(format!("  largest tools: {largest}"));
        }
        for sub in &self.subagents {
            sub.lines_into("subagents/", &mut lines);
        }
        lines
    }
}

impl Budget {
    /// The parts that cost something: a name, the tokens, and what they hold.
    fn parts(&self) -> Vec<(&'static str, u64, String)> {
        let mut parts = vec![("instructions", self.instructions, String::new())];
        if self.skills_listing > 0 {
            let what = if self.skills_listed > 0 {
                count(self.skills_listed, "skill")
            } else {
                "every skill deferred".to_string()
            };
            parts.push(("skills listing", self.skills_listing, format!(" ({what})")));
        }
        if self.tool_catalog > 0 {
            parts.push(("tool catalog", self.tool_catalog, String::new()));
        }
        parts.push((
            "tools",
            self.tools,
            format!(" ({})", count(self.tools_listed, "tool")),
        ));
        parts
    }

    /// `bash ~900, grep ~400`.
    fn largest(&self) -> Option<String> {
        let largest: Vec<String> = self
            .largest_tools
            .iter()
            .map(|t| format!("{} ~{}", t.name, thousands(t.tokens as usize)))
            .collect();
        (!largest.is_empty()).then(|| largest.join(", "))
    }
}

impl SubagentBudget {
    fn lines_into(&self, parent: &str, lines: &mut Vec<String>) {
        let b = &self.budget;
        lines.push(format!(
            "  subagent `{parent}{}`: ~{} tokens, {} of its {}-token window",
            self.name,
            thousands(b.total as usize),
            percent(b.share),
            thousands(b.context_window as usize),
        ));
        let here = format!("{parent}{}/subagents/", self.name);
        for sub in &b.subagents {
            sub.lines_into(&here, lines);
        }
    }
}

fn share(total: u64, window: u64) -> f64 {
    if window == 0 {
        return 1.0;
    }
    total as f64 / window as f64
}

fn percent(share: f64) -> String {
    format!("{:.1} %", share * 100.0)
}

fn count(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{} {word}s", thousands(n))
    }
}

/// The budget of one agent, without its subagents.
/// `rendered`: the instructions as the build's trial render gave them, if it did.
fn measure(manifest: &Manifest, rendered: Option<&str>) -> Budget {
    let listed: Vec<&crate::manifest::Tool> = manifest.tools.iter().filter(|t| !t.defer).collect();
    // A built manifest renders with the sample values (the build's trial render did);
    // should it not, the templates as written are the nearest measure.
    let render = || {
        let context = crate::template::Context::new(
            &manifest.agent,
            &manifest.agent.model,
            listed.iter().copied(),
            &manifest.skills,
            SAMPLE_WORKSPACE.into(),
            SAMPLE_DATE.into(),
            manifest
                .instructions
                .env
                .iter()
                .map(|v| (v.clone(), String::new()))
                .collect::<BTreeMap<_, _>>(),
        );
        crate::template::render(&manifest.instructions, &context).map(|text| tokens(&text))
    };
    let instructions = rendered
        .map(|text| Ok(tokens(text)))
        .unwrap_or_else(render)
        .unwrap_or_else(|_| {
            manifest
                .instructions
                .parts
                .iter()
                .map(|p| tokens(&p.template))
                .sum()
        });
    let offers = |name: &str| manifest.tools.iter().any(|t| t.name == name);
    let skills = offers("load_skill")
        .then(|| crate::prompt::skills_prompt(&manifest.skills, offers("search_tools")))
        .flatten();
    let skills_listed = match skills {
        Some(_) => manifest.skills.iter().filter(|s| !s.deferred).count(),
        None => 0,
    };
    let tool_catalog = if offers("search_tools") && manifest.tools.iter().any(|t| t.defer) {
        tokens(&crate::prompt::catalog_section(&manifest.connections))
    } else {
        0
    };
    let mut costs: Vec<ToolCost> = listed
        .iter()
        .map(|t| ToolCost {
            name: t.name.clone(),
            tokens: tokens(&definition(t)),
        })
        .collect();
    let tools = costs.iter().map(|c| c.tokens).sum();
    costs.sort_by(|a, b| b.tokens.cmp(&a.tokens).then_with(|| a.name.cmp(&b.name)));
    costs.truncate(LARGEST);
    let skills_listing = skills.as_deref().map_or(0, tokens);
    let total = instructions + skills_listing + tool_catalog + tools;
    Budget {
        instructions,
        skills_listing,
        skills_listed,
        tool_catalog,
        tools,
        tools_listed: listed.len(),
        total,
        context_window: manifest.agent.limits.context_window,
        share: share(total, manifest.agent.limits.context_window),
        max_output_tokens: manifest.agent.limits.max_output_tokens,
        largest_tools: costs,
        subagents: Vec::new(),
    }
}

/// A tool's definition as the Anthropic request builder sends it (compact JSON of
/// `name`, `description` and `input_schema`; OpenAI's wraps the same in a few more
/// characters).
fn definition(tool: &crate::manifest::Tool) -> String {
    // Borrowed: `json!` copied the whole schema into a new value first, on every build.
    #[derive(serde::Serialize)]
    struct Definition<'a> {
        name: &'a str,
        description: &'a str,
        input_schema: &'a serde_json::Value,
    }
    serde_json::to_string(&Definition {
        name: &tool.name,
        description: &tool.description,
        input_schema: &tool.input_schema,
    })
    .unwrap_or_default()
}

/// E0903 when the listing of the skills that are not deferred (`skills`, of an agent
/// with these `limits`) cannot fit in the window beside a reply: however the system
/// prompt is made — the listing eve adds, or `{{ skills }}` in the instructions — no
/// request could be sent. Returns whether it reported it. Checked before the rest of the
/// budget, which is measured only once the agent builds, and before the trial render,
/// which would otherwise stop at the size limit of a render first.
pub fn check_skills(
    skills: &[crate::manifest::Skill],
    limits: &crate::manifest::Limits,
    file: &str,
    diags: &mut Diagnostics,
) -> bool {
    let Some(listing) = crate::prompt::skills_section(skills) else {
        return false;
    };
    let listing = tokens(&listing);
    let room = limits
        .context_window
        .saturating_sub(limits.max_output_tokens);
    if listing <= room {
        return false;
    }
    let listed = skills.iter().filter(|s| !s.deferred).count();
    diags.push(
        Diagnostic::error(
            code::SKILLS_OVERFLOW,
            format!(
                "the skills listing cannot fit in the context window: ~{} tokens for {}, {} of the {}-token window",
                thousands(listing as usize),
                count(listed, "skill"),
                percent(share(listing, limits.context_window)),
                thousands(limits.context_window as usize),
            ),
        )
        .file(file)
        .note("the system prompt lists every skill that is not deferred, with its description, in every request; with room for a reply (`max_output_tokens`) it must fit in `context_window`")
        .help("defer every skill with `[skills] defer = true` in `agent.toml`: none is listed, and the model finds them with `search_tools` and loads them with `load_skill`; or defer some with `deferred: true` in their frontmatter"),
    );
    true
}

/// Where the agent's `max_output_tokens` came from, for [`check`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// Written in its `agent.toml`.
    Written,
    /// Derived from the window, or the parent's.
    Default,
}

/// Warns when the fixed part of the requests of the agent of `manifest` (its own, not
/// its subagents', which are checked where they are compiled) takes more than
/// [`WARN_SHARE`] of its window, or leaves less room than a default (`output`)
/// `max_output_tokens`; an error when it leaves less room than a written one. `file` is
/// the agent's `agent.toml` as diagnostics name it.
pub fn check(
    manifest: &Manifest,
    rendered: Option<&str>,
    output: Output,
    file: &str,
    diags: &mut Diagnostics,
) {
    let budget = measure(manifest, rendered);
    let total = thousands(budget.total as usize);
    let window = thousands(budget.context_window as usize);
    let smaller = "defer skills (`[skills] defer = true`, or `deferred: true` in one) or connections (`defer = true`), shorten long descriptions, or disable tools the agent does not need";
    let overflows = budget.room() < budget.max_output_tokens;
    let (diagnostic, why, help) = if overflows && output == Output::Default {
        // A default never makes a file invalid (a small local model's window with the
        // default tools): the author is told, and the build stands.
        (
            Diagnostic::warning(
                code::CONTEXT_BUDGET,
                format!(
                    "the context before the first message is ~{total} tokens, {} of the {window}-token window: it leaves ~{}, less than the default `max_output_tokens` ({})",
                    percent(budget.share),
                    thousands(budget.room() as usize),
                    thousands(budget.max_output_tokens as usize),
                ),
            ),
            "a reply to the first message may be cut short",
            format!("{smaller}; or set `[limits] context_window` to the model's real window"),
        )
    } else if overflows {
        (
            Diagnostic::error(
                code::CONTEXT_OVERFLOW,
                format!(
                    "the context before the first message, ~{total} tokens, leaves ~{} of the {window}-token window, less than `max_output_tokens` ({})",
                    thousands(budget.room() as usize),
                    thousands(budget.max_output_tokens as usize),
                ),
            ),
            "the model could not write a whole reply even to the first message",
            format!("{smaller}; or lower `max_output_tokens`"),
        )
    } else if budget.share > WARN_SHARE {
        (
            Diagnostic::warning(
                code::CONTEXT_BUDGET,
                format!(
                    "the context before the first message is ~{total} tokens, {} of the {window}-token window",
                    percent(budget.share),
                ),
            ),
            "every request sends it again, and past a quarter of the window little is left for the conversation",
            smaller.to_string(),
        )
    } else {
        return;
    };
    let parts: Vec<String> = budget
        .parts()
        .iter()
        .map(|(part, n, what)| format!("{part} ~{}{what}", thousands(*n as usize)))
        .collect();
    let mut diagnostic = diagnostic
        .file(file)
        .note(format!("of which {}", parts.join(", ")));
    if let Some(largest) = budget.largest() {
        diagnostic = diagnostic.note(format!("largest tools: {largest}"));
    }
    diags.push(diagnostic.note(why).help(help));
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn compiled(files: &[(&str, &str)]) -> Manifest {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let build = super::super::compile(dir.path(), &crate::tools::builtin::CATALOG);
        build.manifest.unwrap()
    }

    /// The codes a build of these files reports.
    fn codes(files: &[(&str, &str)]) -> (bool, Vec<&'static str>) {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let build = super::super::compile(dir.path(), &crate::tools::builtin::CATALOG);
        let codes = build.diagnostics.iter().map(|d| d.code).collect();
        (build.manifest.is_some(), codes)
    }

    #[test]
    fn a_small_window_with_the_default_output_warns_and_a_written_output_is_an_error() {
        // A local model's window and eve's default tools: only the window was written.
        let window = "model = \"openai/m\"\n[limits]\ncontext_window = 4096\n";
        let (built, found) = codes(&[("agent.toml", window), ("instructions.md", "Hi.\n")]);
        assert!(built, "{found:?}");
        assert_eq!(found, vec![code::CONTEXT_BUDGET]);
        // The same room, with `max_output_tokens` the author wrote: it cannot fit.
        let written = format!("{window}max_output_tokens = 1024\n");
        let (built, found) = codes(&[("agent.toml", &written), ("instructions.md", "Hi.\n")]);
        assert!(!built, "{found:?}");
        assert_eq!(found, vec![code::CONTEXT_OVERFLOW]);
    }

    #[test]
    fn a_listing_that_cannot_fit_is_an_error_even_rendered_without_load_skill() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(
            "agent.toml",
            "model = \"openai/m\"\ndefault_tools = false\n[limits]\ncontext_window = 1000\nmax_output_tokens = 100\n",
        );
        write("tools/load_skill.toml", "disabled = true\n");
        write(
            "instructions.md",
            "{% for s in skills %}{{ s.description }}\n{% endfor %}",
        );
        for i in 0..20 {
            let description = "Does one kind of work from start to end. ".repeat(5);
            write(
                &format!("skills/s{i}.md"),
                &format!("---\ndescription: {description}\n---\nDo.\n"),
            );
        }
        let codes = |dir: &std::path::Path| -> Vec<&'static str> {
            let build = super::super::compile(dir, &crate::tools::builtin::CATALOG);
            build.diagnostics.iter().map(|d| d.code).collect()
        };
        assert_eq!(codes(dir.path()), vec![code::SKILLS_OVERFLOW]);
        // Deferred, the skills are neither listed nor rendered.
        write(
            "agent.toml",
            "model = \"openai/m\"\ndefault_tools = false\n[limits]\ncontext_window = 1000\nmax_output_tokens = 100\n[skills]\ndefer = true\n",
        );
        assert_eq!(codes(dir.path()), Vec::<&str>::new());
    }

    #[test]
    fn four_characters_make_a_token_rounded_up() {
        assert_eq!(
            (tokens(""), tokens("abcd"), tokens("abcde"), tokens("éééé")),
            (0, 1, 2, 1)
        );
    }

    #[test]
    fn the_parts_are_what_the_run_sends() {
        let manifest = compiled(&[
            (
                "agent.toml",
                "model = \"openai/gpt-4.1\"\ndefault_tools = false\n[limits]\ncontext_window = 1000\nmax_output_tokens = 100\n",
            ),
            (
                "instructions.md",
                "You are {{ agent.name }} in {{ workspace }}.\n",
            ),
            ("tools/load_skill.toml", ""),
            ("skills/plan.md", "---\ndescription: Plans\n---\nPlan.\n"),
            (
                "skills/later.md",
                "---\ndescription: Later\ndeferred: true\n---\nLater.\n",
            ),
        ]);
        let budget = Budget::of(&manifest);
        let name = &manifest.agent.name;
        let prompt = format!("You are {name} in /workspace.");
        assert_eq!(budget.instructions, tokens(&prompt));
        // The deferred skill is not listed; the note says how to find it, with the
        // search the deferred skill brings.
        let listing = crate::prompt::skills_prompt(&manifest.skills, true).unwrap();
        assert!(!listing.contains("later"));
        assert!(listing.contains("# More skills"));
        assert_eq!(budget.skills_listing, tokens(&listing));
        assert_eq!(budget.skills_listed, 1);
        let names: Vec<&str> = manifest.tools.iter().map(|t| t.name.as_str()).collect();
        // Only deferred skills: nothing for `call_tool` to run.
        assert_eq!(names, ["load_skill", "search_tools"]);
        assert_eq!(budget.tools_listed, 2);
        let definitions: u64 = manifest.tools.iter().map(|t| tokens(&definition(t))).sum();
        assert_eq!(budget.tools, definitions);
        assert_eq!(
            budget.total,
            budget.instructions + budget.skills_listing + budget.tools
        );
        assert_eq!(budget.largest_tools.len(), 2);
        assert_eq!(budget.tool_catalog, 0, "no tool is deferred");
    }

    #[test]
    fn deferred_tools_count_only_through_the_catalog() {
        let manifest = compiled(&[
            ("agent.toml", "model = \"openai/gpt-4.1\"\n"),
            ("instructions.md", "Hi\n"),
            ("tools/grep.toml", "defer = true\n"),
        ]);
        let budget = Budget::of(&manifest);
        assert!(budget.largest_tools.iter().all(|t| t.name != "grep"));
        assert!(budget.tool_catalog > 0);
        let listed = manifest.tools.iter().filter(|t| !t.defer).count();
        assert_eq!(budget.tools_listed, listed);
        assert!(manifest.tools.iter().any(|t| t.name == "search_tools"));
    }

    #[test]
    fn the_lines_name_every_part_and_the_largest_tools() {
        let budget = Budget {
            instructions: 1200,
            skills_listing: 40_000,
            skills_listed: 1000,
            tool_catalog: 0,
            tools: 3000,
            tools_listed: 11,
            total: 44_200,
            context_window: 200_000,
            share: 0.221,
            max_output_tokens: 8192,
            largest_tools: vec![
                ToolCost {
                    name: "bash".into(),
                    tokens: 900,
                },
                ToolCost {
                    name: "grep".into(),
                    tokens: 400,
                },
            ],
            subagents: Vec::new(),
        };
        assert_eq!(
            budget.lines(),
            [
                "context: ~44,200 tokens before the first message, 22.1 % of the 200,000-token window",
                "  instructions     ~1,200",
                "  skills listing  ~40,000 (1,000 skills)",
                "  tools            ~3,000 (11 tools)",
                "  largest tools: bash ~900, grep ~400",
            ]
        );
    }
}
