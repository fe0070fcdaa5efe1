#!/usr/bin/env bash
# The Faraday stage in bounded memory: the demo job on the sample with 2 ranks at
# faraday.phi_max = 200 and the default sampling (10 per RMSF FWHM, ~3,100 depths),
# per-rank peak RSS, the Faraday stage's time and row groups, and the bytes written;
# once with all six FDF cubes and once with none (faraday.cubes). Then the arithmetic of
# one row group alone: RM synthesis against a bare cblas_cgemm of the same shape, and
# RM-CLEAN with the peak fit in pixels per second. Run after scripts/build.sh.
#   bench/run-faraday-bench.sh [ranks]
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-2}
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
work=$(mktemp -d /tmp/spip-faraday-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
source scripts/mpirun-flags.sh
mpirun=(mpirun "${SPIP_MPIRUN_FLAGS[@]}" -np "$ranks")
export OPENBLAS_NUM_THREADS=1

printf '%-10s %10s %10s %12s %12s %10s %8s\n' cubes "wall [s]" "Faraday [s]" "max RSS [MB]" "written [GB]" depths groups
for cubes in all none; do
  out=$work/$cubes
  "${mpirun[@]}" /usr/bin/time -f "rss_kb %M" build/src/app/spip --config configs/demo.cfg --output.dir "$out" \
    --faraday.phi_max 200 --faraday.dphi 0 --faraday.cubes "$cubes" --parallel.threads 1 > "$work/$cubes.log" 2>&1
  wall=$(grep -oE 'done in [0-9.]+ s' "$work/$cubes.log" | awk '{print $3}')
  faraday=$(grep -oE 'RM-CLEAN in [0-9.]+ s' "$work/$cubes.log" | awk '{print $3}')
  rss=$(grep -oE 'rss_kb [0-9]+' "$work/$cubes.log" | awk '{if ($2 > m) m = $2} END {printf "%.0f", m / 1024}')
  depths=$(grep -oE '[0-9]+ depths of' "$work/$cubes.log" | awk '{print $1}')
  groups=$(grep -oE 'in [0-9]+ group' "$work/$cubes.log" | head -1 | awk '{print $2}')
  written=$(du -sb "$out" | awk '{printf "%.2f", $1 / 1e9}')
  printf '%-10s %10s %10s %12s %12s %10s %8s\n' "$cubes" "$wall" "$faraday" "$rss" "$written" "$depths" "$groups"
  grep -E 'memory plan' "$work/$cubes.log" | head -1 | sed 's/^/  /'
  rm -rf "$out"
done
echo
build/bench/bench_faraday 40 3129 4096 5
