#!/usr/bin/env bash
# Lists, for each top-level module of src/, the other top-level modules its code uses
# (`crate::…` paths and `use crate::{…}` groups), leaving out #[cfg(test)] modules.
# docs/architecture.md shows its output; a cycle shows up as two modules naming each other.
set -euo pipefail
cd "$(dirname "$0")/../src"
for entry in *; do
  module=${entry%.rs}
  [ "$module" = main ] || [ "$module" = lib ] && continue
  files=$( [ -d "$entry" ] && find "$entry" -name '*.rs' || echo "$entry" )
  uses=$(for f in $files; do
      # Drop everything from the first #[cfg(test)] on: unit tests may use anything.
      awk '/^#\[cfg\(test\)\]/{exit} {print}' "$f"
    done | tr '\n' ' ' | { grep -oE 'crate::(\{[^}]*|[a-z_]+)' || true; } \
      | sed -E 's/crate::\{?//' | tr ',' '\n' | sed -E 's/^[[:space:]]*//; s/::.*//' \
      | { grep -E '^[a-z_]+$' || true; } | { grep -vx "$module" || true; } | sort -u | tr '\n' ' ')
  printf '%-10s -> %s\n' "$module" "${uses:-(nothing)}"
done
