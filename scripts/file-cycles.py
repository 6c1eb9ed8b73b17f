#!/usr/bin/env python3
"""Finds import cycles between the files of src/ (outside #[cfg(test)] code) and
exits 1 when there is one.

scripts/module-deps.sh shows the graph between top-level modules; this looks one
level down. File A depends on file B when A names an item that B defines:
through a `use`, or a path written inline (`crate::…`, `super::…`, `self::…`,
`child::…`). A path is followed through re-exports (`pub use`) to the file that
defines the item, so a module's façade (`mod.rs` re-exporting its children) is
not a dependency of the children on each other. A re-export itself counts only
when the file also uses the name it re-exports.

    scripts/file-cycles.py             # each cycle, with the lines that make it
    scripts/file-cycles.py --edges     # every file-to-file dependency
    scripts/file-cycles.py --modules   # the top-level modules each module uses
"""

import argparse
import re
import sys
from collections import defaultdict

from rustsrc import SRC, library_files, module_path

ITEM = re.compile(
    r"^[ \t]*(?:pub(?:\([^)]*\))?\s+)?(?:(?:const|async|unsafe|extern\s+\"\w+\")\s+)*"
    r"(?:struct|enum|fn|trait|type|const|static|union|mod)\s+(\w+)"
    r"|^[ \t]*macro_rules!\s*(\w+)",
    re.M,
)
USE = re.compile(r"\b(pub(?:\([^)]*\))?\s+)?use\s+([^;]+);")
INLINE = re.compile(r"(?<![\w:])((?:crate|super|self|[a-z_][a-z0-9_]*)(?:\s*::\s*\w+)+)")


def expand(tree):
    """`a::{b, c::{d as e}, f::*}` -> [(["a","b"], "b"), (["a","c","d"], "e"), (["a","f","*"], "*")]."""
    tree = re.sub(r"\s+", "", tree)
    out = []

    def walk(prefix, text):
        parts, depth, cur = [], 0, ""
        for ch in text:
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
                continue
            depth += ch == "{"
            depth -= ch == "}"
            cur += ch
        parts.append(cur)
        for part in filter(None, parts):
            if "{" in part:
                head, rest = part.split("{", 1)
                walk(prefix + [s for s in head.split("::") if s], rest[: rest.rfind("}")])
            else:
                alias = None
                if "as" in part and re.search(r"\bas\b", part.replace("as", " as ")):
                    m = re.match(r"(.*?)as(\w+)$", part)
                    if m and not m.group(1).endswith("::"):
                        part, alias = m.group(1), m.group(2)
                segs = prefix + [s for s in part.split("::") if s]
                if segs and segs[-1] == "self":
                    segs = segs[:-1]
                if segs:
                    out.append((segs, alias or segs[-1]))

    walk([], tree)
    return out


