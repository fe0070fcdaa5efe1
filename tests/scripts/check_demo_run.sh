#!/usr/bin/env bash
# scripts/quicklook.py and astropy on a real run: the demo job as scripts/run-demo.sh
# runs it (absolute paths, one thread per rank, only the FDF cubes the page reads: the
# amplitudes, and the real and imaginary dirty ones for the page that has no
# amplitudes), into this test's own TMPDIR (fresh_tmpdir.sh makes it and removes it,
# with the products' 1.2 GB, after a success). The page is then checked panel by panel
# (check_quicklook.py), astropy must read every product as what it is: images and
# cubes with their WCS, the catalogue as a table with its columns, units and rows; and
# HEASARC's fitsverify (where FITSVERIFY is one; CMake's NOTFOUND otherwise) must find no
# error and no warning in any of them.
#   check_demo_run.sh SOURCE_DIR DATA_DIR SPIP PYTHON3 FITSVERIFY MPIEXEC [MPIEXEC_ARGS...]
set -uo pipefail
source_dir=$1 data_dir=$2 spip=$3 python=$4 fitsverify=$5
shift 5
# matplotlib's font cache, which it would otherwise keep in $HOME.
export MPLCONFIGDIR=$TMPDIR/matplotlib XDG_CACHE_HOME=$TMPDIR/cache
out=$TMPDIR/demo
"$@" "$spip" --config "$source_dir/configs/demo.cfg" --input.ms "$data_dir/oskar_small.ms" --output.dir "$out" \
  --parallel.threads 1 --faraday.cubes amp-dirty,amp-clean,real-dirty,imag-dirty >"$TMPDIR/demo.log" 2>&1 ||
  { cat "$TMPDIR/demo.log"; echo "FAIL: the demo job"; exit 1; }
"$python" "$source_dir/tests/scripts/check_quicklook.py" "$source_dir/scripts/quicklook.py" "$out/demo" ||
  { echo "FAIL: the quick-look page"; exit 1; }
"$python" "$source_dir/scripts/check_fits_astropy.py" "$out"/*.fits | tee "$TMPDIR/astropy.log" ||
  { echo "FAIL: astropy"; exit 1; }
grep -q "demo-catalogue.fits: table CATALOGUE" "$TMPDIR/astropy.log" || { echo "FAIL: astropy read no catalogue"; exit 1; }
if [[ ! -x $fitsverify ]]; then
  echo "fitsverify is not installed (scripts/install-deps.sh --tests): the products are not judged by it"
  exit 0
fi
products=("$out"/*.fits)
verdicts=$("$fitsverify" -q "${products[@]}" 2>&1)
status=$?
# One 'verification OK: NAME' line a product; a warning or an error adds their counts.
ok=$(grep -c '^verification OK: [^,]*$' <<<"$verdicts")
if ((status != 0 || ok != ${#products[@]})); then
  echo "$verdicts"
  echo "FAIL: fitsverify (exit $status) passed $ok of ${#products[@]} products"
  exit 1
fi
echo "fitsverify: all $ok products without an error or a warning"
