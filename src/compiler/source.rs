//! Source files of an agent directory, and byte offsets turned into lines, columns and excerpts.
//!
//! A file may hold tens of thousands of mistakes on one line, so finding a position costs
//! O(log n) plus a bounded amount of text, never a scan from the start of the file or line.

use std::ops::Range;

/// Longest excerpt of a source line shown under a diagnostic; longer lines are cut
/// around the position.
pub const EXCERPT_CHARS: usize = 100;
/// How much of a cut line is kept before the position.
const EXCERPT_BEFORE: usize = 20;
/// Characters are counted from a mark every this many bytes.
const MARK_BYTES: usize = 4096;

/// A text file read from the agent directory.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path relative to the agent directory, with `/` separators.
    pub path: String,
    pub text: String,
    /// The byte offset where each line starts.
    line_starts: Vec<usize>,
    /// `marks[k]`: how many characters start before byte `k * MARK_BYTES`.
    marks: Vec<usize>,
}

/// A resolved position: 1-based line and column (in characters), and the line's text
/// around it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Position {
    pub line: usize,
    pub column: usize,
    /// The line, or the part of a long one around the position with `…` where it was cut.
    pub excerpt: String,
    /// The 1-based column of the position within `excerpt`.
    pub excerpt_column: usize,
    /// How many characters of `excerpt` the span covers (at least 1).
    pub width: usize,
}

impl SourceFile {
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        let mut marks = vec![0];
        let mut chars = 0;
        for block in text.as_bytes().chunks(MARK_BYTES) {
            chars += count_chars(block);
            marks.push(chars);
        }
        SourceFile {
            path: path.into(),
            text,
            line_starts,
            marks,
        }
    }

    /// Resolves a byte range; ranges past the end or inside a character are clamped, and
    /// a range that runs past its line is cut at the line's end.
    pub fn locate(&self, span: Range<usize>) -> Position {
        let start = floor_char_boundary(&self.text, span.start.min(self.text.len()));
        // The last line start at or before `start`; the first is 0, so there is one.
        let index = self.line_starts.partition_point(|&s| s <= start).max(1) - 1;
        let line = self.line(index);
        // A line's range leaves out the `\r`s that end it, and a position may be on one
        // of them (a bare `\r` at the end of the file, `\r\r\n`): it is shown at the
        // line's end, never past it.
        let start = start.min(line.end);
        let column = self.chars_before(start) - self.chars_before(line.start) + 1;
        // The end is clamped to the line and, like the start, to a character boundary.
        let end = floor_char_boundary(&self.text, span.end.clamp(start, line.end.max(start)));
        let (excerpt, excerpt_column, width) = excerpt(
            &self.text[line.clone()],
            start - line.start,
            end - line.start,
        );
        Position {
            line: index + 1,
            column,
            excerpt,
            excerpt_column,
            width,
        }
    }

    /// A 1-based line, with the position at a 1-based character column (one character
    /// wide), or, without a column, the whole line underlined. `None` past the last line.
    pub fn locate_line(&self, line: usize, column: Option<usize>) -> Option<Position> {
        let index = line.checked_sub(1)?;
        self.line_starts.get(index)?;
        let range = self.line(index);
        let text = &self.text[range];
        let Some(column) = column else {
            let (excerpt, _, width) = excerpt(text, 0, text.len());
            return Some(Position {
                line,
                column: 1,
                excerpt,
                excerpt_column: 1,
                width,
            });
        };
        let at = text
            .char_indices()
            .nth(column.saturating_sub(1))
            .map_or(text.len(), |(i, _)| i);
        let next = text[at..].chars().next().map_or(at, |c| at + c.len_utf8());
        let (excerpt, excerpt_column, _) = excerpt(text, at, next);
        Some(Position {
            line,
            column: column.max(1),
            excerpt,
            excerpt_column,
            width: 1,
        })
    }

    /// The text of a 1-based line, without its line break.
    pub fn line_text(&self, line: usize) -> Option<&str> {
        let index = line.checked_sub(1)?;
        self.line_starts.get(index)?;
        Some(&self.text[self.line(index)])
    }

    /// The byte range of the 0-based line `index`, without its line break.
    fn line(&self, index: usize) -> Range<usize> {
        let start = self.line_starts[index];
        let end = self
            .line_starts
            .get(index + 1)
            .map_or(self.text.len(), |next| next - 1);
        let text = &self.text[start..end];
        start..start + text.trim_end_matches('\r').len()
    }

    /// How many characters the text holds before byte `offset` (a character boundary).
    fn chars_before(&self, offset: usize) -> usize {
        let block = offset / MARK_BYTES;
        self.marks[block] + count_chars(&self.text.as_bytes()[block * MARK_BYTES..offset])
    }
}

