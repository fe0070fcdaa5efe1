"""The beams and the maps of bench/run-cube-smoothing-bench.sh: spip's convolution of a
cube's channels to one beam (image.common_beam) against RACS-tools' beamcon_3D.

    python bench/smoothing_compare.py beams CUBE
        the range of CUBE's per-channel beams (its BEAMS table); exits 1 where their areas
        differ by less than 10 %, too little to measure a convolution on
    python bench/smoothing_compare.py beam FITS
        FITS's header beam as MAJOR,MINOR,PA (arcsec, deg), as spip's image.beam takes it
    python bench/smoothing_compare.py compare CUBES SPIP_PREFIX BEAMCON_DIR LABEL
        for Stokes Q, U and I: the mean over channels of beamcon_3D's convolved cube
        (BEAMCON_DIR/c-image-X.total.fits) against spip's SPIP_PREFIX-moment-mean-X.fits
        (uniform channel weights: faraday.variance_weights false), where both are finite,
        relative to the beamcon map's peak |value|; over every such pixel and over the
        interior, 4 sigma of the widest smoothing kernel from the edge, where neither
        spip's blanking (under 99 % of the kernel on measured pixels) nor beamcon_3D's
        circular convolution (its FFT is the image's size) reaches. CUBES is the folder of
        the input cubes c-image-X.fits; channels spip left blank (its qa.json) are left
        out of beamcon's mean too. Prints the beam each chose and whether it holds every
        channel's.
"""
import json
import math
import sys

import numpy as np
from astropy.io import fits


def covariance(major, minor, pa_deg):
    """A beam's half-power ellipse (FWHM^2, arcsec^2) on (east, north) axes."""
    pa = math.radians(pa_deg)
    u = np.array([math.sin(pa), math.cos(pa)])
    v = np.array([math.cos(pa), -math.sin(pa)])
    return major**2 * np.outer(u, u) + minor**2 * np.outer(v, v)


def holds(outer, inner):
    gap = covariance(*outer) - covariance(*inner)
    return np.linalg.eigvalsh(gap)[0] >= -1e-9 * np.trace(covariance(*outer))


def channel_beams(path):
    with fits.open(path) as hdus:
        table = hdus["BEAMS"].data
        scale = {"arcsec": 1.0, "deg": 3600.0, "rad": 180 * 3600 / math.pi}
        units = {c.name: (c.unit or "arcsec").strip() for c in hdus["BEAMS"].columns}
        major = np.asarray(table["BMAJ"], float) * scale[units["BMAJ"]]
        minor = np.asarray(table["BMIN"], float) * scale[units["BMIN"]]
        return list(zip(major, minor, np.asarray(table["BPA"], float)))


def described(beam):
    return f'{beam[0]:.2f}" x {beam[1]:.2f}" at {beam[2]:.2f} deg'


def header_beam(path):
    header = fits.getheader(path)
    return header["BMAJ"] * 3600, header["BMIN"] * 3600, header["BPA"]


def beams(path):
    given = [b for b in channel_beams(path) if b[0] > 0]
    areas = np.array([b[0] * b[1] for b in given])
    small, large = int(areas.argmin()), int(areas.argmax())
    ratio = areas[large] / areas[small]
    pas = [b[2] for b in given]
    print(f"channel beams: {described(given[small])} (channel {small}) to {described(given[large])} "
          f"(channel {large}); areas 1 : {ratio:.2f}, PA {min(pas):.1f} to {max(pas):.1f} deg")
    if ratio < 1.1:
        print("the channels' beams hardly differ: widen the band (bench/make-realistic-ms.sh's CHANNELS "
              "divide the same band; give the set a wider one)", file=sys.stderr)
        return 1
    return 0


def widest_kernel_sigma_px(given, common, cell_arcsec):
    """The largest sigma (pixels) of the Gaussians that take each channel's beam to `common`."""
    widest = 0.0
    for beam in given:
        gap = np.linalg.eigvalsh(covariance(*common) - covariance(*beam))[-1]  # FWHM^2
        widest = max(widest, math.sqrt(max(gap, 0.0)) / (2 * math.sqrt(2 * math.log(2))) / cell_arcsec)
    return widest


def compare(cubes, spip_prefix, beamcon_dir, label):
    qa = json.load(open(f"{spip_prefix}-qa.json"))
    spip_beam = (qa["restoring_beam"]["major_arcsec"], qa["restoring_beam"]["minor_arcsec"],
                 qa["restoring_beam"]["pa_deg"])
    counted = [c["channel"] for c in qa["channels"] if not c["blank"]]
    given = channel_beams(f"{cubes}/c-image-Q.fits")
    beamcon_beam = header_beam(f"{beamcon_dir}/c-image-Q.total.fits")
    area = lambda b: b[0] * b[1]  # noqa: E731
    print(f"[{label}] beams: spip {described(spip_beam)}, holds every channel's: "
          f"{'yes' if all(holds(spip_beam, b) for b in given) else 'NO'}; beamcon_3D {described(beamcon_beam)}, "
          f"holds every channel's: {'yes' if all(holds(beamcon_beam, b) for b in given) else 'NO'}; "
          f"beamcon's area / spip's {area(beamcon_beam) / area(spip_beam):.5f}")
    cell = abs(fits.getheader(f"{cubes}/c-image-Q.fits")["CDELT2"]) * 3600
    sigma = widest_kernel_sigma_px([b for b in given if b[0] > 0], max(spip_beam, beamcon_beam, key=area), cell)
    margin = math.ceil(4 * sigma)
    if len(counted) < len(given):
        print(f"[{label}] {len(given) - len(counted)} channel(s) blank in spip, left out of beamcon's mean")
    print(f"[{label}] {'Stokes':>6} {'pixels':>8} {'peak [Jy/b]':>12} {'worst':>9} {'rms':>9}   "
          f"interior ({margin} px = 4 sigma of the widest kernel from the edge): worst, rms")
    for stokes in "QUI":
        convolved = fits.getdata(f"{beamcon_dir}/c-image-{stokes}.total.fits").squeeze()
        reference = convolved[counted].astype(np.float64).mean(axis=0)
        mine = fits.getdata(f"{spip_prefix}-moment-mean-{stokes}.fits").squeeze().astype(np.float64)
        both = np.isfinite(reference) & np.isfinite(mine)
        peak = np.abs(reference[both]).max()
        diff = np.where(both, mine - reference, np.nan) / peak
        inner = np.zeros_like(both)
        inner[margin:-margin, margin:-margin] = True
        inside = diff[both & inner]
        print(f"[{label}] {stokes:>6} {both.sum():8d} {peak:12.4g} {np.nanmax(np.abs(diff)):9.2e} "
              f"{math.sqrt(np.nanmean(diff**2)):9.2e}   {np.abs(inside).max():.2e}, {math.sqrt(np.mean(inside**2)):.2e}")
    return 0


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "beams":
        sys.exit(beams(*args))
    if command == "beam":
        print("{:.6f},{:.6f},{:.6f}".format(*header_beam(*args)))
        sys.exit(0)
    if command == "compare":
        sys.exit(compare(*args))
    sys.exit(f"unknown command {command}: expected beams, beam or compare")
