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
