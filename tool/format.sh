#!/usr/bin/env bash
# The C++ code follows .clang-format (100 columns). `tool/format.sh` reformats every tracked
# C++ file in place; `tool/format.sh --check` changes nothing and fails (exit 1), listing the
# files that differ, when any does (CI runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cpp' '*.h')
if [ "${1:-}" = --check ]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if [ ${#bad[@]} -gt 0 ]; then
    echo "format: ${#bad[@]} file(s) differ from .clang-format (run tool/format.sh):" >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format: ${#files[@]} files follow .clang-format" >&2
  exit 0
fi
clang-format -i "${files[@]}"
