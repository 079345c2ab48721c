#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer (docs/testing.md). Any report -- a heap overflow, a use after free, a
# leak, an overflowing signed add, a misaligned load -- fails the run (UBSan does not recover: CMakeLists.txt).
#   --quick (the test command's pass): the lean tests (every test of core/, platforms/, reports/, measure/ and
#     algorithms/ that needs no SimGrid, MPI or dsgd program) in the clang++-14 build the fuzz targets share
#     (scripts/lean_sanitizer_build.sh, build-fuzz/), then 10 s of each fuzz target from that same build.
#   (no option, `scripts/dsgd.sh test --full`): the whole suite, every library, program and test built with g++ and
#     -fsanitize=address,undefined into build-asan/ (CUDA off: nvcc code is not instrumented); the programs the
#     tests start (dsgd, dsgd-mpi under mpirun) are the instrumented ones of this build.
#   scripts/asan.sh [--quick | CTEST ARGS...]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0
if [[ "${1:-}" == "--quick" ]]; then
  quick=1
  shift
fi
if ((quick)); then
  . "$repo/scripts/lean_sanitizer_build.sh"
  build=$lean_sanitizer_build
  configure_lean_sanitizer_build
  cmake --build "$build" --target dsgd_tests fuzz_targets
else
  build=${DSGD_ASAN_BUILD_DIR:-"$repo/build-asan"}
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSGD_WITH_CUDA=OFF \
    -DDSGD_SANITIZE=address,undefined >/dev/null
  cmake --build "$build"
fi
# Leak checking stays on; OpenMPI's and SimGrid's own allocations that live to exit are theirs, not dsgd's
# (scripts/asan.supp). new_delete_type_mismatch and container overflow need every library instrumented.
export ASAN_OPTIONS="detect_leaks=1 abort_on_error=0 detect_container_overflow=0 suppressions=$repo/scripts/asan.supp"
export LSAN_OPTIONS="suppressions=$repo/scripts/lsan.supp print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1"
export OMP_NUM_THREADS=1
jobs=$(nproc 2>/dev/null || echo 2)
# --quick: every algorithm runs under the sanitizers through two rounds (ThreadsCatalog.EveryAlgorithmExchanges...);
# the 40 iterations in which each learns add time, not code, and the suite runs them.
selection=()
((quick)) && selection=(-E '^algorithms/ThreadsCatalog\.EveryAlgorithmLearns$')
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 1800 "${selection[@]}" "$@"
echo "asan: no AddressSanitizer or UndefinedBehaviorSanitizer report"
if ((quick)); then
  "$repo/scripts/fuzz.sh" 10
fi
