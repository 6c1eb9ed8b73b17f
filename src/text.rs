//! Small text helpers shared across eve: hex digests, shortening, shell quoting.

/// Lowercase hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

/// `text` cut to at most `max` characters, with `…` when cut.
pub fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// A word quoted for a POSIX shell command line when it needs it.
pub fn shell_word(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

/// The user and password part of a URL (`user:pass` in `https://user:pass@host/…`), if any.
pub fn userinfo(url: &str) -> Option<&str> {
    let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority_end = after_scheme
        .find(['/', '?', '#'])
        .unwrap_or(after_scheme.len());
    let authority = &after_scheme[..authority_end];
    authority.rfind('@').map(|at| &authority[..at])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helpers_do_what_their_names_say() {
        assert_eq!(hex(&[0, 15, 255]), "000fff");
        assert_eq!(shorten("héllo", 3), "hél…");
        assert_eq!(shorten("hé", 3), "hé");
        assert_eq!(shell_word("my-agent/x"), "my-agent/x");
        assert_eq!(shell_word("my agent"), "'my agent'");
        assert_eq!(shell_word("it's"), "'it'\\''s'");
        assert_eq!(shell_word(""), "''");
    }
}
