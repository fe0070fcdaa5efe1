#!/usr/bin/env bash
# Mosaics (issue 44) measured: three pointings 2 deg apart in an equilateral triangle
# (bench/mosaic_sky.py), simulated from data/stations64.tm through 40 m Airy dishes, 64
# channels of the realistic band, each pointing with its own noise; imaged into one
# mosaic on 2 ranks, and each pointing on its own on the same grid; every run restores
# with one round 300" beam (image.beam, as POSSUM restores at a common resolution).
# Prints every source against the truth, spip's mosaic against reproject's
# reproject_and_coadd of the per-pointing corrected cubes (weights B^2 / sigma^2), and
# the wall time and peak RSS of the mosaic against the three runs of one
# pointing. reproject and SciPy go into build/mosaic-venv (or $MOSAIC_VENV). Run after
# scripts/build.sh.
#   bench/run-mosaic-bench.sh [channels] [times]
set -euo pipefail
cd "$(dirname "$0")/.."
channels=${1:-64}
times=${2:-22}
dish=40
freq0=120.6e6
dfreq=$(python3 -c "print(1.2e6 * 64 / $channels)")
venv=${MOSAIC_VENV:-build/mosaic-venv}
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
if ! "$venv/bin/python" -c 'import reproject, scipy' 2>/dev/null; then
  python3 -c 'import ensurepip, venv' 2>/dev/null ||
    apt-get install -y -qq python3-venv >/dev/null || { apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null; }
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q reproject scipy
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/spip-mosaic-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpi=(mpiexec --allow-run-as-root --oversubscribe -n 2)
"$venv/bin/python" bench/mosaic_sky.py "$work/sky.txt" "$work/pointings.txt"
inputs=()
p=0
noise=(0.3 0.4 0.5)
while read -r ra dec; do
  build/src/app/spip-simulate --sky "$work/sky.txt" --telescope data/stations64.tm --ra "$ra" --dec "$dec" \
    --channels "$channels" --freq-start "$freq0" --freq-inc "$dfreq" --times "$times" \
    --dump "$(python3 -c "print(400 * 44 / $times)")" --noise "${noise[$p]}" --seed $((p + 1)) \
    --beam airy --dish-diameter "$dish" --out "$work/p$p.ms" > "$work/simulate.log" 2>&1 ||
    { echo "spip-simulate failed; its last lines:"; tail -3 "$work/simulate.log"; exit 1; }
  inputs+=("$work/p$p.ms")
  p=$((p + 1))
done < "$work/pointings.txt"
common=(--image.size 512 --image.scale 45 --image.centre 0,60 --image.beam 300,300,0 --clean.niter 20000 --clean.auto_threshold 3
  --beam.model airy --faraday.phi_max 200 --faraday.dphi 0.5 --faraday.cubes none --parallel.threads 1)
timed() {  # LABEL LOG COMMAND...: the command's wall time and peak RSS into $work/LABEL.time
  local label=$1 log=$2
  shift 2
  /usr/bin/time -f "%e %M" -o "$work/$label.time" "$@" > "$log" 2>&1 ||
    { echo "$label failed; its last lines:"; tail -3 "$log"; exit 1; }
}
timed mosaic "$work/mosaic.log" "${mpi[@]}" build/src/app/spip --input.ms "${inputs[@]}" "${common[@]}" \
  --output.dir "$work/mosaic"
singles=()
for ((p = 0; p < ${#inputs[@]}; ++p)); do
  timed "single$p" "$work/single$p.log" "${mpi[@]}" build/src/app/spip --input.ms "${inputs[$p]}" "${common[@]}" \
    --beam.limit 0.001 --output.dir "$work/single$p"
  singles+=("$work/single$p")
done
echo "mosaic of ${#inputs[@]} pointings, $channels channels of 512^2 at 45\", 2 ranks of 1 thread:"
"$venv/bin/python" bench/mosaic_compare.py "$work/mosaic" "${singles[@]}" --dish "$dish" --freq0 "$freq0" --dfreq "$dfreq"
python3 - "$work" "${#inputs[@]}" <<'PY'
import sys
work, count = sys.argv[1], int(sys.argv[2])
read = lambda label: [float(v) for v in open(f"{work}/{label}.time").read().split()]
wall, rss = read("mosaic")
singles = [read(f"single{p}") for p in range(count)]
print(f"{'run':28} {'wall [s]':>9} {'peak RSS [GB]':>14}")
print(f"{'mosaic, one run':28} {wall:9.1f} {rss / 1e6:14.2f}")
print(f"{'pointings one by one (sum)':28} {sum(s[0] for s in singles):9.1f} {max(s[1] for s in singles) / 1e6:14.2f}")
print(f"mosaic / one by one: wall {wall / sum(s[0] for s in singles):.2f}, peak RSS "
      f"{rss / max(s[1] for s in singles):.2f}")
PY
