#!/usr/bin/env bash
# Host time per row of the GPU imager's staging (the copies into pinned memory that are
# all the host does per channel since the points are prepared on the device), for the
# realistic set's channel (88,704 rows), 1 M and 8 M rows. Needs no GPU.
#   bench/run-staging-bench.sh [rows ...]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bench/bench_staging ]] || scripts/build.sh
build/bench/bench_staging "$@"
