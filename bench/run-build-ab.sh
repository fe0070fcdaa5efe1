#!/usr/bin/env bash
# Two builds of spip run alternately on the realistic set (bench/make-realistic-ms.sh),
# cleaned as bench/run-imaging-bench.sh cleans it, in one process: wall time, peak RSS,
# the new/old ratio with its spread, and whether every FITS product of the last pair
# is the same bit for bit (pixels and BMAJ/BMIN/BPA). For a change that must not move
# the products. Run after scripts/build.sh; build the old commit elsewhere, e.g.
#   git worktree add /tmp/old COMMIT && (cd /tmp/old && scripts/build.sh)
#   bench/run-build-ab.sh /tmp/old/build/src/app/spip build/src/app/spip [repeats] [threads]
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { echo "usage: $0 OLD_SPIP NEW_SPIP [repeats] [threads]" >&2; exit 2; }
old=$(realpath "$1") new=$(realpath "$2") repeats=${3:-3} threads=${4:-2}
[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
work=$(mktemp -d /tmp/spip-ab.XXXXXX)
trap 'rm -rf "$work"' EXIT
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=$threads
bench/make-realistic-ms.sh "$work/realistic.ms"
options=(--input.ms "$work/realistic.ms" --image.size 1024 --image.scale 15 --image.weighting briggs --image.robust 0
         --parallel.threads "$threads" --faraday.cubes none --clean.niter 1000000 --clean.mgain 0.8 --clean.gain 0.1
         --clean.peak iquv --clean.auto_threshold 3)
printf '%-4s %10s %10s %10s %10s %8s\n' try "old [s]" "old [MB]" "new [s]" "new [MB]" new/old
ratios=()
for ((try = 1; try <= repeats; ++try)); do
  for tag in old new; do
    rm -rf "$work/$tag"
    /usr/bin/time -f "%e %M" -o "$work/$tag.time" "${!tag}" "${options[@]}" --output.dir "$work/$tag" > "$work/$tag.log" 2>&1
    read -r "${tag}_s" "${tag}_kb" < "$work/$tag.time"
  done
  ratio=$(echo "$new_s / $old_s" | bc -l)
  ratios+=("$ratio")
  printf '%-4s %10.1f %10.0f %10.1f %10.0f %8.2f\n' "$try" "$old_s" "$((old_kb / 1024))" "$new_s" "$((new_kb / 1024))" "$ratio"
done
printf '%s\n' "${ratios[@]}" | sort -g | awk '{r[NR] = $1} END {
  m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
  printf "new / old wall time, median of %d: %.2f (range %.2f-%.2f)\n", NR, m, r[1], r[NR]}'
python3 - "$work/old" "$work/new" <<'PY'
import glob, os, sys
import numpy as np
from astropy.io import fits
old_dir, new_dir = sys.argv[1:]
differ = []
paths = sorted(glob.glob(os.path.join(old_dir, "*.fits")))
for path in paths:
    with fits.open(path) as a, fits.open(os.path.join(new_dir, os.path.basename(path))) as b:
        same = all(a[0].header.get(k) == b[0].header.get(k) for k in ("BMAJ", "BMIN", "BPA"))
        for ha, hb in zip(a, b):
            if ha.data is None or not same:
                continue
            if isinstance(ha, fits.BinTableHDU):
                same = all(np.array_equal(ha.data[c], hb.data[c]) for c in ha.columns.names)
            else:
                same = np.array_equal(ha.data.view(np.uint32), hb.data.view(np.uint32))
        if not same:
            differ.append(os.path.basename(path))
print(f"last pair: {len(paths)} FITS products compared, {len(differ)} differ" + (": " + ", ".join(differ) if differ else ""))
PY
