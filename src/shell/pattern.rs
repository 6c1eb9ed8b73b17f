//! A pattern of `bash`'s `allow` or `deny` setting: words, each a glob over one word of a
//! command (`git log`, `git show *`, `rm -rf /*`), matched against the commands a line runs
//! (see `line.rs`), never against the raw text.
//!
//! - **allow** covers a command word for word: as many words, each matching, except that
//!   a last pattern word `*` stands for any further arguments. The command name must be
//!   written as in the pattern (`ls` does not cover `/bin/ls` or `./ls`).
//! - **deny** matches a command whose name matches the first word (by its last path
//!   component, unless the pattern word has a `/`) and whose arguments contain the other
//!   pattern words in order, anything between them. A word of short options (`-rf`,
//!   `-rf*`) matches when the command has each of those letters among its short options,
//!   in any order or cluster (`-fr`, `-r -f`).

use globset::{GlobBuilder, GlobMatcher};

use super::line::{Arg, ArgKind, basename};

/// A parsed `allow` or `deny` pattern.
#[derive(Debug, Clone)]
pub struct CommandPattern {
    text: String,
    words: Vec<PatternWord>,
}

#[derive(Debug, Clone)]
struct PatternWord {
    text: String,
    glob: GlobMatcher,
    /// For deny: the letters of a short-option word such as `-rf` or `-rf*`.
    letters: Option<Vec<char>>,
}

impl PatternWord {
    fn is_any(&self) -> bool {
        self.text == "*"
    }
}

/// Whether a deny pattern matches a command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DenyMatch {
    No,
    Yes,
    /// It may, depending on this part of the command that is only known when it runs.
    Maybe(String),
}

