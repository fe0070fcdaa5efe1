#!/usr/bin/env python3
"""The Faraday stage on another imager's cubes, against RM-Tools and analytic truth.

usage: check_cube_faraday.py SPIP MPIEXEC RMTOOLS_BIN

Run with the Python of RM-Tools' virtual environment (scripts/install-deps.sh --tests
makes it), in a fresh TMPDIR of the test's own. It writes small Q, U and I cubes of two
Faraday-thin sources in noise, in the axis orders other imagers use (RA, DEC, FREQ,
STOKES; RA, DEC, STOKES, FREQ; FREQ first), with a blank channel and a blank corner as a
mosaic's edge has, and then checks:
  - spip on 1 and 2 ranks: the same products, bit for bit;
  - the dirty FDF against rmsynth3d and the clean FDF against rmclean3d (its components
    restored at spip's RMSF width, the only difference between the two CLEANs) to 1e-5 of
    the peak, with the same channel noise, depth grid, cutoff, gain and iteration cap;
  - the catalogue: both sources at their true Faraday depth, intensity and position,
    and its measured FDF noise as RM-Tools measures it;
  - blank pixels: NaN in every product, and nothing else blank;
  - cubes whose grids or frequency axes disagree: refused in one line naming both;
  - cubes of per-channel beams: each channel convolved to one beam, against the analytic
    image of an extended source at that beam;
  - a run stopped by SIGTERM in the Faraday stage: exit 75, nothing final, and the same
    command then makes the uninterrupted run's products.
"""
import math
import os
import re
import shlex
import shutil
import subprocess
import sys

sys.dont_write_bytecode = True  # rmtable_verify is imported; the tests write into their own TMPDIR

import numpy as np
from astropy.io import fits
from astropy.wcs import WCS

SPIP, MPIEXEC, RMT = sys.argv[1], shlex.split(sys.argv[2]), sys.argv[3]
WORK = os.environ["TMPDIR"]
C = 299792458.0
NX, NY, NC = 24, 20, 48
FREQ = 800e6 + 6e6 * np.arange(NC)
LAMBDA_SQ = (C / FREQ) ** 2
BLANK_CHANNEL = 5
SOURCES = [  # x, y, polarised intensity [Jy/beam], Faraday depth [rad/m^2], chi0 [rad], Stokes I at 944 MHz
    (7, 6, 0.05, 35.0, 0.3, 0.1),
    (16, 13, 0.02, -120.0, 1.1, 0.05),
]
# Faraday-complex: two thin components along one line of sight (x, y, [(PI, phi, chi0)], I).
COMPLEX = (11, 15, [(0.03, 10.0, 0.2), (0.03, 45.0, 1.0)], 0.1)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def header(stokes, order, cdelt_hz=6e6):
    h = fits.Header()
    axes = {"RA": ("RA---SIN", 12.0, 40.25, -5.0 / 3600, "deg"), "DEC": ("DEC--SIN", 9.0, -45.5, 5.0 / 3600, "deg"),
            "FREQ": ("FREQ", 1.0, FREQ[0], cdelt_hz, "Hz"), "STOKES": ("STOKES", 1.0, stokes, 1.0, "")}
    for k, name in enumerate(order, 1):
        ctype, crpix, crval, cdelt, unit = axes[name]
        h[f"CTYPE{k}"], h[f"CRPIX{k}"], h[f"CRVAL{k}"], h[f"CDELT{k}"] = ctype, crpix, crval, cdelt
        if unit:
            h[f"CUNIT{k}"] = unit
    h["BMAJ"], h["BMIN"], h["BPA"], h["BUNIT"] = 15 / 3600, 12 / 3600, 30.0, "Jy/beam"
    return h


def write(path, data, stokes, order, frame=None, **kw):
    """data [freq, y, x] written with the FITS axes `order` (fastest first); `frame`: its
    RADESYS (FK5 with EQUINOX 2000), else neither key."""
    numpy_axes = ["STOKES", "FREQ", "DEC", "RA"]  # of data[None]
    perm = [numpy_axes.index(name) for name in reversed(order)]
    h = header(stokes, order, **kw)
    if frame:
        h["RADESYS"] = frame
        if frame == "FK5":
            h["EQUINOX"] = 2000.0
    fits.PrimaryHDU(np.transpose(data[None], perm).astype(np.float32), h).writeto(path)


def make_cubes():
    rng = np.random.default_rng(1)
    sigma = 1e-3 * (1 + 0.5 * np.sin(np.arange(NC)))
    q, u, i = (rng.normal(size=(NC, NY, NX)) * sigma[:, None, None] for _ in range(3))
    x, y, components, s = COMPLEX
    for x, y, components, s in [(x, y, components, s)] + [(x, y, [(p, rm, chi)], s) for x, y, p, rm, chi, s in SOURCES]:
        pol = sum(p * np.exp(2j * (chi + rm * LAMBDA_SQ)) for p, rm, chi in components)
        q[:, y, x] += pol.real
        u[:, y, x] += pol.imag
        i[:, y, x] += s * (FREQ / 944e6) ** -0.7
    for cube in (q, u, i):
        cube[:, -2:, -3:] = np.nan  # beyond a mosaic's edge
    cubes = q, u  # as the first runs see them
    write(f"{WORK}/q.fits", q, 2, ["RA", "DEC", "FREQ", "STOKES"])   # WSClean's order
    write(f"{WORK}/u.fits", u, 3, ["RA", "DEC", "STOKES", "FREQ"])   # CASA's exportfits order
    write(f"{WORK}/i.fits", i, 1, ["FREQ", "RA", "DEC", "STOKES"])
    write(f"{WORK}/u-other-axis.fits", u, 3, ["RA", "DEC", "FREQ", "STOKES"], cdelt_hz=6.5e6)
    write(f"{WORK}/u-fk5.fits", u, 3, ["RA", "DEC", "STOKES", "FREQ"], frame="FK5")
    np.savetxt(f"{WORK}/noise.txt", sigma)
    np.savetxt(f"{WORK}/freqs.txt", FREQ)
    os.mkdir(f"{WORK}/gap")  # the same with a channel flagged throughout
    q, u, i = q.copy(), u.copy(), i.copy()
    for cube in (q, u, i):
        cube[BLANK_CHANNEL] = np.nan
    write(f"{WORK}/gap/q.fits", q, 2, ["RA", "DEC", "FREQ", "STOKES"])
    write(f"{WORK}/gap/u.fits", u, 3, ["RA", "DEC", "STOKES", "FREQ"])
    write(f"{WORK}/gap/i.fits", i, 1, ["FREQ", "RA", "DEC", "STOKES"])
    return sigma, *cubes


