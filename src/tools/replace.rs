//! Exact-string replacement for `edit_file`, in time linear in the file: where a string
//! occurs, the edited text, a capped unified diff built from the known replacements, and
//! the text closest to a string that was not found (with bounded work).

use tokio_util::sync::CancellationToken;

use super::files::Stopped;

/// Line numbers listed at most when a string occurs more than once.
pub const MAX_LISTED: usize = 20;
/// Lines of diff returned at most.
pub const MAX_DIFF_LINES: usize = 300;
/// Characters of one diff or hint line shown at most.
pub const MAX_LINE_CHARS: usize = 500;
/// Unchanged lines shown around each change.
const CONTEXT: usize = 3;
/// Matches handled between two looks at the stop token.
const CHECK_EVERY: usize = 4096;

/// How often a string occurs, and the 1-based lines of the first [`MAX_LISTED`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Occurrences {
    pub count: usize,
    pub lines: Vec<usize>,
}

/// Counts the occurrences of `needle` (not empty) in `text`.
pub fn occurrences(
    text: &str,
    needle: &str,
    stop: &CancellationToken,
) -> Result<Occurrences, Stopped> {
    let bytes = text.as_bytes();
    let mut count = 0;
    let mut lines = Vec::new();
    let (mut pos, mut line) = (0, 1);
    for (at, _) in text.match_indices(needle) {
        count += 1;
        if lines.len() < MAX_LISTED {
            line += newlines(&bytes[pos..at]);
            pos = at;
            lines.push(line);
        }
        if count % CHECK_EVERY == 0 && stop.is_cancelled() {
            return Err(Stopped);
        }
    }
    Ok(Occurrences { count, lines })
}

/// `1, 5, 9` or `1, 2, …, 20 and 39980 more`.
pub fn list_lines(found: &Occurrences) -> String {
    let listed: Vec<String> = found.lines.iter().map(ToString::to_string).collect();
    let more = found.count - found.lines.len();
    if more == 0 {
        listed.join(", ")
    } else {
        format!("{} and {more} more", listed.join(", "))
    }
}

/// The outcome of a replacement.
#[derive(Debug)]
pub struct Edit {
    pub text: String,
    pub replacements: usize,
    /// A unified diff of at most [`MAX_DIFF_LINES`] lines, with a note when cut.
    pub diff: String,
}

/// A run of replaced text: whole lines of the old text and where they went.
#[derive(Debug, Clone, Copy)]
struct Region {
    old_start: usize,
    old_end: usize,
    new_start: usize,
    new_end: usize,
    replacements: usize,
}

/// Replaces the first (or every) occurrence of `old` (not empty) with `new` and
/// describes the change as a diff of the file `name`.
pub fn apply(
    text: &str,
    old: &str,
    new: &str,
    all: bool,
    name: &str,
    stop: &CancellationToken,
) -> Result<Edit, Stopped> {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut prev, mut delta, mut replacements) = (0usize, 0isize, 0usize);
    let growth = new.len() as isize - old.len() as isize;
    let mut regions: Vec<Region> = Vec::new();
    let mut open: Option<Region> = None;
    // Only the regions a capped diff can show are tracked.
    let mut tracking = true;
    let limit = if all { usize::MAX } else { 1 };
    for (at, _) in text.match_indices(old).take(limit) {
        out.push_str(&text[prev..at]);
        out.push_str(new);
        let end = at + old.len();
        prev = end;
        replacements += 1;
        if tracking {
            match open.as_mut() {
                Some(region) if at < region.old_end => {
                    if end > region.old_end {
                        region.old_end = region_end(bytes, at, end, new);
                    }
                    region.replacements += 1;
                }
                _ => {
                    let floor = open.map_or(0, |r| r.old_end);
                    if let Some(mut region) = open.take() {
                        region.new_end = offset(region.old_end, delta);
                        regions.push(region);
                        tracking = regions.len() < MAX_DIFF_LINES;
                    }
                    if tracking {
                        let start = memchr::memrchr(b'\n', &bytes[floor..at])
                            .map_or(floor, |p| floor + p + 1);
                        open = Some(Region {
                            old_start: start,
                            old_end: region_end(bytes, at, end, new),
                            new_start: offset(start, delta),
                            new_end: 0,
                            replacements: 1,
                        });
                    }
                }
            }
        }
        delta += growth;
        if replacements % CHECK_EVERY == 0 && stop.is_cancelled() {
            return Err(Stopped);
        }
    }
    out.push_str(&text[prev..]);
    if let Some(mut region) = open.take() {
        region.new_end = offset(region.old_end, delta);
        regions.push(region);
    }
    let diff = render(text, &out, &regions, replacements, name);
    Ok(Edit {
        text: out,
        replacements,
        diff,
    })
}

