#!/usr/bin/env bash
# The benches' realistic set: spip-simulate from data/stations64.tm and
# bench/realistic.sky.txt, 64 stations, 64 channels, 44 dumps, 0.3 Jy noise per
# correlation, points and Gaussians with RMs from -80 to +150 rad/m^2 and one source
# with two Faraday components (88,704 rows per channel). Run from the repository root
# after scripts/build.sh. CHANNELS (default 64) divides the same band (120.6 MHz on, 76.8 MHz wide) finer;
# TIMES (default 44) divides the same 4.9 h track finer: 2000 makes the dense set of
# 4.03e6 rows per channel.
#   bench/make-realistic-ms.sh OUT.ms [CHANNELS] [TIMES]
set -euo pipefail
[[ $# -ge 1 && $# -le 3 ]] || { echo "usage: $0 OUT.ms [CHANNELS] [TIMES]" >&2; exit 2; }
times=${3:-44}
build/src/app/spip-simulate --sky bench/realistic.sky.txt --telescope data/stations64.tm --out "$1" \
  --channels "${2:-64}" --freq-inc "$(python3 -c "print(1.2e6 * 64 / ${2:-64})")" --times "$times" \
  --dump "$(python3 -c "print(400 * 44 / $times)")" --noise 0.3 --seed 7 > "$1.simulate.log" 2>&1 ||
  { echo "$0: spip-simulate failed; its last lines:" >&2; tail -5 "$1.simulate.log" >&2; exit 1; }
rm -f "$1.simulate.log"
