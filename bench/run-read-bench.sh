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
# MB (1e6 bytes) of the main table's files, as bench_ms_read counts the bytes it touches.
size_mb=$(stat -c %s "$ms"/table.f* | awk '{ bytes += $1 } END { printf "%.0f", bytes / 1e6 }')

drop_caches() { sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null && echo cold || echo warm; }

raw_read() {  # cache label
  local start end seconds
  start=$(date +%s.%N)
  cat "$ms"/table.f* > /dev/null
  end=$(date +%s.%N)
  seconds=$(echo "$end - $start" | bc -l)
  printf 'raw read of the table files (%s MB, %s cache): %.3f s, %.1f MB/s\n' "$size_mb" "$1" "$seconds" \
    "$(echo "$size_mb / $seconds" | bc -l)"
}
raw_read "$(drop_caches)"
raw_read warm

# Each block size from a cold cache (where the kernel lets the page cache be dropped),
# then warm. "files MB/s" counts the bytes of the table files each block touches: in
# this layout a tile holds every channel of its rows, so every block touches them all.
build/bench/bench_ms_read "$ms" 0
printf '%-6s %-8s %10s %12s %11s %12s %10s\n' cache "block" "time [s]" "vis/s" "DATA MB/s" "files MB/s" "RSS [MiB]"
for block in 16 128 1024; do
  cache=$(drop_caches)
  printf '%-6s ' "$cache"; build/bench/bench_ms_read "$ms" "$block"
  printf '%-6s ' warm; build/bench/bench_ms_read "$ms" "$block"
done
