#!/usr/bin/env python3
"""Largest |restored - truth| at the OSKAR sample's four sources, over Stokes I, Q, U, V
and every channel, for spip cubes or WSClean per-channel images.

usage: truth_error.py spip OUT_DIR PREFIX | truth_error.py wsclean OUT_DIR NAME
"""
import json
import math
import os
import sys

import numpy as np
from astropy.io import fits

C = 299792458.0
HERE = os.path.dirname(os.path.abspath(__file__))
TRUTH = json.load(open(os.path.join(HERE, "..", "data", "oskar_small.truth.json")))
SIZE, CELL = 512, 20.0 / 206264.80624709636


def truth(component, stokes, freq):
    i = component["I0_jy"] * (freq / component["ref_freq_hz"]) ** component["spectral_index"]
    v = component["V0_jy"] * (freq / component["ref_freq_hz"]) ** component["spectral_index"]
    chi = math.radians(component["chi0_deg_at_lambda0"]) + component["rm_rad_m2"] * (C / freq) ** 2
    p = component["pol_frac"] * i * complex(math.cos(2 * chi), math.sin(2 * chi))
    return [i, p.real, p.imag, v][stokes]


def pixel(component):
    return (int(round(SIZE // 2 - component["l"] / CELL)), int(round(SIZE // 2 + component["m"] / CELL)))


def planes(kind, out, name, stokes):
    if kind == "spip":
        with fits.open(os.path.join(out, f"{name}-image-{stokes}.fits")) as hdul:
            h, data = hdul[0].header, hdul[0].data[0]
            for ch in range(data.shape[0]):
                yield h["CRVAL3"] + ch * h["CDELT3"], data[ch]
    else:
        ch = 0
        while os.path.exists(path := os.path.join(out, f"{name}-{ch:04d}-{stokes}-image.fits")):
            with fits.open(path) as hdul:
                yield hdul[0].header["CRVAL3"], hdul[0].data[0, 0]
            ch += 1


def main():
    kind, out, name = sys.argv[1:4]
    worst = 0.0
    for s, stokes in enumerate("IQUV"):
        for freq, plane in planes(kind, out, name, stokes):
            for c in TRUTH["components"]:
                x, y = pixel(c)
                worst = max(worst, abs(float(plane[y, x]) - truth(c, s, freq)))
    print(f"{worst:.2e}")


if __name__ == "__main__":
    main()
