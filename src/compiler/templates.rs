//! The templates a TOML value may hold (a custom tool's `command` and `http` parts, a
//! connection's `command` and `cwd`), checked when the file is compiled: they must parse
//! and use only the variables they will be given.

use super::diagnostic::{Diagnostic, code};
use super::toml_reader::{self, Spanned, TomlFile};
use crate::suggest;

/// Checks that a tool template parses and uses only the variables tool templates get.
pub(super) fn check_template(
    toml: &TomlFile,
    key: &str,
    value: &Spanned<String>,
    allowed: &[&str],
) -> bool {
    let env = minijinja::Environment::new();
    let template = match env.template_from_str(&value.value) {
        Ok(t) => t,
        Err(e) => {
            toml.error(
                code::TOOL_TEMPLATE,
                format!(
                    "`{key}` is not a valid template: {}",
                    e.detail().unwrap_or("syntax error")
                ),
                value.span.clone(),
            );
            return false;
        }
    };
    let globals: Vec<&str> = env.globals().map(|(name, _)| name).collect();
    let mut unknown: Vec<String> = template
        .undeclared_variables(false)
        .into_iter()
        .filter(|v| !allowed.contains(&v.as_str()) && !globals.contains(&v.as_str()))
        .collect();
    unknown.sort();
    for name in &unknown {
        toml.report(
            Diagnostic::error(
                code::TOOL_TEMPLATE,
                format!("`{key}` uses undefined variable `{name}`"),
            )
            .at(&toml.src, value.span.clone())
            .note(format!(
                "tool templates can use {}",
                toml_reader::list(allowed)
            ))
            .suggest(suggest::closest(name, allowed.iter().copied())),
        );
    }
    unknown.is_empty()
}
