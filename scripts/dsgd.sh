#!/usr/bin/env bash
# The README's entry point: sets up (packages + build) and then runs one of
#   scripts/dsgd.sh reproduce [ARGS...]   the main job: `dsgd reproduce` on the embedded manifest -> report/
#   scripts/dsgd.sh test [CTEST ARGS...]  the whole test suite through CTest, then ThreadSanitizer, AddressSanitizer +
#                                         UBSan and 10 s of each fuzz target (docs/testing.md)
#   scripts/dsgd.sh run ARGS...           any other dsgd command, e.g. `scripts/dsgd.sh run models`
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DSGD_BUILD_DIR:-"$repo/build"}
command=${1:-}
[[ -n "$command" ]] || { sed -n '2,6p' "$0" >&2; exit 2; }
shift

"$repo/scripts/setup.sh" "$build"

case "$command" in
  reproduce)
    cd "$repo" && exec "$build/app/dsgd" reproduce "$@" ;;
  test)
    jobs=$(nproc 2>/dev/null || echo 2)
    ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900 "$@"
    # With CTest arguments (a selection) the sanitizer and fuzz passes are left out.
    if [[ $# -eq 0 ]]; then
      "$repo/scripts/tsan.sh"
      "$repo/scripts/asan.sh"
      "$repo/scripts/fuzz.sh" 10
    fi ;;
  run)
    exec "$build/app/dsgd" "$@" ;;
  *)
    echo "scripts/dsgd.sh: unknown command '$command'; valid values are: reproduce, test, run" >&2; exit 2 ;;
esac
