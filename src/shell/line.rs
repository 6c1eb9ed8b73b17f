//! What a `bash` command line runs, as far as it can be known before it runs: the line is
//! parsed with yash-syntax (a POSIX shell parser) into its simple commands, with quotes
//! removed, and with the commands run through wrappers (`sudo`, `env`, `xargs`…), nested
//! scripts (`bash -c`, `eval`) and command substitutions. `bash`'s allow and deny rules
//! are matched against these commands, never against the raw text.

use std::rc::Rc;

use futures_util::FutureExt;
use yash_syntax::parser::Parser;
use yash_syntax::parser::lex::{Lexer, TokenId};
use yash_syntax::syntax::{
    BackquoteUnit, Command, CompoundCommand, EscapeUnit, List, Modifier, Redir, RedirBody,
    SimpleCommand, Text, TextUnit, Value, Word, WordUnit,
};

/// How deep nested scripts (`bash -c "bash -c …"`, substitutions in substitutions) are
/// followed before the line counts as one eve cannot analyse.
const MAX_NESTING: usize = 8;

/// One word of a command, quotes removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arg {
    /// The word without its quotes; for a word with expansions, its source text.
    pub text: String,
    pub kind: ArgKind,
}

/// How much of a word is known before the line runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgKind {
    /// Plain text once quotes are removed.
    Literal,
    /// Known text, but the shell still changes it: a pathname pattern or a tilde.
    Pattern,
    /// Only known when the line runs: a parameter, a command substitution, arithmetic,
    /// brace expansion, or an option-like pathname pattern.
    Unknown,
}

impl Arg {
    fn literal(&self) -> bool {
        self.kind == ArgKind::Literal
    }
}

/// A command line as the rules see it.
#[derive(Debug, Default)]
pub struct Analysis {
    /// Every command that would run: each simple command of the line, and again the
    /// command inside each wrapper, nested script and command substitution.
    pub commands: Vec<Vec<Arg>>,
    /// The top-level simple commands, word for word, when the line is nothing more than
    /// plain commands joined by `|`, `&&`, `||`, `;` or newlines.
    pub plain: Vec<Vec<String>>,
    /// Why the line is more than plain commands (no allow rule can cover it).
    pub not_plain: Option<String>,
    /// Why what the line runs cannot be known before it runs (deny rules cannot be checked).
    pub opaque: Option<String>,
}

impl Analysis {
    fn not_plain(&mut self, why: impl Into<String>) {
        if self.not_plain.is_none() {
            self.not_plain = Some(why.into());
        }
    }

    fn opaque(&mut self, why: impl Into<String>) {
        let why = why.into();
        self.not_plain(why.clone());
        if self.opaque.is_none() {
            self.opaque = Some(why);
        }
    }
}

/// Analyses a command line.
pub fn analyse(line: &str) -> Analysis {
    let mut analysis = Analysis::default();
    script(&mut analysis, line, 0, true);
    analysis
}

/// Parses `code` and walks it; `top` for the line itself (not a nested script).
fn script(a: &mut Analysis, code: &str, depth: usize, top: bool) {
    if depth > MAX_NESTING {
        a.opaque("its scripts nest too deeply to follow");
        return;
    }
    match parse(code) {
        Ok(list) => Walker { a, depth, top }.list(&list),
        Err(why) => a.opaque(why),
    }
}

fn parse(code: &str) -> Result<List, String> {
    let mut lexer = Lexer::with_code(code);
    let mut parser = Parser::new(&mut lexer);
    let parsed = async {
        let list = parser.maybe_compound_list().await?;
        parser.ensure_no_unread_here_doc()?;
        let next = parser.take_token_raw().await?;
        Ok::<_, yash_syntax::parser::Error>((list, next.id == TokenId::EndOfInput))
    }
    .now_or_never();
    match parsed {
        Some(Ok((list, true))) => Ok(list),
        Some(Ok((_, false))) => {
            Err("it has shell syntax eve cannot parse (an unexpected token)".into())
        }
        Some(Err(e)) => Err(format!(
            "it has shell syntax eve cannot parse ({})",
            e.cause
        )),
        None => Err("it has shell syntax eve cannot parse".into()),
    }
}

struct Walker<'a> {
    a: &'a mut Analysis,
    depth: usize,
    top: bool,
}

