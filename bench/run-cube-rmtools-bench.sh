#!/usr/bin/env bash
# The Faraday stage on another imager's cubes against RM-Tools 1.5 (issue 45): WSClean
# 3.1 images the sample (-pol QU -channels-out 40, 512^2 of 20"), bench/stack_channels.py
# stacks its channel images into Q and U cubes with each channel's noise, and then, RUNS
# times in turn, RM-Tools' rmsynth3d and rmclean3d (one core) and spip on the cubes (1
# and 2 ranks of one thread) make the dirty and clean FDFs on the same depth grid (|phi|
# <= 60 by 0.5 rad/m^2, as configs/demo.cfg), with the same channel weights (1/sigma^2),
# RM-CLEAN cutoff (5 sigma of the FDF), gain and iteration cap. Prints each program's
# wall time and peak RSS (median and range over the runs; spip's per rank), their ratio,
# and how far the FDFs agree (bench/compare_cube_fdf.py). Needs ~4 GB in /tmp, which it
# deletes (CUBE_BENCH_KEEP=1 keeps it). Run after scripts/build.sh and
# scripts/install-deps.sh --tests (RM-Tools in $SPIP_TEST_VENV, default /opt/spip/test-venv).
#   bench/run-cube-rmtools-bench.sh [runs]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
venv=${SPIP_TEST_VENV:-/opt/spip/test-venv}
[[ -x build/src/app/spip ]] || { echo "run-cube-rmtools-bench: run scripts/build.sh first" >&2; exit 1; }
[[ -x $venv/bin/rmsynth3d ]] || { echo "run-cube-rmtools-bench: no RM-Tools in $venv; run scripts/install-deps.sh --tests" >&2; exit 1; }
command -v wsclean >/dev/null || { echo "run-cube-rmtools-bench: no wsclean; run scripts/install-deps.sh --tests" >&2; exit 1; }
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
work=$(mktemp -d /tmp/spip-cube-bench.XXXXXX)
if [[ ${CUBE_BENCH_KEEP:-0} == 1 ]]; then echo "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work/ws" "$work/rmt"
cp build/src/app/spip "$work/spip"  # spip may be rebuilt while this runs
cp -r data/oskar_small.ms "$work/sample.ms"
cores=$(nproc)
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
source scripts/mpirun-flags.sh

wsclean -pol QU -channels-out 40 -size 512 512 -scale 20asec -weight briggs 0 -niter 0 \
  -no-update-model-required -name "$work/ws/ws" "$work/sample.ms" > "$work/wsclean.log" 2>&1 ||
  { tail -20 "$work/wsclean.log" >&2; exit 1; }
"$venv/bin/python" bench/stack_channels.py "$work/ws/ws" "$work"
rm -rf "$work/ws"
ln -s "$work/Q.fits" "$work/rmt/Q.fits"  # rmsynth3d writes beside its Q cube
ln -s "$work/U.fits" "$work/rmt/U.fits"
cutoff=$("$venv/bin/python" -c "import numpy as np; s = np.loadtxt('$work/noise.txt'); print(5 / np.sqrt((1 / s**2).sum()))")

tv() {  # time -v file: "wall_s rss_MB"
  awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; ++i) s = s * 60 + t[i]}
              /Maximum resident set size/ {rss = $2 / 1024}
              END {printf "%.2f %.0f", s, rss}' "$1"
}
spip_run() {  # ranks, out: wall time of the job and the largest rank's RSS
  local ranks=$1 out=$2
  rm -rf "$out"
  /usr/bin/time -v -o "$out.time" mpirun -np "$ranks" "${SPIP_MPIRUN_FLAGS[@]}" \
    bash -c 'exec /usr/bin/time -v -o "$0.rank$OMPI_COMM_WORLD_RANK" "$@"' "$out.time" \
    "$work/spip" --input.cube_q "$work/Q.fits" --input.cube_u "$work/U.fits" --input.cube_noise "$work/noise.txt" \
    --faraday.variance_weights true --faraday.phi_max 60 --faraday.dphi 0.5 --faraday.rmclean_xcorr false \
    --faraday.rmclean_niter 1000 --faraday.rmclean_gain 0.1 --faraday.rmclean_cutoff 5 --faraday.cubes all \
    --catalogue.threshold 0 --parallel.threads 1 --parallel.device cpu --output.dir "$out" --output.prefix c \
    > "$out.log" 2>&1 || { tail -20 "$out.log" >&2; exit 1; }
  local wall rss
  read -r wall _ < <(tv "$out.time"; echo)
  rss=$(for f in "$out.time".rank*; do tv "$f" | awk '{print $2}'; done | sort -n | tail -1)
  echo "$wall $rss"
}
rmt_run() {  # name, command...: "wall rss"
  local name=$1; shift
  /usr/bin/time -v -o "$work/$name.time" "$@" > "$work/$name.log" 2>&1 || { tail -20 "$work/$name.log" >&2; exit 1; }
  tv "$work/$name.time"
}

