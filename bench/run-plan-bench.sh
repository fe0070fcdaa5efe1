#!/usr/bin/env bash
# How well `spip --plan` predicts a run, and the per-channel and per-pixel terms of its
# cost model measured at 1, 2 and 4 ranks (docs/scaling.md builds on them).
#   bench/run-plan-bench.sh [cases] [rank counts]
# For each case and rank count: the plan's estimate from rates timed here on a
# synthetic channel, and from the qa.json of a run of the first 8 channels; then the
# run itself under mpirun (ranks x threads = this machine's cores where possible;
# more ranks than cores share them, which the plan, made for a core per thread, does
# not foresee). Prints estimate / measured for wall time, the
# planned peak memory per rank against the measured peak RSS, the planned product
# bytes against the bytes written, and the terms the run measured. Run after
# scripts/build.sh; deletes its products as it goes.
# Cases: `sample` (configs/demo.cfg: 40 channels, 512^2, 241 depths) and `realistic`
# (bench/run-imaging-bench.sh's set: 64 stations, 64 channels, 1024^2, auto-threshold 3,
# 801 depths to +-200 rad/m^2, one Faraday depth cube).
set -euo pipefail
cd "$(dirname "$0")/.."
cases=${1:-"sample realistic"}
rank_counts=${2:-"1 2 4"}
cores=$(nproc)
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
source scripts/mpirun-flags.sh
work=$(mktemp -d /tmp/spip-plan-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

hms_to_s() { awk -F: '{print $1 * 3600 + $2 * 60 + $3}' <<<"$1"; }

# The plan's slowest rank (seconds), its largest memory per rank (GB) and its products (GB).
# The memory is the peak the plan asks Slurm for, a quarter less: the suggested
# --mem-per-cpu (MiB) times --cpus-per-task over 1.25 (the Faraday row group is not held
# beside imaging, so the table's host and Faraday columns do not add).
plan_figures() {
  awk '/^ +[0-9]+ +\[/ { split($NF, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]; if (s > time) time = s }
       /^products:/ { disk = $2 }
       /^suggested:/ { for (i = 1; i <= NF; ++i) { if ($i ~ /^--cpus-per-task=/) { split($i, a, "="); cpus = a[2] }
                                                   if ($i ~ /^--mem-per-cpu=/) { split($i, b, "="); per_cpu = b[2] + 0 } }
                       mem = per_cpu * cpus / 1.25 * 1048576 / 1e9 }
       END { printf "%d %.2f %.2f\n", time, mem, disk }' "$1"
}

run_case() {  # name, spip options...
  local name=$1; shift
  echo "== $name ($cores cores)"
  printf '%-6s %-7s %9s %9s %9s %8s %8s %9s %9s %8s %8s   %s\n' ranks threads "plan [s]" "qa [s]" "run [s]" \
    "plan/run" "qa/run" "plan GB" "RSS GB" "disk GB" "plan GB" "terms measured by the run"
  for ranks in $rank_counts; do
    local threads=$((cores / ranks)); ((threads >= 1)) || threads=1
    local out=$work/$name-$ranks
    build/src/app/spip "$@" --output.dir "$out" --parallel.threads "$threads" --plan --plan-ranks "$ranks" > "$work/plan.txt"
    read -r plan_s plan_mem plan_disk < <(plan_figures "$work/plan.txt")
    # The workflow docs/cluster.md suggests: time the first 8 channels with the job's
    # settings and threads per rank, then plan the whole job from their qa.json.
    build/src/app/spip "$@" --output.dir "$work/short" --parallel.threads "$threads" --input.channel_end 8 > /dev/null
    build/src/app/spip "$@" --output.dir "$out" --parallel.threads "$threads" --plan --plan-ranks "$ranks" \
      --plan-rates "$work/short/"*-qa.json > "$work/plan-qa.txt"
    rm -rf "$work/short"
    read -r qa_s _ _ < <(plan_figures "$work/plan-qa.txt")
    # Open MPI binds each of up to 2 ranks to one core: a rank's threads would share it.
    /usr/bin/time -f "%e %M" -o "$work/time" mpirun -np "$ranks" "${SPIP_MPIRUN_FLAGS[@]}" --bind-to none build/src/app/spip "$@" \
      --output.dir "$out" --parallel.threads "$threads" > "$work/run.log" 2>&1
    read -r run_s rss_kb < "$work/time"
    local disk; disk=$(du -sb "$out" | awk '{printf "%.2f", $1 / 1e9}')
    local terms; terms=$(python3 - "$out"/*-qa.json <<'PY'
import json, sys
qa = json.load(open(sys.argv[1]))
run, ranks = qa["run"], qa["ranks"]
restore = sum(r["restore_s"] for r in ranks) / sum(r["channel_end"] - r["channel_begin"] for r in ranks)
image = [c["image_s"] for c in qa["channels"] if c["image_s"]]
read = sum(r["read_s"] for r in ranks) / sum(r["channels_imaged"] for r in ranks)
print(f"image {sum(image) / len(image):.3f} s/ch, restore {restore:.3f} s/ch, read wait {read:.3f} s/ch, "
      f"Faraday {run['faraday_s'] * run['ranks'] / run['image_pixels'] * 1e6:.1f} us/px, "
      f"set-up {run['setup_s']:.2f} s, create {run['create_s']:.2f} s")
PY
)
    printf '%-6s %-7s %9s %9s %9s %8.2f %8.2f %9s %9.2f %8s %8s   %s\n' "$ranks" "$threads" "$plan_s" "$qa_s" "$run_s" \
      "$(echo "$plan_s / $run_s" | bc -l)" "$(echo "$qa_s / $run_s" | bc -l)" \
      "$plan_mem" "$(echo "$rss_kb / 1000000" | bc -l)" "$disk" "$plan_disk" "$terms"
    rm -rf "$out"
  done
}

for c in $cases; do
  case $c in
    sample) run_case sample --config configs/demo.cfg ;;
    realistic)
      bench/make-realistic-ms.sh "$work/realistic.ms"
      run_case realistic --input.ms "$work/realistic.ms" --image.size 1024 --image.scale 15 --image.weighting briggs \
        --image.robust 0 --clean.niter 1000000 --clean.mgain 0.8 --clean.gain 0.1 --clean.peak iquv \
        --clean.auto_threshold 3 --faraday.phi_max 200 --faraday.dphi 0.5 --faraday.cubes amp-clean
      rm -rf "$work/realistic.ms" ;;
    *) echo "unknown case $c (sample, realistic)" >&2; exit 2 ;;
  esac
done
