#!/usr/bin/env python3
"""spip's Faraday products against RM-Tools' on the same restored Q and U cubes.

Run with the RM-Tools virtual environment's Python (bench/run-rmtools-bench.sh does):
besides astropy and numpy it imports RM-Tools' own FITS readers and peak fit, to check
that they read spip's cubes, not only that astropy does.

usage: compare_rmtools.py SPIP_DIR PREFIX RMT_DIR RMT_PREFIX FREQ_FILE NITER

SPIP_DIR/PREFIX-*: spip's run (all six FDF cubes, peak maps, rmsf.fits, qa.json).
RMT_DIR/RMT_PREFIX*: rmsynth3d, rmclean3d and rmtools_peakfitcube -a (output name
RMT_PREFIX + "peak_") run on spip's restored cubes. NITER: the RM-CLEAN iteration cap
both used. Prints the agreement table and what RM-Tools needed to read spip's Faraday
cubes.
"""
import json
import math
import os
import sys
import warnings

import numpy as np
from astropy.io import fits
from astropy.io.fits.verify import VerifyWarning

warnings.simplefilter("ignore", VerifyWarning)

C = 299792458.0
ROWS = 64  # image rows per chunk: 241 depths x 64 rows x 512 pixels in float64 is 63 MB


def cube(path):
    """The data of a FITS cube as a [phi, y, x] memory map (degenerate axes dropped)."""
    data = fits.open(path, memmap=True)[0].data
    return data.reshape(data.shape[-3:])


def phi_axis(header, axis=3):
    n = header[f"NAXIS{axis}"]
    return header[f"CRVAL{axis}"] + (np.arange(n) + 1 - header[f"CRPIX{axis}"]) * header[f"CDELT{axis}"]


def worst_difference(pairs, replace=None):
    """Per pixel, the largest |a - b| over phi of each (name, a_cube, b_cube) pair, read
    in row chunks; `replace(y0, y1, chunks)` may swap in other b chunks (re-restoring)."""
    ny, nx = pairs[0][1].shape[1:]
    worst = {name: np.zeros((ny, nx)) for name, _, _ in pairs}
    for y0 in range(0, ny, ROWS):
        y1 = min(ny, y0 + ROWS)
        chunks = {name: (np.asarray(a[:, y0:y1], np.float64), np.asarray(b[:, y0:y1], np.float64))
                  for name, a, b in pairs}
        if replace:
            chunks = replace(y0, y1, chunks)
        for name, (a, b) in chunks.items():
            worst[name][y0:y1] = np.nanmax(np.abs(a - b), axis=0)
    return worst


def gaussian_matrix(phi, fwhm, reach=None):
    """G[k, j] = exp(-4 ln2 (phi_k - phi_j)^2 / fwhm^2), optionally zero beyond `reach` samples."""
    k = np.arange(phi.size)
    d = phi[:, None] - phi[None, :]
    g = np.exp(-4 * math.log(2) * d * d / (fwhm * fwhm))
    if reach is not None:
        g[np.abs(k[:, None] - k[None, :]) > reach] = 0
    return g


def half_power_width(lambda_sq, step=1e-4):
    """Full width at half maximum of |RMSF| (uniform weights), walked out from 0."""
    lambda0_sq = lambda_sq.mean()
    phi = np.arange(1, 200000) * step
    for start in range(0, phi.size, 4000):
        block = phi[start:start + 4000]
        amp = np.abs(np.exp(-2j * np.outer(block, lambda_sq - lambda0_sq)).mean(axis=1))
        below = np.nonzero(amp < 0.5)[0]
        if below.size:
            i = start + below[0]
            prev = 1.0 if i == 0 else np.abs(np.exp(-2j * phi[i - 1] * (lambda_sq - lambda0_sq)).mean())
            return 2 * (phi[i] - step * (0.5 - amp[below[0]]) / (prev - amp[below[0]]))
    raise RuntimeError("no half-power point")


def row(what, pixels, value, unit_or_ref, note=""):
    print(f"| {what} | {pixels} | {value} | {unit_or_ref} | {note} |")


