#!/usr/bin/env bash
# Whether a run keeps to parallel.memory_gb (issue 46): the gridding-heavy set of that
# issue (bench/make-realistic-ms.sh with 128 channels: 64 stations, 88,704 rows a
# channel), imaged dirty at 1024^2 of 15" by one rank of 2 threads through the Faraday
# stage without FDF cubes, at each budget given; prints, per budget, what --plan says a
# rank's host memory will be and the peak RSS /usr/bin/time measures. Run after
# scripts/build.sh.
#   bench/run-budget-bench.sh [budgets in GB ...]   (default 0.6 1 4)
set -euo pipefail
cd "$(dirname "$0")/.."
budgets=("$@")
[[ ${#budgets[@]} -gt 0 ]] || budgets=(0.6 1 4)
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/spip-budget-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
bench/make-realistic-ms.sh "$work/set.ms" 128
args=(--input.ms "$work/set.ms" --image.size 1024 --image.scale 15 --clean.niter 0 --parallel.threads 2
  --faraday.cubes none)
printf "%-12s %-18s %-16s %-14s\n" "budget [GB]" "--plan: host [GB]" "peak RSS [GB]" "RSS / budget"
for budget in "${budgets[@]}"; do
  planned=$(build/src/app/spip "${args[@]}" --parallel.memory_gb "$budget" --output.dir "$work/out" --plan |
    awk '$1 == "0" && $2 ~ /^\[/ { print $5 }')
  /usr/bin/time -f "%M" -o "$work/rss.txt" build/src/app/spip "${args[@]}" --parallel.memory_gb "$budget" \
    --output.dir "$work/out" > "$work/run.log" 2>&1 ||
    { echo "spip failed at parallel.memory_gb $budget; its last lines:"; tail -3 "$work/run.log"; exit 1; }
  rss=$(python3 -c "print(f'{$(cat "$work/rss.txt") / 1e6:.2f}')")
  printf "%-12s %-18s %-16s %-14s\n" "$budget" "$planned" "$rss" "$(python3 -c "print(f'{$rss / $budget:.2f}')")"
  grep -E "memory plan" "$work/run.log" | sed 's/^/  /' | head -2
  rm -rf "$work/out"
done
