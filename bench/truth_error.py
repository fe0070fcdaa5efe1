#!/usr/bin/env python3
"""Largest |restored - truth| over Stokes I, Q, U, V and every channel, at the pixels
nearest a sky model's point sources (rows at one position add up, as several Faraday
components of one source), for spip cubes or WSClean per-channel images. The truth at
a pixel is the source's flux times the restoring beam (BMAJ, BMIN, BPA) at the pixel's
offset from the source, and positions go through each image's own WCS, so a wrong
header shows up as a large error.

usage: truth_error.py SKY spip OUT_DIR PREFIX | truth_error.py SKY wsclean OUT_DIR NAME
"""
import math
import os
import sys
import warnings

from astropy.io import fits
from astropy.wcs import WCS, FITSFixedWarning

warnings.simplefilter("ignore", FITSFixedWarning)

C = 299792458.0
COLUMNS = ["Name", "RaD", "DecD", "I", "Q", "U", "V", "ReferenceFrequency", "SpectralIndex", "RotationMeasure",
           "PolarizedFraction", "PolarizationAngle", "MajorAxis", "MinorAxis", "Orientation"]


def number(text, default=0.0):
    text = text.strip()
    return float(text) if text else default


def point_sources(path):
    """{(ra, dec): [component dicts]} for the components without a Gaussian extent."""
    sources = {}
    for line in open(path):
        if line.startswith("#") or line.startswith("Format") or not line.strip():
            continue
        row = dict(zip(COLUMNS, [field.strip().strip('"') for field in line.split(",")]))
        if number(row["MajorAxis"]) > 0:
            continue
        key = (number(row["RaD"]), number(row["DecD"]))
        sources.setdefault(key, []).append(row)
    return sources


def truth(rows, stokes, freq):
    total = 0.0
    for r in rows:
        scale = (freq / number(r["ReferenceFrequency"])) ** number(r["SpectralIndex"])
        i, v = number(r["I"]) * scale, number(r["V"]) * scale
        chi = math.radians(number(r["PolarizationAngle"])) + number(r["RotationMeasure"]) * (C / freq) ** 2
        p = number(r["PolarizedFraction"]) * i * complex(math.cos(2 * chi), math.sin(2 * chi))
        total += [i, p.real, p.imag, v][stokes]
    return total


def beam_at(header, wcs, x, y, xf, yf):
    """The restoring beam's value at pixel (x, y) for a source at (xf, yf) (pixels)."""
    d_east = -(x - xf) * abs(wcs.wcs.cdelt[0])
    d_north = (y - yf) * abs(wcs.wcs.cdelt[1])
    pa = math.radians(header["BPA"])
    along = d_north * math.cos(pa) + d_east * math.sin(pa)
    across = -d_north * math.sin(pa) + d_east * math.cos(pa)
    return math.exp(-4 * math.log(2) * ((along / header["BMAJ"]) ** 2 + (across / header["BMIN"]) ** 2))


def planes(kind, out, name, stokes, product="image"):
    """(header, freq, plane) per channel of a spip cube or WSClean's per-channel images
    (product: image, model or residual)."""
    if kind == "spip":
        with fits.open(os.path.join(out, f"{name}-{product}-{stokes}.fits")) as hdul:
            h, data = hdul[0].header, hdul[0].data[0]
            for ch in range(data.shape[0]):
                yield h, h["CRVAL3"] + ch * h["CDELT3"], data[ch]
    else:
        ch = 0
        while os.path.exists(path := os.path.join(out, f"{name}-{ch:04d}-{stokes}-{product}.fits")):
            with fits.open(path) as hdul:
                yield hdul[0].header, hdul[0].header["CRVAL3"], hdul[0].data[0, 0]
            ch += 1


def main():
    sky, kind, out, name = sys.argv[1:5]
    sources = point_sources(sky)
    worst = 0.0
    compared = 0
    for s, stokes in enumerate("IQUV"):
        for header, freq, plane in planes(kind, out, name, stokes):
            compared += 1
            wcs = WCS(header).celestial
            for (ra, dec), rows in sources.items():
                xf, yf = (float(v) for v in wcs.world_to_pixel_values(ra, dec))
                x, y = int(round(xf)), int(round(yf))
                expected = truth(rows, s, freq) * beam_at(header, wcs, x, y, xf, yf)
                worst = max(worst, abs(float(plane[y, x]) - expected))
    if not compared:
        sys.exit(f"truth_error.py: no {kind} images named {name} in {out}")
    print(f"{worst:.2e}")


if __name__ == "__main__":
    main()
