#!/usr/bin/env python3
"""Stacks WSClean's channel images (NAME-00NN-Q-image.fits, -channels-out) into one Q and
one U cube with a FREQ axis, as survey pipelines hand them on, and writes each channel's
noise (the mean of its Q and U planes' MAD sigmas, as spip measures it) and frequency.

usage: stack_channels.py WSCLEAN_PREFIX OUT_DIR
writes OUT_DIR/Q.fits, U.fits, noise.txt (Jy/beam), freqs.txt (Hz)
"""
import glob
import sys

import numpy as np
from astropy.io import fits

prefix, out = sys.argv[1], sys.argv[2]
sigmas = None
for stokes in "QU":
    names = sorted(glob.glob(f"{prefix}-[0-9][0-9][0-9][0-9]-{stokes}-image.fits"))
    planes, freqs = [], []
    for name in names:
        with fits.open(name) as hdus:
            planes.append(np.squeeze(hdus[0].data).astype(np.float32))
            freqs.append(hdus[0].header["CRVAL3"])
            header = hdus[0].header.copy()
    steps = np.diff(freqs)
    assert np.allclose(steps, steps[0], rtol=1e-9), "channels not evenly spaced"
    cube = np.stack(planes)[None]  # [STOKES, FREQ, DEC, RA]
    header["NAXIS3"], header["CRPIX3"], header["CRVAL3"], header["CDELT3"] = len(planes), 1.0, freqs[0], steps[0]
    fits.PrimaryHDU(cube, header).writeto(f"{out}/{stokes}.fits", overwrite=True)
    mad = np.array([1.4826 * np.median(np.abs(p - np.median(p))) for p in planes])
    sigmas = mad if sigmas is None else 0.5 * (sigmas + mad)
np.savetxt(f"{out}/noise.txt", sigmas)
np.savetxt(f"{out}/freqs.txt", freqs)
print(f"{len(freqs)} channels of {planes[0].shape[1]} x {planes[0].shape[0]} from {freqs[0] / 1e6:.3f} MHz")
