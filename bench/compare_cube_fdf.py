#!/usr/bin/env python3
"""spip's FDF cubes against RM-Tools' on the same cubes: the dirty FDF, and the clean FDF
with RM-Tools' components restored at spip's RMSF width (RM-Tools restores with
3.8 / lambda^2 span; docs/products.md), as fractions of the dirty FDF's peak. Where the
clean FDFs differ most, both are set against a double-precision RM-CLEAN of spip's
dirty spectrum with the exact RMSF, and with RM-Tools' own RMSF.

usage: compare_cube_fdf.py SPIP_PREFIX RMT_PREFIX FREQS NOISE CUTOFF NITER GAIN
"""
import math
import sys

import numpy as np
from astropy.io import fits

spip, rmt = sys.argv[1], sys.argv[2]
freq, noise = np.loadtxt(sys.argv[3]), np.loadtxt(sys.argv[4])
cutoff, niter, gain = float(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])


def cube(path):
    data = fits.getdata(path)
    return data.reshape(data.shape[-3:]).astype(np.float64)


h = fits.getheader(f"{spip}-FDF_real_dirty.fits")
phi = h["CRVAL3"] + (np.arange(h["NAXIS3"]) + 1 - h["CRPIX3"]) * h["CDELT3"]
ours = cube(f"{spip}-FDF_real_dirty.fits") + 1j * cube(f"{spip}-FDF_im_dirty.fits")
theirs = cube(f"{rmt}FDF_real_dirty.fits") + 1j * cube(f"{rmt}FDF_im_dirty.fits")
peak = np.nanmax(np.abs(theirs))
print(f"dirty FDF: max |spip - rmsynth3d| = {np.nanmax(np.abs(ours - theirs)) / peak:.2e} of the peak ({peak:.4f})")

fwhm = fits.getheader(f"{spip}-rmsf.fits")["RMSFFWHM"]
fwhm_rmt = float(np.nanmax(fits.getdata(f"{rmt}RMSF_FWHM.fits")))
d = phi[:, None] - phi[None, :]
reach = math.ceil(2.5 * fwhm / h["CDELT3"])
swap = np.exp(-4 * math.log(2) * d * d / fwhm**2) * (np.abs(d) <= reach * h["CDELT3"] + 1e-9)
swap -= np.exp(-4 * math.log(2) * d * d / fwhm_rmt**2)
components = np.nan_to_num(cube(f"{rmt}FDF_CC_real.fits") + 1j * cube(f"{rmt}FDF_CC_im.fits"))
theirs = cube(f"{rmt}FDF_clean_real.fits") + 1j * cube(f"{rmt}FDF_clean_im.fits")
ours_real = fits.open(f"{spip}-FDF_clean_real.fits", memmap=True)[0].data.reshape(theirs.shape)
ours_imag = fits.open(f"{spip}-FDF_clean_im.fits", memmap=True)[0].data.reshape(theirs.shape)
worst, where, beyond = 0.0, (0, 0), 0
for y in range(theirs.shape[1]):  # a row at a time: the swap is [phi, phi]
    restored = theirs[:, y] + swap @ components[:, y]
    ours = np.asarray(ours_real[:, y], np.float64) + 1j * np.asarray(ours_imag[:, y], np.float64)
    difference = np.nan_to_num(np.abs(ours - restored)).max(axis=0)
    beyond += int((difference > 1e-5 * peak).sum())
    if difference.max() > worst:
        worst, where = float(difference.max()), (y, int(difference.argmax()))
print(f"clean FDF: max |spip - rmclean3d restored at spip's width| = {worst / peak:.2e} of the peak, at pixel "
      f"(x, y) = ({where[1]}, {where[0]}); {beyond} of {theirs.shape[1] * theirs.shape[2]} pixels beyond 1e-5")
iterations = np.nansum(fits.getdata(f"{spip}-rmclean-iterations.fits"))
print(f"RM-CLEAN iterations: spip {iterations:.0f}, rmclean3d {np.nansum(fits.getdata(f'{rmt}CLEAN_nIter.fits')):.0f}")

# That pixel again, from spip's dirty spectrum, in double precision.
y, x = where
weights = 1 / noise**2
lambda_sq = (299792458.0 / freq) ** 2
lambda0_sq = (weights * lambda_sq).sum() / weights.sum()
n, step = phi.size, phi[1] - phi[0]
lags = (np.arange(2 * n - 1) - (n - 1)) * step
exact = np.exp(-2j * np.outer(lags, lambda_sq - lambda0_sq)) @ weights / weights.sum()
rmt_rmsf = cube(f"{rmt}RMSF_real.fits")[:, y, x] + 1j * cube(f"{rmt}RMSF_im.fits")[:, y, x]
rmt_lags = fits.getheader(f"{rmt}RMSF_real.fits")
rmt_phi = rmt_lags["CRVAL3"] + (np.arange(rmt_lags["NAXIS3"]) + 1 - rmt_lags["CRPIX3"]) * rmt_lags["CDELT3"]
first = int(np.argmin(np.abs(rmt_phi - lags[0])))
rmt_rmsf = rmt_rmsf[first:first + lags.size]
print(f"RMSF: RM-Tools' against the exact one, max difference {np.abs(rmt_rmsf - exact).max():.2e} of its peak")

def dirty_of(prefix):
    real = fits.open(f"{prefix}FDF_real_dirty.fits", memmap=True)[0].data.reshape(theirs.shape)[:, y, x]
    imag = fits.open(f"{prefix}FDF_im_dirty.fits", memmap=True)[0].data.reshape(theirs.shape)[:, y, x]
    return np.asarray(real, float) + 1j * np.asarray(imag, float)


restore = np.exp(-4 * math.log(2) * d * d / fwhm**2) * (np.abs(d) <= reach * h["CDELT3"] + 1e-9)


def clean(dirty, rmsf):
    residual, components = dirty.copy(), np.zeros(n, complex)
    for _ in range(niter):
        k = int(np.argmax(np.abs(residual)))
        if abs(residual[k]) < cutoff:
            break
        components[k] += gain * residual[k]
        residual -= gain * residual[k] * rmsf[n - 1 - k:2 * n - 1 - k]
    return residual + restore @ components


# Each program's RM-CLEAN against a double-precision one of its own dirty FDF: where the
# two differ, a near-tie between two depths' residuals was broken differently.
ours = np.asarray(ours_real[:, y, x], float) + 1j * np.asarray(ours_imag[:, y, x], float)
restored = theirs[:, y, x] + swap @ components[:, y, x]
from_ours, from_theirs = clean(dirty_of(f"{spip}-"), exact), clean(dirty_of(rmt), exact)
print(f"at that pixel, against a double-precision RM-CLEAN (exact RMSF) of its own dirty FDF: spip "
      f"{np.abs(ours - from_ours).max() / peak:.2e}, rmclean3d {np.abs(restored - from_theirs).max() / peak:.2e} of "
      f"the peak; the two references differ by {np.abs(from_ours - from_theirs).max() / peak:.2e}")
