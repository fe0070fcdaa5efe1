#!/usr/bin/env python3
"""Open FITS products with astropy as a reader independent of CFITSIO.

For each path: verify the file against the FITS standard, build its WCS, and
print the shape, BUNIT and the world coordinate of the central pixel (the phase
centre, zero-based pixel (NAXIS1//2, NAXIS2//2), which must land on
CRVAL1/CRVAL2). A cube with CASAMBM = T must carry CASA's BEAMS table: one row
per plane, BMAJ/BMIN in arcsec and BPA in deg. Exits non-zero if any file fails.

usage: check_fits_astropy.py FILE.fits [FILE.fits ...]
"""
import sys
import warnings


def check(path):
    import numpy as np
    from astropy.io import fits
    from astropy.wcs import WCS

    with fits.open(path) as hdul:
        hdul.verify("exception")
        hdu = hdul[0]
        header = hdu.header
        data = hdu.data
        if data is None or data.dtype.itemsize != 4 or data.dtype.kind != "f":
            raise ValueError(f"expected float32 data, got {None if data is None else data.dtype}")
        with warnings.catch_warnings():
            # astropy reports its own header fix-ups (e.g. MJD-OBS from DATE-OBS) as warnings.
            warnings.simplefilter("ignore")
            wcs = WCS(header)
        celestial = wcs.celestial
        if celestial.naxis != 2:
            raise ValueError("no celestial WCS")
        nx, ny = header["NAXIS1"], header["NAXIS2"]
        pixel = [nx // 2, ny // 2] + [0] * (wcs.naxis - 2)
        world = wcs.pixel_to_world_values(*pixel)
        ra, dec = float(world[0]), float(world[1])
        dra = (ra - header["CRVAL1"] + 180.0) % 360.0 - 180.0
        if abs(dra) > 1e-9 or abs(dec - header["CRVAL2"]) > 1e-9:
            raise ValueError(f"central pixel maps to ({ra}, {dec}), not CRVAL")
        beams = check_beams(hdul, header) if header.get("CASAMBM") else ""
        finite = int(np.isfinite(data).sum())
        print(f"{path}: shape {data.shape} BUNIT {header.get('BUNIT')!r} "
              f"centre {[float(w) for w in world]} ({finite} finite pixels){beams}")


def check_beams(hdul, header):
    """CASA's per-plane beams of a cube whose primary header says CASAMBM = T."""
    import astropy.units as u
    import numpy as np
    from astropy.table import Table

    if "BEAMS" not in hdul:
        raise ValueError("CASAMBM = T but no BEAMS extension")
    table = Table.read(hdul["BEAMS"])
    planes = header["NAXIS3"]
    if hdul["BEAMS"].header["NCHAN"] != planes or len(table) != planes * hdul["BEAMS"].header["NPOL"]:
        raise ValueError(f"BEAMS has {len(table)} rows, NCHAN {hdul['BEAMS'].header['NCHAN']}, for {planes} planes")
    for name, unit in (("BMAJ", u.arcsec), ("BMIN", u.arcsec), ("BPA", u.deg)):
        if table[name].unit != unit:
            raise ValueError(f"BEAMS column {name} is in {table[name].unit}, not {unit}")
    if list(table["CHAN"]) != list(range(planes)):
        raise ValueError("BEAMS rows are not planes 0, 1, ...")
    major, minor = np.asarray(table["BMAJ"]), np.asarray(table["BMIN"])
    if not (np.all(np.isfinite(major)) and np.all(minor >= 0) and np.all(minor <= major)):
        raise ValueError("BEAMS holds a beam that is not finite, or whose minor axis exceeds its major axis")
    return f", BEAMS {major.min():.4g}-{major.max():.4g} arcsec"


def main(paths):
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    failed = 0
    for path in paths:
        try:
            check(path)
        except Exception as error:  # report every file, then fail
            print(f"{path}: FAILED: {type(error).__name__}: {error}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
