#!/usr/bin/env bash
# Opens the fits room's sample products (tests/fits/write_fits_sample.cpp) in SAOImage
# DS9 on a virtual X display and asks it, through XPA, what it reads: the phase centre's
# RA/Dec (pixel N/2 + 1), the world value of a FREQ and of an FDEP plane, and the pixel
# range of a plane (plane k holds k + 1e-3 i). Fails on the first disagreement.
#   check_ds9.sh SAMPLE_DIR
set -euo pipefail
dir=$(cd "$1" && pwd)  # DS9 opens what XPA names from its own working folder
export XPA_METHOD=local
name=spip_ds9_$$
# DS9 and XPA keep their sockets and logs in a folder of this run's own, removed at the end.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/spip_ds9.XXXXXX")
export TMPDIR=$scratch XPA_TMPDIR=$scratch
# The XPA name server is this script's own child rather than one DS9 launches: DS9's
# would outlive it and rewrite its log as the folder is being removed (xpans -e exits,
# truncating xpans_unix.log, only once DS9 is gone), so that `rm -rf` would fail.
xpans -l "$scratch/xpans.log" > /dev/null 2>&1 &
xpans=$!
# Xvfb picks a free display and writes its number once it accepts clients.
ready=$scratch/display
Xvfb -displayfd 3 -screen 0 800x600x24 -nolisten tcp 3> "$ready" > /dev/null 2>&1 &
xvfb=$!
ds9=
# DS9, Xvfb and xpans are waited for before their folder goes: they write into it until they exit.
trap 'kill $ds9 $xvfb $xpans 2> /dev/null || true; wait $ds9 $xvfb $xpans 2> /dev/null || true; rm -rf "$scratch"' EXIT
for _ in $(seq 100); do [[ -s $ready && -S $scratch/xpans_unix ]] && break; sleep 0.1; done
[[ -s $ready ]] || { echo "check_ds9: Xvfb did not start" >&2; exit 1; }
[[ -S $scratch/xpans_unix ]] || { echo "check_ds9: xpans did not start" >&2; exit 1; }
DISPLAY=:$(cat "$ready") ds9 -title "$name" > /dev/null 2>&1 &
ds9=$!
for _ in $(seq 60); do
  [[ $(xpaaccess "$name" 2> /dev/null) == yes ]] && break
  sleep 1
done
[[ $(xpaaccess "$name") == yes ]] || { echo "check_ds9: DS9 did not start" >&2; exit 1; }

failed=0
expect() {  # what, got, wanted
  if [[ $2 == "$3" ]]; then
    echo "ds9 $1: $2"
  else
    echo "ds9 $1: got '$2', expected '$3'" >&2
    failed=1
  fi
}
open_file() {
  xpaset -p "$name" file "$dir/$1"
  expect "$1 size" "$(xpaget "$name" fits size)" "64 48"
  xpaset -p "$name" crosshair 33 25 image
  expect "$1 phase centre" "$(xpaget "$name" crosshair wcs fk5 degrees)" "201.3650000 -43.0190000"
}
plane() {  # file, 1-based plane, its world value, its pixel range
  xpaset -p "$name" cube "$2"
  expect "$1 plane $2 world value" "$(xpaget "$name" cube wcs)" "$3"
  xpaset -p "$name" scale mode minmax
  expect "$1 plane $2 pixel range" "$(xpaget "$name" scale limits)" "$4"
}

open_file sample_image.fits
open_file sample_cube.fits
plane sample_cube.fits 3 1202000000 "2 5.071"
open_file sample_beams.fits
plane sample_beams.fits 4 1203000000 "3 6.071"
open_file sample_fdf.fits
plane sample_fdf.fits 5 -8 "4 7.071"
exit $failed
