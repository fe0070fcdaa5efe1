#!/usr/bin/env bash
# GPU backend rates on the sample MS (scripts/build.sh first): gridding, FFT and RM
# synthesis rates beside the CPU backend, cuFFT and cuBLAS references from the same
# run, and the share of uploads hidden by the second stream. Prints that no GPU is
# usable where none is, and exits 0.
#   bench/run-gpu-bench.sh [channels] [image_size] [scale_arcsec]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bench/bench_gpu ]] || scripts/build.sh
build/bench/bench_gpu data/oskar_small.ms "${1:-16}" "${2:-512}" "${3:-20}"
