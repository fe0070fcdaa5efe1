#!/usr/bin/env bash
# From a clean clone: install, build (CPU and CUDA backends), and run the whole test
# suite: unit tests and MPI tests under mpiexec -n 2..4. GPU tests skip without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests
scripts/build.sh
cd build
ctest --output-on-failure -j "$(nproc)" "$@"
