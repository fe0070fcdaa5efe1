#!/usr/bin/env bash
# spip's Faraday stage side by side with RM-Tools 1.3.1 on the same data: the demo job on
# the sample (2 ranks of one thread, the CPU backend), then rmsynth3d, rmclean3d and
# rmtools_peakfitcube on spip's own restored Q and U cubes, on spip's phi grid, with
# spip's RM-CLEAN cutoff, gain and iteration cap. Prints wall time, peak RSS and Faraday
# samples per second of both, and how far the dirty and clean FDF cubes and the peak
# maps agree (bench/compare_rmtools.py). Needs ~6 GB in /tmp, which it deletes
# (RMTOOLS_BENCH_KEEP=1 keeps it). Run after scripts/build.sh.
#   bench/run-rmtools-bench.sh [ranks]
# RM-Tools goes into a virtual environment, build/rmtools-venv or $RMTOOLS_VENV.
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=${1:-2}
venv=${RMTOOLS_VENV:-build/rmtools-venv}
if [[ ! -x build/src/app/spip ]]; then
  echo "run-rmtools-bench: build/src/app/spip does not exist; run scripts/build.sh first" >&2
  exit 1
fi
work=$(mktemp -d /tmp/spip-rmtools-bench.XXXXXX)
if [[ ${RMTOOLS_BENCH_KEEP:-0} == 1 ]]; then echo "keeping $work"; else trap 'rm -rf "$work"' EXIT; fi
# spip may be rebuilt while this runs; one copy taken now is what gets measured.
mkdir -p "$work/bin" "$work/rmt"
cp build/src/app/spip "$work/bin/spip"

[[ -x /usr/bin/time ]] || apt-get install -y -qq time >/dev/null
# 1.4 and later need FINUFFT. 1.3.1 imports tqdm without declaring it, and still uses
# np.float and np.int, which numpy 1.24 removed (it declares numpy < 1.24; the pin says
# so here too). numpy 1.23 has wheels up to Python 3.11, Debian 12's.
if ! "$venv/bin/python" -c 'import importlib.metadata as m, tqdm, RMtools_3D
assert m.version("RM-Tools") == "1.3.1"' 2>/dev/null; then
  echo "run-rmtools-bench: installing RM-Tools 1.3.1 into $venv"
  if ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
    apt-get install -y -qq python3-venv >/dev/null || { apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null; }
  fi
  [[ -x $venv/bin/python ]] || python3 -m venv "$venv"
  "$venv/bin/pip" install -q "RM-Tools==1.3.1" "numpy<1.24" tqdm
fi
py=$venv/bin/python
rmt=$venv/bin

export OPENBLAS_NUM_THREADS=1
source scripts/mpirun-flags.sh

# /usr/bin/time -v: the outer one times the whole job, one per rank gives each rank's
# peak RSS (the outer one would only see the largest process).
tv() {  # time -v file: "wall_s rss_MB"
  awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, t, ":"); s = 0; for (i = 1; i <= n; ++i) s = s * 60 + t[i]}
              /Maximum resident set size/ {rss = $2 / 1024}
              END {printf "%.2f %.0f", s, rss}' "$1"
}

# RM-Tools runs without -i (no Stokes I model) and makes no source catalogue, so spip
# neither divides Q and U by I nor makes one, in builds that have those keys.
extra=()
help=$("$work/bin/spip" --help 2>&1)
if grep -q 'faraday\.fractional ' <<<"$help"; then extra+=(--faraday.fractional false); fi
if grep -q 'catalogue\.threshold ' <<<"$help"; then extra+=(--catalogue.threshold 0); fi
# RMTOOLS_BENCH_SPIP_ARGS: more spip options, such as other inputs (bench/run-band-rmtools.sh).
read -r -a more <<< "${RMTOOLS_BENCH_SPIP_ARGS:-}"
extra+=("${more[@]}")
out=$work/spip-out
/usr/bin/time -v -o "$work/spip.time" mpirun -np "$ranks" "${SPIP_MPIRUN_FLAGS[@]}" \
  bash -c 'exec /usr/bin/time -v -o "$0.rank$OMPI_COMM_WORLD_RANK" "$@"' "$work/spip.time" \
  "$work/bin/spip" --config configs/demo.cfg --output.dir "$out" --output.prefix demo --parallel.threads 1 \
  --parallel.device cpu --faraday.variance_weights false --faraday.rmclean_xcorr false --faraday.cubes all "${extra[@]}" \
  > "$work/spip.log" 2>&1 || { tail -20 "$work/spip.log" >&2; exit 1; }
read -r spip_wall _ < <(tv "$work/spip.time"; echo)
spip_rss=$(for f in "$work"/spip.time.rank*; do tv "$f" | awk '{print $2}'; done | sort -n | paste -sd/)
spip_iter=$(grep -oE '[0-9]+ RM-CLEAN iterations' "$work/spip.log" | awk '{s += $1} END {print s}')

