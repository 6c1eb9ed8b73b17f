//! Input patterns, as eval cases write them: a glob for a string, a subset for a table.

use serde_json::Value;

/// Whether `input` matches `pattern`: a string pattern is a glob over a string (`*`
/// matches `/` too), a table matches an object holding at least its keys (each
/// matching), an array matches an array of as many matching items, a number matches
/// the same number, anything else only itself.
pub fn matches(pattern: &Value, input: &Value) -> bool {
    match (pattern, input) {
        (Value::String(glob), Value::String(text)) => glob_matches(glob, text),
        (Value::Object(want), Value::Object(have)) => want
            .iter()
            .all(|(key, want)| have.get(key).is_some_and(|have| matches(want, have))),
        (Value::Array(want), Value::Array(have)) => {
            want.len() == have.len() && want.iter().zip(have).all(|(w, h)| matches(w, h))
        }
        (Value::Number(want), Value::Number(have)) => {
            want == have || want.as_f64().is_some_and(|w| have.as_f64() == Some(w))
        }
        _ => pattern == input,
    }
}

/// Builds the glob of a match pattern; `None` when it is not a valid glob.
pub fn glob(pattern: &str) -> Option<globset::GlobMatcher> {
    globset::GlobBuilder::new(pattern)
        .literal_separator(false)
        .backslash_escape(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// Whether `text` matches the glob `pattern` (an invalid glob matches nothing).
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    glob(pattern).is_some_and(|g| g.is_match(text))
}

/// A glob that matches exactly `text`: every character with a meaning in a glob escaped.
pub fn escape_glob(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '!' | ',') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patterns_match_exact_values_globs_and_subsets() {
        let input = json!({"url": "https://example.com/a/b", "n": 3, "flags": ["x", "y"], "deep": {"k": 1.0, "z": true}});
        for pattern in [
            json!({}),
            json!({"url": "https://example.com/*"}),
            json!({"url": "https://example.com/a/b", "n": 3}),
            json!({"n": 3.0}),
            json!({"flags": ["x", "?"]}),
            json!({"deep": {"k": 1}}),
        ] {
            assert!(matches(&pattern, &input), "{pattern}");
        }
        for pattern in [
            json!({"url": "https://example.org/*"}),
            json!({"n": "3"}),
            json!({"missing": 1}),
            json!({"flags": ["x"]}),
            json!({"deep": {"z": false}}),
        ] {
            assert!(!matches(&pattern, &input), "{pattern}");
        }
    }

    #[test]
    fn an_escaped_glob_matches_only_its_text() {
        for text in [
            "plain",
            "a*b",
            "what?",
            "[x]",
            "{a,b}",
            r"back\slash",
            "!neg",
            "",
            "ünïcode *",
        ] {
            let escaped = escape_glob(text);
            assert!(glob_matches(&escaped, text), "{text} as {escaped}");
            assert!(!glob_matches(&escaped, &format!("{text}x")), "{text}");
        }
        assert!(!glob_matches(&escape_glob("a*b"), "axxb"));
        assert!(glob_matches("{a,b}.txt", "b.txt") && !glob_matches("{a,b}.txt", "c.txt"));
        assert!(glob_matches("src/*", "src/a/b.rs"), "`*` matches `/`");
    }
}
