#!/usr/bin/env bash
# Runs a test's command with a TMPDIR of its own, made fresh under $TMPDIR: Open MPI
# puts its session directory there, and tests that CTest runs at once must never share
# one (Open MPI issue 8510: `mkdir ... File exists`, then orte_init fails). spip's FFTW
# wisdom goes there too, so that no test transforms with plans another one timed.
# Removed after a success, kept and named after a failure.
#   fresh_tmpdir.sh COMMAND [ARGS...]
set -u
dir=$(mktemp -d "${TMPDIR:-/tmp}/spip_ctest_XXXXXX") || exit 1
TMPDIR=$dir SPIP_FFTW_WISDOM=$dir/fftwf-wisdom "$@"
status=$?
# 77 is CTest's "skipped" (SKIP_RETURN_CODE): nothing there to look at either.
if ((status == 0 || status == 77)); then rm -rf "$dir"; else echo "test TMPDIR kept: $dir" >&2; fi
exit "$status"
