#!/usr/bin/env python3
"""Lists the functions of src/ (outside #[cfg(test)] code) longer than their limit,
longest first, and exits 1 when there is one.

A function's length is its lines from `fn` to its closing brace, as `wc -l` counts
them. The limits (docs/architecture.md, "Keeping it this way"): 100 lines
anywhere, 80 in src/harness/ (the step machine is read one step at a time), 60 in
src/commands/ (a command parses its arguments, calls a door and prints).

    scripts/fn-lengths.py            # the functions over their limit
    scripts/fn-lengths.py --top 20   # the 20 longest, whatever their limit
"""

import argparse
import re
import sys

from rustsrc import SRC, library_files, matching_brace

LIMITS = [("harness/", 80), ("commands/", 60)]
DEFAULT_LIMIT = 100

FN = re.compile(r"\bfn\s+(\w+)")


def limit_for(rel):
    for prefix, limit in LIMITS:
        if rel.startswith(prefix):
            return limit
    return DEFAULT_LIMIT


def functions():
    for path, _raw, code in library_files():
        rel = path.relative_to(SRC).as_posix()
        for m in FN.finditer(code):
            # The body is the first `{` after the signature outside parentheses,
            # brackets and angle brackets; a `;` first means a declaration only.
            depth, j = 0, m.end()
            while j < len(code):
                c = code[j]
                if c in "([":
                    depth += 1
                elif c in ")]":
                    depth -= 1
                elif depth == 0 and c == ";":
                    j = -1
                    break
                elif depth == 0 and c == "{":
                    break
                j += 1
            if j < 0 or j >= len(code):
                continue
            end = matching_brace(code, j)
            first = code.count("\n", 0, m.start()) + 1
            last = code.count("\n", 0, end) + 1
            yield rel, first, m.group(1), last - first + 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, help="list the N longest functions instead")
    args = parser.parse_args()
    found = sorted(functions(), key=lambda f: -f[3])
    if args.top:
        for rel, line, name, length in found[: args.top]:
            print(f"{length:4}  src/{rel}:{line}  {name}  (limit {limit_for(rel)})")
        return 0
    over = [f for f in found if f[3] > limit_for(f[0])]
    for rel, line, name, length in over:
        print(f"src/{rel}:{line}: `{name}` is {length} lines (limit {limit_for(rel)})")
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
