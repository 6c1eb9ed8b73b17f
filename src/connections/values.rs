//! `${VAR}` references resolved when a server starts (never earlier, never written
//! down), and the redaction of those values from whatever the server sends back.

/// Replaces each `${NAME}` in `value` with the variable's value (`$$` is a `$`). A
/// variable that is not set is an error naming it and where it was used.
pub fn expand(
    value: &str,
    place: &str,
    read: &dyn Fn(&str) -> Option<String>,
    secrets: &mut Redactor,
) -> Result<String, String> {
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find('$') {
        out.push_str(&rest[..at]);
        let after = &rest[at + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(tail) = after.strip_prefix('{') {
            let Some(end) = tail.find('}') else {
                return Err(format!("{place}: `${{` is not closed with `}}`"));
            };
            let name = &tail[..end];
            let Some(resolved) = read(name).filter(|v| !v.is_empty()) else {
                return Err(format!(
                    "{place} reads `${{{name}}}`, and the environment variable {name} is not set"
                ));
            };
            secrets.add(name, &resolved);
            out.push_str(&resolved);
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// Values read from `${VAR}` references are secrets: they are cut out of everything a
/// server sends back before it reaches the model, an event, a log or a cache.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// (value, variable name), longest value first so a value inside another is not
    /// replaced first.
    values: Vec<(String, String)>,
}

/// Values shorter than this are not redacted: `true` or `8080` would match ordinary
/// text everywhere, and keys and tokens are longer.
pub const MIN_SECRET: usize = 8;

impl Redactor {
    fn add(&mut self, name: &str, value: &str) {
        if value.len() < MIN_SECRET || self.values.iter().any(|(v, _)| v == value) {
            return;
        }
        self.values.push((value.to_string(), name.to_string()));
        self.values.sort_by_key(|(v, _)| std::cmp::Reverse(v.len()));
    }

    /// `text` with every secret value replaced by `[${NAME}]`.
    pub fn redact(&self, text: &str) -> String {
        let mut text = text.to_string();
        for (value, name) in &self.values {
            if text.contains(value.as_str()) {
                text = text.replace(value.as_str(), &format!("[${{{name}}}]"));
            }
        }
        text
    }

    /// Redacts every string inside a JSON value.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        if self.values.is_empty() {
            return;
        }
        match value {
            serde_json::Value::String(s) => *s = self.redact(s),
            serde_json::Value::Array(items) => items.iter_mut().for_each(|v| self.redact_json(v)),
            serde_json::Value::Object(map) => map.values_mut().for_each(|v| self.redact_json(v)),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "TOKEN" => Some("s3cr3t-value".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn references_are_replaced_and_remembered_as_secrets() {
        let mut secrets = Redactor::default();
        let value = expand(
            "Bearer ${TOKEN} costs $$5",
            "`headers.Authorization`",
            &env,
            &mut secrets,
        );
        assert_eq!(value.unwrap(), "Bearer s3cr3t-value costs $5");
        assert_eq!(
            secrets.redact("the token is s3cr3t-value."),
            "the token is [${TOKEN}]."
        );
        let mut json = serde_json::json!({"a": ["x s3cr3t-value"], "b": 1});
        secrets.redact_json(&mut json);
        assert_eq!(json, serde_json::json!({"a": ["x [${TOKEN}]"], "b": 1}));
    }

    #[test]
    fn an_unset_or_empty_variable_is_an_error_naming_it_and_the_place() {
        let mut secrets = Redactor::default();
        assert_eq!(
            expand(
                "${MISSING}",
                "connections/gh.toml: `env.GITHUB_TOKEN`",
                &env,
                &mut secrets
            )
            .unwrap_err(),
            "connections/gh.toml: `env.GITHUB_TOKEN` reads `${MISSING}`, and the environment variable MISSING is not set"
        );
        assert!(expand("${EMPTY}", "x", &env, &mut secrets).is_err());
        assert!(secrets.values.is_empty());
    }
}
