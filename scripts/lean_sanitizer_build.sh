# Sourced by scripts/asan.sh --quick and scripts/fuzz.sh: the one clang++-14 build both use, build-fuzz/ (or
# $DSGD_FUZZ_BUILD_DIR). Every library with AddressSanitizer, UBSan and libFuzzer's coverage hooks
# (fuzzer-no-link); the fuzz targets link libFuzzer's main, the lean tests GoogleTest's (tests/CMakeLists.txt
# DSGD_TEST_SCOPE: no SimGrid, MPI or dsgd program). -O1 with line tables: the sanitizers' recommended level.
lean_sanitizer_build=${DSGD_FUZZ_BUILD_DIR:-"$repo/build-fuzz"}
configure_lean_sanitizer_build() {
  cmake -S "$repo" -B "$lean_sanitizer_build" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O1 -DNDEBUG" \
    -DDSGD_WITH_CUDA=OFF -DDSGD_SANITIZE=address,undefined -DDSGD_FUZZ=ON -DDSGD_TEST_SCOPE=lean \
    -DCMAKE_CXX_COMPILER=clang++-14 >/dev/null
}
