"""spip's Airy primary beam against EveryBeam's (the everybeam wheel from PyPI), at the
same directions and frequencies. The wheel's Python bindings load only AARTFAAC, LOFAR,
OSKAR, MWA and SKA-MID sets, so the set is an SKA-MID one (TELESCOPE_NAME MID, 15 m
dishes, spip-simulate --telescope-name): EveryBeam's analytic SKA-MID dish is the Airy
voltage pattern 2 J1(x) / x of an unblocked 15 m aperture, whose square is spip's
`beam.model airy` power. The image is centred 0.5 deg east and 0.3 deg north of the
pointing, so that the beam sits off the reference pixel and a flipped or turned axis
would move it. Every other pixel of spip's PREFIX-pb.fits along each axis is taken to
its direction through the file's WCS (astropy), and each plane to its frequency, and
EveryBeam is asked for the response there: so the comparison also checks the cube's
celestial and spectral axes, and spip's turn of a pixel into its distance from the
pointing.
    check_beam_everybeam.py SPIP SPIP_SIMULATE DATA_DIR"""
import importlib.metadata
import os
import subprocess
import sys

import everybeam
import numpy as np
from astropy.io import fits
from astropy.wcs import WCS

spip, simulate, data_dir = sys.argv[1:4]
work = os.environ["TMPDIR"]
ms, out = os.path.join(work, "mid.ms"), os.path.join(work, "out")
freqs = [0.95e9, 1.05e9, 1.15e9, 1.25e9]


def run(command):
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stdout[-2000:], done.stderr[-2000:])
        sys.exit(f"FAIL: {os.path.basename(command[0])} exited with {done.returncode}")


run([simulate, "--sky", f"{data_dir}/oskar_small.sky.txt", "--telescope", f"{data_dir}/oskar_small.tm",
     "--telescope-name", "MID", "--dish-diameter", "15", "--ra", "30", "--dec", "-30", "--freq-start", str(freqs[0]),
     "--freq-inc", str(freqs[1] - freqs[0]), "--channels", str(len(freqs)), "--times", "2", "--out", ms])
# 128 pixels of 90" about (30.5, -29.7): out past the first null at 0.95 GHz (1.5 deg) on
# the far side of the pointing.
run([spip, "--input.ms", ms, "--image.size", "128", "--image.scale", "90", "--image.centre", "30.5,-29.7",
     "--beam.model", "airy",
     "--output.channel_cubes", "pb", "--clean.niter", "0", "--faraday.cubes", "none", "--parallel.threads", "2",
     "--output.dir", out])

with fits.open(f"{out}/spip-pb.fits") as hdul:
    header, pb = hdul[0].header, hdul[0].data.astype(np.float64)
wcs = WCS(header)
pb = pb.reshape(-1, header["NAXIS2"], header["NAXIS1"])  # channel, y, x (a STOKES axis of 1 dropped)
telescope = everybeam.load_telescope(ms, element_response_model="skamid_analytical")
time = 0.0  # a dish's response does not change with time

worst = 0.0
step = 2
ys, xs = np.mgrid[0:pb.shape[1]:step, 0:pb.shape[2]:step]
for k in range(pb.shape[0]):
    pixel = np.zeros((xs.size, wcs.naxis))
    pixel[:, 0], pixel[:, 1] = xs.ravel(), ys.ravel()
    pixel[:, wcs.wcs.spec] = k
    world = wcs.wcs_pix2world(pixel, 0)
    ra, dec, freq = np.radians(world[:, 0]), np.radians(world[:, 1]), world[:, wcs.wcs.spec]
    if abs(freq[0] - freqs[k]) > 1.0:
        sys.exit(f"FAIL: plane {k} is at {freq[0]:.6g} Hz in the WCS, the set's channel at {freqs[k]:.6g}")
    for i, (y, x) in enumerate(zip(ys.ravel(), xs.ravel())):
        ours = pb[k, y, x]  # the response itself, never blanked (beam.limit blanks the corrected cubes)
        theirs = abs(telescope.station_response(time, 0, freq[i], ra[i], dec[i])[0, 0]) ** 2
        worst = max(worst, abs(ours - theirs)) if np.isfinite(ours) else np.inf

print(f"[ measured ] spip's airy pb against EveryBeam {importlib.metadata.version('everybeam')} SKA-MID: largest "
      f"difference {worst:.2e} of the peak response over {xs.size} pixels in each of {pb.shape[0]} channels")
# float32 planes, and EveryBeam's complex64 response squared: a few parts in 1e7.
ok = worst < 1e-5
print(("ok   " if ok else "FAIL ") + "spip's Airy beam is EveryBeam's SKA-MID dish at every other pixel and every channel")
sys.exit(0 if ok else 1)