def main():
    spip_dir, prefix, rmt_dir, rmt_prefix, freq_file = sys.argv[1:6]
    niter = int(sys.argv[6])
    sp = lambda name: os.path.join(spip_dir, f"{prefix}-{name}.fits")
    rt = lambda name: os.path.join(rmt_dir, f"{rmt_prefix}{name}.fits")

    # The phi grid, channels and widths each side used.
    sp_head, rt_head = fits.getheader(sp("FDF_real_dirty")), fits.getheader(rt("FDF_real_dirty"))
    sp_phi, rt_phi = phi_axis(sp_head), phi_axis(rt_head)
    if sp_phi.shape != rt_phi.shape or np.max(np.abs(sp_phi - rt_phi)) > 1e-9:
        sys.exit(f"compare_rmtools: the phi grids differ: spip {sp_phi[0]}..{sp_phi[-1]} ({sp_phi.size}), "
                 f"RM-Tools {rt_phi[0]}..{rt_phi[-1]} ({rt_phi.size})")
    freqs = np.loadtxt(freq_file)
    qa = json.load(open(os.path.join(spip_dir, f"{prefix}-qa.json")))
    qa_freqs = np.array([c["freq_hz"] for c in sorted(qa["channels"], key=lambda c: c["channel"])])
    lambda_sq = (C / freqs) ** 2
    # peak-pi-err is the FDF noise sigma each pixel was cleaned to and measured against:
    # the field's everywhere, or (spip since its per-pixel cutoff) the pixel's own where
    # that is higher. Its minimum is the field's sigma, the one cutoff rmclean3d can take.
    sigma_map = fits.getdata(sp("peak-pi-err")).astype(np.float64)
    sigma = float(np.nanmin(sigma_map))
    raised = sigma_map > sigma
    fwhm_spip = fits.getheader(sp("rmsf"))["RMSFFWHM"]
    fwhm_rmt = float(np.nanmax(fits.getdata(rt("RMSF_FWHM"))))
    fwhm_numpy = half_power_width(lambda_sq)
    from RMutils.util_RM import fit_rmsf, measure_FDF_parms  # RM-Tools' own code, from its venv
    rmsf_tot = fits.open(rt("RMSF_tot"), memmap=True)[0].data
    rmsf_tot = rmsf_tot.reshape(rmsf_tot.shape[-3:])
    rmsf_phi = phi_axis(fits.getheader(rt("RMSF_tot")))
    fit = fit_rmsf(rmsf_phi, np.asarray(rmsf_tot[:, 0, 0], np.float64))
    fwhm_fit = fit.params[2] if fit is not None and fit.status >= 1 else float("nan")
    n_q_nan = int(np.isnan(fits.getdata(sp("image-Q"))).sum())

    print(f"phi grid: {sp_phi.size} depths, {sp_phi[0]:g} to {sp_phi[-1]:g} by {sp_phi[1] - sp_phi[0]:g} rad/m^2 "
          f"(spip FDEP CRVAL3/CDELT3/NAXIS3 = RM-Tools'); channels {freqs.size}, rmtools_freqfile against qa.json: "
          f"max |dnu| {np.max(np.abs(freqs - qa_freqs)):.3g} Hz; NaN voxels in spip's Q cube: {n_q_nan}")
    print(f"LAMSQ0: spip {sp_head['LAMSQ0']:.9f}, RM-Tools {rt_head['LAMSQ0']:.9f} m^2; field FDF noise sigma (spip) "
          f"{sigma:.4g} Jy/beam; pixels spip cleaned to a higher cutoff, from their own noise: {int(raised.sum())}"
          + (f" (up to {np.nanmax(sigma_map) / sigma:.3g} x)" if raised.any() else ""))
    print(f"RMSF FWHM [rad/m^2]: spip measured (RMSFFWHM) {fwhm_spip:.5f}; half-power width by numpy here "
          f"{fwhm_numpy:.5f}; RM-Tools restores with 3.8/dlambda^2 = {fwhm_rmt:.5f} ({100 * (fwhm_rmt / fwhm_spip - 1):+.2f} %); "
          f"RM-Tools' Gaussian fit (rmsynth3d -t) would give {fwhm_fit:.5f}")
    print()

    print("| compared | pixels | worst abs difference | relative to | note |")
    print("|---|---|---|---|---|")
    # Dirty FDF: spip's three cubes against RM-Tools' as written.
    npix = sp_head["NAXIS1"] * sp_head["NAXIS2"]
    everything = f"all {npix} x {sp_phi.size}"
    peak_dirty = float(np.nanmax(cube(sp("FDF_tot_dirty"))))
    dirty = worst_difference([
        ("amp", cube(sp("FDF_tot_dirty")), cube(rt("FDF_tot_dirty"))),
        ("real", cube(sp("FDF_real_dirty")), cube(rt("FDF_real_dirty"))),
        ("imag", cube(sp("FDF_im_dirty")), cube(rt("FDF_im_dirty")))])
    for part in ("amp", "real", "imag"):
        row(f"dirty FDF, {part}", everything, f"{dirty[part].max() / peak_dirty:.2e}", f"peak {peak_dirty:.4g} Jy/beam")

    # Which of the two is off: both against a double-precision synthesis of the same Q and
    # U (uniform weights, as both ran) on every 16th row, with the exact speed of light and
    # with rmsynth3d's own constant (2.997924538e8 m/s).
    q_cube, u_cube = cube(sp("image-Q")), cube(sp("image-U"))
    sp_fdf = cube(sp("FDF_real_dirty")), cube(sp("FDF_im_dirty"))
    rt_fdf = cube(rt("FDF_real_dirty")), cube(rt("FDF_im_dirty"))
    reference = {}
    for c in (C, 2.997924538e8):
        lsq = (c / freqs) ** 2
        a = np.exp(-2j * np.outer(sp_phi, lsq - lsq.mean())) / lsq.size
        worst_sp = worst_rt = 0.0
        for y in range(0, q_cube.shape[1], 16):
            f = a @ (np.asarray(q_cube[:, y], np.float64) + 1j * np.asarray(u_cube[:, y], np.float64))
            worst_sp = max(worst_sp, float(np.abs(f - (sp_fdf[0][:, y] + 1j * sp_fdf[1][:, y].astype(np.float64))).max()))
            worst_rt = max(worst_rt, float(np.abs(f - (rt_fdf[0][:, y] + 1j * rt_fdf[1][:, y].astype(np.float64))).max()))
        reference[c] = (worst_sp / peak_dirty, worst_rt / peak_dirty)
    rows = (q_cube.shape[1] + 15) // 16 * q_cube.shape[2]
    row("dirty FDF against numpy's double-precision synthesis, spip / RM-Tools", f"{rows} (every 16th row) x {sp_phi.size}",
        f"{reference[C][0]:.2e} / {reference[C][1]:.2e}", f"peak {peak_dirty:.4g} Jy/beam",
        f"with rmsynth3d's c = 2.997924538e8 m/s: {reference[2.997924538e8][0]:.2e} / {reference[2.997924538e8][1]:.2e}")

    # Clean FDF as each restored it; then RM-Tools' components restored with spip's width
    # (spip's Gaussian, cut at 2.5 FWHM as spip cuts it), which leaves what the two CLEANs
    # themselves put in different places. Pixels whose CLEAN ran to niter are reported
    # apart: over hundreds of iterations near the cutoff, differences of 1e-6 in the dirty
    # spectra can steer the component picks. So are pixels spip cleaned to a higher
    # cutoff than the field's, which rmclean3d (one cutoff per cube) cannot do.
    peak_clean = float(np.nanmax(cube(sp("FDF_clean_tot"))))
    parts = [("amp", "FDF_clean_tot", "FDF_clean_tot"), ("real", "FDF_clean_real", "FDF_clean_real"),
             ("imag", "FDF_clean_im", "FDF_clean_im")]
    clean = worst_difference([(part, cube(sp(s_name)), cube(rt(r_name))) for part, s_name, r_name in parts])
    dphi = sp_phi[1] - sp_phi[0]
    swap = (gaussian_matrix(sp_phi, fwhm_spip, math.ceil(2.5 * fwhm_spip / dphi))
            - gaussian_matrix(sp_phi, fwhm_rmt))
    cc_re, cc_im = cube(rt("FDF_CC_real")), cube(rt("FDF_CC_im"))
    rt_re, rt_im = cube(rt("FDF_clean_real")), cube(rt("FDF_clean_im"))

    def restore_with_spip_width(y0, y1, chunks):
        model = np.asarray(cc_re[:, y0:y1], np.float64) + 1j * np.asarray(cc_im[:, y0:y1], np.float64)
        restored = np.asarray(rt_re[:, y0:y1], np.float64) + 1j * np.asarray(rt_im[:, y0:y1], np.float64)
        flat = model.reshape(model.shape[0], -1)
        used = np.nonzero(np.any(flat != 0, axis=0))[0]
        restored.reshape(flat.shape)[:, used] += swap @ flat[:, used]
        return {"amp": (chunks["amp"][0], np.abs(restored)), "real": (chunks["real"][0], restored.real),
                "imag": (chunks["imag"][0], restored.imag)}

    # b is spip's cube here only as a placeholder: restore_with_spip_width replaces it.
    rerestored = worst_difference([(part, cube(sp(s_name)), cube(sp(s_name))) for part, s_name, _ in parts],
                                  restore_with_spip_width)
    n_iter = fits.getdata(rt("CLEAN_nIter")).astype(np.int64).squeeze()
    capped = n_iter >= niter
    same = ~raised
    worst_of = lambda values, where: float(values[where].max()) / peak_clean if where.any() else float("nan")
    for part in ("amp", "real", "imag"):
        note = (f"same cutoff ({int(same.sum())} px): {worst_of(clean[part], same):.2e}, with RM-Tools' components "
                f"restored at spip's FWHM {worst_of(rerestored[part], same):.2e} "
                f"({worst_of(rerestored[part], same & ~capped):.2e} without the {int((same & capped).sum())} at niter)")
        if raised.any():
            note += f"; spip's cutoff higher ({int(raised.sum())} px): {worst_of(clean[part], raised):.2e}"
        row(f"clean FDF, {part}", everything, f"{clean[part].max() / peak_clean:.2e}", f"peak {peak_clean:.4g} Jy/beam",
            note)

    # Peak maps: spip's (parabolic peak of its clean FDF; PI bias-corrected with its sigma,
    # undone here) against rmtools_peakfitcube's phiPeakPIfit / ampPeakPIfit (parabolic,
    # not bias-corrected) of RM-Tools' clean cube.
    sp_phi_map = fits.getdata(sp("peak-phi")).astype(np.float64)
    sp_pi = fits.getdata(sp("peak-pi")).astype(np.float64)
    sp_pi_raw = np.where(sp_pi > 0, np.sqrt(sp_pi ** 2 + 2.3 * sigma_map ** 2), sp_pi)
    rt_phi_map = fits.getdata(rt("peak_phiPeakPIfit_rm2")).astype(np.float64).squeeze()
    rt_pi = fits.getdata(rt("peak_ampPeakPIfit")).astype(np.float64).squeeze()
    masks = [("PI > 1 % of max", sp_pi > 0.01 * np.nanmax(sp_pi)), ("PI > 10 sigma", sp_pi > 10 * sigma_map)]
    for label, mask in masks:
        dphi_map = np.nanmax(np.abs(sp_phi_map - rt_phi_map)[mask])
        dpi = np.nanmax(np.abs(sp_pi_raw[mask] - rt_pi[mask]) / sp_pi_raw[mask])
        row(f"peak phi, {label}", int(mask.sum()), f"{dphi_map:.2e} rad/m^2", f"{dphi_map / fwhm_spip:.1e} FWHM")
        row(f"peak PI, {label}", int(mask.sum()), f"{dpi:.2e}", "the pixel's PI")

    # RM-Tools' own readers on spip's Faraday cubes as written: they find the partner
    # files and the RMSF_FWHM map by rewriting the name they are given.
    from RMtools_3D.do_RMclean_3D import read_FDF_cubes
    from RMtools_3D.RMpeakfit_3D import read_files
    dirty_read, head, fd_axis = read_FDF_cubes(sp("FDF_tot_dirty"))
    dirty_ok = (fd_axis == 3 and np.array_equal(dirty_read.real, cube(sp("FDF_real_dirty")))
                and np.array_equal(dirty_read.imag, cube(sp("FDF_im_dirty"))))
    del dirty_read
    fdf, phi_read, fwhm_read, _, lam0_read, _ = read_files(sp("FDF_clean_tot"), freq_file)
    clean_ok = (np.array_equal(fdf.real, cube(sp("FDF_clean_real"))) and np.array_equal(fdf.imag, cube(sp("FDF_clean_im")))
                and np.max(np.abs(phi_read - sp_phi)) < 1e-6 and lam0_read == sp_head["LAMSQ0"]
                and np.all(fwhm_read == np.float32(fwhm_spip)))
    mask = masks[0][1]
    ys, xs = np.nonzero(mask)
    fit_phi, fit_pi = np.empty(ys.size), np.empty(ys.size)
    for i, (y, x) in enumerate(zip(ys, xs)):
        m = measure_FDF_parms(fdf[:, y, x], phi_read, float(fwhm_read[y, x]), lamSqArr_m2=lambda_sq,
                              lam0Sq=lam0_read, snrDoBiasCorrect=5.0)
        fit_phi[i], fit_pi[i] = m["phiPeakPIfit_rm2"], m["ampPeakPIfit"]
    del fdf
    own_phi = np.max(np.abs(fit_phi - sp_phi_map[mask]))
    own_pi = np.max(np.abs(fit_pi - sp_pi_raw[mask]) / sp_pi_raw[mask])
    row(f"peak phi, RM-Tools' fit of spip's clean cube, {masks[0][0]}", int(mask.sum()), f"{own_phi:.2e} rad/m^2",
        f"{own_phi / fwhm_spip:.1e} FWHM", "same cube: the fits alone")
    row(f"peak PI, RM-Tools' fit of spip's clean cube, {masks[0][0]}", int(mask.sum()), f"{own_pi:.2e}",
        "the pixel's PI", "same cube: the fits alone")
    print()
    print(f"RM-CLEAN: RM-Tools cleaned {int((n_iter > 0).sum())} spectra, {int(n_iter.sum())} iterations in all, "
          f"{int(capped.sum())} spectra stopped by niter {niter}")
    print(f"RM-Tools' readers on spip's Faraday cubes as written (rmclean3d's read_FDF_cubes, "
          f"rmtools_peakfitcube's read_files): dirty cube {'read exactly' if dirty_ok else 'NOT read exactly'}; "
          f"clean cube, phi axis, LAMSQ0 and RMSF_FWHM map {'read exactly' if clean_ok else 'NOT read exactly'}")


if __name__ == "__main__":
    main()