declare -A wall rss
for ((run = 1; run <= runs; ++run)); do
  read -r w r < <(rmt_run synth "$venv/bin/rmsynth3d" "$work/rmt/Q.fits" "$work/rmt/U.fits" "$work/freqs.txt" \
                    -n "$work/noise.txt" -w variance -l 60 -d 0.5 -o r_; echo)
  wall[synth]+="$w "; rss[synth]+="$r "
  read -r w r < <(rmt_run clean "$venv/bin/rmclean3d" "$work/rmt/r_FDF_tot_dirty.fits" "$work/rmt/r_RMSF_tot.fits" \
                    -c "$cutoff" -n 1000 -g 0.1 -o r_; echo)
  wall[clean]+="$w "; rss[clean]+="$r "
  for ranks in 1 2; do
    read -r w r < <(spip_run "$ranks" "$work/spip$ranks"; echo)
    wall[spip$ranks]+="$w "; rss[spip$ranks]+="$r "
  done
done

stats() {  # values...: "median (min-max)"
  printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
    f = m >= 100 ? "%.0f (%.0f-%.0f)" : "%.2f (%.2f-%.2f)"; printf f, m, v[1], v[NR]}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
# RM-Tools' time is its two commands in the same run; spip's, its whole job.
rmt_totals=(); read -r -a s <<< "${wall[synth]}"; read -r -a c <<< "${wall[clean]}"
for ((k = 0; k < runs; ++k)); do rmt_totals+=("$(awk -v a="${s[k]}" -v b="${c[k]}" 'BEGIN {print a + b}')"); done

echo "== the sample through WSClean 3.1: 40 channels of 512^2, 241 depths; $runs runs each, in turn, on $cores cores"
printf '%-36s %22s %22s\n' program "wall [s]" "peak RSS [MB]"
printf '%-36s %22s %22s\n' "RM-Tools 1.5 rmsynth3d (1 core)" "$(stats ${wall[synth]})" "$(stats ${rss[synth]})"
printf '%-36s %22s %22s\n' "RM-Tools 1.5 rmclean3d (1 core)" "$(stats ${wall[clean]})" "$(stats ${rss[clean]})"
printf '%-36s %22s %22s\n' "RM-Tools, the two" "$(stats "${rmt_totals[@]}")" ""
for ranks in 1 2; do
  printf '%-36s %22s %22s\n' "spip, $ranks rank(s) of 1 thread" "$(stats ${wall[spip$ranks]})" "$(stats ${rss[spip$ranks]}) per rank"
done
for ranks in 1 2; do
  read -r -a sp <<< "${wall[spip$ranks]}"
  ratios=(); for ((k = 0; k < runs; ++k)); do ratios+=("$(awk -v a="${sp[k]}" -v b="${rmt_totals[k]}" 'BEGIN {print a / b}')"); done
  echo "spip ($ranks rank(s)) / RM-Tools wall time, run by run: $(stats "${ratios[@]}")"
done
echo "peak RSS, spip per rank / rmsynth3d: $(awk -v a="$(median ${rss[spip1]})" -v b="$(median ${rss[synth]})" 'BEGIN {printf "%.3f", a / b}') (1 rank)"
echo
for ranks in 1 2; do
  echo "spip on $ranks rank(s):"
  "$venv/bin/python" bench/compare_cube_fdf.py "$work/spip$ranks/c" "$work/rmt/r_" "$work/freqs.txt" "$work/noise.txt" \
    "$cutoff" 1000 0.1
done
