#!/usr/bin/env bash
# libFuzzer over every reader of user files: IDX, CIFAR-10, LIBSVM, platform, manifest and results JSON, and over
# Dogwild's datagram decoder
# (tests/fuzz/, docs/testing.md "Fuzzing"). Builds the targets with clang++-14, AddressSanitizer and UBSan into
# build-fuzz/ (scripts/lean_sanitizer_build.sh: the build scripts/asan.sh --quick shares), then runs each for
# SECONDS from the seed corpora in the tree (tests/fuzz/corpus/<target>, the platform catalog, the manifests). Inputs a run discovers go to build-fuzz/corpus/, crashes to build-fuzz/artifacts/; any
# crash, sanitizer report or escaping exception fails the script.
#   scripts/fuzz.sh [SECONDS [TARGET...]]   default 600 s each, every target; the test command runs 10 s each
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$repo/scripts/lean_sanitizer_build.sh"
build=$lean_sanitizer_build
seconds=${1:-600}
[[ $# -gt 0 ]] && shift
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(idx cifar libsvm platform manifest results datagram)

configure_lean_sanitizer_build
cmake --build "$build" --target fuzz_targets

export ASAN_OPTIONS="detect_leaks=1 abort_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1 halt_on_error=1"
mkdir -p "$build/artifacts"
# fuzz_one TARGET: one target for SECONDS; its summary line on success, the tail of its log on failure.
fuzz_one() {
  local target=$1
  local seeds=("$repo/tests/fuzz/corpus/$target") options=()
  case "$target" in
    platform) seeds+=("$repo/platforms/catalog") ;;
    manifest) seeds+=("$repo/reports/manifests") ;;
  esac
  case "$target" in platform | manifest | results) options+=("-dict=$repo/tests/fuzz/json.dict") ;; esac
  local corpus="$build/corpus/$target" log="$build/$target.log"
  mkdir -p "$corpus"
  # -rss_limit_mb: a reader that allocates what the input claims (not what it holds) is a finding too.
  if ! "$build/tests/fuzz/${target}_fuzz" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
      -max_len=65536 -print_final_stats=1 -artifact_prefix="$build/artifacts/$target-" "${options[@]}" \
      "$corpus" "${seeds[@]}" >"$log" 2>&1; then
    tail -n 40 "$log"
    echo "fuzz: $target failed; the input is in $build/artifacts/ (log: $log)"
    return 1
  fi
  local runs
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  echo "fuzz: $target: ${runs:-?} inputs in ${seconds} s, no crash (corpus $(ls "$corpus" | wc -l) inputs)"
}

# Each target is one process on one core: as many at a time as there are cores, their reports in the targets' order.
jobs=$(nproc 2>/dev/null || echo 1)
pids=()
for target in "${targets[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  fuzz_one "$target" >"$build/$target.summary" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  if wait "${pids[$i]}"; then
    cat "$build/${targets[$i]}.summary"
  else
    cat "$build/${targets[$i]}.summary" >&2
    failed=1
  fi
done
((failed == 0)) || exit 1
