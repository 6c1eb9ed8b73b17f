//! What changed between two manifests, in one line for a person.

use super::{Manifest, Sandbox};

/// `+added ~changed -removed` for lists of named things.
fn named_changes<T: PartialEq>(old: &[T], new: &[T], name: impl Fn(&T) -> &str) -> Vec<String> {
    let mut out = Vec::new();
    for item in new {
        match old.iter().find(|o| name(o) == name(item)) {
            None => out.push(format!("+{}", name(item))),
            Some(before) if before != item => out.push(format!("~{}", name(item))),
            Some(_) => {}
        }
    }
    for item in old {
        if !new.iter().any(|n| name(n) == name(item)) {
            out.push(format!("-{}", name(item)));
        }
    }
    out
}

/// One line describing what changed between two manifests.
pub fn summarize(old: &Manifest, new: &Manifest) -> String {
    let mut parts = Vec::new();
    if old.agent.model != new.agent.model || old.agent.providers != new.agent.providers {
        parts.push(format!("model {} → {}", old.agent.model, new.agent.model));
    }
    if old.instructions != new.instructions {
        parts.push("instructions changed".into());
    }
    for (what, changes) in [
        ("tools", named_changes(&old.tools, &new.tools, |t| &t.name)),
        (
            "skills",
            named_changes(&old.skills, &new.skills, |s| &s.name),
        ),
        (
            "subagents",
            named_changes(&old.subagents, &new.subagents, |s| &s.name),
        ),
        (
            "connections",
            named_changes(&old.connections, &new.connections, |c| &c.name)
                .into_iter()
                .map(|change| unconfined(change, new))
                .collect(),
        ),
        ("hooks", named_changes(&old.hooks, &new.hooks, |h| &h.name)),
        (
            "files",
            named_changes(&old.executed, &new.executed, |e| &e.path),
        ),
    ] {
        if !changes.is_empty() {
            parts.push(format!("{what} {}", changes.join(" ")));
        }
    }
    let (a, b) = (&old.agent, &new.agent);
    if a.sandbox != b.sandbox {
        parts.push(format!(
            "sandbox {} → {}",
            describe_sandbox(&a.sandbox),
            describe_sandbox(&b.sandbox)
        ));
    }
    if a.limits != b.limits
        || a.compaction != b.compaction
        || a.mode != b.mode
        || a.workspace != b.workspace
        || a.description != b.description
        || a.name != b.name
        || a.default_tools != b.default_tools
    {
        parts.push("settings changed".into());
    }
    parts.join("; ")
}

/// A connection's change (`+helper`), saying when its server would run unconfined.
fn unconfined(change: String, new: &Manifest) -> String {
    let name = change.trim_start_matches(['+', '~', '-']);
    let off = !change.starts_with('-')
        && new.connections.iter().any(|c| {
            c.name == name
                && matches!(
                    c.transport,
                    super::connection::Transport::Stdio { sandbox: false, .. }
                )
        });
    if off {
        format!("{change} (sandbox = false)")
    } else {
        change
    }
}

/// `workspace-write, network off, writable tmp, required`.
pub fn describe_sandbox(sandbox: &Sandbox) -> String {
    let mut text = sandbox.mode.as_str().to_string();
    if !sandbox.network {
        text.push_str(", network off");
    }
    if !sandbox.writable.is_empty() {
        text.push_str(&format!(", writable {}", sandbox.writable.join(" ")));
    }
    if sandbox.require {
        text.push_str(", required");
    }
    text
}
