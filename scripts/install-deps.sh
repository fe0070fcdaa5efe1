#!/usr/bin/env bash
# Installs what spip needs on Debian 12 and is not there yet. Idempotent; run as root.
#   scripts/install-deps.sh          what building and running spip (the demo) need
#   scripts/install-deps.sh --tests  that, and what only the tests and benchmarks use
#   scripts/install-deps.sh --list [--tests]  print the Debian packages, install nothing
# Only the tests use these: WSClean, the peer the tests compare CLEAN's depth with (and
# the benchmarks its speed); Slurm and munge, the one-node cluster the Slurm test submits
# the job scripts to; SAOImage DS9, Xvfb and the XPA tools, to open spip's FITS files in
# DS9 headless; HEASARC's fitsverify, to judge them against the FITS standard.
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
  fitsverify
)

list=false
tests=false
for arg in "$@"; do
  case "$arg" in
    --tests) packages+=("${test_packages[@]}"); tests=true ;;
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

# astropy reads every FITS product back in the tests and after the demo; matplotlib
# draws scripts/quicklook.py's page after the demo and in its test. Debian's own python3
# takes Debian's packages (its pip refuses to install beside them, PEP 668); another
# python3 first on PATH (a pyenv or conda one) takes them from PyPI.
for module in astropy matplotlib; do
  python3 -c "import $module" 2>/dev/null && continue
  if [ "$(readlink -f "$(command -v python3)")" = "$(readlink -f /usr/bin/python3)" ]; then
    echo "spip: installing python3-$module"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends "python3-$module" >/dev/null ||
      { apt-get update -qq && apt-get install -y -qq --no-install-recommends "python3-$module" >/dev/null; }
  else
    echo "spip: installing $module (pip)"
    python3 -m pip install -q "$module"
  fi
done

# With --tests: RM-Tools and rmtable, the references of the Faraday stage on other
# imagers' cubes and of the RMTable catalogue (tests/scripts/check_cube_faraday.py), and
# the everybeam wheel, the primary beam's (check_beam_everybeam.py), in a virtual
# environment of their own ($SPIP_TEST_VENV, default /opt/spip/test-venv), so that their
# pinned numpy does not touch the system's Python. everybeam has wheels for x86-64
# Linux only; where pip finds none, its test is disabled and the others still run.
if $tests; then
  venv=${SPIP_TEST_VENV:-/opt/spip/test-venv}
  if ! "$venv/bin/python" -c 'import importlib.metadata as m, RMtools_3D, rmtable
assert m.version("RM-Tools") == "1.5.0"' 2>/dev/null; then
    echo "spip: installing RM-Tools 1.5.0 and rmtable into $venv (pip)"
    if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
      export DEBIAN_FRONTEND=noninteractive
      apt-get install -y -qq --no-install-recommends python3-venv >/dev/null ||
        { apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-venv >/dev/null; }
    fi
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "RM-Tools==1.5.0" "rmtable==1.2.1"
  fi
  if ! "$venv/bin/python" -c 'import importlib.metadata as m, everybeam
assert m.version("everybeam") == "0.9.1"' 2>/dev/null; then
    echo "spip: installing everybeam 0.9.1 into $venv (pip)"
    "$venv/bin/pip" install -q "everybeam==0.9.1" ||
      echo "spip: no everybeam 0.9.1 for this machine: the beam_everybeam test is disabled"
  fi
fi
