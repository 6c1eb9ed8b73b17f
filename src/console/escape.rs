//! Text from a model, a tool or a file, made safe to write to a terminal: control
//! characters and bidirectional overrides are shown as escapes instead of acting
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
    }
}
