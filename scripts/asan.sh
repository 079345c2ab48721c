#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer over the whole test suite: every library, program and test built
# with -fsanitize=address,undefined (CUDA off: nvcc code is not instrumented) into build-asan/, then CTest. Any
# report -- a heap overflow, a use after free, a leak, an overflowing signed add, a misaligned load -- fails the run
# (UBSan does not recover: CMakeLists.txt). The programs the tests start (dsgd, dsgd-mpi under mpirun) are the
# instrumented ones of this build.
#   scripts/asan.sh [CTEST ARGS...]          (scripts/dsgd.sh test runs it after the suite)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DSGD_ASAN_BUILD_DIR:-"$repo/build-asan"}
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSGD_WITH_CUDA=OFF \
  -DDSGD_SANITIZE=address,undefined >/dev/null
cmake --build "$build"
# Leak checking stays on; OpenMPI's and SimGrid's own allocations that live to exit are theirs, not dsgd's
# (scripts/asan.supp). new_delete_type_mismatch and container overflow need every library instrumented.
export ASAN_OPTIONS="detect_leaks=1 abort_on_error=0 detect_container_overflow=0 suppressions=$repo/scripts/asan.supp"
export LSAN_OPTIONS="suppressions=$repo/scripts/lsan.supp print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1"
export OMP_NUM_THREADS=1
jobs=$(nproc 2>/dev/null || echo 2)
ctest --test-dir "$build" --output-on-failure -j "$jobs" --timeout 1800 "$@"
echo "asan: no AddressSanitizer or UndefinedBehaviorSanitizer report"
