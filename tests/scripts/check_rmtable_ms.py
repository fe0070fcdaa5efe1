"""The RMTable of a run on a Measurement Set as the rmtable package reads and verifies it:
every standard column, within the standard's limits and strings, in the FITS table and
the CSV alike, with the columns a Measurement Set fills (when it was observed, Stokes V)
finite in every row. tests/pipeline/test_oskar_truth.cpp checks their values.
    check_rmtable_ms.py SPIP DATA_DIR"""
import math
import os
import subprocess
import sys

import numpy as np
from astropy.coordinates import SkyCoord
from astropy.io import fits
from astropy.table import Table

sys.dont_write_bytecode = True  # the tests write into their own TMPDIR, not beside the sources
from rmtable_verify import read_and_verify  # noqa: E402

spip, data_dir = sys.argv[1:3]
out = os.path.join(os.environ["TMPDIR"], "out")
run = subprocess.run([spip, "--input.ms", f"{data_dir}/oskar_small.ms", "--image.size", "128", "--image.scale", "60",
                      "--clean.niter", "2000", "--faraday.phi_max", "60", "--faraday.dphi", "1",
                      "--faraday.fractional", "true", "--parallel.threads", "2", "--output.dir", out],
                     capture_output=True, text=True)
if run.returncode != 0:
    print(run.stderr)
    sys.exit("FAIL: spip exited with " + str(run.returncode))
failures = 0
for path in (f"{out}/spip-rmtable.fits", f"{out}/spip-rmtable.csv"):
    table, problems = read_and_verify(path)
    filled = ["epoch", "int_time", "obs_interval", "stokesV", "stokesV_err"]
    def finite(value):
        try:
            return math.isfinite(float(value))
        except ValueError:  # an empty CSV field
            return False
    blank = [f"{c} in row {r}" for c in filled for r in range(len(table)) if not finite(table[c][r])]
    ok = not problems and not blank and len(table) > 0
    failures += not ok
    print(("ok   " if ok else "FAIL ") + f"{os.path.basename(path)}: {len(table)} rows, every standard column, "
          f"verify_limits and verify_standard_strings pass, {', '.join(filled)} filled ({problems}, blank: {blank})")
    # An MS's J2000 positions are the products' FK5; the standard's ra and dec are ICRS.
    catalogue = Table.read(f"{out}/spip-catalogue.fits")
    icrs = SkyCoord(catalogue["ra"], catalogue["dec"], unit="deg", frame="fk5").icrs
    worst_mas = max(float(np.max(np.abs(np.asarray(table["ra"], float) - icrs.ra.deg) * np.cos(icrs.dec.rad))),
                    float(np.max(np.abs(np.asarray(table["dec"], float) - icrs.dec.deg)))) * 3.6e6
    shift_mas = float(np.max(icrs.separation(SkyCoord(catalogue["ra"], catalogue["dec"], unit="deg", frame="icrs")).mas))
    ok = fits.getheader(f"{out}/spip-peak-pi.fits")["RADESYS"] == "FK5" and worst_mas < 0.01 and shift_mas > 1
    failures += not ok
    print(("ok   " if ok else "FAIL ") + f"{os.path.basename(path)}: ra and dec are astropy's ICRS of the FK5 "
          f"catalogue within {worst_mas:.2g} mas (the two frames {shift_mas:.1f} mas apart there)")
sys.exit(1 if failures else 0)
