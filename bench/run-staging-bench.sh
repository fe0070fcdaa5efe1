#!/usr/bin/env bash
# Host time per row of a channel on its way to the GPU imager (pipeline::gather_channel
# into the staging memory, beside a bare memcpy of the same bytes), on one thread and
# on all of OMP_NUM_THREADS as a GPU rank runs it. Without arguments: the realistic
# set's channel (88,704 rows in 64-channel blocks), 1 M and 8 M rows. Needs no GPU.
#   bench/run-staging-bench.sh [rows [block_channels]]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bench/bench_staging ]] || scripts/build.sh
if [[ $# -gt 0 ]]; then
  build/bench/bench_staging "$@"
else
  build/bench/bench_staging 88704 64
  build/bench/bench_staging 1000000 8
  build/bench/bench_staging 8000000 8
fi
