#!/usr/bin/env bash
# RM-Tools on a merged frequency axis with a gap (issue 29): the sample's first 16
# channels as 8 sub-band MSs of 2 channels with sub-band 5 missing, as LOFAR delivers
# them, imaged by spip into cubes whose gap is two NaN planes on the regular FREQ axis.
# bench/run-rmtools-bench.sh then runs rmtools_freqfile (the channel frequencies from
# the Q cube's WCS), rmsynth3d, rmclean3d and rmtools_peakfitcube on spip's Q and U
# cubes, and compares their FDF cubes and peak maps with spip's. Run after scripts/build.sh.
#   bench/run-band-rmtools.sh [ranks]
set -euo pipefail
cd "$(dirname "$0")/.."
parts=$(mktemp -d /tmp/spip-band-rmtools.XXXXXX)
trap 'rm -rf "$parts"' EXIT
args=""
for sb in 7 0 3 1 6 2 4; do
  ms=$parts/sb$sb.ms
  build/src/app/spip-simulate --split data/oskar_small.ms --out "$ms" --windows "$((2 * sb))-$((2 * sb + 1))" > /dev/null
  args+=" --input.ms $ms"
done
echo "== 7 of 8 sub-band MSs of the sample's first 16 channels (channels 10 and 11 missing)"
RMTOOLS_BENCH_SPIP_ARGS="$args" bench/run-rmtools-bench.sh "${1:-2}"
