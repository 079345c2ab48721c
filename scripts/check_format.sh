#!/usr/bin/env bash
# Fails (exit 1) when a C++ or CUDA source of the repository differs from what clang-format makes of it with the
# repository's .clang-format; prints the files. Usage: scripts/check_format.sh [REPO]   (default: this repository)
# To fix: clang-format -i FILE...   (the CTest test scripts/check_format runs this script).
set -euo pipefail
repo=${1:-"$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"}
cd "$repo"
formatter=$(command -v clang-format || command -v clang-format-14 || true)
[[ -n "$formatter" ]] || { echo "check_format: clang-format not found (scripts/setup.sh installs it)" >&2; exit 2; }
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  # Tracked files and new ones not yet added (but not ignored ones: build trees), so a file is checked before its
  # first commit too.
  mapfile -t files < <(git ls-files --cached --others --exclude-standard -- '*.cpp' '*.hpp' '*.h' '*.cu')
else
  mapfile -t files < <(find . -path ./build -prune -o \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' \) -print)
fi
unformatted=()
for file in "${files[@]}"; do
  [[ -f "$file" ]] || continue
  if ! "$formatter" --style=file "$file" | cmp -s - "$file"; then unformatted+=("$file"); fi
done
if ((${#unformatted[@]})); then
  echo "check_format: ${#unformatted[@]} file(s) differ from clang-format (run clang-format -i on them):" >&2
  printf '  %s\n' "${unformatted[@]}" >&2
  exit 1
fi
echo "check_format: ${#files[@]} files formatted"
