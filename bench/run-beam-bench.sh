#!/usr/bin/env bash
# What primary-beam correction (issue 43) costs: the realistic set (bench/make-realistic-ms.sh)
# imaged dirty with the default channel cubes, without a beam, with beam.model airy (a 30 m
# dish) and with the same beam as a FITS cube 4 times coarser than the image (beam.model
# fits: spip's own pb cube of a coarse run), alternated run by run; prints each run's wall
# time and peak RSS and the ratios of the medians. Run after scripts/build.sh.
#   bench/run-beam-bench.sh [threads] [repeats] [size] [scale_arcsec]
set -euo pipefail
cd "$(dirname "$0")/.."
threads=${1:-2}
repeats=${2:-2}
size=${3:-1024}
scale=${4:-15}
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/spip-beam-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
bench/make-realistic-ms.sh "$work/realistic.ms"
build/src/app/spip --input.ms "$work/realistic.ms" --image.size $((size / 4)) \
  --image.scale "$(python3 -c "print(4 * $scale)")" --beam.model airy --beam.dish_diameter 30 \
  --output.channel_cubes pb --faraday.cubes none --parallel.threads "$threads" --output.dir "$work/coarse" \
  > "$work/coarse.log" 2>&1 || { echo "the coarse beam cube's run failed:"; tail -3 "$work/coarse.log"; exit 1; }
declare -A beam_args=([none]="--beam.model none" [airy]="--beam.model airy --beam.dish_diameter 30"
  [fits]="--beam.model fits --beam.fits $work/coarse/spip-pb.fits")
printf "%-8s %-6s %10s %12s\n" model run "wall [s]" "peak RSS [GB]"
for ((run = 1; run <= repeats; ++run)); do
  for model in none airy fits; do
    # shellcheck disable=SC2086  # the beam keys are words
    /usr/bin/time -f "%e %M" -o "$work/time.txt" build/src/app/spip --input.ms "$work/realistic.ms" \
      --image.size "$size" --image.scale "$scale" ${beam_args[$model]} \
      --faraday.cubes none --parallel.threads "$threads" --output.dir "$work/out" > "$work/$model.log" 2>&1 ||
      { echo "spip failed with beam.model $model; its last lines:"; tail -3 "$work/$model.log"; exit 1; }
    read -r wall rss < "$work/time.txt"
    echo "$model $wall" >> "$work/walls.txt"
    printf "%-8s %-6s %10.1f %12.2f\n" "$model" "$run" "$wall" "$(python3 -c "print($rss / 1e6)")"
    rm -rf "$work/out"
  done
done
python3 - "$work/walls.txt" <<'PY'
import statistics, sys
walls = {}
for line in open(sys.argv[1]):
    model, wall = line.split()
    walls.setdefault(model, []).append(float(wall))
for model in ("airy", "fits"):
    ratios = [a / n for a, n in zip(walls[model], walls["none"])]
    print(f"{model} / none, median wall: {statistics.median(walls[model]) / statistics.median(walls['none']):.2f} "
          f"(run by run {min(ratios):.2f}-{max(ratios):.2f})")
PY