def spip(ranks, out, cubes=WORK, *extra):
    command = MPIEXEC + [str(ranks), SPIP, "--input.cube_q", f"{cubes}/q.fits", "--input.cube_u", f"{cubes}/u.fits",
                         "--input.cube_i", f"{cubes}/i.fits", "--input.cube_noise", f"{WORK}/noise.txt",
                         "--output.dir", out, "--output.prefix", "c", "--faraday.cubes", "all",
                         "--faraday.variance_weights", "true", "--faraday.rmclean_xcorr", "false",
                         "--parallel.threads", "1", *extra]
    return subprocess.run(command, capture_output=True, text=True)


def cube(path):
    data = fits.getdata(path)
    return data.reshape(data.shape[-3:]).astype(np.float64)


def data_bytes(path):
    with fits.open(path) as hdus:
        return [hdu.data.tobytes() for hdu in hdus if hdu.data is not None]


def same_products(a, b):
    names = sorted(f for f in os.listdir(a) if f.endswith(".fits"))
    differ = [f for f in names if data_bytes(f"{a}/{f}") != data_bytes(f"{b}/{f}")]
    return names == sorted(f for f in os.listdir(b) if f.endswith(".fits")) and not differ, differ


def gaussian(phi, fwhm, reach=None):
    d = phi[:, None] - phi[None, :]
    g = np.exp(-4 * math.log(2) * d * d / (fwhm * fwhm))
    if reach is not None:
        g[np.abs(np.subtract.outer(np.arange(phi.size), np.arange(phi.size))) > reach] = 0
    return g


def depth_axis(path):
    h = fits.getheader(path)
    return h["CRVAL3"] + (np.arange(h["NAXIS3"]) + 1 - h["CRPIX3"]) * h["CDELT3"]


def reference_fdf(q, u, weights, phi, cutoff, niter, gain, fwhm, y, x):
    """One pixel's dirty and clean FDF in double precision, straight from the definitions:
    F(phi) = K sum_c w_c P_c exp(-2i phi (lambda_c^2 - lambda_0^2)), then Hogbom RM-CLEAN
    with the exact RMSF, the components restored with a Gaussian of spip's RMSF width cut
    at 2.5 FWHM (docs/products.md)."""
    lambda0_sq = (weights * LAMBDA_SQ).sum() / weights.sum()
    used = weights > 0
    kernel = lambda depths: np.exp(-2j * np.outer(depths, LAMBDA_SQ[used] - lambda0_sq)) @ weights[used] / weights.sum()
    p = q[used, y, x] + 1j * u[used, y, x]
    dirty = np.exp(-2j * np.outer(phi, LAMBDA_SQ[used] - lambda0_sq)) @ (weights[used] * p) / weights.sum()
    n, step = phi.size, phi[1] - phi[0]
    rmsf = kernel((np.arange(2 * n - 1) - (n - 1)) * step)
    residual, components = dirty.copy(), np.zeros(n, complex)
    for _ in range(niter):
        k = int(np.argmax(np.abs(residual)))
        if abs(residual[k]) < cutoff:
            break
        components[k] += gain * residual[k]
        residual -= gain * residual[k] * rmsf[n - 1 - k:2 * n - 1 - k]
    return dirty, residual + gaussian(phi, fwhm, math.ceil(2.5 * fwhm / step)) @ components


def compare(name, ours, theirs, peak):
    for part, f in (("real", np.real), ("imaginary", np.imag), ("amplitude", np.abs)):
        worst = np.abs(f(ours) - f(theirs)).max() / peak
        check(worst < 1e-5, f"{name}, {part} part: within {worst:.1e} of the peak ({peak:.4f} Jy/beam), < 1e-5")


