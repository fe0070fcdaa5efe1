#!/usr/bin/env bash
# The benches' realistic set: spip-simulate from data/stations64.tm and
# bench/realistic.sky.txt, 64 stations, 64 channels, 44 dumps, 0.3 Jy noise per
# correlation, points and Gaussians with RMs from -80 to +150 rad/m^2 and one source
# with two Faraday components (88,704 rows per channel). Run from the repository root
# after scripts/build.sh.
#   bench/make-realistic-ms.sh OUT.ms
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 OUT.ms" >&2; exit 2; }
build/src/app/spip-simulate --sky bench/realistic.sky.txt --telescope data/stations64.tm --out "$1" \
  --channels 64 --times 44 --dump 400 --noise 0.3 --seed 7 > "$1.simulate.log" 2>&1
rm -f "$1.simulate.log"
