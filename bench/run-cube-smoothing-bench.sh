#!/usr/bin/env bash
# shellcheck disable=SC2086  # the lists of runs are words
# Convolving another imager's cubes to one beam (image.common_beam, src/imaging/beam.cpp)
# against RACS-tools' beamcon_3D (racs-tools 4.5, from PyPI), which does the same for RM
# synthesis. spip images the realistic set (bench/make-realistic-ms.sh, CHANNELS channels
# over 120.6-197.4 MHz) at SIZE^2 of SCALE" with image.common_beam false, so that its
# restored I, Q and U cubes carry a BEAMS table of each channel's fitted beam (checked to
# differ: areas at least 10 % apart). Then, RUNS times in turn, one core each: spip's
# Faraday stage on the cubes (faraday.cubes none, no RM-CLEAN) with the channels
# convolved to its common beam and taken as they are, whose difference is the
# convolution's cost; beamcon_3D --mode total (one worker) convolving the same I, Q and U
# planes to its smallest common beam; and beamcon_3D --dryrun (its start-up and common
# beam, no planes). Prints each one's wall time and peak RSS (median and range over the
# runs) and the ratios run by run. Then the accuracy: the mean over channels of
# beamcon_3D's convolved cubes against spip's moment-mean maps (uniform channel weights),
# with each tool's own beam and with spip given beamcon_3D's (image.beam), relative to the
# map's peak, where both are finite and in the interior (bench/smoothing_compare.py).
# Needs ~0.7 GB in $TMPDIR (or /tmp), which it deletes (SMOOTHING_BENCH_KEEP=1 keeps it).
# Run after scripts/build.sh; racs-tools goes into $SPIP_BENCH_VENV (default
# /opt/spip/bench-venv) where it is missing.
#   bench/run-cube-smoothing-bench.sh [runs] [channels] [size] [scale_arcsec]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
channels=${2:-64}
size=${3:-512}
scale=${4:-20}
venv=${SPIP_BENCH_VENV:-/opt/spip/bench-venv}
for binary in spip spip-simulate; do
  [[ -x build/src/app/$binary ]] || { echo "run-cube-smoothing-bench: no build/src/app/$binary; run scripts/build.sh first" >&2; exit 1; }
