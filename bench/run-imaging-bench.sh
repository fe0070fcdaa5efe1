#!/usr/bin/env bash
# spip against WSClean on the same MS, image size, pixel scale, weighting, threads and
# stopping rule, alternated run by run: wall time, peak RSS, their ratio with its spread,
# CLEAN components and major cycles per channel, and the largest error against the
# sky model at its point sources. Run after scripts/build.sh.
#   bench/run-imaging-bench.sh [threads] [repeats] [cases] [modes]
# Cases: `sample` (the bundled OSKAR set, 40 channels, 512^2, no noise, cleaned to
# 5 mJy) and `realistic` (built here with spip-simulate from data/stations64.tm and
# bench/realistic.sky.txt: 64 stations, 64 channels, 44 dumps, 0.3 Jy noise per
# correlation, points and Gaussians with RMs from -80 to +150 rad/m^2 and one source
# with two Faraday components, 1024^2 of 15", cleaned with auto-threshold 3), and
# `gridding` (issue 46's gridding-heavy set: the same at 128 channels, 88,704 rows a
# channel; not in the defaults: `bench/run-imaging-bench.sh 2 2 gridding dirty`).
# Modes: `dirty` (no CLEAN) and `cleaned` (both by default).
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
repeats=${2:-3}
cases=${3:-"sample realistic"}
modes=${4:-"dirty cleaned"}
command -v wsclean >/dev/null || apt-get install -y -qq wsclean >/dev/null
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
work=$(mktemp -d /tmp/spip-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=$threads

measure() {  # log, command...: prints "seconds rss_mb"
  local log=$1; shift
  /usr/bin/time -f "%e %M" -o "$log.time" "$@" > "$log" 2>&1
  awk '{printf "%.2f %.0f", $1, $2 / 1024}' "$log.time"
}

summary() {  # label, ratios...: median and range
  local label=$1; shift
  printf '%s\n' "$@" | sort -g | awk -v label="$label" '{r[NR] = $1} END {
    m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
    printf "  %s: spip / WSClean wall time, median of %d: %.2f (range %.2f-%.2f)\n", label, NR, m, r[1], r[NR]}'
}

run_case() {  # name ms sky size scale_arcsec channels "ws stop" "spip stop"
  local name=$1 ms=$2 sky=$3 size=$4 scale=$5 channels=$6 ws_stop=$7 spip_stop=$8
  local common_ws=(-size "$size" "$size" -scale "${scale}asec" -pol IQUV -channels-out "$channels" -use-wgridder
                   -j "$threads" -no-update-model-required -weight briggs 0)
  local common_spip=(--input.ms "$ms" --image.size "$size" --image.scale "$scale" --image.weighting briggs
                     --image.robust 0 --parallel.threads "$threads" --faraday.cubes none)
  # A first spip run stores FFTW's measured plans (as WSClean's FFTW would need wisdom too).
  build/src/app/spip "${common_spip[@]}" --clean.niter 0 --input.channel_end 1 --output.dir "$work/warm" > /dev/null
  echo "== $name: $(basename "$ms"), $channels channels, ${size}^2 of ${scale}\", $threads threads"
  printf '%-8s %-4s %-8s %10s %10s %8s %12s %8s %14s\n' run try tool "wall [s]" "RSS [MB]" ratio components majors \
    "max |err| [Jy]"
  for mode in $modes; do
    local ws_extra spip_extra ratios=()
    if [[ $mode == dirty ]]; then ws_extra=(-niter 0); spip_extra=(--clean.niter 0)
    else
      ws_extra=(-join-polarizations -niter 1000000 -mgain 0.8 -gain 0.1 $ws_stop)
      spip_extra=(--clean.niter 1000000 --clean.mgain 0.8 --clean.gain 0.1 --clean.peak iquv $spip_stop)
    fi
    for ((try = 1; try <= repeats; ++try)); do
      local ws_dir=$work/ws-$name-$mode sp_dir=$work/spip-$name-$mode
      rm -rf "$ws_dir" "$sp_dir"; mkdir -p "$ws_dir"
      read -r ws_s ws_mb < <(cd "$ws_dir" && measure "$ws_dir.log" wsclean "${common_ws[@]}" "${ws_extra[@]}" -name ws "$ms"; echo)
      read -r sp_s sp_mb < <(measure "$sp_dir.log" build/src/app/spip "${common_spip[@]}" "${spip_extra[@]}" --output.dir "$sp_dir" --output.prefix spip; echo)
      local ratio; ratio=$(echo "$sp_s / $ws_s" | bc -l)
      ratios+=("$ratio")
      local ws_counts="- -" sp_counts="- -" ws_err=- sp_err=-
      if [[ $mode == cleaned ]]; then
        ws_counts=$(python3 bench/clean_counts.py wsclean "$ws_dir.log")
        sp_counts=$(python3 bench/clean_counts.py spip "$sp_dir/spip-qa.json")
        ws_err=$(python3 bench/truth_error.py "$sky" wsclean "$ws_dir" ws)
        sp_err=$(python3 bench/truth_error.py "$sky" spip "$sp_dir" spip)
      fi
      printf '%-8s %-4s %-8s %10s %10s %8s %12s %8s %14s\n' "$mode" "$try" wsclean "$ws_s" "$ws_mb" "" $ws_counts "$ws_err"
      printf '%-8s %-4s %-8s %10s %10s %8.2f %12s %8s %14s\n' "$mode" "$try" spip "$sp_s" "$sp_mb" "$ratio" $sp_counts "$sp_err"
      echo "  spip stages: $(grep -m1 -oE 'waited [0-9.]+ s for reads, imaging [0-9.]+ s' "$sp_dir.log");" \
           "restored in $(grep -m1 -oE 'planes in [0-9.]+ s' "$sp_dir.log" | awk '{print $3}') s;" \
           "Faraday stage $(grep -oE 'RM-CLEAN in [0-9.]+ s' "$sp_dir.log" | awk '{print $3}') s"
      rm -rf "$ws_dir" "$sp_dir"
    done
    summary "$name $mode" "${ratios[@]}"
  done
}

for c in $cases; do
  case $c in
    sample)
      cp -r data/oskar_small.ms "$work/"
      run_case sample "$work/oskar_small.ms" data/oskar_small.sky.txt 512 20 40 "-threshold 0.005" "--clean.threshold 0.005"
      rm -rf "$work/oskar_small.ms" ;;
    realistic)
      bench/make-realistic-ms.sh "$work/realistic.ms"
      run_case realistic "$work/realistic.ms" bench/realistic.sky.txt 1024 15 64 "-auto-threshold 3" "--clean.auto_threshold 3"
      rm -rf "$work/realistic.ms" ;;
    gridding)
      bench/make-realistic-ms.sh "$work/gridding.ms" 128
      run_case gridding "$work/gridding.ms" bench/realistic.sky.txt 1024 15 128 "-auto-threshold 3" "--clean.auto_threshold 3"
      rm -rf "$work/gridding.ms" ;;
    *) echo "unknown case $c (sample, realistic, gridding)" >&2; exit 2 ;;
  esac
done
