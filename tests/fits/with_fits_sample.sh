#!/usr/bin/env bash
# Writes the fits room's sample products into this test's own TMPDIR (fresh_tmpdir.sh
# makes it) and runs a reader's check on them there, so that no reader sees another
# test's or an earlier run's files. The check finds them as $SPIP_FITS_SAMPLE_DIR, or
# by the names its arguments give relative to the TMPDIR (fits_sample/sample_cube.fits).
#   with_fits_sample.sh WRITER COMMAND [ARGS...]
set -euo pipefail
writer=$1
shift
export SPIP_FITS_SAMPLE_DIR=$TMPDIR/fits_sample
"$writer" "$SPIP_FITS_SAMPLE_DIR"
cd "$TMPDIR"
exec "$@"
