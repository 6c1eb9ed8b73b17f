//! Names eve accepts, made from the names Claude Code files use (`Code Reviewer`,
//! `api.v2`, `Brand Voice!`): lowercase letters, digits, `-` and `_`, starting with a
//! letter or a digit, at most 64 characters — the rule of skills, subagents and
//! connections.

/// The longest name eve accepts.
const MAX: usize = 64;

/// `name` as an eve name: ASCII letters lowercased, every run of other characters (a
/// space, a dot, a letter outside ASCII) one `-`, no `-` or `_` at the start or the end;
/// `None` when nothing is left.
pub fn slug(name: &str) -> Option<String> {
    let mut out = String::new();
    let mut dash = false;
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.push(c.to_ascii_lowercase());
        } else {
            dash = true;
        }
    }
    let mut out: String = out
        .trim_start_matches(['-', '_'])
        .chars()
        .take(MAX)
        .collect();
    while out.ends_with(['-', '_']) {
        out.pop();
    }
    (!out.is_empty()).then_some(out)
}

/// `base`, or `base-2`, `base-3`… : the first that `taken` does not hold.
pub fn unique(base: &str, taken: &dyn Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_string();
    }
    (2..)
        .map(|n| {
            let suffix = format!("-{n}");
            let room = MAX - suffix.len();
            format!("{}{suffix}", &base[..base.len().min(room)])
        })
        .find(|candidate| !taken(candidate))
        .unwrap_or_else(|| base.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn names_become_eve_names() {
        let cases = [
            ("code-reviewer", Some("code-reviewer")),
            ("Code Reviewer", Some("code-reviewer")),
            ("api.v2 helper", Some("api-v2-helper")),
            ("  --Brand Voice!!  ", Some("brand-voice")),
            ("snake_case_name", Some("snake_case_name")),
            ("_private", Some("private")),
            ("Ünïcode", Some("n-code")),
            ("../../etc/passwd", Some("etc-passwd")),
            ("...", None),
            ("", None),
        ];
        for (name, want) in cases {
            assert_eq!(slug(name).as_deref(), want, "{name}");
        }
        let long = "a".repeat(100);
        assert_eq!(slug(&long).unwrap().len(), 64);
        for (name, _) in cases {
            if let Some(s) = slug(name) {
                assert!(crate::compiler::skills::is_valid_name(&s), "{s}");
            }
        }
    }

    #[test]
    fn a_taken_name_gets_a_number() {
        let taken = |n: &str| n == "a" || n == "a-2";
        assert_eq!(unique("a", &taken), "a-3");
        assert_eq!(unique("b", &taken), "b");
        let long = "x".repeat(64);
        let taken = |n: &str| n == long;
        assert_eq!(unique(&long, &taken).len(), 64);
    }
}
