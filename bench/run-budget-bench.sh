#!/usr/bin/env bash
# Whether a run keeps to parallel.memory_gb (issue 46), at each budget given: one rank
# of 2 threads at 1024^2 of 15", through the Faraday stage without FDF cubes; prints,
# per budget, what --plan says a rank's host memory will be and the peak RSS
# /usr/bin/time measures. Run after scripts/build.sh.
#   bench/run-budget-bench.sh [budgets in GB ...]   (default 0.6 1 4)
# BUDGET_CASE=gridding (the default): issue 46's gridding-heavy set
# (bench/make-realistic-ms.sh with 128 channels: 64 stations, 88,704 rows a channel),
# imaged dirty. BUDGET_CASE=multiscale: the first 16 channels of
# bench/run-multiscale-bench.sh's diffuse set, cleaned with its multiscale settings.
set -euo pipefail
cd "$(dirname "$0")/.."
budgets=("$@")
[[ ${#budgets[@]} -gt 0 ]] || budgets=(0.6 1 4)
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
work=$(mktemp -d "${TMPDIR:-/tmp}/spip-budget-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
case ${BUDGET_CASE:-gridding} in
  gridding)
    bench/make-realistic-ms.sh "$work/set.ms" 128
    args=(--input.ms "$work/set.ms" --image.size 1024 --image.scale 15 --clean.niter 0 --parallel.threads 2
      --faraday.cubes none) ;;
  multiscale)
    build/src/app/spip-simulate --sky bench/diffuse.sky.txt --telescope data/stations64.tm --out "$work/set.ms" \
      --channels 64 --freq-inc 1.2e6 --times 44 --dump 400 --noise 0.3 --seed 7 > "$work/simulate.log"
    args=(--input.ms "$work/set.ms" --input.channel_end 16 --image.size 1024 --image.scale 15
      --image.weighting briggs --image.robust 0 --parallel.threads 2 --clean.niter 1000000 --clean.mgain 0.8
      --clean.gain 0.1 --clean.peak iquv --clean.auto_threshold 1 --clean.auto_mask 3 --clean.multiscale true
      --clean.scales 0,16,32,64,128 --clean.scale_bias 0.6 --faraday.cubes none --faraday.phi_max 60) ;;
  *) echo "unknown BUDGET_CASE ${BUDGET_CASE} (gridding, multiscale)" >&2; exit 2 ;;
esac
printf "%-12s %-18s %-16s %-14s\n" "budget [GB]" "--plan: host [GB]" "peak RSS [GB]" "RSS / budget"
for budget in "${budgets[@]}"; do
  # A budget the planner refuses (the multiscale case's CLEAN alone needs more than 0.6
  # GB) is a row of its own: the refusal is what a run there would meet.
  status=0
  build/src/app/spip "${args[@]}" --parallel.memory_gb "$budget" --output.dir "$work/out" --plan \
    > "$work/plan.txt" 2>&1 || status=$?
  if ((status == 2)); then
    printf "%-12s refused: %s\n" "$budget" "$(tail -1 "$work/plan.txt" | cut -c1-160)"
    continue
  fi
  ((status == 0)) || { echo "spip --plan failed at parallel.memory_gb $budget:"; tail -3 "$work/plan.txt"; exit 1; }
  planned=$(awk '$1 == "0" && $2 ~ /^\[/ { print $5 }' "$work/plan.txt")
  /usr/bin/time -f "%M" -o "$work/rss.txt" build/src/app/spip "${args[@]}" --parallel.memory_gb "$budget" \
    --output.dir "$work/out" > "$work/run.log" 2>&1 ||
    { echo "spip failed at parallel.memory_gb $budget; its last lines:"; tail -3 "$work/run.log"; exit 1; }
  rss=$(python3 -c "print(f'{$(cat "$work/rss.txt") / 1e6:.2f}')")
  printf "%-12s %-18s %-16s %-14s\n" "$budget" "$planned" "$rss" "$(python3 -c "print(f'{$rss / $budget:.2f}')")"
  grep -E "memory plan" "$work/run.log" | sed 's/^/  /' | head -2
  rm -rf "$work/out"
done
