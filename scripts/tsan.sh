#!/usr/bin/env bash
# ThreadSanitizer over the code that shares memory between threads: the threads executor (mailboxes, shared
# vectors) and every algorithm on it, the Hogwild ones included (relaxed atomics, no plain racy writes), and the
# distributed GEMM's rolling and STRADS's rounds. Builds the four test programs with -fsanitize=thread into
# build-tsan/ (CUDA off), and the OpenMP shared-memory methods' tests with clang++-14, libomp and Archer into
# build-tsan-omp/, and runs them; any report fails the run.
#   scripts/tsan.sh            (scripts/dsgd.sh test runs it after the suite)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DSGD_TSAN_BUILD_DIR:-"$repo/build-tsan"}
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSGD_WITH_CUDA=OFF \
  -DDSGD_SANITIZE=thread >/dev/null
cmake --build "$build" --target algorithms_algorithms_test measure_threads_executor_test algorithms_dmath_gemm_test \
  algorithms_strads_lasso_test algorithms_geeps_test
# One OpenMP thread per rank (the runner's default) keeps libgomp out of the picture; scripts/tsan.supp silences
# only the uninstrumented libraries (oneDNN, libgomp, OpenBLAS).
export OMP_NUM_THREADS=1
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$repo/scripts/tsan.supp"
"$build/tests/measure/measure_threads_executor_test"
# Every algorithm of the catalog trains on threads (the Hogwild ones' shared vectors are the point).
"$build/tests/algorithms/algorithms_algorithms_test" --gtest_filter='Algorithms.EveryAlgorithmLearnsOnThreads'
# The distributed GEMM's rolled panels: asynchronous sends and receives into buffers reused stage after stage.
"$build/tests/algorithms/algorithms_dmath_gemm_test" --gtest_filter='*Product*:*Transposed*:*HalfPrecision*:*Bench*'
"$build/tests/algorithms/algorithms_strads_lasso_test"
# GeePS's swaps: a copy stream per step beside the push stream (threads)
"$build/tests/algorithms/algorithms_geeps_test" --gtest_filter='Geeps.*'

# The OpenMP methods of algorithms/shared_memory/ (seed 003: Hogwild, HogBatch, ...). libgomp is not instrumented,
# so TSan cannot see its barriers and would report every barrier-separated write and read; these tests are built
# with clang++-14 and LLVM's libomp instead, whose OMPT interface lets Archer tell TSan about barriers and
# worksharing. No suppressions: every access dsgd's code makes to a model another thread may touch is a relaxed
# atomic. --as-needed drops what the tests never call (oneDNN, OpenBLAS) from their direct dependencies, so libomp,
# not libgomp, answers their omp_* calls.
omp_build=${DSGD_TSAN_OMP_BUILD_DIR:-"$repo/build-tsan-omp"}
cmake -S "$repo" -B "$omp_build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSGD_WITH_CUDA=OFF \
  -DDSGD_SANITIZE=thread -DCMAKE_CXX_COMPILER=clang++-14 -DCMAKE_EXE_LINKER_FLAGS=-Wl,--as-needed >/dev/null
cmake --build "$omp_build" --target algorithms_shared_memory_methods_test algorithms_shared_memory_staleness_test
(
  unset OMP_NUM_THREADS  # the tests ask for their teams explicitly
  export OMP_TOOL_LIBRARIES=/usr/lib/llvm-14/lib/libarcher.so
  export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 ignore_noninstrumented_modules=1"
  "$omp_build/tests/algorithms/algorithms_shared_memory_methods_test"
  "$omp_build/tests/algorithms/algorithms_shared_memory_staleness_test"
)
echo "tsan: no data races reported"
