//! Text from a model, a tool or a file, made safe to write to a terminal: control
//! characters and bidirectional overrides are shown as escapes instead of acting.

use std::borrow::Cow;

/// Whether `c` would act on a terminal instead of being shown: C0 controls other than
/// newline and tab (ESC starts every escape sequence), DEL, C1 controls, and the
/// bidirectional controls that reorder what a person reads.
fn acts(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}')
        || matches!(
            c,
            '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
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
    fn escape_sequences_and_bidi_overrides_are_shown_not_obeyed() {
        assert_eq!(for_terminal("plain\ttext\n"), "plain\ttext\n");
        assert!(matches!(for_terminal("plain"), Cow::Borrowed(_)));
        // An OSC 52 clipboard write, a screen clear, a hidden link.
        assert_eq!(
            for_terminal("\u{1b}]52;c;cm0gLXJmIH4=\u{7}"),
            "\\u{1b}]52;c;cm0gLXJmIH4=\\u{7}"
        );
        assert_eq!(for_terminal("\u{1b}[2J"), "\\u{1b}[2J");
        assert_eq!(for_terminal("a\u{9b}31mb"), "a\\u{9b}31mb");
        assert_eq!(for_terminal("cr\rover"), "cr\\u{d}over");
        // "deploy staging" shown as the person would read it, not reordered.
        assert_eq!(
            for_terminal("target: \u{202e}gnigats"),
            "target: \\u{202e}gnigats"
        );
        assert_eq!(for_terminal("é ü 日本"), "é ü 日本");
    }
}