impl CommandPattern {
    /// Parses a pattern; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<CommandPattern, String> {
        if let Some(c) = text.chars().find(|c| ";&|<>()`\n\r".contains(*c)) {
            return Err(format!(
                "`{c}` cannot appear in a pattern: a pattern matches one command, and eve checks each command of a line (joined by `|`, `&&`, `;`…) on its own"
            ));
        }
        if text.contains("$(") || text.contains("${") {
            return Err("a pattern cannot hold a command substitution or a parameter".into());
        }
        if text.contains(['"', '\'', '\\']) {
            return Err("a pattern cannot hold quotes or backslashes: write the words as they are, separated by spaces".into());
        }
        let words = text
            .split_whitespace()
            .map(|word| {
                let glob = GlobBuilder::new(word)
                    .literal_separator(false)
                    .build()
                    .map_err(|e| format!("`{word}` is not a valid glob: {}", e.kind()))?
                    .compile_matcher();
                let body = word.strip_suffix('*').unwrap_or(word);
                let letters = (body.len() > 1
                    && body.starts_with('-')
                    && body[1..].chars().all(|c| c.is_ascii_alphanumeric()))
                .then(|| body[1..].chars().collect());
                Ok(PatternWord {
                    text: word.to_string(),
                    glob,
                    letters,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        match words.first() {
            None => Err("the pattern is empty".into()),
            Some(first) if first.text.chars().all(|c| c == '*') => Err(
                "a pattern starts with the command it matches; `*` alone matches every command (to run every command without asking, set `approval = \"never\"`; to refuse them all, disable the tool)".into(),
            ),
            Some(_) => Ok(CommandPattern {
                text: text.trim().to_string(),
                words,
            }),
        }
    }

    /// The pattern as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Whether this allow pattern covers a plain command, word for word.
    pub fn covers(&self, command: &[String]) -> bool {
        let (fixed, rest) = match self.words.split_last() {
            Some((last, init)) if last.is_any() && !init.is_empty() => (init, true),
            _ => (self.words.as_slice(), false),
        };
        if command.len() < fixed.len() || (!rest && command.len() != fixed.len()) {
            return false;
        }
        fixed
            .iter()
            .zip(command)
            .all(|(pattern, word)| pattern.glob.is_match(word))
    }

    /// Whether this deny pattern matches a command.
    pub fn denies(&self, command: &[Arg]) -> DenyMatch {
        let Some((name, args)) = command.split_first() else {
            return DenyMatch::No;
        };
        let Some((first, rest)) = self.words.split_first() else {
            return DenyMatch::No;
        };
        if name.kind == ArgKind::Unknown {
            return DenyMatch::Maybe(name.text.clone());
        }
        let shown = if first.text.contains('/') {
            name.text.as_str()
        } else {
            basename(&name.text)
        };
        if !first.glob.is_match(shown) {
            return DenyMatch::No;
        }
        let unknown = args.iter().find(|a| a.kind == ArgKind::Unknown);
        let options_end = args
            .iter()
            .position(|a| a.text == "--")
            .unwrap_or(args.len());
        let letters: Vec<char> = args[..options_end]
            .iter()
            .filter(|a| a.kind != ArgKind::Unknown)
            .filter_map(|a| a.text.strip_prefix('-'))
            .filter(|rest| !rest.starts_with('-') && !rest.is_empty())
            .flat_map(|rest| rest.chars())
            .collect();
        let mut uncertain = false;
        let mut at = 0;
        for word in rest.iter().filter(|w| !w.is_any()) {
            if let Some(needed) = &word.letters
                && needed.iter().all(|c| letters.contains(c))
            {
                continue;
            }
            match args[at..]
                .iter()
                .position(|a| a.kind != ArgKind::Unknown && word.glob.is_match(&a.text))
            {
                Some(i) => at += i + 1,
                None if unknown.is_some() => uncertain = true,
                None => return DenyMatch::No,
            }
        }
        match (uncertain, unknown) {
            (true, Some(arg)) => DenyMatch::Maybe(arg.text.clone()),
            _ => DenyMatch::Yes,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::super::line::analyse;
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(str::to_string).collect()
    }

    fn denied(pattern: &str, line: &str) -> DenyMatch {
        let pattern = CommandPattern::parse(pattern).unwrap();
        let analysis = analyse(line);
        let mut verdict = DenyMatch::No;
        for command in &analysis.commands {
            match pattern.denies(command) {
                DenyMatch::Yes => return DenyMatch::Yes,
                DenyMatch::Maybe(why) => verdict = DenyMatch::Maybe(why),
                DenyMatch::No => {}
            }
        }
        verdict
    }

    #[test]
    fn allow_covers_exactly_or_with_a_last_star() {
        let log = CommandPattern::parse("git log").unwrap();
        assert!(log.covers(&words("git log")));
        assert!(!log.covers(&words("git log --output=/x")));
        let show = CommandPattern::parse("git show *").unwrap();
        assert!(show.covers(&words("git show")));
        assert!(show.covers(&words("git show HEAD~1 --stat")));
        let old = CommandPattern::parse("ls*").unwrap();
        assert!(old.covers(&words("ls")));
        assert!(!old.covers(&words("ls -la /root")));
        assert!(
            !CommandPattern::parse("ls")
                .unwrap()
                .covers(&words("/bin/ls"))
        );
    }

    #[test]
    fn deny_holds_through_paths_order_clusters_and_wrappers() {
        for (pattern, line) in [
            ("sudo *", "sudo\tid"),
            ("sudo *", "command sudo id"),
            ("sudo *", "/usr/bin/sudo id"),
            ("sudo *", "echo x | sudo tee /etc/x"),
            ("sudo *", "s''udo id"),
            ("sudo", "env A=1 nice -n 5 sudo id"),
            ("rm -rf*", "rm -fr /"),
            ("rm -rf*", "rm -r -f /"),
            ("rm -rf*", "rm -rfv x"),
            ("rm -rf /*", "rm -fr /"),
            ("*git push*", "git -C . push origin"),
            ("git reset --hard*", "git reset --hard HEAD"),
            ("sudo", "bash -c 'ls; sudo id'"),
            ("sudo", "echo $(sudo id)"),
        ] {
            assert_eq!(denied(pattern, line), DenyMatch::Yes, "{pattern} / {line}");
        }
        for (pattern, line) in [
            ("rm -rf*", "rm -r x"),
            ("rm -rf /*", "rm -rf ./x"),
            ("*git push*", "git status"),
            ("sudo", "echo sudo"),
        ] {
            assert_eq!(denied(pattern, line), DenyMatch::No, "{pattern} / {line}");
        }
        assert_eq!(
            denied("rm -rf*", "rm $FLAGS /"),
            DenyMatch::Maybe("$FLAGS".into())
        );
    }

    #[test]
    fn bad_patterns_say_why() {
        for (pattern, says) in [
            ("", "empty"),
            ("   ", "empty"),
            ("*", "`*` alone"),
            ("git status; rm", "`;` cannot appear"),
            ("ls | wc", "`|` cannot appear"),
            ("git [log", "not a valid glob"),
            ("echo \"x\"", "quotes"),
        ] {
            let err = CommandPattern::parse(pattern).unwrap_err();
            assert!(err.contains(says), "{pattern}: {err}");
        }
    }
}
