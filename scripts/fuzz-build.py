#!/usr/bin/env python3
"""Mutation fuzzing of `eve build` through the binary, as a hostile author or
workspace would write an agent directory.

Each run copies a seed agent directory, mutates one to three of its files (bit
flips, byte insertions and deletions, truncation, splices of tokens that have
broken parsers before: `${`, `{{`, a lone `\\r`, bidi and zero-width
characters, invalid UTF-8, huge numbers, deep nesting, `---` fences), and runs
`eve build --format json` on it with a time limit. A run passes when eve exits
0 (built) or 1 (diagnostics), within the limit, and prints valid JSON; a panic
(exit 101), a signal, a hang or output that is not JSON is a finding, and its
directory is kept under --out.

    scripts/fuzz-build.py --eve target/release/eve --minutes 10 --out /tmp/fuzz

The seeds are example-agent (without its MCP connection, so no server starts)
and a small agent that uses every kind of file. It needs nothing but Python 3.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TOKENS = [
    b"${", b"${HOME}", b"${EVE_NOPE:-x}", b"{{", b"}}", b"{%", b"%}", b"{{ input.x }}",
    b"\r", b"\r\n", b"\n---\n", b"---", b"\x00", b"\xff\xfe", b"\xc3", b"\xe2\x80",
    "\u202e".encode(), "\u200b".encode(), "\u2028".encode(), "\U0001f600".encode(),
    b"\x1b[31m", b"\x1b]52;c;", b"9" * 40, b"-1", b"1e999", b"nan", b"inf",
    b"[" * 200, b"{" * 200, b"[[" * 50, b"\"\"\"", b"'''", b"\\u{0}", b"\\uD800",
    b"../", b"/etc/passwd", b"~/", b"*", b"**/", b"\t", b" " * 64, b"=", b"[a.b.c]",
    b"name = \"x\"", b"[tools]", b"allow = [\"*\"]", b"[[reply]]", b"- tool_calls:",
    b"&a [*a, *a]", b"!!binary", b"<<: *a", b"? ", b"| ", b"> ",
]


def seeds(work: Path) -> list[Path]:
    out = []
    example = work / "seed-example"
    shutil.copytree(ROOT / "example-agent", example, ignore=shutil.ignore_patterns(".eve"))
    shutil.rmtree(example / "connections", ignore_errors=True)
    out.append(example)
    small = work / "seed-small"
    files = {
        "agent.toml": 'name = "fuzz"\nmodel = "scripted:script.yaml"\n'
        '[limits]\nmax_steps = 5\n[variables]\nwho = "you"\n',
        "instructions.md": "Hello {{ who }}. {% if tools %}{{ tools | length }}{% endif %}\n",
        "script.yaml": "- text: hi\n",
        "tools/greet.toml": 'description = "Greets"\ncommand = ["echo", "{{ input.name }}"]\n'
        '[input_schema]\ntype = "object"\nrequired = ["name"]\n'
        '[input_schema.properties.name]\ntype = "string"\npattern = "^[a-z]+$"\n',
        "tools/fetch.toml": 'description = "Fetches"\nurl = "http://127.0.0.1:9/{{ input.p }}"\n'
        'method = "GET"\n[input_schema]\ntype = "object"\n',
        "tools/bash.toml": "approval = \"always\"\n",
        "skills/notes/SKILL.md": "---\nname: notes\ndescription: Take notes. Use when asked.\n"
        "---\n# Notes\nSee [more](more.md).\n",
        "skills/notes/more.md": "More.\n",
        "skills/plain.md": "---\nname: plain\ndescription: A plain skill\n---\nBody\n",
        "subagents/helper/agent.toml": 'description = "Helps"\n',
        "subagents/helper/instructions.md": "Help.\n",
        "connections/web.toml": 'url = "http://127.0.0.1:9/mcp"\n[tools]\nallow = ["a"]\n',
        "evals/one.toml": 'prompt = "hi"\n[[reply]]\ntext = "hi"\n[expect]\nreply_contains = "hi"\n',
    }
    for name, text in files.items():
        path = small / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    out.append(small)
    return out


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        op = rng.randrange(7)
        pos = rng.randint(0, len(b)) if b else 0
        if op == 0 and b:
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        elif op == 1:
            b[pos:pos] = bytes([rng.randrange(256)])
        elif op == 2 and b:
            del b[pos : pos + rng.randint(1, 16)]
        elif op == 3:
            b[pos:pos] = rng.choice(TOKENS)
        elif op == 4 and b:
            del b[rng.randint(0, len(b)) :]
        elif op == 5 and b:
            # Duplicate a slice somewhere else (repeats keys, tables, fences).
            start = rng.randrange(len(b))
            piece = b[start : start + rng.randint(1, 64)]
            b[pos:pos] = piece
        else:
            b[pos:pos] = rng.choice(TOKENS) * rng.randint(2, 50)
    return bytes(b)


def one(eve: str, seed: Path, work: Path, rng: random.Random, timeout: float, env: dict):
    case = work / "case"
    if case.exists():
        shutil.rmtree(case)
    shutil.copytree(seed, case)
    files = [p for p in case.rglob("*") if p.is_file()]
    touched = []
    for path in rng.sample(files, k=min(len(files), rng.randint(1, 3))):
        path.write_bytes(mutate(path.read_bytes(), rng))
        touched.append(str(path.relative_to(case)))
    if rng.random() < 0.05:
        # A new file where eve looks for one.
        extra = case / rng.choice(["tools", "skills", "evals", "connections", "subagents/x"]) / (
            rng.choice(["a.toml", "SKILL.md", "b.md", "Ä b.toml", ".hidden.toml"])
        )
        extra.parent.mkdir(parents=True, exist_ok=True)
        extra.write_bytes(mutate(rng.choice(files).read_bytes() if files else b"", rng))
        touched.append(str(extra.relative_to(case)))
    try:
        proc = subprocess.run(
            [eve, "build", str(case), "--format", "json"],
            capture_output=True,
            timeout=timeout,
            env=env,
        )
    except subprocess.TimeoutExpired:
        return "hang", touched, case
    if proc.returncode < 0:
        return f"signal {-proc.returncode}", touched, case
    if proc.returncode not in (0, 1):
        return f"exit {proc.returncode}: {proc.stderr[-400:].decode(errors='replace')}", touched, case
    try:
        json.loads(proc.stdout or b"[]")
    except ValueError:
        return "stdout is not JSON", touched, case
    return ("built" if proc.returncode == 0 else "refused"), touched, case


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--eve", default=str(ROOT / "target/release/eve"))
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--runs", type=int, default=0, help="stop after this many runs (0: by time)")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--timeout", type=float, default=20)
    ap.add_argument("--out", default="fuzz-findings")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out = Path(args.out)
    with tempfile.TemporaryDirectory(prefix="eve-fuzz-") as tmp:
        work = Path(tmp)
        home = work / "home"
        home.mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "XDG_STATE_HOME": str(home / "state"),
            "XDG_CACHE_HOME": str(home / "cache"),
            "LANG": "C.UTF-8",
        }
        pool = seeds(work)
        deadline = time.monotonic() + args.minutes * 60
        runs, findings, kinds, outcomes = 0, 0, {}, {"built": 0, "refused": 0}
        while (args.runs and runs < args.runs) or (not args.runs and time.monotonic() < deadline):
            seed = rng.choice(pool)
            finding, touched, case = one(args.eve, seed, work, rng, args.timeout, env)
            runs += 1
            if finding in outcomes:
                outcomes[finding] += 1
            else:
                findings += 1
                kind = finding.split(":")[0]
                kinds[kind] = kinds.get(kind, 0) + 1
                keep = out / f"{kind.replace(' ', '-')}-{runs}"
                keep.parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(case, keep)
                (keep / "FINDING.txt").write_text(f"{finding}\nmutated: {touched}\n")
                print(f"run {runs}: {finding.splitlines()[0][:200]} ({touched}) -> {keep}", flush=True)
        print(json.dumps({"runs": runs, **outcomes, "findings": findings, "kinds": kinds, "seed": args.seed}))
        sys.exit(1 if findings else 0)


if __name__ == "__main__":
    main()
