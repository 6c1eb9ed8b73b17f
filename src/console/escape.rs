//! Text from a model, a tool or a file, made safe to write to a terminal: control
//! characters, bidirectional overrides and other invisible formatting characters are
//! shown as escapes instead of acting
//! (the function lives in `text`, for the modules below the console: connections
//! escape what a server says before it reaches a diagnostic).

pub use crate::text::for_terminal;

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

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
        // Invisible formatting: isolates, zero-width characters, a byte order mark,
        // a tag character, a line separator.
        for (c, shown) in [
            ('\u{2066}', "\\u{2066}"),
            ('\u{2069}', "\\u{2069}"),
            ('\u{200b}', "\\u{200b}"),
            ('\u{200d}', "\\u{200d}"),
            ('\u{feff}', "\\u{feff}"),
            ('\u{e0041}', "\\u{e0041}"),
            ('\u{2028}', "\\u{2028}"),
            ('\u{ad}', "\\u{ad}"),
        ] {
            assert_eq!(for_terminal(&format!("a{c}b")), format!("a{shown}b"));
        }
    }
}