# What RM-Tools is to match, read back from spip's products rather than assumed: the phi
# grid of the FDF cube, the cutoff as rmclean_cutoff x the field's FDF sigma, niter and
# gain from the effective configuration. The peak-pi-err map holds the sigma each pixel
# was cleaned to; its minimum is the field's (spip raises it where a pixel's own noise
# is higher, which rmclean3d cannot: its -c is one absolute cutoff for the whole cube,
# with no sigma form in its 3D path).
read -r phi_max dphi depths pixels channels sigma cutoff niter gain faraday_s < <("$py" - "$out" <<'EOF'
import configparser, json, sys
import numpy as np
from astropy.io import fits
out = sys.argv[1]
h = fits.getheader(f"{out}/demo-FDF_real_dirty.fits")
first = h["CRVAL3"] + (1 - h["CRPIX3"]) * h["CDELT3"]
config = configparser.ConfigParser(strict=False)  # input.ms repeats for several MSs
config.read(f"{out}/demo-config.ini")
f = config["faraday"]
sigma = float(np.nanmin(fits.getdata(f"{out}/demo-peak-pi-err.fits")))
run = json.load(open(f"{out}/demo-qa.json"))["run"]
print(-first, h["CDELT3"], h["NAXIS3"], h["NAXIS1"] * h["NAXIS2"], run["channels"], sigma,
      float(f["rmclean_cutoff"]) * sigma, f["rmclean_niter"], f["rmclean_gain"], run["faraday_s"])
EOF
)

# rmsynth3d writes next to its Q cube, so the cubes are linked (not copied or changed)
# into RM-Tools' folder. rmtools_freqfile reads the channel frequencies from the Q cube's
# FREQ axis, which also checks that RM-Tools reads spip's WCS.
ln -s "$out/demo-image-Q.fits" "$work/rmt/Q.fits"
ln -s "$out/demo-image-U.fits" "$work/rmt/U.fits"
"$rmt/rmtools_freqfile" "$work/rmt/Q.fits" "$work/rmt/freqs.txt" > "$work/freqfile.log" 2>&1
run_rmt() {  # name, command...: its time -v file is $work/NAME.time
  local name=$1; shift
  /usr/bin/time -v -o "$work/$name.time" "$@" > "$work/$name.log" 2>&1 || { tail -20 "$work/$name.log" >&2; exit 1; }
}
run_rmt synth "$rmt/rmsynth3d" "$work/rmt/Q.fits" "$work/rmt/U.fits" "$work/rmt/freqs.txt" \
  -l "$phi_max" -d "$dphi" -w uniform -o rmt_ -v
run_rmt clean "$rmt/rmclean3d" "$work/rmt/rmt_FDF_tot_dirty.fits" "$work/rmt/rmt_RMSF_tot.fits" \
  -c "$cutoff" -n "$niter" -g "$gain" -o rmt_ -v
run_rmt peak "$rmt/rmtools_peakfitcube" "$work/rmt/rmt_FDF_clean_tot.fits" "$work/rmt/freqs.txt" \
  "$work/rmt/rmt_peak_" -a
synth_s=$(tr '\r' '\n' < "$work/synth.log" | grep -oE 'RM-synthesis completed in [0-9.]+' | awk '{print $4}')
clean_s=$(tr '\r' '\n' < "$work/clean.log" | grep -oE 'RM-clean completed in [0-9.]+' | awk '{print $4}')
read -r synth_wall synth_rss < <(tv "$work/synth.time"; echo)
read -r clean_wall clean_rss < <(tv "$work/clean.time"; echo)
read -r peak_wall peak_rss < <(tv "$work/peak.time"; echo)

# Faraday samples: pixels x depths x channels, the terms of the synthesis sums, divided
# by the time of everything each tool does from the Q, U cubes to the peak maps.
samples=$(awk -v p="$pixels" -v d="$depths" -v c="$channels" 'BEGIN {printf "%.0f", p * d * c}')
rate() { awk -v s="$samples" -v t="$1" 'BEGIN {printf "%.2e", s / t}'; }
rmt_total=$(awk -v a="$synth_wall" -v b="$clean_wall" -v c="$peak_wall" 'BEGIN {printf "%.2f", a + b + c}')
rmt_rss=$(printf '%s\n' "$synth_rss" "$clean_rss" "$peak_rss" | sort -n | tail -1)

echo "== $pixels pixels x $depths depths (|phi| <= $phi_max by $dphi rad/m^2) x $channels channels = $samples" \
     "Faraday samples; RM-CLEAN to $cutoff Jy/beam (rmclean_cutoff x field sigma $sigma), niter $niter, gain $gain"
printf '%-44s %6s %10s %14s %14s %14s\n' step cores "wall [s]" "peak RSS [MB]" "Faraday [s]" "samples/s"
printf '%-44s %6s %10s %14s %14s %14s\n' "spip, whole job ($ranks ranks x 1 thread)" "$ranks" "$spip_wall" \
  "$spip_rss" "$faraday_s" "$(rate "$faraday_s")"
printf '%-44s %6s %10s %14s %14s %14s\n' "RM-Tools rmsynth3d" 1 "$synth_wall" "$synth_rss" "$synth_s" "$(rate "$synth_s")"
printf '%-44s %6s %10s %14s %14s %14s\n' "RM-Tools rmclean3d" 1 "$clean_wall" "$clean_rss" "$clean_s" ""
printf '%-44s %6s %10s %14s %14s %14s\n' "RM-Tools rmtools_peakfitcube -a" 1 "$peak_wall" "$peak_rss" "" ""
printf '%-44s %6s %10s %14s %14s %14s\n' "RM-Tools, the three" 1 "$rmt_total" "$rmt_rss" "$rmt_total" \
  "$(rate "$rmt_total")"
echo "  spip's Faraday [s] is qa.json's faraday_s (moments, synthesis, RM-CLEAN, peak fit, writing); RM-Tools'"
echo "  rmsynth3d / rmclean3d figures are their own 'completed in' times, without reading and writing FITS"
echo "  spip's RM-CLEAN iterations (its log): $spip_iter"
echo
"$py" bench/compare_rmtools.py "$out" demo "$work/rmt" rmt_ "$work/rmt/freqs.txt" "$niter"