def check_rmtable(out, catalogue):
    """The RMTable files as the rmtable package reads and verifies them."""
    from astropy.coordinates import SkyCoord
    from rmtable_verify import read_and_verify
    # The cubes give neither RADESYS nor EQUINOX: ICRS (WCS Paper II), which the products keep.
    frame = fits.getheader(f"{out}/c-peak-pi.fits").get("RADESYS")
    check(frame == "ICRS" and "EQUINOX" not in fits.getheader(f"{out}/c-peak-pi.fits"),
          f"the products' RADESYS is {frame}, without EQUINOX, as the cubes' frame without either key")
    for path in (f"{out}/c-rmtable.fits", f"{out}/c-rmtable.csv"):
        t, problems = read_and_verify(path)
        check(not problems, f"{os.path.basename(path)}: all 58 standard columns; verify_limits and "
                            f"verify_standard_strings pass ({problems})")
        check(len(t) == len(catalogue), f"  {len(t)} rows, as the catalogue")
        rows = {str(r["cat_id"]): r for r in t}
        for s in catalogue:
            r = rows.get(s["name"])
            if r is None:
                check(False, f"  {s['name']} is in the RMTable")
                continue
            icrs = SkyCoord(float(s["ra"]), float(s["dec"]), unit="deg", frame=frame.lower()).icrs
            check(abs(float(r["ra"]) - icrs.ra.deg) * math.cos(icrs.dec.rad) < 1e-9 and abs(float(r["dec"]) - icrs.dec.deg) < 1e-9,
                  f"  {s['name']}: ra and dec are astropy's ICRS of the catalogue's {frame} position")
            galactic = SkyCoord(float(r["ra"]), float(r["dec"]), unit="deg", frame="icrs").galactic
            check(abs((float(r["l"]) - galactic.l.deg + 180) % 360 - 180) < 1e-11 and abs(float(r["b"]) - galactic.b.deg) < 1e-11
                  and abs(math.hypot(float(r["stokesQ"]), float(r["stokesU"])) - float(r["polint"])) < 1e-6
                  and r["rm_method"] == "RM Synthesis - Pol. Int" and r["Nchan"] == NC,
                  f"  {s['name']}: l and b as astropy's, Q and U make polint, rm_method and Nchan as run")
            # The thin sources' RM, polarised intensity and angle at lambda0^2 against the truth.
            truth = [t for t in SOURCES if abs(float(s["x_pix"]) - t[0]) < 0.5 and abs(float(s["y_pix"]) - t[1]) < 0.5]
            if truth:
                _, _, p, rm, chi, _ = truth[0]
                lambda0_sq = fits.getheader(f"{out}/c-peak-phi.fits")["LAMSQ0"]
                angle = math.degrees(chi + rm * lambda0_sq) % 180
                offset = abs((float(r["polangle"]) - angle + 90) % 180 - 90)
                check(abs(float(r["rm"]) - rm) < 3 * float(r["rm_err"]) + 0.01
                      and abs(float(r["polint"]) - p) < 3 * float(r["polint_err"])
                      and offset < 3 * float(r["polangle_err"]) + 0.01,
                      f"  rm {float(r['rm']):.3f}, polint {float(r['polint']):.5f} and polangle {float(r['polangle']):.2f} "
                      f"are the truth's {rm}, {p} and {angle:.2f} within 3 sigma")


def lower_bound_in_first_sample(spectrum, rmt):
    """Whether rmsynth1d's lower 1-sigma bound of sigma_add is the first sample of its grid,
    where spip takes it as 0: RM-Tools' own posterior, remade from its thin fit."""
    from RMutils.util_RM import measure_qu_complexity
    freq, q, u, dq, du = np.loadtxt(spectrum, unpack=True)
    measures, curves = measure_qu_complexity(freq, q, u, dq, du, rmt["fracPol"], rmt["polAngle0Fit_deg"],
                                             rmt["phiPeakPIfit_rm2"])
    check(abs(measures["sigmaAddC"] - rmt["sigmaAddC"]) <= 1e-3 * abs(rmt["sigmaAddC"]),
          f"  rmsynth1d's posterior remade: sigma_add {measures['sigmaAddC']:.6f} against {rmt['sigmaAddC']:.6f}")
    return curves["probArrC"][0] / np.nansum(curves["probArrC"]) > 0.1572


def check_sigma_add(out, catalogue, q, u, sigma):
    """sigma_add against RM-Tools' rmsynth1d on the same spectra (the pixel's Q and U with
    the channels' noise, no Stokes I model, as spip ran): consistent with zero for the
    thin sources, significant for the complex one. Its lower error is rmsynth1d's, or
    the whole value where rmsynth1d's lower bound is the first sample of its grid."""
    import json
    for x, y, kind in [(s[0], s[1], "thin") for s in SOURCES] + [(COMPLEX[0], COMPLEX[1], "complex")]:
        rows = [s for s in catalogue if round(float(s["x_pix"])) == x and round(float(s["y_pix"])) == y]
        if not rows:
            check(False, f"a catalogue row at ({x}, {y}) for sigma_add")
            continue
        s = rows[0]
        spectrum = f"{WORK}/spectrum-{x}-{y}.dat"
        np.savetxt(spectrum, np.column_stack([FREQ, q[:, y, x], u[:, y, x], sigma, sigma]))
        subprocess.run([f"{RMT}/rmsynth1d", spectrum, "-S", "-w", "variance"], check=True, capture_output=True)
        rmt = json.load(open(spectrum.replace(".dat", "_RMsynth.json")))
        ours = float(s["sigma_add"]), float(s["sigma_add_err_minus"]), float(s["sigma_add_err_plus"])
        theirs = rmt["sigmaAddC"], rmt["dSigmaAddMinusC"], rmt["dSigmaAddPlusC"]
        at_zero = lower_bound_in_first_sample(spectrum, rmt)
        expected = (theirs[0], theirs[0] if at_zero else theirs[1], theirs[2])
        check(all(abs(a - b) <= 0.05 * abs(b) for a, b in zip(ours, expected)),
              f"{kind} source at ({x}, {y}): sigma_add {ours[0]:.4f} (-{ours[1]:.4f}, +{ours[2]:.4f}), "
              f"rmsynth1d's {theirs[0]:.4f} (-{theirs[1]:.4f}, +{theirs[2]:.4f}), within 5 %"
              + (" (its lower bound the grid's first sample: 0 in spip)" if at_zero else ""))
        significant = s["complex_sigma_add"] == "1"
        check(significant == (kind == "complex"),
              f"  {'significant' if kind == 'complex' else 'consistent with zero'}: complex_sigma_add {s['complex_sigma_add']}")


