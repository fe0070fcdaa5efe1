#!/usr/bin/env bash
# A channel shared by a group of ranks (issue 28, parallel.ranks_per_channel): the
# realistic set made with one channel (bench/make-realistic-ms.sh: 88,704 rows), 1024^2
# of 15", Briggs 0, Hogbom CLEAN to 3 sigma, imaged by 1 rank of 1 thread and by 2 ranks
# of 1 thread (planning makes them one group). The two alternate, RUNS times each (default
# 5). Prints each run's wall time (mpiexec included) and the imaging time rank 0 logs,
# the ratio of the medians with the spread of the per-pair ratios, each member's share of
# the rows, and the largest difference of the products between the two (restored,
# residual, model, dirty and PSF cubes, of the restored Stokes I peak).
#   bench/run-group-bench.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/mpirun-flags.sh
[[ -x build/src/app/spip ]] || scripts/build.sh
runs=${1:-5}
work=$(mktemp -d "${TMPDIR:-/tmp}/spip-group-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
bench/make-realistic-ms.sh "$work/one.ms" 1
common=(--input.ms "$work/one.ms" --image.size 1024 --image.scale 15 --image.weighting briggs --image.robust 0
        --clean.niter 1000000 --clean.mgain 0.8 --clean.auto_threshold 3 --parallel.threads 1 --output.prefix spip)
one_run() {  # ranks, output folder: prints "wall_s imaging_s"
  local start; start=$(date +%s.%N)
  rm -rf "$2"
  mpiexec "${SPIP_MPIRUN_FLAGS[@]}" -n "$1" build/src/app/spip "${common[@]}" --output.dir "$2" > "$2.log" 2>&1
  echo "$(python3 -c "print(round($(date +%s.%N) - $start, 2))") $(grep -o '^\[spip 0/[0-9]* [^]]*\] waited [0-9.]* s for reads, imaging [0-9.]*' "$2.log" | grep -o '[0-9.]*$')"
}
for ((i = 1; i <= runs; ++i)); do
  echo "1 $(one_run 1 "$work/one")" >> "$work/times"
  echo "2 $(one_run 2 "$work/two")" >> "$work/times"
done
grep -h "member" "$work/two.log" | sed 's/^\[[^]]*\] /  /'
python3 - "$work" <<'PY'
import glob, os, statistics, sys
import numpy as np
from astropy.io import fits
work = sys.argv[1]
rows = [line.split() for line in open(os.path.join(work, "times"))]
wall = {r: [float(x[1]) for x in rows if x[0] == r] for r in ("1", "2")}
imaging = {r: [float(x[2]) for x in rows if x[0] == r] for r in ("1", "2")}
print(f"{'ranks x threads':>16} {'wall s (each run)':>40} {'median':>8} {'imaging s median':>17}")
for r in ("1", "2"):
    print(f"{r + ' x 1':>16} {' '.join(f'{t:.2f}' for t in wall[r]):>40} {statistics.median(wall[r]):8.2f} "
          f"{statistics.median(imaging[r]):17.2f}")
pairs = [a / b for a, b in zip(wall["1"], wall["2"])]
print(f"speed-up of 2 x 1 over 1 x 1: {statistics.median(wall['1']) / statistics.median(wall['2']):.2f} "
      f"(per-pair ratios {min(pairs):.2f} to {max(pairs):.2f}); imaging alone "
      f"{statistics.median(imaging['1']) / statistics.median(imaging['2']):.2f}")
peak = np.nanmax(fits.getdata(os.path.join(work, "one", "spip-image-I.fits")))
worst = max(np.nanmax(np.abs(fits.getdata(f).astype(float) -
                             fits.getdata(f.replace("/one/", "/two/")).astype(float)))
            for f in glob.glob(os.path.join(work, "one", "spip-*.fits"))
            if any(k in f for k in ("-image-", "-residual-", "-model-", "-dirty-", "-psf")))
print(f"largest product difference: {worst / peak:.1e} of the restored Stokes I peak")
PY
