#!/usr/bin/env bash
# The I/O floor: MsReader channel-block throughput on a ~1 GB simulated MS against the
# raw read rate of the same table files (cat to /dev/null after dropping the page
# cache where the kernel allows it). The MS is made by spip-simulate into bench/data/.
set -euo pipefail
cd "$(dirname "$0")/.."
ms=bench/data/read_bench.ms
channels=${CHANNELS:-1024}
times=${TIMES:-120}
if [[ ! -d $ms ]]; then
  mkdir -p bench/data
  build/src/app/spip-simulate --sky data/oskar_small.sky.txt --telescope data/oskar_small.tm \
    --channels "$channels" --freq-inc 48828.125 --times "$times" --dump 120 --out "$ms" 2>/dev/null
fi
size_mb=$(du -sm "$ms" | cut -f1)

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null && echo cold || echo warm; }

cache=$(drop_caches)
start=$(date +%s.%N)
cat "$ms"/table.f* > /dev/null
end=$(date +%s.%N)
raw_s=$(echo "$end - $start" | bc -l)
printf 'raw read of %s table files (%s MB, %s cache): %.3f s, %.1f MB/s\n' "$ms" "$size_mb" "$cache" "$raw_s" \
  "$(echo "$size_mb / $raw_s" | bc -l)"

# No 1-channel blocks: OSKAR's layout tiles every channel of a row together, so each
# block read costs the whole file; the pipeline reads channel blocks for this reason.
cache=$(drop_caches)
echo "MsReader ($cache cache for the first block size):"
build/bench/bench_ms_read "$ms" 16 128 1024
