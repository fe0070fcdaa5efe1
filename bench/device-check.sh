#!/usr/bin/env bash
# The GPU checks of a session with a lent device, run there from the repository's copy,
# over what bench/device-pack.sh made here. Two calls, back to back on the warm machine
# (the first leaves the baselines in device-kit/site, which git ignores):
#   bench/device-check.sh baselines                     carry device-kit/baselines.tar.xz
#   bench/device-check.sh [tests] [realistic] [dense] [profile]   carry device-kit/spip.tar.xz
# The second unpacks spip and runs what it is given (the first three where none is named):
# `ctest -R cuda_`, then bench/run-gpu-bench.sh on the realistic and the dense set, with
# the ducc0 and cuFINUFFT baselines where the first call left them; `profile` reads the
# gridding kernel's hardware counters with Nsight Compute (ncu). The steps share the
# call's SPIP_DEVICE_SECONDS (580: the tool stops a call at 600 s); each may take 300 s,
# but no more than leaves every later step 150 s of it, so that a hung one leaves the
# others their time. Logs go to $OUT (the device tool's folder) or device-out/; the
# last lines sum them up.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
kit=device-kit
out=${OUT:-$PWD/device-out}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
budget_s=${SPIP_DEVICE_SECONDS:-580}
fail() { echo "device-check: $*" | tee -a "$out/summary.txt"; exit 1; }
say() { echo "$*" | tee -a "$out/summary.txt"; }

# tar.xz ARCHIVE into DIR, through Python's tarfile where the machine has no xz.
unpack() {
  if xz --version >/dev/null 2>&1; then
    tar -xJf "$1" -C "$2"
  else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2], filter="fully_trusted")' "$1" "$2"
  fi
}

describe_machine() {
  say "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
  say "CUDA: $( (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>/dev/null | grep -o 'release [0-9.]*, V[0-9.]*')"
  say "CPU: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
  say "Open MPI: $(mpiexec --version 2>/dev/null | head -1)"
}