fn offset(at: usize, delta: isize) -> usize {
    at.saturating_add_signed(delta)
}

/// Where the replaced lines of a match at `at..end` end in the old text: the end of the
/// line holding its last byte, one line further when the match ends a line but the new
/// text does not (so both sides of the region end on a line boundary).
fn region_end(bytes: &[u8], at: usize, end: usize, new: &str) -> usize {
    if bytes[end - 1] == b'\n' {
        let starts_line = at == 0 || bytes[at - 1] == b'\n';
        if new.ends_with('\n') || (new.is_empty() && starts_line) {
            return end;
        }
    }
    memchr::memchr(b'\n', &bytes[end..]).map_or(bytes.len(), |p| end + p + 1)
}

fn newlines(bytes: &[u8]) -> usize {
    memchr::memchr_iter(b'\n', bytes).count()
}

/// The lines of `text`, each with its `\n` (the last may lack it).
fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// One change to show: old lines replaced by new lines, equal lines at both ends left
/// out (they are context).
struct Change<'a> {
    /// 1-based line of the first old line.
    line: usize,
    old: Vec<&'a str>,
    new: Vec<&'a str>,
    /// Byte range of the old lines.
    from: usize,
    to: usize,
    replacements: usize,
}

fn changes<'a>(old_text: &'a str, new_text: &'a str, regions: &[Region]) -> Vec<Change<'a>> {
    let (mut pos, mut line) = (0, 1);
    let mut changes = Vec::with_capacity(regions.len());
    for region in regions {
        line += newlines(&old_text.as_bytes()[pos..region.old_start]);
        pos = region.old_start;
        let old = split_lines(&old_text[region.old_start..region.old_end]);
        let new = split_lines(&new_text[region.new_start..region.new_end]);
        let same_start = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
        let room = old.len().min(new.len()) - same_start;
        let same_end = old
            .iter()
            .rev()
            .zip(new.iter().rev())
            .take(room)
            .take_while(|(a, b)| a == b)
            .count();
        let head: usize = old[..same_start].iter().map(|l| l.len()).sum();
        let tail: usize = old[old.len() - same_end..].iter().map(|l| l.len()).sum();
        changes.push(Change {
            line: line + same_start,
            from: region.old_start + head,
            to: region.old_end - tail,
            old: old[same_start..old.len() - same_end].to_vec(),
            new: new[same_start..new.len() - same_end].to_vec(),
            replacements: region.replacements,
        });
    }
    changes
}

/// Up to `n` lines of `text` ending at byte `at`, in order.
fn lines_before(text: &str, at: usize, n: usize) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut end = at;
    while lines.len() < n && end > 0 {
        let start = memchr::memrchr(b'\n', &text.as_bytes()[..end - 1]).map_or(0, |p| p + 1);
        lines.push(&text[start..end]);
        end = start;
    }
    lines.reverse();
    lines
}

/// Up to `n` lines of `text` starting at byte `at`.
fn lines_after(text: &str, at: usize, n: usize) -> Vec<&str> {
    text[at..].split_inclusive('\n').take(n).collect()
}

/// The diff text, cut after [`MAX_DIFF_LINES`] lines.
struct Diff {
    out: String,
    lines: usize,
    full: bool,
}

