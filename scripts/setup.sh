#!/usr/bin/env bash
# Installs the Debian packages dsgd needs (idempotent: skips what is present), then configures and builds.
# Usage: scripts/setup.sh [BUILD_DIR]        (default: build)
# Needs root (or sudo) only when a package is missing. CUDA is never installed here: the build turns the CUDA
# back end on when nvcc is found (e.g. /usr/local/cuda/bin/nvcc) and off otherwise.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-"$repo/build"}

packages=(
  build-essential cmake ninja-build git pkg-config ca-certificates
  libsimgrid-dev                          # SimGrid executor and platforms
  libopenmpi-dev openmpi-bin              # MPI executor
  libopenblas-openmp-dev                  # BLAS, the OpenMP build (the pthread build oversubscribes inside OpenMP)
  libdnnl-dev ocl-icd-opencl-dev opencl-c-headers  # oneDNN CPU kernels (its CMake config also wants OpenCL)
  libboost-graph-dev                      # platform topologies
  nlohmann-json3-dev libcli11-dev zlib1g-dev
  libbenchmark-dev libgtest-dev libgmock-dev
  gnuplot-nox                             # report figures (PNG and PDF through cairo)
  dataset-fashion-mnist                   # real training data (IDX format)
  fortunes                                # real text: the byte-level GPT's corpus (/usr/share/games/fortunes)
  liblinear-dev                           # optimal losses for the logistic-regression study
  python3-sklearn                         # the independent Lasso solver STRADS's optimum is checked against
  clang-14 libomp-14-dev libclang-rt-14-dev  # scripts/tsan.sh: OpenMP methods under TSan with libomp + Archer
  clang-format                            # scripts/check_format.sh, run by the test suite
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${#missing[@]} Debian package(s): ${missing[*]}" >&2
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    sudo=sudo
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "setup: all Debian packages present" >&2
fi

# nvcc lives outside PATH on a plain CUDA install; let CMake find it when it is there.
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi

jobs=$(nproc 2>/dev/null || echo 2)
# -O2 without debug information: the same code as RelWithDebInfo in two thirds of the compile time (docs/testing.md
# "Where the time goes"); configure by hand with -DCMAKE_BUILD_TYPE=RelWithDebInfo to debug.
if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" >&2
fi
cmake --build "$build" -j "$jobs" >&2
