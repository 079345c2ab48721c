#!/usr/bin/env bash
# The README's entry point: sets up (packages + build) and then runs one of
#   scripts/dsgd.sh reproduce [ARGS...]     the main job: `dsgd reproduce` (a first look; --all: every experiment)
#   scripts/dsgd.sh test [--full]           the test suite through CTest, then ThreadSanitizer, AddressSanitizer +
#                                           UBSan and 10 s of each fuzz target; --full: every pass over everything
#   scripts/dsgd.sh test CTEST ARGS...      only the selected suite cases (e.g. -R core/), no other pass
#   scripts/dsgd.sh run ARGS...             any other dsgd command, e.g. `scripts/dsgd.sh run models`
# docs/testing.md says what each pass covers and where the time goes.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DSGD_BUILD_DIR:-"$repo/build"}
command=${1:-}
[[ -n "$command" ]] || { sed -n '2,8p' "$0" >&2; exit 2; }
shift

# The suite's cases that only `test --full` runs: the hierarchical-allreduce and large-batch repeats of the
# threads = MPI = SimGrid check over the whole catalog (the default keeps that check for every algorithm once).
full_only_tests='^algorithms/Algorithms\.(HierarchicalAllreduces|LargeBatchRules)'

started=$SECONDS
"$repo/scripts/setup.sh" "$build"

case "$command" in
  reproduce)
    cd "$repo" && exec "$build/app/dsgd" reproduce "$@" ;;
  test)
    full=0
    if [[ "${1:-}" == "--full" ]]; then
      full=1
      shift
    fi
    jobs=$(nproc 2>/dev/null || echo 2)
    passes="set-up and build $((SECONDS - started)) s"
    timed() {  # timed NAME COMMAND...: runs it and adds its wall time to the summary
      local name=$1 start=$SECONDS
      shift
      "$@"
      passes+=", $name $((SECONDS - start)) s"
    }
    # The default suite leaves out the catalog-wide repeats of the cross-executor checks that --full runs
    # (docs/testing.md "What the default leaves to --full").
    selection=()
    ((full)) || [[ $# -gt 0 ]] || selection=(-E "$full_only_tests")
    timed suite ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 900 "${selection[@]}" "$@"
    # With CTest arguments (a selection) the sanitizer and fuzz passes are left out.
    if [[ $# -eq 0 ]]; then
      if ((full)); then
        timed tsan "$repo/scripts/tsan.sh"
        timed asan "$repo/scripts/asan.sh"
        timed fuzz "$repo/scripts/fuzz.sh" 10
      else
        timed tsan "$repo/scripts/tsan.sh" --quick
        timed asan+fuzz "$repo/scripts/asan.sh" --quick
      fi
    fi
    echo "test: passed; $passes; $((SECONDS - started)) s in all" ;;
  run)
    exec "$build/app/dsgd" "$@" ;;
  *)
    echo "scripts/dsgd.sh: unknown command '$command'; valid values are: reproduce, test, run" >&2; exit 2 ;;
esac