impl Diff {
    fn line(&mut self, mark: char, line: &str) {
        if self.full {
            return;
        }
        if self.lines == MAX_DIFF_LINES {
            self.full = true;
            return;
        }
        self.lines += 1;
        let content = line.strip_suffix('\n').unwrap_or(line);
        self.out.push(mark);
        match content.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => {
                self.out.push_str(&content[..cut]);
                self.out.push_str(" … [line cut]");
            }
            None => self.out.push_str(content),
        }
        self.out.push('\n');
        if !line.ends_with('\n') {
            self.out.push_str("\\ No newline at end of file\n");
        }
    }
}

fn render(old: &str, new: &str, regions: &[Region], replacements: usize, name: &str) -> String {
    let changes = changes(old, new, regions);
    let mut diff = Diff {
        out: format!("--- a/{name}\n+++ b/{name}\n"),
        lines: 0,
        full: false,
    };
    let mut shown = 0;
    // How many lines the new text has gained before the current hunk.
    let mut moved: isize = 0;
    let mut i = 0;
    while i < changes.len() && !diff.full {
        // A hunk: changes whose gaps are at most two contexts long.
        let mut j = i + 1;
        while j < changes.len()
            && changes[j]
                .line
                .saturating_sub(changes[j - 1].line + changes[j - 1].old.len())
                <= 2 * CONTEXT
        {
            j += 1;
        }
        let hunk = &changes[i..j];
        let before = lines_before(old, hunk[0].from, CONTEXT);
        let after = lines_after(old, hunk[hunk.len() - 1].to, CONTEXT);
        let mut between = Vec::new();
        for pair in hunk.windows(2) {
            between.push(split_lines(&old[pair[0].to..pair[1].from]));
        }
        let shared = before.len() + after.len() + between.iter().map(Vec::len).sum::<usize>();
        let old_len = shared + hunk.iter().map(|c| c.old.len()).sum::<usize>();
        let new_len = shared + hunk.iter().map(|c| c.new.len()).sum::<usize>();
        let old_start = hunk[0].line - before.len();
        let new_start = offset(old_start, moved);
        let start = |s: usize, len: usize| if len == 0 { s.saturating_sub(1) } else { s };
        diff.out.push_str(&format!(
            "@@ -{},{old_len} +{},{new_len} @@\n",
            start(old_start, old_len),
            start(new_start, new_len)
        ));
        for line in &before {
            diff.line(' ', line);
        }
        for (k, change) in hunk.iter().enumerate() {
            if k > 0 {
                for line in &between[k - 1] {
                    diff.line(' ', line);
                }
            }
            if !diff.full {
                shown += change.replacements;
            }
            for line in &change.old {
                diff.line('-', line);
            }
            for line in &change.new {
                diff.line('+', line);
            }
            moved += change.new.len() as isize - change.old.len() as isize;
        }
        for line in &after {
            diff.line(' ', line);
        }
        i = j;
    }
    let mut out = diff.out;
    if shown < replacements {
        out.push_str(&format!(
            "… (the diff stops here; {} more replacements are not shown)",
            replacements - shown
        ));
    } else if diff.full {
        out.push_str("… (the diff stops here)");
    }
    out.trim_end().to_string()
}

/// Characters of a line compared when looking for the closest text.
const HINT_CHARS: usize = 200;
/// Lines looked at, at most, when looking for the closest text.
const HINT_LINES: usize = 100_000;
/// Lines compared closely after a cheap first pass.
const HINT_CANDIDATES: usize = 16;

