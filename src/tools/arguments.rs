//! Plain words for a tool input that does not fit the tool's type, naming the argument.

/// The error of reading a tool's input, as the model should read it: which argument,
/// what it must be, what it was. serde's own wording (`invalid type: floating point
/// `1.5`, expected u64`) names Rust types, not arguments.
pub fn explain(error: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = error.path().to_string();
    let message = error.inner().to_string();
    let at = |rest: &str| {
        if path == "." {
            format!("`{rest}`")
        } else {
            format!("`{path}.{rest}`")
        }
    };
    if let Some(rest) = message
        .strip_prefix("invalid type: ")
        .or_else(|| message.strip_prefix("invalid value: "))
        && let Some((found, wanted)) = rest.rsplit_once(", expected ")
    {
        return format!(
            "`{path}` must be {}, not {}",
            expected(wanted),
            unexpected(found)
        );
    }
    if let Some(rest) = message.strip_prefix("unknown variant ")
        && let Some((found, wanted)) = rest.split_once(", expected ")
    {
        return format!("`{path}` must be {wanted}, not {found}");
    }
    if let Some(rest) = message.strip_prefix("unknown field ") {
        // The path already ends with the unknown field.
        let field = rest.split_once(',').map_or(rest, |(f, _)| f);
        let named = if path == "." {
            field.to_string()
        } else {
            format!("`{path}`")
        };
        return format!("{named} is not an argument of this tool");
    }
    if let Some(field) = message.strip_prefix("missing field ") {
        return format!("{} is missing", at(field.trim_matches('`')));
    }
    if let Some(field) = message.strip_prefix("duplicate field ") {
        return format!("{} is given twice", at(field.trim_matches('`')));
    }
    if path == "." {
        message
    } else {
        format!("`{path}`: {message}")
    }
}

/// What serde expected, in words.
fn expected(wanted: &str) -> String {
    match wanted {
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a whole number, 0 or more".into(),
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number".into(),
        "f32" | "f64" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a string" | "a borrowed string" => "a string".into(),
        "a sequence" => "a list".into(),
        "a map" => "an object".into(),
        w if w.starts_with("struct ") => "an object".into(),
        w if w.starts_with("variant identifier") => "one of the values the schema lists".into(),
        other => other.to_string(),
    }
}

/// What serde found, in words.
fn unexpected(found: &str) -> String {
    for prefix in ["floating point ", "integer ", "boolean "] {
        if let Some(value) = found.strip_prefix(prefix) {
            return value.trim_matches('`').to_string();
        }
    }
    if let Some(text) = found.strip_prefix("string ") {
        return format!("the string {text}");
    }
    match found {
        "null" | "unit value" | "unit" => "null".into(),
        "sequence" => "a list".into(),
        "map" => "an object".into(),
        other => other.to_string(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use crate::tools::parse_input;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Input {
        path: String,
        limit: Option<u64>,
        offset: Option<i64>,
        #[serde(default)]
        all: bool,
        mode: Option<Mode>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "snake_case")]
    enum Mode {
        Content,
        Count,
    }

    fn error(input: serde_json::Value) -> String {
        parse_input::<Input>(&input).unwrap_err().content
    }

    #[test]
    fn whole_floats_are_integers_as_json_schema_says() {
        let input: Input =
            parse_input(&json!({"path": "a", "limit": 1.0, "offset": -2.0})).unwrap();
        assert_eq!(input.limit, Some(1));
        assert_eq!(input.offset, Some(-2));
    }

    #[test]
    fn mismatches_name_the_argument_in_plain_words() {
        assert_eq!(
            error(json!({"path": "a", "limit": 1.5})),
            "invalid arguments: `limit` must be a whole number, 0 or more, not 1.5"
        );
        assert_eq!(
            error(json!({"path": "a", "limit": -1})),
            "invalid arguments: `limit` must be a whole number, 0 or more, not -1"
        );
        assert_eq!(
            error(json!({"path": "a", "all": "yes"})),
            "invalid arguments: `all` must be true or false, not the string \"yes\""
        );
        assert_eq!(
            error(json!({"path": 3})),
            "invalid arguments: `path` must be a string, not 3"
        );
        assert_eq!(
            error(json!({"limit": 3})),
            "invalid arguments: `path` is missing"
        );
        assert_eq!(
            error(json!({"path": "a", "colour": 3})),
            "invalid arguments: `colour` is not an argument of this tool"
        );
        assert_eq!(
            error(json!({"path": "a", "mode": "lines"})),
            "invalid arguments: `mode` must be `content` or `count`, not `lines`"
        );
        assert!(!error(json!({"path": "a", "limit": 1e30})).contains("floating point"));
    }
}
