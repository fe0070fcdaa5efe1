#!/usr/bin/env python3
"""Two baselines on the GPU bench's points, the channel bench_gpu wrote with its DUMP
argument, at accuracies 1e-4 and 1e-5:
- the CPU state of the art: ducc0's wgridder (WSClean's default gridder) making the
  channel's dirty I, Q, U, V and PSF as five ms2dirty calls with w-stacking, on every
  core; the median of three runs;
- the GPU spreading of cuFINUFFT (type 1 in its 2-D spread-only mode, no FFT, no w):
  the same five sets of values onto one grid of spip's size, as five transforms of one
  plan, its point sorting (setpts) timed apart from the spreading; the medians of three
  runs after a first. In spread-only mode the upsampling factor chooses the kernel
  alone (the grid is spip's): cuFINUFFT's default 2 gives narrower kernels than spip's,
  1.25 kernels as wide (7 and 9 cells at 1e-4 and 1e-5); both are timed.
Each runs where its module imports (ducc0; cufinufft with CuPy) and says so where not.
Rates count four Stokes visibilities a row, as bench_gpu's kernel rows do; its
end-to-end rows count five gridded values a row (the PSF's too), and ducc0's line gives
that unit as well.

    bench/gpu_baselines.py DUMP IMAGE_SIZE SCALE_ARCSEC GRID_SIZE [THREADS]
"""
import os
import statistics
import sys
import time

import numpy as np


def read_channel(path):
    with open(path, "rb") as f:
        rows = int(np.fromfile(f, np.int64, 1)[0])
        freq = float(np.fromfile(f, np.float64, 1)[0])
        uvw = np.fromfile(f, np.float64, 3 * rows).reshape(rows, 3)
        weights = np.fromfile(f, np.float32, 4 * rows).reshape(rows, 4)
        vis = np.fromfile(f, np.complex64, 4 * rows).reshape(rows, 4)
    return freq, uvw, weights, vis


def ducc0_baseline(uvw, freq, weights, vis, size, scale, threads):
    import ducc0

    rows = uvw.shape[0]
    cell = np.deg2rad(scale / 3600.0)
    ones = np.ones((rows, 1), np.complex64)

    def five_images(epsilon):
        for s in range(4):
            ducc0.wgridder.ms2dirty(uvw=uvw, freq=np.array([freq]), ms=np.ascontiguousarray(vis[:, s:s + 1]),
                                    wgt=np.ascontiguousarray(weights[:, s:s + 1]), npix_x=size, npix_y=size,
                                    pixsize_x=cell, pixsize_y=cell, epsilon=epsilon, do_wstacking=True,
                                    nthreads=threads)
        ducc0.wgridder.ms2dirty(uvw=uvw, freq=np.array([freq]), ms=ones, wgt=np.ascontiguousarray(weights[:, :1]),
                                npix_x=size, npix_y=size, pixsize_x=cell, pixsize_y=cell, epsilon=epsilon,
                                do_wstacking=True, nthreads=threads)

    print(f"ducc0 {ducc0.__version__} wgridder, {threads} threads, {rows} rows, {size}^2 of {scale}\"")
    for epsilon in (1e-4, 1e-5):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            five_images(epsilon)
            times.append(time.perf_counter() - start)
        median = statistics.median(times)
        print(f"ducc0 dirty IQUV + PSF, epsilon {epsilon:g}: {median:.4f} s "
              f"(runs {' '.join(f'{t:.4f}' for t in times)}), {4 * rows / median:.4g} Stokes visibilities/s "
              f"({5 * rows / median:.4g} /s in bench_gpu's end-to-end unit)")


def cufinufft_baseline(uvw, freq, weights, vis, scale, grid):
    import cupy
    import cufinufft

    rows = uvw.shape[0]
    # A point u wavelengths out lies u * cell * grid cells from the centre of spip's grid,
    # and cuFINUFFT puts x in [-pi, pi) across its grid: x = 2 pi u cell.
    to_x = 2 * np.pi * np.deg2rad(scale / 3600.0) * freq / 299792458.0
    x = cupy.asarray((uvw[:, 0] * to_x).astype(np.float32))
    y = cupy.asarray((uvw[:, 1] * to_x).astype(np.float32))
    values = np.empty((5, rows), np.complex64)
    values[:4] = (weights * vis).T
    values[4] = weights[:, 0]
    values = cupy.asarray(values)
    grids = cupy.empty((5, grid, grid), cupy.complex64)

    def timed(step):
        cupy.cuda.Device().synchronize()
        start = time.perf_counter()
        step()
        cupy.cuda.Device().synchronize()
        return time.perf_counter() - start

    print(f"cuFINUFFT {cufinufft.__version__} on {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, "
          f"{rows} points, 5 transforms onto {grid}^2")
    for upsampfac in (2.0, 1.25):
        for epsilon in (1e-4, 1e-5):
            try:
                plan = cufinufft.Plan(1, (grid, grid), n_trans=5, eps=epsilon, dtype="complex64",
                                      gpu_spreadinterponly=1, upsampfac=upsampfac)
                setpts, spread = [], []
                for _ in range(4):
                    setpts.append(timed(lambda: plan.setpts(x, y)))
                    spread.append(timed(lambda: plan.execute(values, out=grids)))
                setpts, spread = statistics.median(setpts[1:]), statistics.median(spread[1:])
            except Exception as error:  # a width or factor this build refuses: say so, go on
                print(f"cuFINUFFT spread only, upsampfac {upsampfac}, epsilon {epsilon:g}: failed ({error})")
                continue
            print(f"cuFINUFFT spread only, upsampfac {upsampfac}, epsilon {epsilon:g}: setpts {setpts * 1e3:.3f} ms, "
                  f"spread {spread * 1e3:.3f} ms, {4 * rows / (setpts + spread):.4g} Stokes visibilities/s "
                  f"({4 * rows / spread:.4g} spreading alone)")


def main():
    path, size, scale, grid = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    threads = int(sys.argv[5]) if len(sys.argv) > 5 else os.cpu_count()
    freq, uvw, weights, vis = read_channel(path)
    for name, baseline in (("ducc0", lambda: ducc0_baseline(uvw, freq, weights, vis, size, scale, threads)),
                           ("cuFINUFFT", lambda: cufinufft_baseline(uvw, freq, weights, vis, scale, grid))):
        try:
            baseline()
        except Exception as error:  # not installed, or no device: said, and the other still runs
            print(f"{name} baseline not run: {type(error).__name__}: {error}")


if __name__ == "__main__":
    main()
