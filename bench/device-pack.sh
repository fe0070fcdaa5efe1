#!/usr/bin/env bash
# Makes, on this machine, what bench/device-check.sh needs on a lent GPU machine. That
# machine has CUDA 13, CMake, Open MPI and Python, but none of spip's Debian libraries,
# and reaches no network. Two files under device-kit/ (ignored by git), each small
# enough to travel in one call beside the repository (64 MiB together):
#   device-kit/spip.tar.xz     spip, spip-simulate, bench_gpu and the cuda_ tests as built
#                              here, at their build/ paths with CTest's files; the shared
#                              libraries they load that the machine lacks (machine_library
#                              says which are its own), found through their RPATH; and
#                              casacore's measures tables.
#   device-kit/baselines.tar.xz  ducc0 (PyPI's wheel), and cuFINUFFT: PyPI's Python package
#                              with a libcufinufft.so built here for sm_90 against CUDA 13
#                              (PyPI's library needs CUDA 12's runtime, which that
#                              machine lacks).
# FINUFFT_SOURCE is a FINUFFT checkout (the `fetch` tool's mirror of
# flatironinstitute/finufft); its tag v2.5.1 is built once, about 4 minutes on two
# cores, and kept in device-kit/cufinufft/ for later packs. Without it, and with nothing
# kept, the baselines are ducc0 alone.
#   bench/device-pack.sh [FINUFFT_SOURCE]
set -euo pipefail
cd "$(dirname "$0")/.."
kit=device-kit
finufft_tag=v2.5.1
ducc0_version=0.42.0
mib() { python3 -c "print(f'{$1 / 2**20:.1f} MiB')"; }