impl Walker<'_> {
    fn list(&mut self, list: &List) {
        for item in &list.0 {
            if item.async_flag.is_some() {
                self.a
                    .not_plain("it runs a command in the background (`&`)");
            }
            for pipeline in
                std::iter::once(&item.and_or.first).chain(item.and_or.rest.iter().map(|(_, p)| p))
            {
                for command in &pipeline.commands {
                    self.command(command);
                }
            }
        }
    }

    fn command(&mut self, command: &Rc<Command>) {
        match command.as_ref() {
            Command::Simple(simple) => self.simple(simple),
            Command::Compound(full) => {
                self.a.not_plain(
                    "it uses a compound command (a group, subshell, loop, `if` or `case`)",
                );
                self.redirs(&full.redirs);
                self.compound(&full.command);
            }
            Command::Function(function) => {
                self.a.not_plain("it defines a function");
                self.redirs(&function.body.redirs);
                self.compound(&function.body.command);
            }
        }
    }

    fn compound(&mut self, command: &CompoundCommand) {
        match command {
            CompoundCommand::Grouping(list) => self.list(list),
            CompoundCommand::Subshell { body, .. } => self.list(body),
            CompoundCommand::For { values, body, .. } => {
                for word in values.iter().flatten() {
                    self.word(word);
                }
                self.list(body);
            }
            CompoundCommand::While { condition, body }
            | CompoundCommand::Until { condition, body } => {
                self.list(condition);
                self.list(body);
            }
            CompoundCommand::If {
                condition,
                body,
                elifs,
                r#else,
            } => {
                self.list(condition);
                self.list(body);
                for elif in elifs {
                    self.list(&elif.condition);
                    self.list(&elif.body);
                }
                if let Some(list) = r#else {
                    self.list(list);
                }
            }
            CompoundCommand::Case { subject, items } => {
                self.word(subject);
                for item in items {
                    for pattern in &item.patterns {
                        self.word(pattern);
                    }
                    self.list(&item.body);
                }
            }
        }
    }

    fn simple(&mut self, simple: &SimpleCommand) {
        if !simple.assigns.is_empty() {
            self.a.not_plain("it sets a variable");
        }
        for assign in &simple.assigns {
            match &assign.value {
                Value::Scalar(word) => {
                    self.word(word);
                }
                Value::Array(words) => {
                    for word in words {
                        self.word(word);
                    }
                }
            }
        }
        if !simple.redirs.is_empty() {
            self.a.not_plain("it redirects input or output");
        }
        self.redirs(&simple.redirs);
        let args: Vec<Arg> = simple.words.iter().map(|(w, _)| self.word(w)).collect();
        if args.is_empty() {
            return;
        }
        if let Some(unknown) = args.iter().find(|arg| !arg.literal()) {
            self.a.not_plain(format!(
                "`{}` is expanded by the shell when the line runs",
                unknown.text
            ));
        }
        if self.top {
            self.a
                .plain
                .push(args.iter().map(|arg| arg.text.clone()).collect());
        }
        self.invoke(args);
    }

    fn redirs(&mut self, redirs: &[Redir]) {
        for redir in redirs {
            match &redir.body {
                RedirBody::Normal { operand, .. } => {
                    self.word(operand);
                }
                RedirBody::HereDoc(here_doc) => {
                    if let Some(content) = here_doc.content.get() {
                        self.text(content);
                    }
                }
            }
        }
    }

    /// Records a command that runs, then looks inside it when it runs another.
    fn invoke(&mut self, args: Vec<Arg>) {
        let Some(name) = args.first() else {
            return;
        };
        if name.kind == ArgKind::Unknown {
            self.a.opaque(format!(
                "its command name `{}` is only known when the line runs",
                name.text
            ));
        }
        let base = basename(&name.text).to_string();
        let inner = if name.kind == ArgKind::Unknown {
            Inner::None
        } else {
            inner(&base, &args)
        };
        self.a.commands.push(args.clone());
        match inner {
            Inner::None => {}
            Inner::Command(at) => self.invoke(args[at..].to_vec()),
            Inner::Script(at) => match args.get(at) {
                Some(arg) if arg.literal() => {
                    let code = args[at..]
                        .iter()
                        .map(|a| a.text.as_str())
                        .collect::<Vec<_>>()
                        .join(" ");
                    self.nested(&code);
                }
                Some(arg) => self.a.opaque(format!(
                    "the script `{}` given to `{base}` is only known when the line runs",
                    arg.text
                )),
                None => {}
            },
            Inner::OneScript(at) => match args.get(at) {
                Some(arg) if arg.literal() => self.nested(&arg.text.clone()),
                Some(arg) => self.a.opaque(format!(
                    "the script `{}` given to `{base}` is only known when the line runs",
                    arg.text
                )),
                None => {}
            },
            Inner::Opaque(why) => self.a.opaque(format!("`{base}` {why}")),
        }
    }

    fn nested(&mut self, code: &str) {
        script(self.a, code, self.depth + 1, false);
    }

    /// A word as the rules see it; command substitutions in it are walked as commands.
    fn word(&mut self, word: &Word) -> Arg {
        let mut text = String::new();
        let mut kind = ArgKind::Literal;
        let mut unquoted = String::new();
        for unit in &word.units {
            match unit {
                WordUnit::Unquoted(TextUnit::Literal('$')) => {
                    // `$"…"` is bash's translated string.
                    kind = ArgKind::Unknown;
                    text.push('$');
                }
                WordUnit::Unquoted(unit) => {
                    if let TextUnit::Literal(c) = unit {
                        unquoted.push(*c);
                    }
                    if !self.text_unit(unit, &mut text) {
                        kind = ArgKind::Unknown;
                    }
                }
                WordUnit::SingleQuote(s) => text.push_str(s),
                WordUnit::DoubleQuote(inner) => {
                    for unit in &inner.0 {
                        if !self.text_unit(unit, &mut text) {
                            kind = ArgKind::Unknown;
                        }
                    }
                }
                WordUnit::DollarSingleQuote(escaped) => {
                    for unit in &escaped.0 {
                        text.push(unescape(unit));
                    }
                }
                WordUnit::Tilde { name, .. } => {
                    text.push('~');
                    text.push_str(name);
                    if kind == ArgKind::Literal {
                        kind = ArgKind::Pattern;
                    }
                }
            }
        }
        if kind != ArgKind::Unknown {
            let braces = unquoted.contains('{')
                && unquoted.contains('}')
                && (unquoted.contains(',') || unquoted.contains(".."));
            let glob = unquoted.contains(['*', '?', '[']);
            if braces || (glob && text.starts_with('-')) {
                kind = ArgKind::Unknown;
            } else if glob {
                kind = ArgKind::Pattern;
            }
        }
        if kind == ArgKind::Unknown {
            text = word.to_string();
        }
        Arg { text, kind }
    }

    /// Appends what a text unit stands for; false when it is only known at run time.
    fn text_unit(&mut self, unit: &TextUnit, out: &mut String) -> bool {
        match unit {
            TextUnit::Literal(c) | TextUnit::Backslashed(c) => {
                out.push(*c);
                true
            }
            TextUnit::RawParam { .. } => false,
            TextUnit::BracedParam(param) => {
                match &param.modifier {
                    Modifier::Switch(switch) => {
                        self.word(&switch.word);
                    }
                    Modifier::Trim(trim) => {
                        self.word(&trim.pattern);
                    }
                    Modifier::None | Modifier::Length => {}
                }
                false
            }
            TextUnit::CommandSubst { content, .. } => {
                self.nested(content);
                false
            }
            TextUnit::Backquote { content, .. } => {
                let code: String = content
                    .iter()
                    .map(|unit| match unit {
                        BackquoteUnit::Literal(c) | BackquoteUnit::Backslashed(c) => *c,
                    })
                    .collect();
                self.nested(&code);
                false
            }
            TextUnit::Arith { content, .. } => {
                self.text(content);
                false
            }
        }
    }

    fn text(&mut self, text: &Text) {
        let mut sink = String::new();
        for unit in &text.0 {
            self.text_unit(unit, &mut sink);
        }
    }
}

