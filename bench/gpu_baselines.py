#!/usr/bin/env python3
"""The CPU state of the art on the GPU bench's points: ducc0's wgridder (WSClean's
default gridder) making one channel's dirty I, Q, U, V and PSF as five ms2dirty calls
with w-stacking, on every core, at accuracies 1e-4 and 1e-5; the median of three runs.
The points are the channel bench_gpu wrote with its DUMP argument.

    bench/gpu_baselines.py DUMP IMAGE_SIZE SCALE_ARCSEC [THREADS]
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


def main():
    import ducc0

    path, size, scale = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    threads = int(sys.argv[4]) if len(sys.argv) > 4 else os.cpu_count()
    freq, uvw, weights, vis = read_channel(path)
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
              f"(runs {' '.join(f'{t:.4f}' for t in times)}), {4 * rows / median:.4g} Stokes visibilities/s")


if __name__ == "__main__":
    main()
