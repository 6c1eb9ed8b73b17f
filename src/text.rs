//! Small text helpers shared across eve: hex digests, shortening, shell quoting, and
//! text made inert for a terminal.

use std::borrow::Cow;

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

/// Whether `c` would act on a terminal instead of being shown: C0 controls other than
/// newline and tab (ESC starts every escape sequence), DEL, C1 controls, the line and
/// paragraph separators, and every invisible formatting character (Unicode's `Cf`):
/// the bidirectional controls that reorder what a person reads, zero-width spaces and
/// joiners, the byte order mark, tag characters.
fn acts(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
        || matches!(c, '\u{2028}' | '\u{2029}')
        || is_format(c)
}

/// Unicode's `Cf` (format) characters, as of Unicode 16.
fn is_format(c: char) -> bool {
    matches!(
        c,
        '\u{ad}'
            | '\u{600}'..='\u{605}'
            | '\u{61c}'
            | '\u{6dd}'
            | '\u{70f}'
            | '\u{890}'..='\u{891}'
            | '\u{8e2}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{202a}'..='\u{202e}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206f}'
            | '\u{feff}'
            | '\u{fff9}'..='\u{fffb}'
            | '\u{110bd}'
            | '\u{110cd}'
            | '\u{13430}'..='\u{1343f}'
            | '\u{1bca0}'..='\u{1bca3}'
            | '\u{1d173}'..='\u{1d17a}'
            | '\u{e0001}'
            | '\u{e0020}'..='\u{e007f}'
    )
}

/// `text` with every acting character replaced by its `\u{…}` escape.
pub fn for_terminal(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
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
