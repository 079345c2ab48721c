#!/usr/bin/env bash
# ThreadSanitizer over the code that shares memory between threads, any report failing the run (docs/testing.md):
#   --quick (the test command's pass): the threads executor (mailboxes, barriers, shared vectors), every algorithm of
#     the catalog learning on threads (the Hogwild ones' relaxed atomics, the parameter servers, Dogwild's in-process
#     datagrams, GeePS's push stream), STRADS's rounds, and the OpenMP shared-memory methods with Archer. Its builds
#     hold only the lean tests (no SimGrid, MPI or dsgd program: tests/CMakeLists.txt DSGD_TEST_SCOPE).
#   (no option, `scripts/dsgd.sh test --full`): the same, plus the distributed GEMM's rolling and GeePS's swaps (a copy
#     stream per step beside the push stream), whose tests need the whole build.
# The gcc build goes to build-tsan/ (CUDA off); the OpenMP methods' tests are built with clang++-14, libomp and
# Archer into build-tsan-omp/.
#   scripts/tsan.sh [--quick]
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
quick=0
[[ "${1:-}" == "--quick" ]] && quick=1
scope=all
((quick)) && scope=lean
# -O1 with line tables (CMakeLists.txt adds -g1 to sanitizer builds): TSan's recommended level, fast to compile.
configure=(-G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" -DDSGD_WITH_CUDA=OFF
  -DDSGD_SANITIZE=thread "-DDSGD_TEST_SCOPE=$scope")
build=${DSGD_TSAN_BUILD_DIR:-"$repo/build-tsan"}
targets=(measure_threads_executor_test algorithms_threads_catalog_test algorithms_strads_lasso_test)
((quick)) || targets+=(algorithms_dmath_gemm_test algorithms_geeps_test)
cmake -S "$repo" -B "$build" "${configure[@]}" >/dev/null
cmake --build "$build" --target "${targets[@]}"
# One OpenMP thread per rank (the runner's default) keeps libgomp out of the picture; scripts/tsan.supp silences
# only the uninstrumented libraries (oneDNN, libgomp, OpenBLAS).
export OMP_NUM_THREADS=1
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$repo/scripts/tsan.supp"
"$build/tests/measure/measure_threads_executor_test"
# Every algorithm of the catalog trains on threads (the Hogwild ones' shared vectors are the point): through two
# rounds at the smallest size (--quick), or also the 40 iterations in which each learns.
catalog_filter='*'
((quick)) && catalog_filter='ThreadsCatalog.EveryAlgorithmExchangesOverTwoRounds'
"$build/tests/algorithms/algorithms_threads_catalog_test" --gtest_filter="$catalog_filter"
"$build/tests/algorithms/algorithms_strads_lasso_test"
if ((!quick)); then
  # The distributed GEMM's rolled panels: asynchronous sends and receives into buffers reused stage after stage.
  "$build/tests/algorithms/algorithms_dmath_gemm_test" --gtest_filter='*Product*:*Transposed*:*HalfPrecision*:*Bench*'
  # GeePS's swaps: a copy stream per step beside the push stream (threads)
  "$build/tests/algorithms/algorithms_geeps_test" --gtest_filter='Geeps.*'
fi

# The OpenMP methods of algorithms/shared_memory/ (seed 003: Hogwild, HogBatch, ...). libgomp is not instrumented,
# so TSan cannot see its barriers and would report every barrier-separated write and read; these tests are built
# with clang++-14 and LLVM's libomp instead, whose OMPT interface lets Archer tell TSan about barriers and
# worksharing. No suppressions: every access dsgd's code makes to a model another thread may touch is a relaxed
# atomic. --as-needed drops what the tests never call (oneDNN, OpenBLAS) from their direct dependencies, so libomp,
# not libgomp, answers their omp_* calls.
omp_build=${DSGD_TSAN_OMP_BUILD_DIR:-"$repo/build-tsan-omp"}
cmake -S "$repo" -B "$omp_build" "${configure[@]}" -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed >/dev/null
cmake --build "$omp_build" --target algorithms_shared_memory_methods_test algorithms_shared_memory_staleness_test
(
  unset OMP_NUM_THREADS  # the tests ask for their teams explicitly
  export OMP_TOOL_LIBRARIES=/usr/lib/llvm-14/lib/libarcher.so
  export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ignore_noninstrumented_modules=1"
  "$omp_build/tests/algorithms/algorithms_shared_memory_methods_test"
  "$omp_build/tests/algorithms/algorithms_shared_memory_staleness_test"
)
echo "tsan: no data races reported"
