#!/usr/bin/env bash
# The Faraday stage two ways on the same data (issue 28): the file read-back of commit
# ceacb51, the last to have it (each rank reads its slab's rows of every channel back
# from the restored cubes), against the MPI all-to-all of the planes each rank kept,
# at 1, 2 and 4 ranks of one thread, on the realistic set made with 128 channels
# (bench/make-realistic-ms.sh), 1024^2 of 15", dirty images, faraday.phi_max 200 at
# faraday.dphi 0.5 (801 depths: the exchange, not RM-CLEAN, is what differs).
# The two versions alternate. Prints per version and rank count: the Faraday stage's
# wall time (qa.json) and, for the all-to-all, the slowest rank's time in the exchange,
# the bytes it sent over MPI and read from disk, and each rank's peak RSS over the whole
# run (GNU time: the kept planes are in memory here). The read-back version is built from git history into the work
# folder (CUDA off), or taken from SPIP_READBACK_BIN.
#   bench/run-transpose-bench.sh [ranks...]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ -x build/src/app/spip ]] || scripts/build.sh
ranks=("${@:-1 2 4}")
read -r -a ranks <<< "${ranks[*]}"
work=$(mktemp -d "${TMPDIR:-/tmp}/spip-transpose-bench.XXXXXX")
cleanup() {
  git worktree remove --force "$work/readback-src" > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

readback=${SPIP_READBACK_BIN:-}
if [[ -z $readback ]]; then
  echo "building the read-back version (commit ceacb51) in $work ..." >&2
  git worktree add --detach "$work/readback-src" ceacb51 > /dev/null 2>&1
  cmake -S "$work/readback-src" -B "$work/readback-build" -DCMAKE_BUILD_TYPE=Release -DSPIP_CUDA=OFF > "$work/cmake.log"
  cmake --build "$work/readback-build" --target spip -j "$(nproc)" > "$work/build.log"
  readback=$work/readback-build/src/app/spip
fi
bench/make-realistic-ms.sh "$work/realistic128.ms" 128

common=(--input.ms "$work/realistic128.ms" --image.size 1024 --image.scale 15 --clean.niter 0
        --faraday.phi_max 200 --faraday.dphi 0.5 --faraday.cubes none --catalogue.threshold 0 --parallel.threads 1)
source scripts/mpirun-flags.sh
mpiexec=(mpiexec "${SPIP_MPIRUN_FLAGS[@]}")

# One run: "version ranks faraday_s mpi_bytes disk_bytes rss_mb_per_rank..."
run() {
  local version=$1 bin=$2 n=$3 out=$work/out
  rm -rf "$out"
  "${mpiexec[@]}" -n "$n" /usr/bin/time -f "rss_kb %M" "$bin" "${common[@]}" --output.dir "$out" \
    > "$work/run.log" 2> "$work/run.err" || { cat "$work/run.log" "$work/run.err" >&2; exit 1; }
  python3 - "$version" "$n" "$out/spip-qa.json" "$work/run.err" <<'EOF'
import json, sys
version, n, qa_path, err_path = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
qa = json.load(open(qa_path))
run, ranks = qa["run"], qa["ranks"]
pixels, channels = run["image_pixels"], run["channels"]
if "faraday_mpi_bytes" in ranks[0]:
    mpi = sum(r["faraday_mpi_bytes"] for r in ranks)
    disk = sum(r["faraday_product_bytes_read"] + r["scratch_bytes_read"] for r in ranks)
    exchange = max(r["faraday_exchange_s"] for r in ranks)
else:
    # The read-back reads the restored I, Q, U, V rows of its slab for every channel
    # (no residual without CLEAN): the whole image's four cubes once over the ranks.
    mpi, disk, exchange = 0, 4.0 * 4 * channels * pixels, -1
rss = [int(line.split()[1]) / 1024 for line in open(err_path) if line.startswith("rss_kb")]
print(version, n, run["faraday_s"], exchange, mpi, disk, run["faraday_depths"], *[f"{r:.0f}" for r in sorted(rss)])
EOF
  rm -rf "$out"
}

results=$work/results.txt
for n in "${ranks[@]}"; do
  for pass in 1 2; do
    run read-back "$readback" "$n" >> "$results"
    run transpose build/src/app/spip "$n" >> "$results"
  done
done

python3 - "$results" <<'EOF'
import sys
from collections import defaultdict
rows = defaultdict(list)
for line in open(sys.argv[1]):
    version, n, seconds, exchange, mpi, disk, depths, *rss = line.split()
    rows[(int(n), version)].append((float(seconds), float(exchange), float(mpi), float(disk), int(depths), rss))
print(f"Faraday stage, realistic set: 128 channels, 1024^2, phi_max 200 rad/m^2, dphi 0.5; two runs each, alternating")
print(f"{'ranks':>5} {'version':>10} {'depths':>6} {'stage s (runs)':>16} {'exchange s':>12} {'MPI GB':>7} "
      f"{'disk GB':>7}  peak RSS per rank (MB)")
for (n, version), runs in sorted(rows.items()):
    times = " / ".join(f"{r[0]:.1f}" for r in runs)
    exchange = " / ".join(f"{r[1]:.1f}" for r in runs) if runs[0][1] >= 0 else "-"
    print(f"{n:>5} {version:>10} {runs[0][4]:>6} {times:>16} {exchange:>12} {runs[0][2] / 1e9:>7.2f} "
          f"{runs[0][3] / 1e9:>7.2f}  {' '.join(runs[0][5])}")
EOF