/// Characters that start in `bytes`: every byte that is not a UTF-8 continuation byte.
fn count_chars(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

/// The part of `line` to show for a span from byte `at` to byte `end` of it: the whole
/// line when it is short, else [`EXCERPT_CHARS`] characters from a little before `at`,
/// with `…` where it was cut. Returns the text, the 1-based column of `at` in it and the
/// span's width in characters (at least 1). Costs O(excerpt), whatever the line's length.
fn excerpt(line: &str, at: usize, end: usize) -> (String, usize, usize) {
    let width_in = |text: &str| text.chars().take(EXCERPT_CHARS + 1).count();
    if line.len() <= EXCERPT_CHARS || width_in(line) <= EXCERPT_CHARS {
        let column = line[..at].chars().count() + 1;
        return (line.to_string(), column, width_in(&line[at..end]).max(1));
    }
    let start = line[..at]
        .char_indices()
        .rev()
        .take(EXCERPT_BEFORE)
        .last()
        .map_or(at, |(i, _)| i);
    let stop = line[start..]
        .char_indices()
        .nth(EXCERPT_CHARS)
        .map_or(line.len(), |(i, _)| start + i);
    let mut shown = String::new();
    let mut column = line[start..at].chars().count() + 1;
    if start > 0 {
        shown.push('…');
        column += 1;
    }
    shown.push_str(&line[start..stop]);
    if stop < line.len() {
        shown.push('…');
    }
    let width = line[at.min(stop)..end.clamp(at.min(stop), stop)]
        .chars()
        .count()
        .max(1);
    (shown, column, width)
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
                excerpt: "modle = \"y\"".into(),
                excerpt_column: 1,
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
        assert_eq!((pos.excerpt.as_str(), pos.width), ("[x]", 3));
        assert_eq!(src.line_text(2), Some("b = 1"));
        assert_eq!(src.line_text(0), None);
    }

    #[test]
    fn finds_every_line_of_a_long_file_by_its_index() {
        let text: String = (1..=2000).map(|i| format!("k{i} = {i}\r\n")).collect();
        let src = SourceFile::new("a", text.clone());
        let mut offset = 0;
        for (i, line) in text.split_inclusive('\n').enumerate() {
            let pos = src.locate(offset + 1..offset + 2);
            assert_eq!((pos.line, pos.column), (i + 1, 2));
            assert_eq!(pos.excerpt, line.trim_end());
            assert_eq!(src.line_text(i + 1), Some(line.trim_end()));
            offset += line.len();
        }
        assert_eq!(src.line_text(2001), Some(""));
        assert_eq!(src.line_text(2002), None);
        assert_eq!(src.locate(text.len()..text.len()).line, 2001);
    }

    #[test]
    fn columns_on_a_long_line_of_wide_characters_count_characters() {
        let line = "é".repeat(10_000) + "key = 1" + &"ü".repeat(10_000);
        let src = SourceFile::new("a", format!("first\n{line}\n"));
        let at = 6 + 20_000;
        let pos = src.locate(at..at + 3);
        assert_eq!((pos.line, pos.column, pos.width), (2, 10_001, 3));
        assert_eq!(pos.excerpt.chars().count(), 102);
        assert!(pos.excerpt.starts_with('…') && pos.excerpt.ends_with('…'));
        assert_eq!(
            pos.excerpt
                .chars()
                .skip(pos.excerpt_column - 1)
                .take(3)
                .collect::<String>(),
            "key"
        );
    }

    #[test]
    fn cuts_long_lines_around_the_position() {
        let line = format!("{}key = 1{}", "x".repeat(150), "y".repeat(150));
        let (shown, column, width) = excerpt(&line, 150, 153);
        assert_eq!(shown.chars().count(), 102);
        assert!(shown.starts_with('…') && shown.ends_with('…'));
        assert_eq!(
            shown.chars().skip(column - 1).take(3).collect::<String>(),
            "key"
        );
        assert_eq!(width, 3);
        assert_eq!(excerpt("short", 1, 2), ("short".to_string(), 2, 1));
        let start = excerpt(&line, 0, line.len());
        assert_eq!((start.1, start.2), (1, 100));
        assert!(!start.0.starts_with('…') && start.0.ends_with('…'));
    }

    #[test]
    fn a_position_on_the_carriage_returns_that_end_a_line_is_shown_at_its_end() {
        for text in ["a = \r", "a = 1\r", "a\r\r\nb", "x\r\r", "é\r\ré\r", "\r"] {
            let src = SourceFile::new("a", text);
            for line in 0..5 {
                for column in [None, Some(0), Some(1), Some(3), Some(9)] {
                    let _ = src.locate_line(line, column);
                }
            }
            for at in 0..=text.len() {
                for end in at..=text.len() + 1 {
                    let pos = src.locate(at..end);
                    let line = src.line_text(pos.line).unwrap();
                    assert!(
                        pos.column <= line.chars().count() + 1,
                        "{text:?} {at}..{end}"
                    );
                    assert!(pos.excerpt_column <= pos.excerpt.chars().count() + 1);
                }
            }
        }
        let src = SourceFile::new("agent.toml", "model = \"x\"\nname = \r");
        let end = src.locate(src.text.len()..src.text.len());
        assert_eq!(
            (end.line, end.column, end.excerpt.as_str()),
            (2, 8, "name = ")
        );
    }

    #[test]
    fn locates_a_line_and_a_column() {
        let src = SourceFile::new("a", "one\ntwo é three\n");
        let pos = src.locate_line(2, Some(5)).unwrap();
        assert_eq!(
            (pos.line, pos.column, pos.excerpt_column, pos.width),
            (2, 5, 5, 1)
        );
        let whole = src.locate_line(2, None).unwrap();
        assert_eq!((whole.excerpt.as_str(), whole.width), ("two é three", 11));
        assert_eq!(src.locate_line(4, None), None);
        assert_eq!(src.locate_line(0, None), None);
    }
}
