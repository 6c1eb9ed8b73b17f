"""A small reader of eve's Rust sources for the structure checks in scripts/.

It blanks out comments, string and character literals (keeping every newline, so
line numbers stay true), finds the `#[cfg(test)]` parts of each file, and names
each file's module path. It is not a Rust parser: it knows enough of the lexical
grammar (nested block comments, raw strings, lifetimes vs. char literals) for
brace matching and `use` paths to be right on eve's code.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src"


def blank(text):
    """`text` with comments and literals replaced by spaces (newlines kept)."""
    out = []
    i, n = 0, len(text)

    def keep_newlines(chunk):
        return "".join("\n" if c == "\n" else " " for c in chunk)

    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif text.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append(keep_newlines(text[i:j]))
            i = j
        elif (m := re.compile(r'b?r(#*)"').match(text, i)) and (
            i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        ):
            end = text.find('"' + m.group(1), m.end())
            j = n if end < 0 else end + 1 + len(m.group(1))
            out.append('"' + keep_newlines(text[i + 1 : j - 1]) + '"')
            i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append('"' + keep_newlines(text[i + 1 : j]) + '"')
            i = j + 1
        elif c == "'":
            # A char literal ('a', '\n', '\u{1F600}', '\'') or a lifetime ('a).
            m = re.compile(r"'(\\(u\{[0-9a-fA-F]+\}|x[0-9a-fA-F]{2}|.)|[^\\'])'").match(text, i)
            if m:
                out.append("' '".ljust(m.end() - i))
                i = m.end()
            else:
                out.append(c)
                i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def matching_brace(code, open_at):
    """The index of the `}` that closes the `{` at `open_at`."""
    depth = 0
    for j in range(open_at, len(code)):
        if code[j] == "{":
            depth += 1
        elif code[j] == "}":
            depth -= 1
            if depth == 0:
                return j
    return len(code) - 1


CFG_TEST = re.compile(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*([;{])")
PATH_ATTR = re.compile(r'#\[path\s*=\s*"([^"]+)"\]')


def test_spans(code):
    """(start, end) character spans of the inline `#[cfg(test)] mod … { … }` blocks."""
    spans = []
    for m in CFG_TEST.finditer(code):
        if m.group(2) == "{":
            spans.append((m.start(), matching_brace(code, m.end() - 1)))
    return spans


def test_files():
    """The files that are `#[cfg(test)]` modules of another file (`mod tests;`)."""
    found = set()
    for path in SRC.rglob("*.rs"):
        raw = path.read_text(encoding="utf-8")
        code = blank(raw)
        for m in CFG_TEST.finditer(code):
            if m.group(2) != ";":
                continue
            attr = PATH_ATTR.search(raw[m.start() : m.end()])
            base = path.parent if path.name in ("mod.rs", "lib.rs", "main.rs") else path.with_suffix("")
            if attr:
                found.add((path.parent / attr.group(1)).resolve())
            else:
                name = m.group(1)
                for candidate in (base / f"{name}.rs", base / name / "mod.rs"):
                    if candidate.exists():
                        found.add(candidate.resolve())
    # A test module's own submodules are test code too.
    for path in list(found):
        folder = path.parent if path.name == "mod.rs" else path.with_suffix("")
        if folder.is_dir():
            found.update(p.resolve() for p in folder.rglob("*.rs"))
    return found


def library_files():
    """(path, raw text, blanked text with test blocks blanked too) for each non-test file."""
    tests = test_files()
    for path in sorted(SRC.rglob("*.rs")):
        if path.resolve() in tests:
            continue
        raw = path.read_text(encoding="utf-8")
        code = blank(raw)
        for start, end in test_spans(code):
            code = code[:start] + "".join("\n" if c == "\n" else " " for c in code[start : end + 1]) + code[end + 1 :]
        yield path, raw, code


def module_path(path):
    """`src/harness/calls.rs` -> ("harness", "calls"); `src/harness/mod.rs` -> ("harness",)."""
    parts = list(path.resolve().relative_to(SRC.resolve()).with_suffix("").parts)
    if parts[-1] == "mod" or (len(parts) == 1 and parts[0] in ("lib", "main")):
        parts = parts[:-1]
    return tuple(parts)
