//! Times the `grep` and `glob` tools, called in process, against ripgrep and fd (or
//! find) on a large generated tree: 50,000 source-like files in nested folders, about
//! 400 MB, a needle in 1% of them, plus a folder excluded by `.ignore` and a few binary
//! files. The tree is made once under the temp folder and reused by later runs.
//! Each figure is the median of 5 runs after one warm-up run (the files are in the page
//! cache). Run with `cargo bench --bench search`; install `ripgrep` and `fd-find` to
//! compare (`apt-get install -y ripgrep fd-find`), otherwise only our figures are shown.
// clippy.toml's disallowed reads are the compiler's rule, not this crate's.
#![allow(clippy::disallowed_methods)]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use eve::tools::builtin::glob::GlobTool;
use eve::tools::builtin::grep::GrepTool;
use eve::tools::{ToolContext, ToolExec};
use serde_json::{Value, json};

const FILES: usize = 50_000;
const TOP: usize = 50;
const MIDDLE: usize = 20;
const NEEDLE: &str = "NEEDLE_7f3a9c";
const RUNS: usize = 5;
/// Bump when the tree's recipe changes, so an old tree is not reused.
const VERSION: &str = "v1";

fn main() {
    let base = std::env::temp_dir().join(format!("eve-bench-search-{VERSION}"));
    let tree = base.join("tree");
    let (files, bytes) = ensure_tree(&base, &tree);
    println!(
        "tree: {} ({files} files, {:.0} MB; 2,000 more under an ignored build/ folder)\n",
        tree.display(),
        bytes as f64 / 1e6
    );

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let ctx = ToolContext::new(tree.clone(), base.clone());
    let grep = GrepTool::default();
    let glob = GlobTool::default();
    let rg = tool_exists("rg");
    let fd = ["fd", "fdfind"].into_iter().find(|name| tool_exists(name));

    let ours = |exec: &dyn ToolExec, input: Value| {
        let out = runtime.block_on(exec.call(&input, &ctx));
        assert!(!out.is_error, "{}", out.content);
        out.content.len()
    };

    println!(
        "{:<66} {:>10} {:>10} {:>7}",
        "case", "eve", "reference", "ratio"
    );
    compare(
        "grep files_with_matches (literal)  vs rg --hidden -l",
        || ours(&grep, json!({"pattern": NEEDLE})),
        rg.then(|| external(&tree, "rg", &["--hidden", "-l", NEEDLE, "."])),
    );
    compare(
        "grep content (literal)             vs rg --hidden -n",
        || ours(&grep, json!({"pattern": NEEDLE, "output_mode": "content"})),
        rg.then(|| external(&tree, "rg", &["--hidden", "-n", NEEDLE, "."])),
    );
    compare(
        "grep count (regex, -i)             vs rg --hidden -c -i",
        || {
            ours(
                &grep,
                json!({"pattern": r"fn \w+_handler\(", "output_mode": "count", "case_insensitive": true}),
            )
        },
        rg.then(|| {
            external(
                &tree,
                "rg",
                &["--hidden", "-c", "-i", r"fn \w+_handler\(", "."],
            )
        }),
    );
    compare(
        "grep files, glob *.rs              vs rg --hidden -l -g",
        || ours(&grep, json!({"pattern": NEEDLE, "glob": "*.rs"})),
        rg.then(|| external(&tree, "rg", &["--hidden", "-l", "-g", "*.rs", NEEDLE, "."])),
    );
    match fd {
        Some(fd) => compare(
            &format!("glob **/*.rs (newest first)        vs {fd} --hidden -t f -e rs"),
            || ours(&glob, json!({"pattern": "**/*.rs"})),
            Some(external(
                &tree,
                fd,
                &["--hidden", "-t", "f", "-e", "rs", "."],
            )),
        ),
        None => {
            println!("(fd is not installed: `apt-get install -y fd-find` to compare glob with it)")
        }
    }
    compare(
        "glob **/*.rs (newest first)        vs find -name '*.rs' -type f",
        || ours(&glob, json!({"pattern": "**/*.rs"})),
        Some(external(
            &tree,
            "find",
            &[".", "-name", "*.rs", "-type", "f"],
        )),
    );
    compare(
        "glob **/*.zzz (no match: the walk alone) vs find -name '*.zzz'",
        || ours(&glob, json!({"pattern": "**/*.zzz"})),
        Some(external(
            &tree,
            "find",
            &[".", "-name", "*.zzz", "-type", "f"],
        )),
    );

    // The same answers: every file rg lists, and as many files as fd lists.
    if rg {
        let out =
            runtime.block_on(grep.call(&json!({"pattern": NEEDLE, "head_limit": 1_000_000}), &ctx));
        let mut ours: Vec<&str> = out.content.lines().collect();
        let theirs = run_text(&tree, "rg", &["--hidden", "-l", NEEDLE, "."]);
        let mut theirs: Vec<&str> = theirs.lines().map(|l| l.trim_start_matches("./")).collect();
        ours.sort_unstable();
        theirs.sort_unstable();
        assert_eq!(ours, theirs, "grep and rg disagree");
        println!("\ngrep and rg list the same {} files", ours.len());
    }
    if let Some(fd) = fd {
        let out = runtime.block_on(glob.call(&json!({"pattern": "**/*.rs"}), &ctx));
        let listed = out.content.lines().filter(|l| !l.starts_with('…')).count();
        let more: usize = out
            .content
            .lines()
            .last()
            .and_then(|l| l.strip_prefix("… and "))
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
        let theirs = run_text(&tree, fd, &["--hidden", "-t", "f", "-e", "rs", "."])
            .lines()
            .count();
        assert_eq!(listed + more, theirs, "glob and fd disagree");
        println!("glob and {fd} find the same number of files ({theirs})");
    }
    if !rg {
        println!(
            "(ripgrep is not installed: `apt-get install -y ripgrep` to compare grep with it)"
        );
    }
}