done
if ! "$venv/bin/python" -c "import racs_tools, astropy, numpy" 2>/dev/null || [[ ! -x $venv/bin/beamcon_3D ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q "racs-tools==4.5.*"
fi
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/spip-cube-smoothing.XXXXXX")
if [[ ${SMOOTHING_BENCH_KEEP:-0} == 1 ]]; then echo "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi
cp build/src/app/spip "$work/spip"  # spip may be rebuilt while this runs
cores=$(nproc)
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 NUMBA_NUM_THREADS=1
py=$venv/bin/python

# The cubes: each channel restored with its own fitted beam.
bench/make-realistic-ms.sh "$work/realistic.ms" "$channels"
OMP_NUM_THREADS=$cores "$work/spip" --input.ms "$work/realistic.ms" --image.size "$size" --image.scale "$scale" \
  --image.common_beam false --clean.niter 10000 --clean.auto_threshold 3 --output.channel_cubes image-I,image-Q,image-U \
  --faraday.cubes none --catalogue.threshold 0 --parallel.threads "$cores" --output.dir "$work/imaging" \
  --output.prefix c > "$work/imaging.log" 2>&1 || { echo "imaging the set failed:" >&2; tail -5 "$work/imaging.log" >&2; exit 1; }
mkdir -p "$work/cubes" "$work/bc"
mv "$work"/imaging/c-image-{I,Q,U}.fits "$work/cubes/"
rm -rf "$work/realistic.ms" "$work/imaging"
"$py" bench/smoothing_compare.py beams "$work/cubes/c-image-Q.fits"
cubes=("$work/cubes/c-image-Q.fits" "$work/cubes/c-image-U.fits" "$work/cubes/c-image-I.fits")

spip_run() {  # common_beam, out, extra options...: "wall rss_MB read_s"
  local common=$1 out=$2; shift 2
  rm -rf "$out"
  /usr/bin/time -f "%e %M" -o "$out.time" "$work/spip" --input.cube_q "${cubes[0]}" --input.cube_u "${cubes[1]}" \
    --input.cube_i "${cubes[2]}" --image.common_beam "$common" --faraday.cubes none --faraday.rmclean_niter 0 \
    --faraday.variance_weights false --catalogue.threshold 0 --parallel.threads 1 --parallel.device cpu \
    --output.dir "$out" --output.prefix c "$@" > "$out.log" 2>&1 || { tail -20 "$out.log" >&2; exit 1; }
  local read_s
  read_s=$("$py" -c "import json; print(json.load(open('$out/c-qa.json'))['ranks'][0]['read_s'])")
  awk -v r="$read_s" '{printf "%s %.0f %s\n", $1, $2 / 1024, r}' "$out.time"
}
beamcon_run() {  # name, extra options...: "wall rss_MB"
  local name=$1; shift
  rm -f "$work"/bc/*.fits
  /usr/bin/time -f "%e %M" -o "$work/$name.time" "$venv/bin/beamcon_3D" --mode total --conv_mode robust \
    --ncores 1 --executor_type thread -o "$work/bc" "$@" "${cubes[@]}" > "$work/$name.log" 2>&1 ||
    { tail -20 "$work/$name.log" >&2; exit 1; }
  awk '{printf "%s %.0f\n", $1, $2 / 1024}' "$work/$name.time"
}

# One untimed run of each (the page cache, numba's compiled kernel), kept for the accuracy.
spip_run true "$work/spip-own" > /dev/null
beamcon_run warm > /dev/null
mv "$work/bc" "$work/bc-kept" && mkdir "$work/bc"
declare -A wall rss
reads_on=() reads_off=()
for ((run = 1; run <= runs; ++run)); do  # each in this shell, so that a failure stops the script
  spip_run true "$work/on" > "$work/t"; read -r w r s < "$work/t"; wall[on]+="$w "; rss[on]+="$r "; reads_on+=("$s")
  spip_run false "$work/off" > "$work/t"; read -r w r s < "$work/t"; wall[off]+="$w "; rss[off]+="$r "; reads_off+=("$s")
  beamcon_run beamcon > "$work/t"; read -r w r < "$work/t"; wall[bc]+="$w "; rss[bc]+="$r "
  beamcon_run dry --dryrun > "$work/t"; read -r w r < "$work/t"; wall[dry]+="$w "; rss[dry]+="$r "
done
rm -rf "$work/on" "$work/off" "$work/bc"

stats() {  # values...: "median (min-max)"
  printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2;
    f = m >= 100 ? "%.0f (%.0f-%.0f)" : "%.2f (%.2f-%.2f)"; printf f, m, v[1], v[NR]}'
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
pairwise() {  # awk expression of a and b, list a, list b: one value per run
  local expr=$1 k; local -a a b; read -r -a a <<< "$2"; read -r -a b <<< "$3"
  for ((k = 0; k < ${#a[@]}; ++k)); do awk -v a="${a[k]}" -v b="${b[k]}" "BEGIN {print $expr}"; done
}
mapfile -t conv < <(pairwise "a - b" "${wall[on]}" "${wall[off]}")
mapfile -t conv_read < <(pairwise "a - b" "${reads_on[*]}" "${reads_off[*]}")
mapfile -t bc_net < <(pairwise "a - b" "${wall[bc]}" "${wall[dry]}")
mapfile -t ratio < <(pairwise "a / b" "${wall[bc]}" "${conv[*]}")
mapfile -t ratio_net < <(pairwise "a / b" "${bc_net[*]}" "${conv[*]}")
planes=$((3 * channels))

echo "== the realistic set, $channels channels at ${size}^2 of ${scale}\", each channel at its own fitted beam: Stokes Q, U and I"
echo "   cubes ($planes planes) to one beam; $runs runs each, in turn, on $cores cores; spip 1 thread, beamcon_3D 1 worker"
printf '%-56s %20s %16s\n' program "wall [s]" "peak RSS [MB]"
printf '%-56s %20s %16s\n' "spip, channels convolved (image.common_beam true)" "$(stats ${wall[on]})" "$(stats ${rss[on]})"
printf '%-56s %20s %16s\n' "spip, channels as they are (image.common_beam false)" "$(stats ${wall[off]})" "$(stats ${rss[off]})"
printf '%-56s %20s\n' "spip's convolution: the difference, run by run" "$(stats "${conv[@]}")"
printf '%-56s %20s\n' "  the same from qa.json's read_s (reading + convolving)" "$(stats "${conv_read[@]}")"
printf '%-56s %20s %16s\n' "beamcon_3D --mode total, 1 worker (racs-tools 4.5)" "$(stats ${wall[bc]})" "$(stats ${rss[bc]})"
printf '%-56s %20s %16s\n' "beamcon_3D --dryrun (start-up and common beam only)" "$(stats ${wall[dry]})" "$(stats ${rss[dry]})"
printf '%-56s %20s\n' "beamcon_3D less its dry run, run by run" "$(stats "${bc_net[@]}")"
echo "per plane: spip $(awk -v t="$(median "${conv[@]}")" -v n=$planes 'BEGIN {printf "%.1f", 1000 * t / n}') ms," \
  "beamcon_3D $(awk -v t="$(median "${bc_net[@]}")" -v n=$planes 'BEGIN {printf "%.1f", 1000 * t / n}') ms (less its dry run)"
echo "beamcon_3D / spip's convolution, run by run: $(stats "${ratio[@]}");" \
  "less beamcon_3D's dry run: $(stats "${ratio_net[@]}")"
echo

# The accuracy: with each tool's own beam, and with spip given beamcon_3D's.
spip_run true "$work/spip-same" --image.beam "$("$py" bench/smoothing_compare.py beam "$work/bc-kept/c-image-Q.total.fits")" > /dev/null
echo "== the mean over channels, spip's moment-mean - beamcon_3D's cube averaged, relative to the map's peak"
"$py" bench/smoothing_compare.py compare "$work/cubes" "$work/spip-own/c" "$work/bc-kept" "own beams"
"$py" bench/smoothing_compare.py compare "$work/cubes" "$work/spip-same/c" "$work/bc-kept" "same beam"
