#!/usr/bin/env bash
# Peak memory per rank of a large job held to a 2 GB budget: a 2048^2 image of 7.5"
# (a 3072^2 grid) over 128 channels, simulated from data/stations64.tm and
# bench/realistic.sky.txt with 4 dumps (8,064 rows a channel), imaged dirty by 2 ranks
# of one thread with parallel.memory_gb 2, through the Faraday stage at its default
# depths with no FDF cubes written. Needs ~20 GB of disk for the image cubes, which it
# deletes. Run after scripts/build.sh.
#   bench/run-memory-bench.sh [ranks]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpirun-flags.sh
ranks=${1:-2}
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
work=$(mktemp -d /tmp/spip-memory-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1
build/src/app/spip-simulate --sky bench/realistic.sky.txt --telescope data/stations64.tm --out "$work/big.ms" \
  --channels 128 --times 4 --dump 400 --noise 0.3 > "$work/simulate.log" 2>&1
mpirun "${SPIP_MPIRUN_FLAGS[@]}" -np "$ranks" /usr/bin/time -f "rss_kb %M" build/src/app/spip \
  --input.ms "$work/big.ms" --image.size 2048 --image.scale 7.5 --clean.niter 0 --parallel.threads 1 \
  --parallel.memory_gb 2 --faraday.cubes none --output.dir "$work/out" > "$work/run.log" 2>&1
grep -E 'memory plan|Faraday slab|done in' "$work/run.log" | sed 's/^/  /'
grep -oE 'rss_kb [0-9]+' "$work/run.log" | awk '{printf "peak RSS of a rank: %.2f GB\n", $2 / 1048576}'
