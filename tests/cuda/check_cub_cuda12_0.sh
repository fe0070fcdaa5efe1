#!/usr/bin/env bash
# Compiles the CUDA sources that call CUB against CUB 2.0, the headers CUDA 12.0 (the
# oldest toolkit CMake accepts) ships, taken from NVIDIA's CCCL wheel on PyPI and put in
# front of the installed toolkit's, all in this test's own TMPDIR (fresh_tmpdir.sh makes
# it), nvcc's files too. Exits 77 (skipped) where PyPI cannot be reached.
#   check_cub_cuda12_0.sh NVCC PROJECT_DIR SOURCE...
set -euo pipefail
nvcc=$1 project=$2 work=$TMPDIR
shift 2
headers=$work/nvidia/cuda_cccl/include
if ! python3 -m pip download --quiet --no-deps --dest "$work" "nvidia-cuda-cccl-cu12==12.0.*" > "$work/pip.log" 2>&1; then
  echo "check_cub_cuda12_0: cannot download the CUDA 12.0 CCCL wheel: skipped"
  cat "$work/pip.log"
  exit 77
fi
python3 -m zipfile -e "$work"/nvidia_cuda_cccl_cu12-12.0.*.whl "$work"
version=$(sed -n 's/^#define CUB_VERSION \([0-9]*\).*/\1/p' "$headers/cub/version.cuh")
[[ $version == 2000* ]] || { echo "check_cub_cuda12_0: expected CUB 2.0.x, found CUB_VERSION $version" >&2; exit 1; }
for source in "$@"; do
  # The old headers use vector types that CUDA 13 deprecates: their warnings are not ours.
  "$nvcc" -I"$headers" -I"$project/include" -std=c++17 --generate-code=arch=compute_90,code=sm_90 \
    -Xcompiler=-Wno-deprecated-declarations -c "$project/$source" -o "$work/$(basename "$source").o"
  echo "$source compiles against CUB $version (CUDA 12.0)"
done
