#!/usr/bin/env python3
"""How well a run recovered the diffuse sources of bench/diffuse.sky.txt (the rows whose
name holds "diffuse"), for spip cubes or WSClean per-channel images:
  - each source's integrated I, Q and U: the model (Jy/pixel) summed over the pixels
    where the source is above 1 % of its peak, against the sky model's Gaussians summed
    over the same pixels, two ways over the channels (Q and U over sum |P|, as they
    change sign with Faraday rotation):
      "per channel": sum |model - truth| / sum |truth|, which holds each channel's noise
        in the region (the figure of the noiseless limit is the CLEAN's own);
      "band": |sum sign(truth) (model - truth)| / sum |truth| (each of Q and U over its
        own sum), the flux scale the channels share, in which their independent noise
        averages down;
  - the off-source residual rms of Stokes I (median over channels), away from every
    Gaussian's 1 % contour and 20 pixels from every point source;
  - spip only: peak phi and PI at each diffuse source's centre, against its RM and
    its polarised flux seen through the restoring beam, averaged over the channels.
Pixel positions go through each image's own WCS.

usage: diffuse_metrics.py SKY spip OUT_DIR PREFIX | diffuse_metrics.py SKY wsclean OUT_DIR NAME
"""
import math
import os
import sys
import warnings

import numpy as np
from astropy.io import fits
from astropy.wcs import WCS, FITSFixedWarning

from truth_error import C, COLUMNS, number, planes

warnings.simplefilter("ignore", FITSFixedWarning)

def read_sky(path):
    rows = []
    for line in open(path):
        if line.startswith("#") or line.startswith("Format") or not line.strip():
            continue
        row = dict(zip(COLUMNS, [field.strip().strip('"') for field in line.split(",")]))
        rows.append({k: (v if k == "Name" else number(v)) for k, v in row.items()})
    return rows


def stokes(row, freq):
    """I, Q, U of a component at freq."""
    i = row["I"] * (freq / row["ReferenceFrequency"]) ** row["SpectralIndex"]
    chi = math.radians(row["PolarizationAngle"]) + row["RotationMeasure"] * (C / freq) ** 2
    p = row["PolarizedFraction"] * i
    return np.array([i, p * math.cos(2 * chi), p * math.sin(2 * chi)])


def offsets(wcs, shape, row):
    """East and north offsets (degrees) of every pixel from a component."""
    y, x = np.mgrid[0:shape[0], 0:shape[1]]
    ra, dec = wcs.pixel_to_world_values(x, y)
    east = ((ra - row["RaD"] + 180) % 360 - 180) * math.cos(math.radians(row["DecD"]))
    return east, dec - row["DecD"]


def profile(east, north, major_deg, minor_deg, pa_deg):
    """A Gaussian of these FWHM (PA east of north), peak 1."""
    pa = math.radians(pa_deg)
    along = north * math.cos(pa) + east * math.sin(pa)
    across = -north * math.sin(pa) + east * math.cos(pa)
    return np.exp(-4 * math.log(2) * ((along / major_deg) ** 2 + (across / minor_deg) ** 2))


def main():
    sky_path, kind, out, name = sys.argv[1:5]
    sky = read_sky(sky_path)
    gaussians = [r for r in sky if r["MajorAxis"] > 0]
    points = [r for r in sky if r["MajorAxis"] == 0]
    diffuse = [r for r in gaussians if "diffuse" in r["Name"]]
    models = {s: list(planes(kind, out, name, s, "model")) for s in "IQU"}
    header = models["I"][0][0]
    wcs = WCS(header).celestial
    shape = models["I"][0][2].shape
    pixel_area = abs(wcs.wcs.cdelt[0] * wcs.wcs.cdelt[1])
    shapes = {}
    for r in gaussians:
        east, north = offsets(wcs, shape, r)
        major, minor = r["MajorAxis"] / 3600, r["MinorAxis"] / 3600
        unit = profile(east, north, major, minor, r["Orientation"])
        # Jy/pixel per Jy of integrated flux.
        shapes[r["Name"]] = (unit * pixel_area / (math.pi / (4 * math.log(2)) * major * minor), unit > 0.01)
    freqs = [f for _, f, _ in models["I"]]
    line = []
    for d in diffuse:
        brightness, region = shapes[d["Name"]]
        error, bias, scale, size = np.zeros(3), np.zeros(3), np.zeros(3), np.zeros(3)
        for ch, freq in enumerate(freqs):
            truth = sum(stokes(r, freq) * float(np.sum(shapes[r["Name"]][0][region])) for r in gaussians)
            got = np.array([float(np.sum(models[s][ch][2][region])) for s in "IQU"])
            error += np.abs(got - truth)
            bias += np.sign(truth) * (got - truth)
            size += np.abs(truth)
            scale += np.array([abs(truth[0]), math.hypot(truth[1], truth[2]), math.hypot(truth[1], truth[2])])
        per_channel, band = 100 * error / scale, 100 * np.abs(bias) / size
        line.append(f"{d['Name'].split('_')[0]} per channel I {per_channel[0]:.2f}% Q {per_channel[1]:.2f}% "
                    f"U {per_channel[2]:.2f}%, band I {band[0]:.2f}% Q {band[1]:.2f}% U {band[2]:.2f}%")
    off = np.ones(shape, dtype=bool)
    for r in gaussians:
        off &= ~shapes[r["Name"]][1]
    for r in points:
        east, north = offsets(wcs, shape, r)
        off &= np.hypot(east, north) > 20 * abs(wcs.wcs.cdelt[0])
    rms = [float(np.sqrt(np.mean(p[off].astype(float) ** 2))) for _, _, p in planes(kind, out, name, "I", "residual")]
    line.append(f"rms {1e3 * float(np.median(rms)):.3f} mJy")
    if kind == "spip":
        phi = fits.getdata(os.path.join(out, f"{name}-peak-phi.fits")).squeeze()
        pi_header = fits.getheader(os.path.join(out, f"{name}-peak-pi.fits"))
        pi = fits.getdata(os.path.join(out, f"{name}-peak-pi.fits")).squeeze()
        beam = (pi_header["BMAJ"], pi_header["BMIN"], pi_header["BPA"])
        for d in diffuse:
            x, y = (int(round(float(v))) for v in wcs.world_to_pixel_values(d["RaD"], d["DecD"]))
            east, north = offsets(wcs, shape, d)
            seen = float(np.sum(shapes[d["Name"]][0] * profile(east, north, *beam)))
            want_pi = seen * float(np.mean([math.hypot(*stokes(d, f)[1:]) for f in freqs]))
            line.append(f"{d['Name'].split('_')[0]} phi {phi[y, x]:+.2f} ({d['RotationMeasure']:+.0f}) "
                        f"PI {1e3 * pi[y, x]:.1f} ({1e3 * want_pi:.1f}) mJy/beam")
    print("; ".join(line))


if __name__ == "__main__":
    main()
