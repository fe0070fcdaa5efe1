#!/usr/bin/env python3
"""Read a run's channel cubes with astropy and check their frequency axis against qa.json.

For every channel cube (PREFIX-{dirty,image,...}-*.fits, the PSF) in OUT: the frequency
astropy's WCS gives each plane must be the frequency qa.json records for that channel
(within 1 Hz), and the planes whose every pixel is NaN must be exactly the channels
qa.json calls blank. Prints one line per cube; exits non-zero if any fails.

usage: check_band_axis.py OUT PREFIX
"""
import glob
import json
import os
import sys
import warnings


def check_cube(path, channels):
    import numpy as np
    from astropy.io import fits
    from astropy.wcs import WCS, FITSFixedWarning

    with fits.open(path) as hdul:
        header, data = hdul[0].header, hdul[0].data
    with warnings.catch_warnings():
        # wcslib fixes nothing in spip's header: MJD-OBS is there beside DATE-OBS.
        warnings.simplefilter("error", FITSFixedWarning)
        spectral = WCS(header).sub(["spectral"])
    planes = data.shape[-3]
    freq = spectral.pixel_to_world_values(np.arange(planes))
    want = np.array([c["freq_hz"] for c in channels])
    if planes != len(channels):
        raise ValueError(f"{planes} planes for {len(channels)} channels in qa.json")
    worst = float(np.max(np.abs(freq - want)))
    if worst > 1.0:
        raise ValueError(f"plane frequencies differ from qa.json's by up to {worst} Hz")
    cube = data.reshape(planes, -1)
    blank = [k for k in range(planes) if np.all(np.isnan(cube[k]))]
    said = [k for k, c in enumerate(channels) if c.get("blank")]
    if blank != said:
        raise ValueError(f"blank planes {blank}, but qa.json calls {said} blank")
    return f"{os.path.basename(path)}: {planes} planes from {freq[0]:.1f} Hz in steps of " \
           f"{header['CDELT3']:.1f} Hz, |WCS - qa.json| <= {worst:.3g} Hz, blank planes {blank}"


def main(out, prefix):
    with open(os.path.join(out, prefix + "-qa.json")) as f:
        channels = sorted(json.load(f)["channels"], key=lambda c: c["channel"])
    failed = 0
    cubes = [p for p in sorted(glob.glob(os.path.join(out, prefix + "-*.fits")))
             if any(k in os.path.basename(p) for k in ("-dirty-", "-image-", "-model-", "-residual-", "-psf"))]
    if not cubes:
        print(f"no channel cubes in {out}")
        return 1
    for path in cubes:
        try:
            print(check_cube(path, channels))
        except Exception as e:  # each cube says what is wrong with it
            print(f"{os.path.basename(path)}: FAILED: {e}")
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