/// The lines around the line of `text` most like the first non-blank line of `wanted`,
/// with a `>` at that line. The work is bounded whatever the sizes: a cheap pass
/// (shared character pairs) over the first [`HINT_CHARS`] characters of at most
/// [`HINT_LINES`] lines, then an edit distance on the best few.
pub fn closest(text: &str, wanted: &str) -> Option<String> {
    let probe: String = wanted
        .lines()
        .find(|l| !l.trim().is_empty())?
        .trim()
        .chars()
        .take(HINT_CHARS)
        .collect();
    let probe_len = probe.chars().count();
    let probe_pairs = Pairs::of(&probe);
    let mut seen = Pairs::default();
    let mut best: Vec<(f64, usize, String)> = Vec::new();
    for (i, line) in text.lines().take(HINT_LINES).enumerate() {
        let short: String = line.trim().chars().take(HINT_CHARS).collect();
        let len = short.chars().count();
        // An edit distance can never score 0.5 between lengths this far apart.
        if len.min(probe_len) * 2 < len.max(probe_len) || len == 0 {
            continue;
        }
        let score = probe_pairs.shared(&short, &mut seen) as f64 * 2.0
            / ((len + probe_len).saturating_sub(2).max(1)) as f64;
        if best.len() < HINT_CANDIDATES || score > best[best.len() - 1].0 {
            let at = best.partition_point(|b| b.0 >= score);
            best.insert(at, (score, i, short));
            best.truncate(HINT_CANDIDATES);
        }
    }
    let (line, score) = best
        .iter()
        .map(|(_, i, short)| (*i, strsim::normalized_levenshtein(short, &probe)))
        .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)))?;
    if score < 0.5 {
        return None;
    }
    let from = line.saturating_sub(2);
    let mut out = String::new();
    for (i, text) in text.lines().enumerate().skip(from).take(line + 3 - from) {
        let mark = if i == line { ">" } else { " " };
        let shown = match text.char_indices().nth(MAX_LINE_CHARS) {
            Some((cut, _)) => format!("{} … [line cut]", &text[..cut]),
            None => text.to_string(),
        };
        out.push_str(&format!("{mark}{:>5}\t{shown}\n", i + 1));
    }
    Some(out)
}

/// Counts of adjacent character pairs, hashed into a fixed table.
#[derive(Clone)]
struct Pairs {
    counts: Vec<u16>,
    touched: Vec<usize>,
}

impl Default for Pairs {
    fn default() -> Pairs {
        Pairs {
            counts: vec![0; 4096],
            touched: Vec::new(),
        }
    }
}

impl Pairs {
    fn slot(a: char, b: char) -> usize {
        ((a as usize).wrapping_mul(31).wrapping_add(b as usize)) & 4095
    }

    fn of(text: &str) -> Pairs {
        let mut pairs = Pairs::default();
        let chars: Vec<char> = text.chars().collect();
        for w in chars.windows(2) {
            let slot = Pairs::slot(w[0], w[1]);
            pairs.counts[slot] = pairs.counts[slot].saturating_add(1);
        }
        pairs
    }

