//! "Did you mean" suggestions for misspelled names.

/// The candidate closest to `name`, if one is close enough to be a likely typo.
pub fn closest<'a, I>(name: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let limit = match name.chars().count() {
        0..=3 => 1,
        4..=7 => 2,
        _ => 3,
    };
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (strsim::damerau_levenshtein(name, c), c))
        .filter(|(d, _)| *d <= limit)
        // On a tie, prefer the name of the same length: `modle` is `model`, not `mode`.
        .min_by_key(|(d, c)| (*d, c.len().abs_diff(name.len()), *c))
        .map(|(_, c)| c)
}

/// Like [`closest`], and failing that the candidate sharing the longest beginning with
/// `name` (at least half of it, and 4 characters): `list_dirs` is `list_directory`.
pub fn likely<'a, I>(name: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a str>,
{
    let candidates: Vec<&'a str> = candidates.into_iter().collect();
    if let Some(near) = closest(name, candidates.iter().copied()) {
        return Some(near);
    }
    let shared = |c: &str| {
        name.chars()
            .zip(c.chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    let needed = (name.chars().count() / 2).max(4);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| (shared(c), c))
        .filter(|(n, _)| *n >= needed)
        .max_by_key(|(n, c)| (*n, std::cmp::Reverse(c.len()), std::cmp::Reverse(*c)))
        .map(|(_, c)| c)
}

/// Whether two names are exactly one edit (insert, delete, substitute, transpose) apart.
pub fn one_edit_apart(a: &str, b: &str) -> bool {
    strsim::damerau_levenshtein(a, b) == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_nearest_name() {
        let names = ["read_file", "write_file", "edit_file", "bash"];
        assert_eq!(closest("raed_file", names), Some("read_file"));
        assert_eq!(closest("bsh", names), Some("bash"));
        assert_eq!(closest("modle", ["mode", "model"]), Some("model"));
        assert_eq!(closest("weather", names), None);
    }

    #[test]
    fn likely_falls_back_to_the_longest_shared_beginning() {
        let tools = [
            "list_directory",
            "list_directory_with_sizes",
            "list_allowed_directories",
            "read_file",
        ];
        assert_eq!(likely("list_dirs", tools), Some("list_directory"));
        assert_eq!(likely("raed_file", tools), Some("read_file"));
        assert_eq!(likely("lis", tools), None);
        assert_eq!(likely("write", tools), None);
    }

    #[test]
    fn one_edit_is_exactly_one() {
        assert!(one_edit_apart("gerp", "grep"));
        assert!(one_edit_apart("bash2", "bash"));
        assert!(!one_edit_apart("grep", "grep"));
        assert!(!one_edit_apart("weather", "grep"));
    }
}
