#!/usr/bin/env bash
# The benches' realistic set: spip-simulate from data/stations64.tm and
# bench/realistic.sky.txt, 64 stations, 64 channels, 44 dumps, 0.3 Jy noise per
# correlation, points and Gaussians with RMs from -80 to +150 rad/m^2 and one source
# with two Faraday components (88,704 rows per channel). Run from the repository root
# after scripts/build.sh. CHANNELS (default 64) divides the same band (120.6 MHz on, 76.8 MHz wide) finer.
#   bench/make-realistic-ms.sh OUT.ms [CHANNELS]
set -euo pipefail
[[ $# -ge 1 && $# -le 2 ]] || { echo "usage: $0 OUT.ms [CHANNELS]" >&2; exit 2; }
build/src/app/spip-simulate --sky bench/realistic.sky.txt --telescope data/stations64.tm --out "$1" \
  --channels "${2:-64}" --freq-inc "$(python3 -c "print(1.2e6 * 64 / ${2:-64})")" --times 44 --dump 400 --noise 0.3 --seed 7 > "$1.simulate.log" 2>&1
rm -f "$1.simulate.log"