def check_measured_noise(out, catalogue):
    """fdf_noise_mad against RM-Tools' measure_FDF_parms (its dFDFcorMAD) on spip's own
    clean FDF at each source's pixel; the map holds it where the peak is 5 sigma."""
    from RMutils.util_RM import measure_FDF_parms
    clean = cube(f"{out}/c-FDF_clean_real.fits") + 1j * cube(f"{out}/c-FDF_clean_im.fits")
    phi = depth_axis(f"{out}/c-FDF_clean_real.fits")
    fwhm, lambda0_sq = fits.getheader(f"{out}/c-rmsf.fits")["RMSFFWHM"], fits.getheader(f"{out}/c-peak-phi.fits")["LAMSQ0"]
    for s in catalogue:
        x, y = round(float(s["x_pix"])), round(float(s["y_pix"]))
        theirs = measure_FDF_parms(clean[:, y, x], phi, fwhm, lamSqArr_m2=LAMBDA_SQ, lam0Sq=lambda0_sq)["dFDFcorMAD"]
        ours = float(s["fdf_noise_mad"])
        check(abs(ours - theirs) <= 1e-5 * theirs,
              f"fdf_noise_mad at ({x}, {y}): {ours:.4e} Jy/beam, measure_FDF_parms' {theirs:.4e}")
    noise, pi = fits.getdata(f"{out}/c-fdf-noise-mad.fits"), fits.getdata(f"{out}/c-peak-pi.fits")
    ratio = pi / (5 * fits.getdata(f"{out}/c-peak-pi-err.fits"))
    sources, clear = ratio >= 1, np.abs(ratio - 1) > 1e-5  # the stage compares in double, these maps are float
    check(np.isfinite(noise[sources & clear]).all() and np.isnan(noise[~sources & clear]).all(),
          f"the fdf-noise-mad map is measured at the {sources.sum()} pixels of at least 5 sigma, and only there")


def check_given_positions(one, catalogue):
    """catalogue.sources: a Selavy-like FITS table and an Aegean-like CSV of Stokes I
    positions; the catalogue measures there, in the list's order, and leaves out a
    position off the image."""
    from astropy.table import Table
    wcs = WCS(fits.getheader(f"{WORK}/q.fits")).celestial
    pixels = [(s[0], s[1]) for s in SOURCES] + [(COMPLEX[0], COMPLEX[1]), (3, 10), (200, 10)]
    ra, dec = wcs.pixel_to_world_values([p[0] for p in pixels], [p[1] for p in pixels])
    ids = [f"component_{k}" for k in range(len(pixels))]
    Table({"component_id": ids, "ra_deg_cont": ra, "dec_deg_cont": dec}).write(f"{WORK}/selavy.fits")
    Table({"uuid": ids, "ra": ra, "dec": dec}).write(f"{WORK}/aegean.csv")
    for listing in ("selavy.fits", "aegean.csv"):
        out = f"{WORK}/given-{listing}"
        run = spip(1, out, WORK, "--catalogue.sources", f"{WORK}/{listing}")
        check(run.returncode == 0, f"catalogue.sources {listing}: exit {run.returncode}")
        if run.returncode != 0:
            print(run.stderr[-2000:])
            continue
        rows = [line.rstrip("\n").split(",") for line in open(f"{out}/c-catalogue.csv")]
        given = [dict(zip(rows[0], r)) for r in rows[1:]]
        names = [g["name"] for g in given]
        check(len(given) == len(pixels) - 1 and (listing == "aegean.csv" or names == ids[:-1]),
              f"  {len(given)} rows, in the list's order, the one off the image left out: {names}")
        for g, (x, y) in zip(given, pixels):
            check(abs(float(g["x_pix"]) - x) < 1e-6 and abs(float(g["y_pix"]) - y) < 1e-6,
                  f"  row at ({g['x_pix']}, {g['y_pix']}), the list's ({x}, {y})")
            island = [s for s in catalogue if round(float(s["x_pix"])) == x and round(float(s["y_pix"])) == y]
            if island:
                check(g["phi"] == island[0]["phi"] and g["sigma_add"] == island[0]["sigma_add"],
                      f"  its phi and sigma_add are those the island catalogue found there")


def check_beamless_cubes(one):
    """Cubes whose headers give no restoring beam: refused in one line, since the catalogue
    sizes its boxes and components by the beam, unless image.beam gives it; with the
    cubes' own beam as image.beam the catalogue is the one of the cubes with it."""
    beamless = f"{WORK}/beamless"
    os.mkdir(beamless)
    for name in ("q", "u", "i"):
        with fits.open(f"{WORK}/{name}.fits") as hdul:
            h = hdul[0].header.copy()
            for key in ("BMAJ", "BMIN", "BPA"):
                del h[key]
            fits.PrimaryHDU(hdul[0].data, h).writeto(f"{beamless}/{name}.fits")
    run = subprocess.run([SPIP, "--input.cube_q", f"{beamless}/q.fits", "--input.cube_u", f"{beamless}/u.fits",
                          "--output.dir", f"{beamless}/refused"], capture_output=True, text=True)
    lines = run.stderr.strip().splitlines()
    check(run.returncode == 3 and len(lines) == 1 and "no restoring beam" in lines[0] and "image.beam" in lines[0],
          f"cubes without a beam are refused in one line (exit {run.returncode}): {run.stderr.strip()}")
    check(not os.path.exists(f"{beamless}/refused"), "and nothing is written")
    run = subprocess.run([SPIP, "--input.cube_q", f"{beamless}/q.fits", "--input.cube_u", f"{beamless}/u.fits",
                          "--input.cube_i", f"{beamless}/i.fits", "--catalogue.threshold", "0",
                          "--catalogue.sources", f"{WORK}/aegean.csv", "--output.dir", f"{beamless}/refused"],
                         capture_output=True, text=True)
    check(run.returncode == 3 and "no restoring beam" in run.stderr,
          f"and so with a catalogue at given positions alone (exit {run.returncode}): {run.stderr.strip()}")
    run = spip(1, f"{beamless}/given", beamless, "--image.beam", "15,12,30")
    check(run.returncode == 0, f"with image.beam they run (exit {run.returncode}): {run.stderr.strip()[-500:]}")
    if run.returncode == 0:
        with open(f"{one}/c-rmtable.csv") as a, open(f"{beamless}/given/c-rmtable.csv") as b:
            check(a.read() == b.read(), "and the RMTable is the one of the cubes with that beam in their headers")
    shutil.rmtree(beamless)