need_tools() {
  local missing=()
  command -v patchelf >/dev/null || missing+=(patchelf)
  command -v xz >/dev/null || missing+=(xz-utils)
  command -v unzip >/dev/null || missing+=(unzip)
  ((${#missing[@]} == 0)) || { apt-get update -qq && apt-get install -y -qq "${missing[@]}" >/dev/null; }
}

# Libraries taken from the device machine, not carried: the C runtime and libstdc++,
# which must be the machine's own, CUDA's runtime and cuFFT, and Open MPI's core with what it
# loads (a copy of these beside the machine's mpiexec and plugins would clash with them).
# The rest is carried, also where the machine may have its own (libz, libgomp).
machine_library() {
  [[ $1 =~ /(libc|libm|libdl|libpthread|librt|libresolv|libgcc_s|libstdc\+\+)\.so ]] ||
    [[ $1 =~ /(libmpi|libopen-rte|libopen-pal|libhwloc|libevent[a-z_-]*|libudev)[.-] ]] ||
    [[ $1 =~ /(libcudart|libcufft)\.so ]]
}

pack_spip() {
  [[ -x /usr/local/cuda/bin/nvcc ]] || { echo "$0: no CUDA toolkit at /usr/local/cuda" >&2; exit 1; }
  scripts/build.sh >/dev/null
  grep -q '^CMAKE_CUDA_COMPILER:' build/CMakeCache.txt ||
    { echo "$0: build/ has no CUDA backend (SPIP_CUDA=OFF?)" >&2; exit 1; }
  local stage
  stage=$(mktemp -d "${TMPDIR:-/tmp}/spip-device-pack.XXXXXX")
  trap 'rm -rf "$stage"' RETURN
  local programs=(build/src/app/spip build/src/app/spip-simulate build/bench/bench_gpu)
  mapfile -t -O ${#programs[@]} programs < <(find build/tests/cuda -maxdepth 1 -type f -executable | sort)
  for p in "${programs[@]}"; do
    install -D -m 755 "$p" "$stage/$p"
    strip --strip-unneeded "$stage/$p"
  done
  # CTest's files: ctest -R cuda_ reads the whole tree of them.
  find build -name CTestTestfile.cmake -o -name '*_include.cmake' -o -name '*_tests.cmake' |
    while read -r f; do install -D -m 644 "$f" "$stage/$f"; done
  mkdir -p "$stage/$kit/lib"
  for p in "${programs[@]}"; do ldd "$p"; done | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | sort -u |
    while read -r lib; do
      machine_library "$lib" || cp -L "$lib" "$stage/$kit/lib/"
    done
  for lib in "$stage/$kit/lib"/*; do patchelf --force-rpath --set-rpath '$ORIGIN' "$lib"; done
  # DT_RPATH, unlike RUNPATH, also serves the libraries a program's libraries load.
  for p in "${programs[@]}"; do
    local up
    up=$(python3 -c "import os; print(os.path.relpath('$kit/lib', os.path.dirname('$p')))")
    patchelf --force-rpath --set-rpath "\$ORIGIN/$up:/usr/local/cuda/lib64" "$stage/$p"
  done
  # The measures tables casacore reads (leap seconds, observatories), not the planetary
  # ephemerides beside them (16 MB) that it does not.
  cp -rL /var/lib/casacore/data "$stage/$kit/casacore-data"
  pwd > "$stage/$kit/root"  # the absolute paths compiled into the tests
  git rev-parse --short HEAD > "$stage/$kit/commit"
  [[ -z $(git status --porcelain) ]] || echo "$(cat "$stage/$kit/commit") with uncommitted changes" > "$stage/$kit/commit"
  mkdir -p "$kit"
  tar -C "$stage" -cf - build "$kit" | xz -T0 -6 > "$kit/spip.tar.xz.part"
  mv "$kit/spip.tar.xz.part" "$kit/spip.tar.xz"
  echo "$kit/spip.tar.xz: $(mib "$(stat -c %s "$kit/spip.tar.xz")"), $(ls "$stage/$kit/lib" | wc -l) libraries, commit $(cat "$stage/$kit/commit")"
}

build_cufinufft() {
  local source=$1 src build
  src=$(mktemp -d "${TMPDIR:-/tmp}/finufft-src.XXXXXX")
  build=$(mktemp -d "${TMPDIR:-/tmp}/finufft-build.XXXXXX")
  git -C "$source" archive "$finufft_tag" | tar -x -C "$src"
  # FINUFFT fetches its dependencies through CPM; a CUDA-only build asks only for CCCL,
  # which CUDA 13 ships with its CMake package. This stand-in finds that one offline.
  mkdir -p "$build/cpm/cpm"
  cat > "$build/cpm/cpm/CPM_0.42.0.cmake" <<'EOF'
macro(CPMAddPackage)
  cmake_parse_arguments(_offline "" "NAME" "" ${ARGN})
  if(NOT _offline_NAME STREQUAL "CCCL")
    message(FATAL_ERROR "offline build: no package ${_offline_NAME}")
  endif()
  find_package(CCCL REQUIRED CONFIG HINTS ${CUDAToolkit_LIBRARY_DIR}/cmake/cccl)
endmacro()
EOF
  cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFINUFFT_USE_CPU=OFF -DFINUFFT_USE_CUDA=ON \
    -DFINUFFT_STATIC_LINKING=OFF -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER=/usr/local/cuda/bin/nvcc \
    -DCPM_SOURCE_CACHE="$build/cpm" >/dev/null
  cmake --build "$build" -j "$(nproc)" >/dev/null
  mkdir -p "$kit/cufinufft"
  cp "$build/libcufinufft.so" "$kit/cufinufft/"
  strip --strip-unneeded "$kit/cufinufft/libcufinufft.so"
  # Python loads it with ctypes, before anything has set LD_LIBRARY_PATH for CUDA.
  patchelf --set-rpath /usr/local/cuda/lib64 "$kit/cufinufft/libcufinufft.so"
  echo "$finufft_tag" > "$kit/cufinufft/version"
  rm -rf "$src" "$build"
}

# Unpacked here into a folder that PYTHONPATH names there: ducc0's wheel is a zip of
# its files, and xz packs the two libraries to about half of what the wheels take.
pack_baselines() {
  local stage
  stage=$(mktemp -d "${TMPDIR:-/tmp}/spip-device-baselines.XXXXXX")
  trap 'rm -rf "$stage"' RETURN
  local wheel_args=(--no-deps --only-binary=:all: --python-version 3.12 --implementation cp
                    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
                    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -q -d "$stage/wheels")
  python3 -m pip download "${wheel_args[@]}" "ducc0==$ducc0_version"
  mkdir -p "$stage/site"
  unzip -q "$stage"/wheels/ducc0-*.whl -d "$stage/site"
  if [[ ! -f $kit/cufinufft/libcufinufft.so && -n ${1:-} ]]; then build_cufinufft "$1"; fi
  if [[ -f $kit/cufinufft/libcufinufft.so ]]; then
    local version
    version=$(cat "$kit/cufinufft/version")
    python3 -m pip download "${wheel_args[@]}" "cufinufft==${version#v}"
    unzip -q "$stage"/wheels/cufinufft-*.whl 'cufinufft/*.py' -d "$stage/site"
    cp "$kit/cufinufft/libcufinufft.so" "$stage/site/cufinufft/"
  else
    echo "baselines without cuFINUFFT: give a FINUFFT checkout (bench/device-pack.sh FINUFFT_SOURCE)"
  fi
  tar -C "$stage" -cf - site | xz -T0 -6 > "$kit/baselines.tar.xz.part"
  mv "$kit/baselines.tar.xz.part" "$kit/baselines.tar.xz"
  echo "$kit/baselines.tar.xz: $(mib "$(stat -c %s "$kit/baselines.tar.xz")")"
}

need_tools
pack_spip
pack_baselines "${1:-}"
# What travels with each call: the files git tracks or does not ignore.
tree=$(python3 -c '
import os, subprocess
listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                        capture_output=True, check=True).stdout.split(b"\0")
print(sum(os.path.getsize(f) for f in listed if f and os.path.isfile(f)))')
for f in "$kit/spip.tar.xz" "$kit/baselines.tar.xz"; do
  total=$((tree + $(stat -c %s "$f")))
  echo "the repository's files and $f: $(mib "$total") of the 64 MiB a call carries"
  ((total < 64 * 2**20)) || { echo "$0: $f does not fit one call" >&2; exit 1; }
done
