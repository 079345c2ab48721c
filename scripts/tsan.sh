#!/usr/bin/env bash
# ThreadSanitizer over the code that shares memory between threads: the threads executor (mailboxes, shared
# vectors) and every algorithm on it, the Hogwild ones included (relaxed atomics, no plain racy writes). Builds the
# two test programs with -fsanitize=thread into build-tsan/ (CUDA off) and runs them; any report fails the run.
#   scripts/tsan.sh            (scripts/dsgd.sh test runs it after the suite)
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${DSGD_TSAN_BUILD_DIR:-"$repo/build-tsan"}
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDSGD_WITH_CUDA=OFF \
  -DDSGD_SANITIZE=thread >/dev/null
cmake --build "$build" --target algorithms_algorithms_test measure_threads_executor_test
# One OpenMP thread per rank (the runner's default) keeps libgomp out of the picture; scripts/tsan.supp silences
# only the uninstrumented libraries (oneDNN, libgomp, OpenBLAS).
export OMP_NUM_THREADS=1
export TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 suppressions=$repo/scripts/tsan.supp"
"$build/tests/measure/measure_threads_executor_test"
# Every algorithm of the catalog trains on threads (the Hogwild ones' shared vectors are the point).
"$build/tests/algorithms/algorithms_algorithms_test" --gtest_filter='Algorithms.EveryAlgorithmLearnsOnThreads'
echo "tsan: no data races reported"
