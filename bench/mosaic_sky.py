#!/usr/bin/env python3
"""The mosaic benchmark's sky and pointings (bench/run-mosaic-bench.sh): three pointings
2 degrees apart in an equilateral triangle about RA 0, Dec +60, and point sources seen by
one, two and three of them, each with its own flux, spectral index, polarised fraction,
angle and Faraday depth (from -80 to +120 rad/m^2).

    bench/mosaic_sky.py SKY_TXT POINTINGS_TXT

writes the sky in spip-simulate's format and one "RA DEC" line per pointing (degrees).
Positions are given on the tangent plane of the mosaic's centre, (l, m) in degrees."""
import sys

import numpy as np

DEC0 = 60.0
SIZE, CELL_ARCSEC = 512, 45.0  # the mosaic's image; every source sits on a pixel's centre
SIDE = 2.0  # degrees between pointings
RADIUS = SIDE / np.sqrt(3)
POINTINGS = [(RADIUS * np.cos(np.radians(a)), RADIUS * np.sin(np.radians(a))) for a in (90, 210, 330)]
# name, l, m (deg), I at 144 MHz, alpha, polarised fraction, angle (deg), RM (rad/m^2)
SOURCES = [
    ("three", 0.0, 0.0, 1.0, -0.7, 0.30, 0.0, 10.0),
    ("two_01", 0.5 * (POINTINGS[0][0] + POINTINGS[1][0]), 0.5 * (POINTINGS[0][1] + POINTINGS[1][1]), 0.8, -1.0,
     0.25, 30.0, -30.0),
    ("two_12", 0.5 * (POINTINGS[1][0] + POINTINGS[2][0]) + 0.1, 0.5 * (POINTINGS[1][1] + POINTINGS[2][1]), 1.2, 0.0,
     0.20, -20.0, 45.0),
    ("one_0", POINTINGS[0][0], POINTINGS[0][1] + 0.6, 0.9, -0.5, 0.30, 60.0, -80.0),
    ("one_1", POINTINGS[1][0] - 0.4, POINTINGS[1][1] - 0.3, 1.1, -0.8, 0.15, 10.0, 120.0),
    ("one_2", POINTINGS[2][0] + 0.3, POINTINGS[2][1] - 0.45, 0.7, 0.3, 0.35, -45.0, 5.0),
    # 1.5 deg out from the first pointing, away from the others: at 27-64 % of its beam
    # over the band, the lowest response a survey's catalogue keeps (25 %).
    ("edge_0", POINTINGS[0][0], POINTINGS[0][1] + 1.5, 1.5, -0.7, 0.30, 20.0, 60.0),
]


def on_pixel(l_deg, m_deg):
    """The centre of the pixel nearest (l, m): l = -(x - SIZE/2) cell, m = (y - SIZE/2) cell."""
    cell = CELL_ARCSEC / 3600
    return -round(-l_deg / cell) * cell, round(m_deg / cell) * cell


def pixel(l_deg, m_deg):
    """(x, y) of the pixel whose centre is (l, m)."""
    cell = CELL_ARCSEC / 3600
    return SIZE // 2 + round(-l_deg / cell), SIZE // 2 + round(m_deg / cell)


def radec(l_deg, m_deg):
    """The SIN projection's inverse about (0, DEC0): RA, Dec in degrees."""
    l, m, dec0 = np.radians(l_deg), np.radians(m_deg), np.radians(DEC0)
    n = np.sqrt(1 - l * l - m * m)
    ra = np.arctan2(l, n * np.cos(dec0) - m * np.sin(dec0))
    return np.degrees(ra) % 360, np.degrees(np.arcsin(m * np.cos(dec0) + n * np.sin(dec0)))


def main():
    sky, pointings = sys.argv[1:3]
    with open(sky, "w") as out:
        out.write("Format = Name, RaD, DecD, I, Q, U, V, ReferenceFrequency, SpectralIndex, RotationMeasure, "
                  "PolarizedFraction, PolarizationAngle\n")
        for name, l, m, flux, alpha, frac, chi, rm in SOURCES:
            ra, dec = radec(*on_pixel(l, m))
            out.write(f'"{name}", {ra:.12f}, {dec:.12f}, {flux}, , , 0.0, 144000000.0, {alpha}, {rm}, {frac}, {chi}\n')
    with open(pointings, "w") as out:
        for l, m in POINTINGS:
            out.write("%.12f %.12f\n" % radec(l, m))


if __name__ == "__main__":
    main()
