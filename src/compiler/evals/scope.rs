//! What a case is checked against: the compiled agent and, for a scripted case, what
//! its replies do.

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::Path;

use crate::compiler::diagnostic::{Diagnostic, code};
use crate::compiler::toml_reader::TomlFile;
use crate::manifest::Manifest;

/// What the checks of one case need to know about the agent.
pub(super) struct Agent<'m> {
    pub(super) manifest: &'m Manifest,
    pub(super) tools: Vec<&'m str>,
    pub(super) skills: Vec<&'m str>,
    pub(super) subagents: Vec<&'m str>,
    /// The hooks of the agent and of its subagents (a case may stub or expect either).
    pub(super) hooks: Vec<&'m str>,
    pub(super) root: &'m Path,
    pub(super) boundary: &'m Path,
}

/// What a case's expectations are checked against: the agent, and for a scripted case
/// the tools its replies call and the skills they load.
pub(super) struct Scope<'a, 'm> {
    pub(super) agent: &'a Agent<'m>,
    pub(super) scripted: Option<Scripted>,
}

pub(super) struct Scripted {
    pub(super) tools: BTreeSet<String>,
    pub(super) skills: BTreeSet<String>,
}

impl Scope<'_, '_> {
    /// Warns when a scripted case expects a call its replies never make.
    pub(super) fn expect_call(
        &self,
        toml: &TomlFile,
        key: &str,
        name: &str,
        span: Option<Range<usize>>,
    ) {
        if let Some(scripted) = &self.scripted
            && !scripted.tools.contains(name)
        {
            never_holds(
                toml,
                format!("`{key}` expects a call of `{name}`, but no scripted reply calls it"),
                span,
            );
        }
    }
}

pub(super) fn never_holds(toml: &TomlFile, message: String, span: Option<Range<usize>>) {
    toml.report(
        Diagnostic::warning(code::EVAL_NEVER_HOLDS, message)
            .at(&toml.src, span)
            .note("the model is scripted, so a call the replies never make never happens"),
    );
}
