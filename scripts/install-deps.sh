#!/usr/bin/env bash
# Installs what spip needs on Debian 12 and is not there yet. Idempotent; run as root.
#   scripts/install-deps.sh          what building and running spip (the demo) need
#   scripts/install-deps.sh --tests  that, and what only the tests and benchmarks use
#   scripts/install-deps.sh --list [--tests]  print the Debian packages, install nothing
# Only the tests use these: WSClean, the peer the tests compare CLEAN's depth with (and
# the benchmarks its speed); Slurm and munge, the one-node cluster the Slurm test submits
# the job scripts to; SAOImage DS9, Xvfb and the XPA tools, to open spip's FITS files in
# DS9 headless.
set -euo pipefail

packages=(
  build-essential cmake pkg-config python3 nlohmann-json3-dev
  casacore-dev casacore-data libcfitsio-dev libfftw3-dev wcslib-dev
  libopenmpi-dev openmpi-bin libboost-program-options-dev
  libgtest-dev libopenblas-dev
)
test_packages=(
  wsclean
  slurm-wlm munge
  saods9 xvfb xpa-tools
)

list=false
for arg in "$@"; do
  case "$arg" in
    --tests) packages+=("${test_packages[@]}") ;;
    --list) list=true ;;
    *) echo "install-deps.sh: unknown option $arg (--tests, --list)" >&2; exit 2 ;;
  esac
done
if $list; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "spip: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# astropy reads every FITS product back in the tests and after the demo.
if ! python3 -c "import astropy" 2>/dev/null; then
  echo "spip: installing astropy (pip)"
  python3 -m pip install -q astropy || pip install -q astropy
fi
# matplotlib draws scripts/quicklook.py's page after the demo and in its test.
if ! python3 -c "import matplotlib" 2>/dev/null; then
  echo "spip: installing matplotlib (pip)"
  python3 -m pip install -q matplotlib || pip install -q matplotlib
fi
