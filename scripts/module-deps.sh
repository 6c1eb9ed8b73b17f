#!/usr/bin/env bash
# Lists, for each top-level module of src/, the other top-level modules its code uses
# (tests and comments left out; a path is followed through re-exports to the module that
# defines the item). docs/architecture.md shows its output; a cycle shows up as two
# modules naming each other. The file-level graph and its cycles: scripts/file-cycles.py.
set -euo pipefail
exec python3 "$(dirname "$0")/file-cycles.py" --modules
