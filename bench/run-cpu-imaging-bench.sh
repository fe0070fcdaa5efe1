#!/usr/bin/env bash
# One channel's CPU imaging against the CPU gridding limit (issue 46): spip's dirty
# I, Q, U, V and PSF (bench_imaging: layout, dirty images, PSF) and ducc0's wgridder
# making the same five images as five ms2dirty calls (bench/gpu_baselines.py), on the
# same rows, threads and accuracy (1e-4), alternated run by run; then the ratio's median
# and range (ducc0 0.42, from PyPI). The set is the realistic one at 128 channels (bench/make-realistic-ms.sh:
# 64 stations, 88,704 rows a channel), 1024^2 of 15", channel 64. ducc0 comes from PyPI
# into a virtual environment of its own ($SPIP_BENCH_VENV, default /opt/spip/bench-venv).
# Run after scripts/build.sh.
#   bench/run-cpu-imaging-bench.sh [threads] [repeats]
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
repeats=${2:-5}
venv=${SPIP_BENCH_VENV:-/opt/spip/bench-venv}
[[ -x build/bench/bench_imaging ]] || scripts/build.sh
if ! "$venv/bin/python" -c "import ducc0, numpy" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "ducc0==0.42.*" numpy
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/spip-cpu-imaging.XXXXXX")
trap 'rm -rf "$work"' EXIT
export OMP_NUM_THREADS=$threads OPENBLAS_NUM_THREADS=1
bench/make-realistic-ms.sh "$work/realistic.ms" 128
build/bench/bench_imaging "$work/realistic.ms" 64 1024 15 1 "$work/channel.bin" > /dev/null  # FFTW's plans, the rows
ratios=()
for ((try = 1; try <= repeats; ++try)); do
  spip_out=$(build/bench/bench_imaging "$work/realistic.ms" 64 1024 15 3 -)
  # 1536: the grid spip images 1024^2 on (its default padding; bench_imaging's log names it).
  ducc_out=$("$venv/bin/python" bench/gpu_baselines.py "$work/channel.bin" 1024 15 1536 "$threads" | grep "epsilon 0.0001")
  spip_s=$(awk '/spip dirty IQUV \+ PSF/ {print $6}' <<< "$spip_out")
  ducc_s=$(awk '{print $8}' <<< "$ducc_out")
  (( try == 1 )) && echo "$spip_out" | head -6
  ratio=$(echo "$spip_s / $ducc_s" | bc -l)
  ratios+=("$ratio")
  printf 'run %d: spip %.4f s, ducc0 %.4f s (median of 3 each), ratio %.2f\n' "$try" "$spip_s" "$ducc_s" "$ratio"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{r[NR] = $1} END {
  m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
  printf "spip / ducc0, one channel dirty IQUV + PSF, median of %d: %.2f (range %.2f-%.2f)\n", NR, m, r[1], r[NR]}'