def beam_covariance(major, minor, pa_deg, cell):
    """A beam's Gaussian covariance in pixels^2 on the (x, y) axes of a cube whose x runs
    east to west (CDELT1 < 0): FWHM = 2 sqrt(2 ln 2) sigma, major axis PA east of north."""
    pa = math.radians(pa_deg)
    u = np.array([-math.sin(pa), math.cos(pa)])  # the major axis in (x, y)
    v = np.array([math.cos(pa), math.sin(pa)])
    to_sigma = 1 / (2 * math.sqrt(2 * math.log(2)) * cell)
    return (major * to_sigma) ** 2 * np.outer(u, u) + (minor * to_sigma) ** 2 * np.outer(v, v)


def extended_source(shape, centre, flux, source_cov, beam_cov):
    """Jy/beam of a Gaussian source of total flux `flux` seen at beam `beam_cov`: its
    brightness is the Gaussian of the summed covariances, scaled by the beam's area."""
    total = source_cov + beam_cov
    y, x = np.mgrid[0:shape[0], 0:shape[1]]
    d = np.stack([x - centre[0], y - centre[1]])
    inverse = np.linalg.inv(total)
    quadratic = np.einsum("i...,ij,j...->...", d, inverse, d)
    beam_area = 2 * math.pi * math.sqrt(np.linalg.det(beam_cov))
    return flux * beam_area * np.exp(-0.5 * quadratic) / (2 * math.pi * math.sqrt(np.linalg.det(total)))


def check_channel_beams():
    """Cubes with CASA's per-channel beams, narrowing as 1 / nu at one angle with one
    channel's round beam at another, of an extended polarised source of constant Q and U:
    - each channel is convolved to one beam that holds every channel's, which the
      products carry, and the mean Q and U maps are the source seen at that beam (to 1e-3
      of its peak, the noise's share), on 1 rank and bit for bit on 2;
    - taken as they are (image.common_beam false), rank 0 warns and the maps differ from
      it by more than 5 % at the source's centre, which is what the convolution is for;
    - image.beam that does not hold a channel's beam, input.cube_noise beside the
      convolution and an I cube of no beam beside them are refused in one line."""
    beamed = f"{WORK}/beamed"
    os.mkdir(beamed)
    n, cell = 64, 4.0  # pixels, arcsec
    scale = FREQ[0] / FREQ
    major, minor, pa = 24.0 * scale, 16.0 * scale, np.full(NC, 20.0)
    major[7], minor[7], pa[7] = 20.0, 20.0, 0.0
    source_cov = beam_covariance(20.0, 12.0, -35.0, cell)
    centre, q_flux, u_flux = (30.3, 33.6), 0.4, -0.25
    rng = np.random.default_rng(3)
    planes = {"q": [], "u": []}
    for c in range(NC):
        shape = extended_source((n, n), centre, 1.0, source_cov, beam_covariance(major[c], minor[c], pa[c], cell))
        planes["q"].append(q_flux * shape + rng.normal(size=(n, n)) * 1e-4)
        planes["u"].append(u_flux * shape + rng.normal(size=(n, n)) * 1e-4)
    for stokes, name in ((2, "q"), (3, "u")):
        h = header(stokes, ["RA", "DEC", "FREQ", "STOKES"])
        h["CDELT1"], h["CDELT2"], h["CRPIX1"], h["CRPIX2"] = -cell / 3600, cell / 3600, 33.0, 33.0
        del h["BMAJ"], h["BMIN"], h["BPA"]
        h["CASAMBM"] = True
        beams = fits.BinTableHDU.from_columns([
            fits.Column(name="BMAJ", format="E", unit="arcsec", array=major),
            fits.Column(name="BMIN", format="E", unit="arcsec", array=minor),
            fits.Column(name="BPA", format="E", unit="deg", array=pa),
            fits.Column(name="CHAN", format="J", array=np.arange(NC)),
            fits.Column(name="POL", format="J", array=np.zeros(NC, int))], name="BEAMS")
        beams.header["NCHAN"], beams.header["NPOL"] = NC, 1
        data = np.array(planes[name])[:, None].astype(np.float32)  # [freq][stokes][y][x]
        fits.HDUList([fits.PrimaryHDU(np.transpose(data, (1, 0, 2, 3)), h), beams]).writeto(f"{beamed}/{name}.fits")

    def run(ranks, out, *extra):  # ranks 0: spip alone, whose refusals are its own
        command = (MPIEXEC + [str(ranks)] if ranks else []) + [SPIP, "--input.cube_q", f"{beamed}/q.fits", "--input.cube_u",
                             f"{beamed}/u.fits", "--output.dir", f"{beamed}/{out}", "--output.prefix", "c",
                             "--catalogue.threshold", "0", "--parallel.threads", "1", *extra]
        return subprocess.run(command, capture_output=True, text=True)

    def mean_maps(out):
        return [fits.getdata(f"{beamed}/{out}/c-moment-mean-{s}.fits").squeeze().astype(np.float64) for s in "QU"]

    one, two = run(1, "one"), run(2, "two")
    check(one.returncode == 0 and "each is convolved to" in one.stdout,
          f"per-channel beams: convolved to one beam (exit {one.returncode}) {one.stderr.strip()[-400:]}")
    if one.returncode != 0:
        return
    h = fits.getheader(f"{beamed}/one/c-moment-mean-Q.fits")
    common = beam_covariance(h["BMAJ"] * 3600, h["BMIN"] * 3600, h["BPA"], cell)
    held = all(np.linalg.eigvalsh(common - beam_covariance(major[c], minor[c], pa[c], cell)).min() > -1e-9
               for c in range(NC))
    check(held and h["BMAJ"] * 3600 < 24.0 + 1e-3,
          f"  the products' beam {h['BMAJ'] * 3600:.3f}\" x {h['BMIN'] * 3600:.3f}\" at {h['BPA']:.2f} deg holds "
          "every channel's and is no wider than the widest")
    truth = extended_source((n, n), centre, 1.0, source_cov, common)
    peak = truth.max()
    for flux, ours, name in zip((q_flux, u_flux), mean_maps("one"), "QU"):
        finite = np.isfinite(ours)
        worst = np.abs(ours[finite] - flux * truth[finite]).max() / (abs(flux) * peak)
        check(worst < 1e-3 and finite[8:-8, 8:-8].all(),
              f"  mean {name}: the source at the products' beam to {worst:.1e} of its peak; "
              f"{(~finite).sum()} edge pixels blank")
    check(two.returncode == 0 and same_products(f"{beamed}/one", f"{beamed}/two")[0],
          f"  on 2 ranks (the convolved planes exchanged), the same products bit for bit (exit {two.returncode})")
    as_is = run(1, "as-is", "--image.common_beam", "false")
    check(as_is.returncode == 0 and "WARNING: the cubes' channels have beams from" in as_is.stdout,
          f"  image.common_beam false: taken as they are, with a warning (exit {as_is.returncode})")
    if as_is.returncode == 0:
        ours = mean_maps("as-is")[0]
        y, x = round(centre[1]), round(centre[0])
        off = abs(ours[y, x] / (q_flux * truth[y, x]) - 1)
        check(off > 0.05, f"  and the mean Q at the source's centre is then {off:.1%} from it")
    small = run(0, "small", "--image.beam", "22,16,20")
    lines = small.stderr.strip().splitlines()
    check(small.returncode == 2 and len(lines) == 1 and "does not hold" in lines[0] and "channel 0" in lines[0],
          f"  an image.beam finer than a channel's is refused in one line (exit {small.returncode}): {small.stderr.strip()}")
    np.savetxt(f"{beamed}/noise.txt", np.full(NC, 1e-4))
    noisy = run(0, "noisy", "--input.cube_noise", f"{beamed}/noise.txt")
    check(noisy.returncode == 2 and "input.cube_noise" in noisy.stderr and "image.common_beam" in noisy.stderr,
          f"  input.cube_noise beside the convolution is refused (exit {noisy.returncode}): {noisy.stderr.strip()}")
    with fits.open(f"{beamed}/q.fits") as hdul:  # an I cube of no beam beside them
        h = hdul[0].header.copy()
        del h["CASAMBM"]
        h["CRVAL4"] = 1.0
        fits.PrimaryHDU(hdul[0].data, h).writeto(f"{beamed}/i-beamless.fits")
    beamless = run(0, "beamless", "--input.cube_i", f"{beamed}/i-beamless.fits")
    lines = beamless.stderr.strip().splitlines()
    check(beamless.returncode == 3 and len(lines) == 1 and "i-beamless.fits" in lines[0] and "no beam" in lines[0],
          f"  an I cube of no beam beside convolved ones is refused in one line (exit {beamless.returncode}): "
          f"{beamless.stderr.strip()}")
    check(not any(os.path.exists(f"{beamed}/{out}") for out in ("small", "noisy", "beamless")), "  and nothing is written")
    shutil.rmtree(beamed)


