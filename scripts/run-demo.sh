#!/usr/bin/env bash
# From a clean clone: install, build, and run spip's main job on the bundled OSKAR sample:
#   mpirun -np 2 spip --config configs/demo.cfg
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
source scripts/mpirun-flags.sh
mpirun -np 2 "${SPIP_MPIRUN_FLAGS[@]}" build/src/app/spip --config configs/demo.cfg "$@"
echo
echo "spip demo products (out/demo):"
ls -l out/demo
shopt -s nullglob
fits=(out/demo/*.fits)
if ((${#fits[@]})); then python3 scripts/check_fits_astropy.py "${fits[@]}"; fi

# The polarised sources found, brightest first (every column is in the CSV; the units and
# descriptions are in demo-catalogue.fits).
echo
python3 - out/demo/demo-catalogue.csv <<'PY'
import sys
from pathlib import Path
from astropy.table import Table

path = Path(sys.argv[1])
if not path.exists():
    print(f"no catalogue: {path} is absent")
else:
    table = Table.read(path)
    print(f"polarised-source catalogue {path}: {len(table)} sources")
    if len(table):
        shown = table["name", "ra", "dec", "phi", "phi_err", "pi", "snr", "frac_pol", "faraday_complex"]
        for column, form in {"ra": ".5f", "dec": ".5f", "phi": ".2f", "phi_err": ".2g", "pi": ".4g",
                             "snr": ".0f", "frac_pol": ".3f"}.items():
            shown[column].format = form
        shown.pprint(max_lines=-1, max_width=-1)
PY
# One PNG page of maps, RMSF, FDF and per-channel QA to look at first.
page=$(python3 scripts/quicklook.py out/demo/demo)
echo
echo "quick-look page: $page"
