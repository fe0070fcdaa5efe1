#!/usr/bin/env bash
# GPU backend rates (scripts/build.sh first): gridding, FFT and RM synthesis rates
# beside the CPU backend, cuFFT and cuBLAS references from the same run, and the share
# of uploads hidden by the second stream. Prints that no GPU is usable where none is,
# and exits 0.
#   bench/run-gpu-bench.sh [channels] [image_size] [scale_arcsec]   the sample MS
#   bench/run-gpu-bench.sh realistic   the realistic set (bench/make-realistic-ms.sh):
#       the rates on its 64 channels at 1024^2 of 15", then the whole job (dirty
#       images and the Faraday stage, one rank) on the GPU and on every CPU core
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/bench/bench_gpu && -x build/src/app/spip ]] || scripts/build.sh
if [[ ${1:-} != realistic ]]; then
  build/bench/bench_gpu data/oskar_small.ms "${1:-16}" "${2:-512}" "${3:-20}"
  exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/spip-gpu-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
bench/make-realistic-ms.sh "$work/realistic.ms"
build/bench/bench_gpu "$work/realistic.ms" 64 1024 15 | tee "$work/rates.txt"
grep -q "no usable GPU" "$work/rates.txt" && exit 0
common=(--input.ms "$work/realistic.ms" --image.size 1024 --image.scale 15 --image.weighting briggs
        --image.robust 0 --faraday.cubes none --parallel.threads "$(nproc)")
for device in gpu cpu; do
  start=$(date +%s.%N)
  if build/src/app/spip "${common[@]}" --parallel.device "$device" --output.dir "$work/$device" > "$work/$device.log" 2>&1; then
    echo "whole job on the $device: $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s;" \
         "$(grep -o 'Faraday moments, RM synthesis and RM-CLEAN in [0-9.]* s' "$work/$device.log")"
  else
    echo "whole job on the $device: failed (last lines below)"; tail -3 "$work/$device.log"
  fi
  rm -rf "${work:?}/$device"
done