def check_stop_and_rerun():
    """What Slurm does at the time limit: SIGTERM to one rank once the Faraday stage has
    begun (cubes large enough, and row groups small enough, to catch it there). Every rank
    leaves with the resumable exit code 75 and nothing final; the same command then makes
    the uninterrupted run's FITS products, bit for bit."""
    import signal
    import time
    big = f"{WORK}/stop"
    os.mkdir(big)
    rng = np.random.default_rng(2)
    for stokes, name in ((2, "q"), (3, "u")):
        write(f"{big}/{name}.fits", rng.normal(size=(NC, 128, 128)) * 1e-3, stokes, ["RA", "DEC", "FREQ", "STOKES"])

    def command(out):
        return MPIEXEC + ["2", SPIP, "--input.cube_q", f"{big}/q.fits", "--input.cube_u", f"{big}/u.fits",
                          "--output.dir", out, "--faraday.cubes", "all", "--faraday.dphi", "1",
                          "--parallel.memory_gb", "0.09", "--parallel.threads", "1"]

    reference = subprocess.run(command(f"{big}/reference"), capture_output=True, text=True)
    check(reference.returncode == 0, f"an uninterrupted run on 128 x 128 x {NC} cubes, exit {reference.returncode}")
    stopped, log = f"{big}/stopped", f"{big}/stopped.log"
    with open(log, "w") as sink:
        run = subprocess.Popen(command(stopped), stdout=sink, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.time() + 120
    while "RM synthesis:" not in open(log).read() and time.time() < deadline:
        time.sleep(0.002)
    ranks = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if open(f"/proc/{pid}/cmdline", "rb").read().startswith(SPIP.encode()) and os.getsid(int(pid)) == run.pid:
                ranks.append(int(pid))
        except (OSError, ProcessLookupError):
            pass
    check(len(ranks) == 2, f"the run's two ranks found ({ranks})")
    if ranks:
        os.kill(max(ranks), signal.SIGTERM)
    code = run.wait()
    said = open(log).read()
    # How far the ranks got shows the stop's margin, before a late stop makes this flaky;
    # a stop after the last row group leaves without a count.
    got = "; ".join(re.findall(r"\((\d+ of this rank's \d+ rows were done, in [\d.]+ s)\)", said))
    check(code == 75 and "the Faraday products are left partial" in said,
          f"SIGTERM to one rank in the Faraday stage: exit {code} (75 resumes), the products left partial "
          f"({got or 'after the last row group'})")
    final = [f for f in os.listdir(stopped) if f.endswith((".fits", ".json", ".csv"))]
    check(not final and not os.path.exists(f"{stopped}/.spip.claim"),
          f"  nothing looks final ({final}), and the claim is released")
    again = subprocess.run(command(stopped), capture_output=True, text=True)
    check(again.returncode == 0, f"the same command again: exit {again.returncode}")
    same, differ = same_products(f"{big}/reference", stopped)
    check(same, f"  its FITS products equal the uninterrupted run's, bit for bit (differ: {differ})")
    shutil.rmtree(big)


def main():
    sigma, q, u = make_cubes()
    one, two, gap = f"{WORK}/one", f"{WORK}/two", f"{WORK}/gap/out"
    for ranks, out, cubes in ((1, one, WORK), (2, two, WORK), (1, gap, f"{WORK}/gap")):
        run = spip(ranks, out, cubes)
        check(run.returncode == 0, f"spip on {cubes}, {ranks} rank(s), exit {run.returncode}")
        if run.returncode != 0:
            print(run.stdout[-3000:], run.stderr[-3000:])
            return
    same, differ = same_products(one, two)
    check(same, f"1 and 2 ranks make the same products, bit for bit (differ: {differ})")
    measured = np.isfinite(fits.getdata(f"{one}/c-peak-pi.fits"))
    blank = np.zeros((NY, NX), bool)
    blank[-2:, -3:] = True
    # As RM-Tools, the peak is sought among the inner depths; a noise pixel whose clean
    # FDF rises to an end of the axis, its parabola's vertex past it, is not measured.
    amplitude = cube(f"{one}/c-FDF_clean_tot.fits")
    with np.errstate(invalid="ignore"):
        at_end = np.maximum(amplitude[0], amplitude[-1]) > amplitude[1:-1].max(axis=0)
    unmeasured = ~measured & ~blank
    check((~measured)[blank].all() and not (unmeasured & ~at_end).any(),
          f"the blank corner is blank in the peak map, and of the rest only {int(unmeasured.sum())} of the "
          f"{int(at_end.sum())} pixels whose FDF rises to an end of the axis")
    check(np.isfinite(fits.getdata(f"{one}/c-peak-pi-err.fits"))[~blank].all(),
          "the noise map is measured at every pixel outside the blank corner")
    check(all(np.isnan(cube(f"{one}/c-FDF_{p}.fits")[:, blank]).all() for p in ("real_dirty", "clean_tot")),
          "the blank corner is NaN in the FDF cubes")

    # RM-Tools on the same cubes with the same channel noise, depth grid, cutoff, gain
    # and iteration cap; it writes beside its Q cube.
    phi = depth_axis(f"{one}/c-FDF_real_dirty.fits")
    step = phi[1] - phi[0]
    config = dict(line.split(" = ", 1) for line in open(f"{one}/c-config.ini").read().splitlines() if " = " in line)
    niter, gain = int(config["rmclean_niter"]), float(config["rmclean_gain"])
    cutoff = float(config["rmclean_cutoff"]) / math.sqrt((1 / sigma ** 2).sum())  # times the FDF's sigma
    subprocess.run([f"{RMT}/rmsynth3d", f"{WORK}/q.fits", f"{WORK}/u.fits", f"{WORK}/freqs.txt", "-n",
                    f"{WORK}/noise.txt", "-w", "variance", "-l", repr(float(-phi[0])), "-d", repr(float(step)),
                    "-o", "r_"], check=True, capture_output=True)
    subprocess.run([f"{RMT}/rmclean3d", f"{WORK}/r_FDF_tot_dirty.fits", f"{WORK}/r_RMSF_tot.fits", "-c",
                    repr(cutoff), "-n", str(niter), "-g", str(gain), "-o", "r_"], check=True, capture_output=True)
    sp = cube(f"{one}/c-FDF_real_dirty.fits") + 1j * cube(f"{one}/c-FDF_im_dirty.fits")
    rt = cube(f"{WORK}/r_FDF_real_dirty.fits") + 1j * cube(f"{WORK}/r_FDF_im_dirty.fits")
    peak = np.abs(rt[:, measured]).max()
    compare("the dirty FDF against rmsynth3d's", sp[:, measured], rt[:, measured], peak)
    # RM-Tools restores with 3.8 / (lambda^2 span), spip with the RMSF's measured width
    # (docs/products.md): RM-Tools' components are restored again with spip's.
    fwhm = fits.getheader(f"{one}/c-rmsf.fits")["RMSFFWHM"]
    fwhm_rmt = float(np.nanmax(fits.getdata(f"{WORK}/r_RMSF_FWHM.fits")))
    swap = gaussian(phi, fwhm, math.ceil(2.5 * fwhm / step)) - gaussian(phi, fwhm_rmt)
    components = np.nan_to_num(cube(f"{WORK}/r_FDF_CC_real.fits") + 1j * cube(f"{WORK}/r_FDF_CC_im.fits"))
    rt = cube(f"{WORK}/r_FDF_clean_real.fits") + 1j * cube(f"{WORK}/r_FDF_clean_im.fits")
    rt += np.einsum("kj,jyx->kyx", swap, components)
    sp = cube(f"{one}/c-FDF_clean_real.fits") + 1j * cube(f"{one}/c-FDF_clean_im.fits")
    compare("the clean FDF against rmclean3d's", sp[:, measured], rt[:, measured], peak)
    iterations = fits.getdata(f"{one}/c-rmclean-iterations.fits")[measured]
    check(np.array_equal(iterations, np.nan_to_num(cube(f"{WORK}/r_CLEAN_nIter.fits")[0])[measured]),
          f"RM-CLEAN took as many iterations in every pixel as rmclean3d ({int(iterations.sum())} in all)")

    # A channel blank throughout has no weight: the run with one matches the definitions
    # without it, at the sources and at a pixel of noise.
    weights = 1 / sigma ** 2
    weights[BLANK_CHANNEL] = 0
    cutoff = float(config["rmclean_cutoff"]) / math.sqrt(weights.sum())
    fwhm = fits.getheader(f"{gap}/c-rmsf.fits")["RMSFFWHM"]
    phi = depth_axis(f"{gap}/c-FDF_real_dirty.fits")
    sp_dirty = cube(f"{gap}/c-FDF_real_dirty.fits") + 1j * cube(f"{gap}/c-FDF_im_dirty.fits")
    sp_clean = cube(f"{gap}/c-FDF_clean_real.fits") + 1j * cube(f"{gap}/c-FDF_clean_im.fits")
    for x, y in [(s[0], s[1]) for s in SOURCES] + [(2, 2)]:
        dirty, clean = reference_fdf(q, u, weights, phi, cutoff, niter, gain, fwhm, y, x)
        compare(f"with channel {BLANK_CHANNEL} blank, pixel ({x}, {y})'s dirty FDF against the definition",
                sp_dirty[:, y, x], dirty, peak)
        compare(f"  and its clean FDF against a double-precision RM-CLEAN", sp_clean[:, y, x], clean, peak)

    # The FDF cubes as POSSUM archives them: a STOKES axis after FDEP says the real part
    # is Q and the imaginary part U; RM-Tools' own peak fit reads them.
    for name, code in (("FDF_real_dirty", 2), ("FDF_im_dirty", 3), ("FDF_clean_real", 2), ("FDF_clean_im", 3)):
        h = fits.getheader(f"{one}/c-{name}.fits")
        check((h["NAXIS"], h["CTYPE3"], h["CTYPE4"], h["NAXIS4"], h["CRVAL4"]) == (4, "FDEP", "STOKES", 1, code)
              and WCS(h).wcs.ctype[3] == "STOKES", f"{name} has a STOKES axis of {code} after FDEP")
    subprocess.run([f"{RMT}/rmtools_peakfitcube", f"{one}/c-FDF_clean_tot.fits", f"{WORK}/freqs.txt",
                    f"{WORK}/peak_", "-p"], check=True, capture_output=True)
    rmtools_phi = np.squeeze(fits.getdata(f"{WORK}/peak_phiPeakPIfit_rm2.fits"))
    spip_phi = fits.getdata(f"{one}/c-peak-phi.fits")
    for x, y, *_ in SOURCES:
        check(abs(rmtools_phi[y, x] - spip_phi[y, x]) < 1e-4,
              f"RM-Tools' peak fit of spip's clean cube at ({x}, {y}): {rmtools_phi[y, x]:.5f} rad/m^2, "
              f"spip's {spip_phi[y, x]:.5f}")

    # Analytic truth: each source where it was put, at its depth and intensity.
    # The CSV as astropy's Table.read takes a .csv file, with no options, row for row the
    # FITS catalogue.
    from astropy.table import Table
    csv, fits_table = Table.read(f"{one}/c-catalogue.csv"), Table.read(f"{one}/c-catalogue.fits")
    check(csv.colnames == fits_table.colnames and list(csv["name"]) == list(fits_table["name"])
          and np.allclose(csv["phi"], fits_table["phi"], rtol=1e-9),
          f"Table.read reads the catalogue's CSV as the FITS catalogue: {len(csv)} rows, {csv.colnames[:3]}")
    table = [{c: str(r[c]) for c in csv.colnames} for r in csv]
    check(len(table) == len(SOURCES) + 1, f"the catalogue lists {len(table)} sources of {len(SOURCES) + 1}")
    wcs = WCS(fits.getheader(f"{WORK}/q.fits")).celestial
    for x, y, p, rm, _, _ in SOURCES:
        near = [s for s in table if abs(float(s["x_pix"]) - x) < 0.5 and abs(float(s["y_pix"]) - y) < 0.5]
        check(len(near) == 1, f"a source at pixel ({x}, {y})")
        if near:
            s = near[0]
            check(abs(float(s["phi"]) - rm) < 3 * float(s["phi_err"]) + 0.01,
                  f"  its phi {float(s['phi']):.3f} is the true {rm} within 3 sigma ({float(s['phi_err']):.3f})")
            check(abs(float(s["pi"]) - p) < 3 * float(s["pi_err"]),
                  f"  its PI {float(s['pi']):.5f} is the true {p} within 3 sigma ({float(s['pi_err']):.5f})")
            ra, dec = wcs.pixel_to_world_values(float(s["x_pix"]), float(s["y_pix"]))
            check(abs(float(s["ra"]) - ra) * math.cos(math.radians(dec)) < 1e-7 and abs(float(s["dec"]) - dec) < 1e-7,
                  f"  its RA and Dec are the input cube's WCS at its pixel position")

    check_rmtable(one, table)
    check_sigma_add(one, table, q, u, sigma)
    check_measured_noise(one, table)

    check_given_positions(one, table)

    # Cubes that disagree are refused in one line naming both.
    run = subprocess.run([SPIP, "--input.cube_q", f"{WORK}/q.fits", "--input.cube_u", f"{WORK}/u-other-axis.fits",
                          "--output.dir", f"{WORK}/refused"], capture_output=True, text=True)
    lines = run.stderr.strip().splitlines()
    check(run.returncode == 3 and len(lines) == 1 and "u-other-axis.fits" in lines[0] and "q.fits" in lines[0],
          f"a U cube on another frequency axis is refused in one line naming both (exit {run.returncode}): "
          f"{run.stderr.strip()}")
    check(not os.path.exists(f"{WORK}/refused"), "and nothing is written")
    run = subprocess.run([SPIP, "--input.cube_q", f"{WORK}/q.fits", "--input.cube_u", f"{WORK}/u-fk5.fits",
                          "--output.dir", f"{WORK}/refused"], capture_output=True, text=True)
    check(run.returncode == 3 and "RADESYS FK5 against ICRS" in run.stderr and not os.path.exists(f"{WORK}/refused"),
          f"a U cube in FK5 beside a Q cube in ICRS is refused (exit {run.returncode}): {run.stderr.strip()}")

    check_beamless_cubes(one)
    check_channel_beams()
    check_stop_and_rerun()


main()
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
