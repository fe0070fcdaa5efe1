#!/usr/bin/env python3
"""Open FITS products with astropy as a reader independent of CFITSIO.

For each path: verify the file against the FITS standard, then read it as what it is.
An image (data in the primary HDU) must be float32 with a celestial WCS; its shape,
BUNIT and the world coordinate of the central pixel (the phase centre, zero-based pixel
(NAXIS1//2, NAXIS2//2), which must land on CRVAL1/CRVAL2) are printed. A cube with
CASAMBM = T must carry CASA's BEAMS table: one row per plane, BMAJ/BMIN in arcsec and
BPA in deg. A table (an empty primary HDU and binary table extensions, as the
catalogue) is read with astropy.table: every column must have a name and a unit astropy
understands (or none), and its columns, units and row count are printed. Exits non-zero
if any file fails.

usage: check_fits_astropy.py FILE.fits [FILE.fits ...]
"""
import sys
import warnings


def check(path):
    from astropy.io import fits

    with fits.open(path) as hdul:
        hdul.verify("exception")
        if hdul[0].data is not None:
            check_image(path, hdul)
            return
        tables = [hdu for hdu in hdul[1:] if isinstance(hdu, fits.BinTableHDU)]
        if not tables:
            raise ValueError("neither an image in the primary HDU nor a binary table")
        for hdu in tables:
            print(describe_table(path, hdu))


def describe_table(path, hdu):
    """A binary table read as astropy reads a catalogue: columns, units, rows."""
    import astropy.units as u
    from astropy.table import Table

    with warnings.catch_warnings():
        warnings.simplefilter("error", u.UnitsWarning)  # a unit astropy cannot parse
        table = Table.read(hdu)
    if not table.colnames:
        raise ValueError(f"table {hdu.name} has no columns")
    if len(table) != hdu.header["NAXIS2"]:
        raise ValueError(f"table {hdu.name} reads {len(table)} rows, NAXIS2 says {hdu.header['NAXIS2']}")
    columns = ", ".join(f"{name} [{table[name].unit or ''}]" for name in table.colnames)
    return f"{path}: table {hdu.name}, {len(table)} rows, {len(table.colnames)} columns: {columns}"


def check_image(path, hdul):
    import numpy as np
    from astropy.wcs import WCS, FITSFixedWarning

    header = hdul[0].header
    data = hdul[0].data
    if data.dtype.itemsize != 4 or data.dtype.kind != "f":
        raise ValueError(f"expected float32 data, got {data.dtype}")
    with warnings.catch_warnings():
        # A header wcslib has to fix (MJD-OBS derived from DATE-OBS, a unit respelled) makes
        # every reader warn: a failure here.
        warnings.simplefilter("error", FITSFixedWarning)
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
