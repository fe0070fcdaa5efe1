#!/usr/bin/env bash
# GPU backend rates (scripts/build.sh first): end-to-end imaging, the per-stage table of
# a channel (preparation, gridding, FFTs, screens; upload, weighting, host waits), the
# gridding kernel's rate and share of the FP32 peak, RM synthesis beside cuBLAS, and
# RM-CLEAN, with the CPU backend from the same run; and, where they import, ducc0's
# wgridder on every core and cuFINUFFT's spreading on the same points
# (bench/gpu_baselines.py; bench/device-pack.sh carries both to a lent GPU). Prints that no
# GPU is usable where none is, and exits 0.
#   bench/run-gpu-bench.sh [channels] [image_size] [scale_arcsec]   the sample MS
#   bench/run-gpu-bench.sh realistic   the realistic set (bench/make-realistic-ms.sh):
#       the rates on its 64 channels at 1024^2 of 15" at accuracy 1e-4 and on 8 of them
#       at 1e-5, then the whole job (dirty images and the Faraday stage, one rank) on
#       the GPU and on every CPU core
#   bench/run-gpu-bench.sh dense   the dense set: 2 channels of 4.03e6 rows, 1024^2 of
#       15", at accuracy 1e-4 and 1e-5
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bench/bench_gpu && -x build/src/app/spip ]] || scripts/build.sh
if [[ ${1:-} != realistic && ${1:-} != dense ]]; then
  build/bench/bench_gpu data/oskar_small.ms "${1:-16}" "${2:-512}" "${3:-20}"
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/spip-gpu-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
baselines() {  # ducc0 and cuFINUFFT on the channel bench_gpu wrote, onto the grid it used
  local grid
  grid=$(sed -n 's/.* on a \([0-9]*\)^2 grid.*/\1/p' "$work/rates.txt" | head -1)
  python3 bench/gpu_baselines.py "$work/channel.bin" 1024 15 "$grid" || echo "baselines failed (above)"
}
if [[ $1 == dense ]]; then
  bench/make-realistic-ms.sh "$work/dense.ms" 2 2000
  build/bench/bench_gpu "$work/dense.ms" 2 1024 15 "$work/channel.bin" 1e-4 | tee "$work/rates.txt"
  grep -q "no usable GPU" "$work/rates.txt" && exit 0
  build/bench/bench_gpu "$work/dense.ms" 2 1024 15 - 1e-5
  baselines
  exit 0
fi
bench/make-realistic-ms.sh "$work/realistic.ms"
build/bench/bench_gpu "$work/realistic.ms" 64 1024 15 "$work/channel.bin" | tee "$work/rates.txt"
grep -q "no usable GPU" "$work/rates.txt" && exit 0
build/bench/bench_gpu "$work/realistic.ms" 8 1024 15 - 1e-5
baselines
common=(--input.ms "$work/realistic.ms" --image.size 1024 --image.scale 15 --image.weighting briggs
        --image.robust 0 --faraday.cubes none --parallel.threads "$(nproc)")
for device in gpu cpu; do
  start=$(date +%s.%N)
  if build/src/app/spip "${common[@]}" --parallel.device "$device" --output.dir "$work/$device" > "$work/$device.log" 2>&1; then
    echo "whole job on the $device: $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s;" \
         "$(grep -o 'Faraday moments, RM synthesis and RM-CLEAN in [0-9.]* s' "$work/$device.log")"
    # Where the job's time went, from spip's own timing lines.
    grep -E 'FFT plans|waited .* for reads|restored .* channels|Faraday slab rows|catalogue:|done in' \
      "$work/$device.log" | sed "s/^/  $device: /"
  else
    echo "whole job on the $device: failed (last lines below)"; tail -3 "$work/$device.log"
  fi
  rm -rf "${work:?}/$device"
done