fn unescape(unit: &EscapeUnit) -> char {
    match unit {
        EscapeUnit::Literal(c) | EscapeUnit::Unicode(c) => *c,
        EscapeUnit::DoubleQuote => '"',
        EscapeUnit::SingleQuote => '\'',
        EscapeUnit::Backslash => '\\',
        EscapeUnit::Question => '?',
        EscapeUnit::Alert => '\u{7}',
        EscapeUnit::Backspace => '\u{8}',
        EscapeUnit::Escape => '\u{1b}',
        EscapeUnit::FormFeed => '\u{c}',
        EscapeUnit::Newline => '\n',
        EscapeUnit::CarriageReturn => '\r',
        EscapeUnit::Tab => '\t',
        EscapeUnit::VerticalTab => '\u{b}',
        EscapeUnit::Control(b) | EscapeUnit::Octal(b) | EscapeUnit::Hex(b) => char::from(*b),
    }
}

/// The last component of a command name: `/usr/bin/sudo` → `sudo`.
pub fn basename(name: &str) -> &str {
    name.rsplit('/').next().unwrap_or(name)
}

/// What a command runs besides itself.
enum Inner {
    None,
    /// The command starting at this argument.
    Command(usize),
    /// A script made of the arguments from this one on, joined by spaces (`eval`, `watch`).
    Script(usize),
    /// A script in this one argument (`bash -c`).
    OneScript(usize),
    /// Something eve cannot see, and why.
    Opaque(&'static str),
}

/// The options of a wrapper that take a value in the next argument.
fn inner(name: &str, args: &[Arg]) -> Inner {
    let command_after = |with_value: &[&str]| match skip_options(args, 1, with_value) {
        at if at < args.len() => Inner::Command(at),
        _ => Inner::None,
    };
    match name {
        "command" | "builtin" | "nohup" | "setsid" => command_after(&[]),
        "exec" => command_after(&["-a"]),
        "time" => command_after(&["-f", "-o", "--format", "--output"]),
        "nice" => command_after(&["-n", "--adjustment"]),
        "ionice" => command_after(&["-c", "-n", "--class", "--classdata"]),
        "stdbuf" => command_after(&["-i", "-o", "-e", "--input", "--output", "--error"]),
        "chrt" | "taskset" | "flock" => {
            // Their first operand is a priority, a mask or a lock file.
            match skip_options(args, 1, &[]) {
                at if at + 1 < args.len() => Inner::Command(at + 1),
                _ => Inner::None,
            }
        }
        "timeout" => match skip_options(args, 1, &["-s", "-k", "--signal", "--kill-after"]) {
            at if at + 1 < args.len() => Inner::Command(at + 1),
            _ => Inner::None,
        },
        "sudo" | "doas" => command_after(SUDO_VALUED),
        "xargs" => command_after(XARGS_VALUED),
        "env" => env(args),
        "eval" => Inner::Script(1),
        "watch" => {
            let at = skip_options(args, 1, &["-n", "--interval", "-g", "-q"]);
            if args[1..at]
                .iter()
                .any(|a| a.text == "-x" || a.text == "--exec")
            {
                command_after(&["-n", "--interval"])
            } else {
                Inner::Script(at)
            }
        }
        "trap" => Inner::OneScript(1),
        "bash" | "sh" | "dash" | "zsh" | "ksh" | "mksh" | "ash" | "yash" | "su" | "fish" => {
            shell(args)
        }
        "alias" => Inner::Opaque("defines an alias"),
        "coproc" => Inner::Opaque("runs a coprocess"),
        _ => Inner::None,
    }
}

/// The options of `sudo` and `doas` that take a value in the next argument.
const SUDO_VALUED: &[&str] = &[
    "-u",
    "-g",
    "-h",
    "-p",
    "-C",
    "-D",
    "-R",
    "-T",
    "-U",
    "-r",
    "-t",
    "--user",
    "--group",
    "--host",
    "--prompt",
    "--chdir",
    "--chroot",
    "--role",
    "--type",
    "--other-user",
    "--close-from",
    "--command-timeout",
];

/// The options of `xargs` that take a value in the next argument.
const XARGS_VALUED: &[&str] = &[
    "-a",
    "-d",
    "-E",
    "-I",
    "-L",
    "-n",
    "-P",
    "-s",
    "--arg-file",
    "--delimiter",
    "--max-lines",
    "--max-args",
    "--max-procs",
    "--max-chars",
    "--process-slot-var",
];

/// The command `env` runs after its options and assignments, or opaque with `-S`.
fn env(args: &[Arg]) -> Inner {
    let mut at = 1;
    while let Some(arg) = args.get(at) {
        let text = arg.text.as_str();
        if text == "-S" || text.starts_with("--split-string") || text.starts_with("-S") {
            return Inner::Opaque("splits a string into a command eve does not parse");
        }
        if text == "--" {
            at += 1;
            break;
        }
        if ["-u", "-C", "--unset", "--chdir"].contains(&text) {
            at += 2;
        } else if text.starts_with('-') || text.contains('=') {
            at += 1;
        } else {
            break;
        }
    }
    if at < args.len() {
        Inner::Command(at)
    } else {
        Inner::None
    }
}

/// A shell's script: the argument after `-c` (or a cluster holding `c`), or nothing to see
/// when it runs a script file, or opaque when it reads commands from its input.
fn shell(args: &[Arg]) -> Inner {
    let mut at = 1;
    while let Some(arg) = args.get(at) {
        let text = arg.text.as_str();
        if text == "--" || !text.starts_with(['-', '+']) || text == "-" {
            break;
        }
        let short = !text.starts_with("--");
        if text == "--command" || (short && text[1..].contains('c')) {
            // The script is the first operand after the options.
            let script = skip_options(
                args,
                at + 1,
                &["-o", "+o", "-O", "+O", "--rcfile", "--init-file"],
            );
            return Inner::OneScript(script);
        }
        at += if ["-o", "+o", "-O", "+O", "--rcfile", "--init-file"].contains(&text) {
            2
        } else {
            1
        };
    }
    if at < args.len() && args[at].text != "-" {
        // A script file: what it runs is as unknown as any program's.
        Inner::None
    } else {
        Inner::Opaque("reads the commands to run from its input")
    }
}

/// The index of the first argument from `from` on that is not an option (or `--`).
fn skip_options(args: &[Arg], from: usize, with_value: &[&str]) -> usize {
    let mut at = from;
    while let Some(arg) = args.get(at) {
        let text = arg.text.as_str();
        if text == "--" {
            return at + 1;
        }
        if !text.starts_with('-') || text == "-" || arg.kind == ArgKind::Unknown {
            return at;
        }
        at += if with_value.contains(&text) { 2 } else { 1 };
    }
    at
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn names(line: &str) -> Vec<String> {
        analyse(line)
            .commands
            .iter()
            .map(|c| {
                c.iter()
                    .map(|a| a.text.clone())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    #[test]
    fn lists_pipelines_and_quotes_become_plain_commands() {
        let a = analyse("git status && ls\t-la | wc -l; echo 'a b' \"c\"\\ d");
        assert_eq!(a.not_plain, None);
        assert_eq!(a.opaque, None);
        assert_eq!(
            a.plain,
            [
                vec!["git", "status"],
                vec!["ls", "-la"],
                vec!["wc", "-l"],
                vec!["echo", "a b", "c d"]
            ]
        );
        assert_eq!(names("s''udo id"), ["sudo id", "id"]);
        assert_eq!(names("\\sudo id"), ["sudo id", "id"]);
        assert_eq!(names("$'\\x73udo' id"), ["sudo id", "id"]);
    }

    #[test]
    fn wrappers_nested_scripts_and_substitutions_are_followed() {
        assert_eq!(
            names("command sudo id"),
            ["command sudo id", "sudo id", "id"]
        );
        assert_eq!(
            names("env -i A=1 nohup /usr/bin/sudo -u root id"),
            [
                "env -i A=1 nohup /usr/bin/sudo -u root id",
                "nohup /usr/bin/sudo -u root id",
                "/usr/bin/sudo -u root id",
                "id"
            ]
        );
        assert_eq!(
            names("echo x | xargs -n 1 sudo"),
            ["echo x", "xargs -n 1 sudo", "sudo"]
        );
        assert_eq!(
            names("bash -c 'sudo id; ls'"),
            ["bash -c sudo id; ls", "sudo id", "id", "ls"]
        );
        assert_eq!(names("eval sudo id"), ["eval sudo id", "sudo id", "id"]);
        let a = analyse("echo $(sudo id) `rm -rf /`");
        assert!(a.not_plain.is_some());
        assert_eq!(a.opaque, None);
        let found = names("echo $(sudo id) `rm -rf /`");
        assert!(found.contains(&"sudo id".to_string()), "{found:?}");
        assert!(found.contains(&"rm -rf /".to_string()), "{found:?}");
        assert!(names("if true; then { (sudo id); }; fi").contains(&"sudo id".to_string()));
        assert!(names("f() { sudo id; }; f").contains(&"sudo id".to_string()));
    }

    #[test]
    fn what_cannot_be_known_is_opaque() {
        for line in [
            "$X id",
            "\"$(echo sudo)\" id",
            "{sudo,x} id",
            "echo 'sudo id' | bash",
            "bash -c \"$SCRIPT\"",
            "cat <(ls)",
            "echo hi )",
            "alias x=sudo",
            "env -S 'sudo id'",
            "$\"sudo\" id",
        ] {
            assert!(analyse(line).opaque.is_some(), "{line}");
        }
        assert_eq!(analyse("bash script.sh").opaque, None);
    }

    #[test]
    fn redirections_expansions_and_background_jobs_are_not_plain() {
        for line in [
            "ls > out",
            "ls 2>&1",
            "cat <<EOF\nx\nEOF",
            "ls $HOME",
            "ls ~",
            "ls *",
            "X=1 ls",
            "ls &",
            "(ls)",
            "{ ls; }",
            "for f in a; do ls; done",
        ] {
            assert!(analyse(line).not_plain.is_some(), "{line}");
        }
    }
}
