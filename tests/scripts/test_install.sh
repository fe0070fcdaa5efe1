#!/usr/bin/env bash
# `cmake --install` into a scratch prefix, then the installed files alone, from a folder
# outside the checkout and the build tree, with no spip on PATH: the installed
# one-node.sbatch (run by bash, in the environment Slurm gives a job of 2 tasks, with
# the mpirun launcher) must find the installed spip-job.sh, which must run the
# installed spip on the installed demo configuration; quicklook.py then draws the run.
#   test_install.sh SOURCE_DIR BUILD_DIR PYTHON3
set -uo pipefail
source_dir=$1 build=$2 python=$3
work=$TMPDIR/install_test
rm -rf "$work"
mkdir -p "$work/elsewhere"
prefix=$work/prefix
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# `cmake --install` always writes install_manifest.txt into the build tree: the one a
# user's own install left there is put back afterwards, and this test's is not left.
manifest=$build/install_manifest.txt
[[ -e $manifest ]] && cp -p "$manifest" "$work/manifest.saved"
cmake --install "$build" --prefix "$prefix" >"$work/install.log"
install_status=$?
if [[ -e $work/manifest.saved ]]; then mv "$work/manifest.saved" "$manifest"; else rm -f "$manifest"; fi
((install_status == 0)) || { cat "$work/install.log"; exit 1; }
for file in bin/spip bin/spip-simulate bin/quicklook.py share/spip/configs/demo.cfg \
            share/spip/data/oskar_small.ms/table.dat share/spip/slurm/one-node.sbatch \
            share/spip/slurm/multi-node.sbatch share/spip/slurm/multi-node-gpu.sbatch \
            share/spip/slurm/spip-job.sh share/doc/spip/README.md share/doc/spip/config.md; do
  [[ -e $prefix/$file ]] || fail "$file is not installed"
done
grep -rqF "$source_dir/" "$prefix/share/spip/configs" "$prefix/share/spip/slurm" && fail "an installed file names the checkout"

cd "$work/elsewhere" || exit 1
# The demo as configured (512^2, CLEAN, 241 depths), with only the FDF cubes the page reads.
env -u SPIP_BIN -u SPIP_HOME PATH="$(dirname "$(command -v mpirun)"):/usr/bin:/bin" SLURM_JOB_ID=0 SLURM_NTASKS=2 SLURM_NTASKS_PER_NODE=2 \
  SLURM_JOB_NUM_NODES=1 SLURM_JOB_NODELIST=localhost SLURM_CPUS_PER_TASK=1 SPIP_LAUNCHER=mpirun \
  bash "$prefix/share/spip/slurm/one-node.sbatch" "$prefix/share/spip/configs/demo.cfg" out/demo \
  --faraday.cubes amp-dirty,amp-clean >job.log 2>&1
status=$?
((status == 0)) || fail "the installed one-node.sbatch exited with $status"
grep -q "on 2 rank(s)" job.log || fail "the installed spip did not run on 2 ranks"
grep -q "spip job 0: done; products in out/demo" job.log || fail "the installed spip-job.sh did not finish"
[[ -f out/demo/demo-qa.json ]] || fail "no qa.json in $(pwd)/out/demo"
page=$(MPLCONFIGDIR=$work/matplotlib XDG_CACHE_HOME=$work/cache "$python" "$prefix/bin/quicklook.py" out/demo/demo) || fail "the installed quicklook.py failed"
[[ -n $page && -s $page ]] || fail "no quick-look page"
echo "installed into $prefix; the demo ran from $(pwd): $(ls out/demo/*.fits | wc -l) FITS products, page $page"

if ((failures)); then
  echo "--- job log"
  cat job.log
  exit 1
fi
rm -rf "$work"
