//! Source files of an agent directory, and byte offsets turned into lines and columns.

use std::ops::Range;

/// A text file read from the agent directory.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path relative to the agent directory, with `/` separators.
    pub path: String,
    pub text: String,
}

/// A resolved position: 1-based line and column (in characters) and the line's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
    pub line_text: String,
    /// How many characters of the line the span covers (at least 1).
    pub width: usize,
}

impl SourceFile {
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> Self {
        SourceFile {
            path: path.into(),
            text: text.into(),
        }
    }

    /// Resolves a byte range; ranges past the end or inside a character are clamped.
    pub fn locate(&self, span: Range<usize>) -> Position {
        let text = &self.text;
        let start = floor_char_boundary(text, span.start.min(text.len()));
        let line_start = text[..start].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[start..].find('\n').map_or(text.len(), |i| start + i);
        let line_text = text[line_start..line_end].trim_end_matches('\r');
        let line = text[..line_start].matches('\n').count() + 1;
        let column = text[line_start..start].chars().count() + 1;
        let text_end = line_start + line_text.len();
        let end = floor_char_boundary(text, span.end.clamp(start, text_end.max(start)));
        let width = text[start..end].chars().count().max(1);
        Position {
            line,
            column,
            line_text: line_text.to_string(),
            width,
        }
    }

    /// The text of a 1-based line, without its line break.
    pub fn line_text(&self, line: usize) -> Option<&str> {
        self.text
            .split('\n')
            .nth(line.checked_sub(1)?)
            .map(|l| l.trim_end_matches('\r'))
    }
}

fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    while index > 0 && !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn locates_a_span_on_a_later_line() {
        let src = SourceFile::new("agent.toml", "name = \"x\"\nmodle = \"y\"\n");
        assert_eq!(
            src.locate(11..16),
            Position {
                line: 2,
                column: 1,
                line_text: "modle = \"y\"".into(),
                width: 5
            }
        );
    }

    #[test]
    fn counts_columns_in_characters_and_clamps_past_the_end() {
        let src = SourceFile::new("a", "é = 1");
        assert_eq!(src.locate(2..3).column, 2);
        let end = src.locate(100..200);
        assert_eq!((end.line, end.column, end.width), (1, 6, 1));
    }

    #[test]
    fn a_span_across_lines_is_cut_at_the_line_end() {
        let src = SourceFile::new("a", "[x]\r\nb = 1\n");
        let pos = src.locate(0..9);
        assert_eq!((pos.line_text.as_str(), pos.width), ("[x]", 3));
        assert_eq!(src.line_text(2), Some("b = 1"));
        assert_eq!(src.line_text(0), None);
    }
}