    /// How many pairs of `text` are also pairs of `self`; `seen` is scratch space.
    fn shared(&self, text: &str, seen: &mut Pairs) -> usize {
        let mut shared = 0;
        let mut chars = text.chars();
        let Some(mut prev) = chars.next() else {
            return 0;
        };
        for c in chars {
            let slot = Pairs::slot(prev, c);
            if seen.counts[slot] < self.counts[slot] {
                shared += 1;
            }
            if seen.counts[slot] == 0 {
                seen.touched.push(slot);
            }
            seen.counts[slot] = seen.counts[slot].saturating_add(1);
            prev = c;
        }
        for slot in seen.touched.drain(..) {
            seen.counts[slot] = 0;
        }
        shared
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn edit(text: &str, old: &str, new: &str, all: bool) -> Edit {
        apply(text, old, new, all, "f", &CancellationToken::new()).unwrap()
    }

    /// The diff `similar` gives for the same change (the reference for small cases).
    fn reference(old: &str, new: &str) -> String {
        similar::TextDiff::from_lines(old, new)
            .unified_diff()
            .context_radius(3)
            .header("a/f", "b/f")
            .to_string()
            .trim_end()
            .to_string()
    }

    #[test]
    fn diffs_match_a_line_diff_on_small_edits() {
        let text = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n";
        let cases: &[(&str, &str, bool)] = &[
            ("b", "B", false),
            ("a\n", "", false),
            ("m\n", "", false),
            ("c\nd\n", "x\n", false),
            ("d\ne", "d\nE", false),
            ("c\n", "c\nnew\n", false),
            ("\n", "\n\n", false),
            ("e\n", "e", false),
            ("b\n", "Z", false),
        ];
        for (old, new, all) in cases {
            let edited = edit(text, old, new, *all);
            assert_eq!(
                edited.diff,
                reference(text, &edited.text),
                "{old:?} -> {new:?}"
            );
        }
        // Changes far apart make separate hunks; near ones share one.
        let edited = edit(text, "b\n", "B\n", false);
        let both = edit(&edited.text, "l\n", "L\n", false);
        assert_eq!(both.diff, reference(&edited.text, &both.text));
        let near = edit("x\ny\nx\n", "x", "z", true);
        assert_eq!(near.diff, reference("x\ny\nx\n", &near.text));
        let no_newline = edit("a\nb", "b", "c", false);
        assert_eq!(no_newline.diff, reference("a\nb", &no_newline.text));
    }

    #[test]
    fn many_replacements_give_a_capped_diff_and_an_exact_count() {
        let text = "let x = 1;\n".repeat(200_000);
        let edited = edit(&text, "x", "y", true);
        assert_eq!(edited.replacements, 200_000);
        assert_eq!(edited.text, "let y = 1;\n".repeat(200_000));
        let lines: Vec<&str> = edited.diff.lines().collect();
        assert!(lines.len() <= MAX_DIFF_LINES + 4, "{}", lines.len());
        let last = lines.last().unwrap();
        let hidden: usize = last
            .strip_prefix("… (the diff stops here; ")
            .and_then(|rest| rest.strip_suffix(" more replacements are not shown)"))
            .unwrap()
            .parse()
            .unwrap();
        assert!(200_000 - hidden <= MAX_DIFF_LINES, "{last}");
        // Many on one line: one change.
        let line = "ab".repeat(100_000);
        let edited = edit(&line, "a", "c", true);
        assert_eq!(edited.replacements, 100_000);
        assert_eq!(
            edited.diff.lines().count(),
            7,
            "headers, a hunk, two lines and their notes"
        );
        assert!(edited.diff.contains(" … [line cut]"));
    }

    #[test]
    fn occurrences_list_the_first_lines_only() {
        let text = "x\n".repeat(40_000);
        let found = occurrences(&text, "x", &CancellationToken::new()).unwrap();
        assert_eq!(found.count, 40_000);
        assert_eq!(found.lines, (1..=20).collect::<Vec<_>>());
        assert_eq!(
            list_lines(&found),
            "1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 and 39980 more"
        );
        let few = occurrences("a\nb a\n\na", "a", &CancellationToken::new()).unwrap();
        assert_eq!(list_lines(&few), "1, 2, 4");
    }

    #[test]
    fn a_stopped_replacement_ends_early() {
        let stop = CancellationToken::new();
        stop.cancel();
        let text = "x".repeat(10_000);
        assert!(apply(&text, "x", "y", true, "f", &stop).is_err());
        assert!(occurrences(&text, "x", &stop).is_err());
    }

    #[test]
    fn the_closest_text_is_found_in_long_lines_too() {
        let mut text = String::new();
        for i in 0..2000 {
            text.push_str(&format!("{i:04} {}\n", "q".repeat(3000)));
        }
        text.push_str("    let total = items.iter().sum();\n");
        let hint = closest(&text, "let  total = items.iter().sum();").unwrap();
        assert!(
            hint.contains("> 2001\t    let total = items.iter().sum();"),
            "{hint}"
        );
        assert_eq!(hint.lines().count(), 3);
        assert!(hint.lines().next().unwrap().ends_with(" … [line cut]"));
        assert_eq!(closest(&text, "something else entirely"), None);
    }
}
