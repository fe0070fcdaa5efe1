#!/usr/bin/env bash
# Multiscale CLEAN on diffuse polarised emission (issue 30): the realistic set's sky plus
# two overlapping 10-arcminute Gaussians at 10 % polarisation and RM +30 and -15 rad/m^2
# (bench/diffuse.sky.txt), made as bench/make-realistic-ms.sh makes the realistic set.
# WSClean 3.1 with -multiscale -join-polarizations, spip with point CLEAN and spip with
# clean.multiscale, alternated run by run, with the same scales (tapered quadratic),
# weighting, threads, gains, auto-threshold and auto-mask. Prints wall time, peak RSS,
# components and major cycles per channel, the diffuse sources' integrated I, Q, U
# against the truth, the off-source residual rms, and spip's peak phi and PI at the
# diffuse sources' centres (bench/diffuse_metrics.py). Run after scripts/build.sh.
#   bench/run-multiscale-bench.sh [threads] [channels] [repeats] [size] [scale_arcsec] [scales] [auto_threshold] [noise_jy]
# SPIP_BENCH_BIN names another folder holding spip and spip-simulate (a frozen build).
# SPIP_BENCH_RUNS picks some of the runs (default "wsclean spip-point spip-multiscale").
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SPIP_BENCH_BIN:-build/src/app}
threads=${1:-2}
channels=${2:-64}
repeats=${3:-1}
size=${4:-1024}
scale=${5:-15}
scales=${6:-0,16,32,64,128}
auto_threshold=${7:-1}
noise=${8:-0.3}  # per visibility: spip-simulate --noise
runs=${SPIP_BENCH_RUNS:-wsclean spip-point spip-multiscale}
for run in $runs; do
  case $run in wsclean | spip-point | spip-multiscale) ;; *) echo "unknown run $run in SPIP_BENCH_RUNS" >&2; exit 2 ;; esac
done
[[ " $runs " != *" wsclean "* ]] || command -v wsclean >/dev/null || apt-get install -y -qq wsclean >/dev/null
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
work=$(mktemp -d /tmp/spip-multiscale.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=$threads
sky=bench/diffuse.sky.txt
ms=$work/diffuse.ms
"$bin/spip-simulate" --sky $sky --telescope data/stations64.tm --out "$ms" --channels "$channels" \
  --freq-inc "$(python3 -c "print(1.2e6 * 64 / $channels)")" --times 44 --dump 400 --noise "$noise" --seed 7 > "$work/simulate.log"

measure() {  # log, command...: prints "seconds rss_mb"
  local log=$1; shift
  /usr/bin/time -f "%e %M" -o "$log.time" "$@" > "$log" 2>&1
  awk '{printf "%.2f %.0f", $1, $2 / 1024}' "$log.time"
}

ws=(-size "$size" "$size" -scale "${scale}asec" -pol IQUV -channels-out "$channels" -use-wgridder -j "$threads"
    -no-update-model-required -weight briggs 0 -join-polarizations -niter 1000000 -mgain 0.8 -gain 0.1
    -auto-threshold "$auto_threshold" -auto-mask 3 -multiscale -multiscale-scales "$scales" -multiscale-scale-bias 0.6)
sp=(--input.ms "$ms" --image.size "$size" --image.scale "$scale" --image.weighting briggs --image.robust 0
    --parallel.threads "$threads" --clean.niter 1000000 --clean.mgain 0.8 --clean.gain 0.1 --clean.peak iquv
    --clean.auto_threshold "$auto_threshold" --clean.auto_mask 3 --faraday.cubes none --faraday.phi_max 60 --output.prefix spip)
"$bin/spip" --input.ms "$ms" --image.size "$size" --image.scale "$scale" --input.channel_end 1 --output.dir "$work/warm" > /dev/null
echo "== diffuse: $channels channels, ${size}^2 of ${scale}\", $threads threads, scales $scales, auto-threshold $auto_threshold, auto-mask 3, noise $noise Jy"
printf '%-4s %-16s %9s %9s %11s %7s  %s\n' try run "wall [s]" "RSS [MB]" components majors "diffuse sources (bench/diffuse_metrics.py)"
for ((try = 1; try <= repeats; ++try)); do
  for run in $runs; do
    dir=$work/$run; rm -rf "$dir"; mkdir -p "$dir"
    case $run in
      wsclean) read -r s mb < <(cd "$dir" && measure "$dir.log" wsclean "${ws[@]}" -name ws "$ms"; echo)
               counts=$(python3 bench/clean_counts.py wsclean "$dir.log" || echo "? ?")
               metrics=$(python3 bench/diffuse_metrics.py $sky wsclean "$dir" ws || echo "metrics failed") ;;
      spip-point) read -r s mb < <(measure "$dir.log" "$bin/spip" "${sp[@]}" --output.dir "$dir"; echo) ;;
      spip-multiscale) read -r s mb < <(measure "$dir.log" "$bin/spip" "${sp[@]}" --clean.multiscale true \
                         --clean.scales "$scales" --clean.scale_bias 0.6 --output.dir "$dir"; echo) ;;
    esac
    if [[ $run == spip-* ]]; then
      counts=$(python3 bench/clean_counts.py spip "$dir/spip-qa.json" || echo "? ?")
      metrics=$(python3 bench/diffuse_metrics.py $sky spip "$dir" spip || echo "metrics failed")
    fi
    printf '%-4s %-16s %9s %9s %11s %7s  %s\n' "$try" "$run" "$s" "$mb" $counts "$metrics"
    rm -rf "$dir"
  done
done
