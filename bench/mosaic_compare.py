#!/usr/bin/env python3
"""The mosaic benchmark's figures (bench/run-mosaic-bench.sh): every source of
bench/mosaic_sky.py against the truth in spip's mosaic, and spip's mosaic against
reproject's reproject_and_coadd of spip's per-pointing corrected cubes with the same
weights B_p^2 / sigma_p^2, pixel by pixel where the mosaic is not blank.

    bench/mosaic_compare.py MOSAIC_DIR POINTING_DIR... --dish D --freq0 HZ --dfreq HZ"""
import argparse
import json
import sys
import warnings
from pathlib import Path

import numpy as np
from astropy.io import fits
from astropy.wcs import WCS, FITSFixedWarning
from reproject import reproject_interp
from reproject.mosaicking import reproject_and_coadd
from scipy.special import j1

sys.path.insert(0, str(Path(__file__).parent))
import mosaic_sky  # noqa: E402

C = 299792458.0


def airy(theta_rad, freq_hz, dish_m):
    x = np.pi * dish_m * np.sin(theta_rad) * freq_hz / C
    return 1.0 if x == 0 else (2 * j1(x) / x) ** 2


def unit(l_deg, m_deg):
    ra, dec = np.radians(mosaic_sky.radec(l_deg, m_deg))
    return np.array([np.cos(dec) * np.cos(ra), np.cos(dec) * np.sin(ra), np.sin(dec)])


def angle(a, b):
    return np.arctan2(np.linalg.norm(np.cross(a, b)), np.dot(a, b))


# Headers without MJD-OBS (reproject's, spip's before it wrote one): astropy's note that
# it derived MJD-OBS from DATE-OBS is noise here.
warnings.simplefilter("ignore", FITSFixedWarning)


def cube(folder, name):
    with fits.open(Path(folder) / f"spip-{name}.fits") as hdul:
        return np.asarray(hdul[0].data, dtype=float).squeeze(), hdul[0].header


def truth_table(mosaic, freqs, dish):
    stokes = {s: cube(mosaic, f"image-pb-{s}")[0] for s in "IQU"}
    peak_pi, peak_phi = cube(mosaic, "peak-pi")[0], cube(mosaic, "peak-phi")[0]
    print(f"{'source':8} {'seen by':>7} {'B max':>10} {'I err':>7} {'shape err':>9} {'PI err':>7} "
          f"{'peak PI err':>11} {'phi err':>8}")
    worst = dict(i=0, shape=0, p=0, peak=0, phi=0)
    for name, l, m, flux, alpha, frac, _chi, rm in mosaic_sky.SOURCES:
        l, m = mosaic_sky.on_pixel(l, m)
        x, y = mosaic_sky.pixel(l, m)
        beams = np.array([[airy(angle(unit(l, m), unit(*p)), f, dish) for p in mosaic_sky.POINTINGS] for f in freqs])
        seen = int((beams.min(axis=0) >= 0.25).sum())
        truth = flux * (freqs / 144e6) ** alpha
        i_err = np.abs(stokes["I"][:, y, x] / truth - 1).max()
        shape = (stokes["I"][-1, y, x] / stokes["I"][0, y, x]) / (truth[-1] / truth[0]) - 1
        p_err = np.abs(np.hypot(stokes["Q"][:, y, x], stokes["U"][:, y, x]) / (frac * truth) - 1).max()
        peak_err = peak_pi[y, x] / (frac * truth.mean()) - 1
        phi_err = peak_phi[y, x] - rm
        for key, value in zip(worst, (i_err, shape, p_err, peak_err, phi_err)):
            worst[key] = max(worst[key], abs(value))
        print(f"{name:8} {seen:>7} {beams.max(axis=1).min():4.2f}-{beams.max(axis=1).max():4.2f} "
              f"{100 * i_err:6.2f}% {100 * shape:+8.2f}% {100 * p_err:6.2f}% {100 * peak_err:+10.2f}% {phi_err:+8.3f}")
    print(f"worst: I {100 * worst['i']:.2f} %, spectral shape {100 * worst['shape']:.2f} %, polarised flux "
          f"{100 * worst['p']:.2f} %, peak PI {100 * worst['peak']:.2f} %, Faraday depth {worst['phi']:.3f} rad/m^2")


def channel_weights(folder):
    qa = json.loads((Path(folder) / "spip-qa.json").read_text())
    return np.array([1 / c["residual_sigma_jy"] ** 2 for c in qa["channels"]]), qa


def reproject_comparison(mosaic, pointings):
    mosaic_w = np.array([c["mosaic_weights"] for c in channel_weights(mosaic)[1]["channels"]])
    singles = [channel_weights(folder)[0] for folder in pointings]
    weight_diff = max(np.abs(mosaic_w[:, p] / singles[p] - 1).max() for p in range(len(pointings)))
    print(f"mosaic weights 1/sigma^2 against each pointing's own run: {weight_diff:.1e} apart at most")
    responses = [cube(folder, "pb")[0] for folder in pointings]
    for s in "IQU":
        spip, header = cube(mosaic, f"image-pb-{s}")
        wcs = WCS(header).celestial
        peers = [cube(folder, f"image-pb-{s}")[0] for folder in pointings]
        worst, peak, blank_there = 0.0, np.nanmax(np.abs(cube(mosaic, "image-pb-I")[0])), 0
        for c in range(spip.shape[0]):
            data = [np.nan_to_num(peer[c]) for peer in peers]
            weights = [np.where(np.isfinite(peer[c]), responses[p][c] ** 2 * singles[p][c], 0.0)
                       for p, peer in enumerate(peers)]
            coadd, _ = reproject_and_coadd([(d, wcs) for d in data], wcs, shape_out=spip[c].shape,
                                           input_weights=weights, reproject_function=reproject_interp,
                                           combine_function="mean", match_background=False)
            difference = np.where(np.isfinite(spip[c]), np.abs(spip[c] - coadd), 0.0)
            at = np.unravel_index(np.argmax(difference), difference.shape)
            if difference[at] > worst:
                worst = difference[at]
                blank_there = sum(not np.isfinite(peer[c][at]) for peer in peers)
        print(f"Stokes {s}: max |spip - reproject_and_coadd| = {worst:.2e} Jy/beam, {worst / peak:.1e} of the "
              f"I peak ({peak:.3f}), over every channel's pixels above beam.limit; there {blank_there} pointing(s) "
              f"had a response below the per-pointing runs' beam.limit, which the peer leaves out and spip weighs in")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mosaic")
    parser.add_argument("pointings", nargs="+")
    parser.add_argument("--dish", type=float, required=True)
    parser.add_argument("--freq0", type=float, required=True)
    parser.add_argument("--dfreq", type=float, required=True)
    args = parser.parse_args()
    channels = cube(args.mosaic, "image-pb-I")[0].shape[0]
    truth_table(args.mosaic, args.freq0 + args.dfreq * np.arange(channels), args.dish)
    reproject_comparison(args.mosaic, args.pointings)


if __name__ == "__main__":
    main()