class Crate:
    def __init__(self):
        self.files = {}  # module path -> file record
        for path, raw, code in library_files():
            mod = module_path(path)
            depth0 = top_level(code)
            defs = {m.group(1) or m.group(2) for m in ITEM.finditer(depth0)}
            uses = []
            for m in USE.finditer(code):
                line = code.count("\n", 0, m.start()) + 1
                for segs, name in expand(m.group(2)):
                    uses.append((segs, name, bool(m.group(1)), line))
            self.files[mod] = {"path": path, "code": code, "defs": defs, "uses": uses}

    def is_module(self, mod):
        return mod in self.files

    def absolute(self, mod, segs):
        """Resolves the first segments of a path written in module `mod`."""
        segs = list(segs)
        if not segs:
            return None
        if segs[0] == "crate":
            return segs[1:]
        if segs[0] in ("self", "super"):
            cur = list(mod)
            while segs and segs[0] in ("self", "super"):
                if segs.pop(0) == "super":
                    if not cur:
                        return None
                    cur.pop()
            return cur + segs
        if self.is_module(tuple(mod) + (segs[0],)):
            return list(mod) + segs
        if not mod and self.is_module((segs[0],)):
            return segs
        return None  # an external crate, a local name or a primitive

    def defining_file(self, segs, seen=None):
        """The module whose file defines the item the absolute path `segs` names."""
        seen = seen or set()
        cur = ()
        for i, seg in enumerate(segs):
            if self.is_module(cur + (seg,)):
                cur = cur + (seg,)
                continue
            key = (cur, seg)
            if key in seen:
                return cur
            seen.add(key)
            record = self.files.get(cur)
            if record is None or seg in record["defs"]:
                return cur
            for use_segs, name, _pub, _line in record["uses"]:
                if name == seg:
                    target = self.absolute(cur, use_segs)
                    if target is not None:
                        return self.defining_file(target + segs[i + 1 :], seen)
            for use_segs, name, _pub, _line in record["uses"]:
                if name == "*":
                    target = self.absolute(cur, use_segs[:-1])
                    if target is not None:
                        found = self.defining_file(target + [seg] + segs[i + 1 :], seen)
                        if found is not None and seg in self.files.get(found, {}).get("defs", ()):
                            return found
            return cur
        return cur

    def edges(self):
        """{(from, to): [line, …]} between different files."""
        out = defaultdict(list)
        for mod, record in self.files.items():
            code = record["code"]
            for segs, name, public, line in record["uses"]:
                target = self.absolute(mod, segs)
                if target is None or name == "*":
                    continue
                if public and not re.search(
                    r"(?<![\w:])" + re.escape(name) + r"\b", USE.sub(" ", code)
                ):
                    continue  # a re-export the file itself does not use
                to = self.defining_file(target)
                if to is not None and to != mod:
                    out[(mod, to)].append(line)
            stripped = USE.sub(lambda m: "\n" * m.group(0).count("\n"), code)
            for m in INLINE.finditer(stripped):
                segs = [s.strip() for s in m.group(1).split("::")]
                target = self.absolute(mod, segs)
                if target is None:
                    continue
                to = self.defining_file(target)
                if to is not None and to != mod:
                    out[(mod, to)].append(stripped.count("\n", 0, m.start()) + 1)
        return out


def top_level(code):
    """`code` with everything inside braces blanked, so only file-level items remain."""
    out, depth = [], 0
    for ch in code:
        if ch == "}":
            depth -= 1
        out.append(ch if depth == 0 or ch == "\n" else " ")
        if ch == "{":
            depth += 1
    return "".join(out)


def cycles(nodes, edges):
    """Tarjan's strongly connected components of more than one node."""
    graph = defaultdict(set)
    for a, b in edges:
        graph[a].add(b)
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", action="store_true", help="print every dependency")
    parser.add_argument(
        "--modules", action="store_true", help="print the top-level modules each one uses"
    )
    args = parser.parse_args()
    crate = Crate()
    edges = crate.edges()

    if args.modules:
        uses = defaultdict(set)
        for mod in crate.files:
            if mod:
                uses[mod[0]]
        for a, b in edges:
            if a and b and a[0] != b[0]:
                uses[a[0]].add(b[0])
        for module in sorted(uses):
            print(f"{module:<10} -> {' '.join(sorted(uses[module])) or '(nothing)'}")
        return 0

    def name(mod):
        return crate.files[mod]["path"].relative_to(SRC.parent).as_posix()

    if args.edges:
        for (a, b), lines in sorted(edges.items()):
            print(f"{name(a)} -> {name(b)}  (line {', '.join(map(str, sorted(set(lines))[:5]))})")
        return 0
    found = cycles(crate.files, edges)
    for comp in found:
        print("cycle: " + ", ".join(name(m) for m in comp))
        members = set(comp)
        for (a, b), lines in sorted(edges.items()):
            if a in members and b in members:
                print(f"  {name(a)}:{min(lines)} uses {name(b)}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