/// Times `ours` and `reference` (median of RUNS after a warm-up) and prints a row.
fn compare(case: &str, ours: impl Fn() -> usize, reference: Option<Box<dyn Fn() -> usize>>) {
    let eve = median(&ours);
    match reference {
        Some(reference) => {
            let other = median(&*reference);
            println!(
                "{case:<66} {:>8.1}ms {:>8.1}ms {:>6.2}x",
                ms(eve),
                ms(other),
                eve.as_secs_f64() / other.as_secs_f64()
            );
        }
        None => println!("{case:<66} {:>8.1}ms {:>10} {:>7}", ms(eve), "-", "-"),
    }
}

fn median(run: &dyn Fn() -> usize) -> Duration {
    std::hint::black_box(run()); // warm-up
    let mut times: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            std::hint::black_box(run());
            start.elapsed()
        })
        .collect();
    times.sort_unstable();
    times[RUNS / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn tool_exists(name: &str) -> bool {
    Command::new(name)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs a program in `dir`, reading all its output through a pipe (ripgrep would stop
/// at the first match if its output were /dev/null).
fn external(dir: &Path, program: &str, args: &[&str]) -> Box<dyn Fn() -> usize> {
    let dir = dir.to_path_buf();
    let program = program.to_string();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    Box::new(move || {
        let out = Command::new(&program)
            .args(&args)
            .current_dir(&dir)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .unwrap();
        out.stdout.len()
    })
}

fn run_text(dir: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap()
}

/// Makes the tree unless a complete one is there; returns its file count and size.
fn ensure_tree(base: &Path, tree: &Path) -> (usize, u64) {
    let marker = base.join("complete");
    if let Ok(text) = std::fs::read_to_string(&marker)
        && let Some((files, bytes)) = text.trim().split_once(' ')
        && let (Ok(files), Ok(bytes)) = (files.parse(), bytes.parse())
    {
        return (files, bytes);
    }
    let _ = std::fs::remove_dir_all(base);
    println!("generating the tree (once)…");
    let start = Instant::now();
    let mut rng = Lcg(0x5eed);
    let mut bytes = 0u64;
    let mut count = 0usize;
    std::fs::create_dir_all(tree).unwrap();
    std::fs::write(tree.join(".ignore"), "build/\n").unwrap();
    let per_leaf = FILES / (TOP * MIDDLE);
    for top in 0..TOP {
        for middle in 0..MIDDLE {
            let dir = tree.join(format!("pkg{top:02}/mod{middle:02}"));
            std::fs::create_dir_all(&dir).unwrap();
            for n in 0..per_leaf {
                let ext = [
                    "rs", "rs", "rs", "py", "py", "ts", "ts", "md", "txt", "json",
                ][rng.below(10)];
                let needle = rng.below(100) == 0;
                let content = source(&mut rng, needle);
                bytes += content.len() as u64;
                count += 1;
                std::fs::write(dir.join(format!("file_{n:03}.{ext}")), content).unwrap();
            }
            if middle == 0 {
                let mut blob = source(&mut rng, true).into_bytes();
                blob[100] = 0;
                std::fs::write(dir.join("blob.bin"), &blob).unwrap();
                bytes += blob.len() as u64;
                count += 1;
            }
        }
    }
    // Ignored: never searched or listed by any of the tools.
    for n in 0..2000 {
        let dir = tree.join(format!("build/out{:02}", n / 100));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("gen_{n}.rs")), source(&mut rng, true)).unwrap();
    }
    std::fs::write(&marker, format!("{count} {bytes}")).unwrap();
    println!("generated in {:.1}s", start.elapsed().as_secs_f64());
    (count, bytes)
}

/// About 8 KB (2 to 14 KB) of source-like text; with the needle on a few lines if `needle`.
fn source(rng: &mut Lcg, needle: bool) -> String {
    const WORDS: &[&str] = &[
        "let", "mut", "self", "value", "result", "match", "Some", "None", "return", "config",
        "path", "buffer", "index", "count", "error", "Ok", "Err", "string", "parse", "into",
        "iter", "map", "collect", "vec", "push", "len", "state", "context", "request", "reply",
    ];
    let target = 2048 + rng.below(12 * 1024);
    let mut text = String::with_capacity(target + 128);
    let mut line = 0;
    while text.len() < target {
        line += 1;
        if line % 40 == 1 {
            let name = WORDS[rng.below(WORDS.len())];
            text.push_str(&format!(
                "fn {name}_handler(input: &str) -> Result<(), Error> {{\n"
            ));
            continue;
        }
        if needle && line % 97 == 0 {
            text.push_str(&format!("    // {NEEDLE}: found it on line {line}\n"));
            continue;
        }
        text.push_str("    ");
        for _ in 0..(3 + rng.below(10)) {
            text.push_str(WORDS[rng.below(WORDS.len())]);
            text.push(' ');
        }
        text.push_str(";\n");
    }
    if needle && line < 97 {
        text.push_str(&format!("// {NEEDLE}\n"));
    }
    text
}

/// A small deterministic generator, so every run makes the same tree.
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) % n as u64) as usize
    }
}
