#!/usr/bin/env bash
# spip against WSClean on the same MS, image size, pixel scale, weighting, threads and
# stopping rule: wall time, peak RSS, their ratio, spip's gridding throughput, and the
# accuracy both reach against the OSKAR truth. Run after scripts/build.sh.
#   bench/run-imaging-bench.sh [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
command -v wsclean >/dev/null || { apt-get install -y -qq wsclean >/dev/null; }
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
work=$(mktemp -d /tmp/spip-bench.XXXXXX)
cp -r data/oskar_small.ms "$work/"
ms=$work/oskar_small.ms
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=$threads

measure() {  # label, log, command...: prints "seconds rss_mb"
  local log=$1; shift
  /usr/bin/time -f "%e %M" -o "$log.time" "$@" > "$log" 2>&1
  awk '{printf "%.2f %.0f", $1, $2 / 1024}' "$log.time"
}

common_ws=(-size 512 512 -scale 20asec -pol IQUV -channels-out 40 -use-wgridder -j "$threads"
           -no-update-model-required -weight briggs 0)
clean_ws=(-join-polarizations -niter 5000 -mgain 0.8 -gain 0.1 -threshold 0.005)
common_spip=(--input.ms "$ms" --image.size 512 --image.scale 20 --image.weighting briggs --image.robust 0
             --parallel.threads "$threads")
clean_spip=(--clean.niter 5000 --clean.mgain 0.8 --clean.gain 0.1 --clean.threshold 0.005 --clean.peak iquv)

# A first spip run stores FFTW's measured plans (as WSClean's FFTW would need wisdom too).
build/src/app/spip "${common_spip[@]}" --clean.niter 0 --output.dir "$work/warm" > /dev/null

printf '%-8s %-8s %10s %10s %10s %14s\n' run tool "wall [s]" "RSS [MB]" "ratio" "max |err| [Jy]"
for mode in dirty cleaned; do
  if [[ $mode == dirty ]]; then ws_extra=(-niter 0); spip_extra=(--clean.niter 0); else ws_extra=("${clean_ws[@]}"); spip_extra=("${clean_spip[@]}"); fi
  read -r ws_s ws_mb < <(cd "$work" && measure "$work/ws-$mode.log" wsclean "${common_ws[@]}" "${ws_extra[@]}" -name "ws-$mode" "$ms"; echo)
  read -r sp_s sp_mb < <(measure "$work/spip-$mode.log" build/src/app/spip "${common_spip[@]}" "${spip_extra[@]}" --output.dir "$work/spip-$mode"; echo)
  ratio=$(echo "$sp_s / $ws_s" | bc -l)
  if [[ $mode == cleaned ]]; then
    ws_err=$(python3 bench/truth_error.py wsclean "$work" ws-$mode)
    sp_err=$(python3 bench/truth_error.py spip "$work/spip-$mode" spip)
  else ws_err=-; sp_err=-; fi
  printf '%-8s %-8s %10s %10s %10s %14s\n' "$mode" wsclean "$ws_s" "$ws_mb" "" "$ws_err"
  printf '%-8s %-8s %10s %10s %10.2f %14s\n' "$mode" spip "$sp_s" "$sp_mb" "$ratio" "$sp_err"
  if [[ $mode == dirty ]]; then
    # Stokes visibilities gridded (4 per row and channel, each with its conjugate in
    # two packed grids) over the imaging stage, per core.
    image_s=$(grep -oE 'imaging [0-9.]+ s' "$work/spip-$mode.log" | awk '{print $2}')
    psf_s=$(grep -oE 'PSFs [0-9.]+ s' "$work/spip-$mode.log" | awk '{print $2}')
    rows=9936; chans=40
    echo "  spip dirty stage split: PSFs ${psf_s} s, imaging ${image_s} s;" \
         "gridding throughput $(echo "$rows * $chans * 4 / $image_s / $threads" | bc) Stokes visibilities/s/core (incl. FFTs)"
  fi
done
rm -rf "$work"
