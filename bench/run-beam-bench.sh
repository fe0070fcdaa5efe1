#!/usr/bin/env bash
# What primary-beam correction (issue 43) costs: the realistic set (bench/make-realistic-ms.sh)
# imaged dirty with the default channel cubes, without a beam and with beam.model airy
# (a 30 m dish), alternated run by run; prints each run's wall time and peak RSS and the
# ratio of the medians. Run after scripts/build.sh.
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
printf "%-8s %-6s %10s %12s\n" model run "wall [s]" "peak RSS [GB]"
for ((run = 1; run <= repeats; ++run)); do
  for model in none airy; do
    /usr/bin/time -f "%e %M" -o "$work/time.txt" build/src/app/spip --input.ms "$work/realistic.ms" \
      --image.size "$size" --image.scale "$scale" --beam.model "$model" --beam.dish_diameter 30 \
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
ratios = [a / n for a, n in zip(walls["airy"], walls["none"])]
print(f"airy / none, median wall: {statistics.median(walls['airy']) / statistics.median(walls['none']):.2f} "
      f"(run by run {min(ratios):.2f}-{max(ratios):.2f})")
PY