# The folders of CUDA's libraries that the loader's cache does not know, on
# LD_LIBRARY_PATH (spip's programs and libcufinufft.so also look in /usr/local/cuda/lib64).
find_cuda_libraries() {
  local dirs=() found lib
  for lib in libcudart.so.13 libcufft.so.12 libcublas.so.13; do
    ldconfig -p | grep -F "$lib " >/dev/null && continue
    found=$(find /usr/local/cuda*/ /usr/lib /opt -name "$lib" -print -quit 2>/dev/null)
    [[ -n $found ]] || fail "no $lib on this machine"
    dirs+=("$(dirname "$found")")
  done
  ((${#dirs[@]} == 0)) && return 0
  local IFS=:
  export LD_LIBRARY_PATH="${dirs[*]}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

install_baselines() {
  [[ -f $kit/baselines.tar.xz ]] || fail "no $kit/baselines.tar.xz: carry it (bench/device-pack.sh makes it)"
  rm -rf "$kit/site"
  unpack "$kit/baselines.tar.xz" "$kit" || fail "$kit/baselines.tar.xz did not unpack"
  PYTHONPATH=$kit/site python3 -c "import ducc0; print('ducc0', ducc0.__version__)" 2>&1 | tail -1 |
    tee -a "$out/summary.txt"
  PYTHONPATH=$kit/site python3 -c "import cufinufft, cupy; print('cufinufft', cufinufft.__version__)" 2>&1 |
    tail -1 | tee -a "$out/summary.txt"
}

unpack_spip() {
  [[ -f $kit/spip.tar.xz ]] || fail "no $kit/spip.tar.xz: carry it (bench/device-pack.sh makes it)"
  rm -rf build "${kit:?}/lib" "$kit/casacore-data"
  unpack "$kit/spip.tar.xz" . || fail "$kit/spip.tar.xz did not unpack"
  say "spip: $(cat "$kit/commit")"
  # The tests hold the absolute paths of the checkout they were built in; a link left by
  # an earlier call on this machine may point to another copy.
  local root here
  root=$(cat "$kit/root")
  here=$(realpath .)
  if [[ $(realpath -m "$root") != "$here" ]]; then
    [[ -e $root && ! -L $root ]] && fail "$root, where the kit was built, exists on this machine too"
    { mkdir -p "$(dirname "$root")" && ln -sfn "$here" "$root"; } || fail "cannot link $root to $here"
  fi
  # The tests start spip under the mpiexec they were built with.
  local mpiexec
  mpiexec=$(command -v mpiexec) || fail "no mpiexec on this machine"
  [[ -e /usr/bin/mpiexec ]] || ln -s "$mpiexec" /usr/bin/mpiexec || fail "cannot link /usr/bin/mpiexec"
  echo "measures.directory: $(realpath "$kit/casacore-data")" > "$TMPDIR/casarc"
  export CASARCFILES=$TMPDIR/casarc
  build/src/app/spip --version >/dev/null 2>"$out/spip-version.err" ||
    { ldd build/src/app/spip | grep 'not found' >> "$out/spip-version.err"
      fail "spip does not start: $(tail -3 "$out/spip-version.err" | tr '\n' ' ')"; }
}

# The limit of a step with $1 steps after it.
limit_for() {
  local left=$((budget_s - SECONDS - 150 * $1))
  ((left > 300)) && left=300
  ((left < 30)) && left=30
  echo "$left"
}

run_tests() {
  # Not the CUB 12.0 header check: it compiles in CI here, and there it would wait on PyPI.
  # Verbose, for the "[ measured ]" lines of the tests that pass.
  local limit
  limit=$(limit_for "$1")
  (cd build && timeout "$limit" ctest -R cuda_ -E cuda_cub_cuda12_0_headers -V) > "$out/ctest.log" 2>&1 || status=1
  say "ctest -R cuda_ (limit $limit s): $(grep -E '% tests passed|Total Test time' "$out/ctest.log" | tr '\n' ' ')"
  grep -E '^ *[0-9]+/[0-9]+ Test' "$out/ctest.log" | tee -a "$out/summary.txt"
  grep -F '[ measured ]' "$out/ctest.log" | sed 's/^[0-9]*: //' > "$out/measured.txt"
  grep -E 'largest difference|agree' "$out/measured.txt" | tee -a "$out/summary.txt"
}

run_bench() {
  local set=$1 limit
  limit=$(limit_for "$2")
  say "--- $set (limit $limit s)"
  PYTHONPATH=$PWD/$kit/site timeout "$limit" bench/run-gpu-bench.sh "$set" > "$out/$set.log" 2>&1 ||
    { status=1; say "run-gpu-bench.sh $set failed: $(tail -2 "$out/$set.log" | tr '\n' ' ')"; }
  grep -E 'visibilities/s|values/s|Faraday samples/s|GB/s|pixels/s|whole job|  (gpu|cpu): |ducc0|cuFINUFFT|no usable GPU' \
    "$out/$set.log" | tee -a "$out/summary.txt"
}

# What bounds the gridding kernel: ncu's full set on its first three launches in
# bench_gpu on two channels of the realistic set at 1e-4 (a launch grids a batch of
# w-planes of a channel's images and PSF together as lanes; bench_gpu prints the batches
# per channel), at the GPU's own clocks as the benches run. ncu gets what making the
# set leaves of the step's time limit. The report, its details page and its source page (stall
# samples per SASS instruction; the build has no line tables, which would add 5 MB to
# every program the kit carries) come back; the headline figures go to the summary.
run_profile() {
  local limit ncu ms=$TMPDIR/profile.ms start=$SECONDS
  limit=$(limit_for "$1")
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | tail -1)
  [[ -n $ncu ]] || { say "--- profile: no ncu on this machine"; return; }
  say "--- profile (limit $limit s): $("$ncu" --version | tail -1)"
  timeout "$limit" bench/make-realistic-ms.sh "$ms" > "$out/profile.log" 2>&1 ||
    { status=1; say "profile: the realistic set was not made: $(tail -2 "$out/profile.log" | tr '\n' ' ')"; return; }
  local left=$((limit - (SECONDS - start)))
  ((left >= 30)) || { status=1; say "profile: making the set left ${left} s of ${limit} s for ncu"; rm -rf "$ms"; return; }
  timeout "$left" "$ncu" --clock-control none --kernel-name 'regex:(^|:)grid_subgrids' --launch-count 3 --set full \
    --force-overwrite --export "$out/grid_subgrids" \
    build/bench/bench_gpu "$ms" 2 1024 15 - 1e-4 >> "$out/profile.log" 2>&1 ||
    { status=1; say "profile: ncu failed: $(grep -m2 -E 'ERROR|==ERR' "$out/profile.log" | tr '\n' ' ')"; }
  rm -rf "$ms"
  [[ -f $out/grid_subgrids.ncu-rep ]] ||
    { status=1; say "profile: no report: $(grep -m2 -E 'ERROR|==ERR' "$out/profile.log" | tr '\n' ' ')"; return; }
  "$ncu" --import "$out/grid_subgrids.ncu-rep" --page details > "$out/profile-details.txt" 2>&1
  "$ncu" --import "$out/grid_subgrids.ncu-rep" --page source --csv --print-source sass \
    > "$out/profile-source.csv" 2>&1 || say "profile: no source page ($(tail -1 "$out/profile-source.csv"))"
  grep -E 'grid_subgrids_kernel|^ *(Duration|Compute \(SM\) Throughput|Memory Throughput|Executed Ipc Active|Achieved Occupancy|Theoretical Occupancy|Registers Per Thread|Block Limit (Registers|Shared Mem|Warps)|Warp Cycles Per Issued Instruction|Executed Instructions|No Eligible|Issued Warp Per Scheduler|L1/TEX Hit Rate|Mem Busy|Max Bandwidth) ' \
    "$out/profile-details.txt" | tee -a "$out/summary.txt"
}

if [[ ${1:-} == baselines ]]; then
  (($# == 1)) || fail "baselines is a call of its own"
else
  (($# > 0)) || set -- tests realistic dense
  for step in "$@"; do
    [[ $step == tests || $step == realistic || $step == dense || $step == profile ]] ||
      fail "unknown step $step (tests, realistic, dense, profile, or baselines alone)"
  done
fi
export TMPDIR
TMPDIR=$(mktemp -d /tmp/spip-device.XXXXXX)
trap 'rm -rf "$TMPDIR"' EXIT
rm -f "$out/summary.txt"
describe_machine
find_cuda_libraries
if [[ $1 == baselines ]]; then
  install_baselines
  exit 0
fi
unpack_spip
[[ -d $kit/site ]] || say "no baselines here: ducc0 and cuFINUFFT are left out (run 'baselines' first on the same warm machine)"
status=0
later=$#
for step in "$@"; do
  ((later--))
  case $step in
    tests) run_tests "$later" ;;
    profile) run_profile "$later" ;;
    *) run_bench "$step" "$later" ;;
  esac
done
exit "$status"
