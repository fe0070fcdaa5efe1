#!/usr/bin/env bash
# Configures and builds spip in Release under build/. The CUDA backend is compiled
# whenever nvcc is found (SPIP_CUDA=AUTO), also on machines without a GPU.
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ -z "${CUDACXX:-}" && -x /usr/local/cuda/bin/nvcc ]]; then export CUDACXX=/usr/local/cuda/bin/nvcc; fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release ${SPIP_CMAKE_ARGS:-}
cmake --build build -j "$(nproc)"
