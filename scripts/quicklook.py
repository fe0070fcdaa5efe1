#!/usr/bin/env python3
"""One PNG page that shows whether a spip run looks right.

    scripts/quicklook.py PREFIX_OR_DIR

PREFIX_OR_DIR is a product prefix (out/demo/demo for out/demo/demo-*.fits) or a folder
holding one run's products (its single *-qa.json names the prefix). Writes
PREFIX-quicklook.png next to the products and prints its path. Panels: mean Stokes I,
peak PI and peak Faraday depth maps with the catalogue's sources (and a mosaic's
pointings on the first two), the RMSF, the dirty and
clean FDF of the brightest polarised source, and the per-channel residual noise and
fitted beam. A product that is missing (an older run, or faraday.cubes leaving the FDF
cubes out) leaves a note in its panel instead of stopping the page.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # no display on clusters or in CTest

import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
import numpy as np  # noqa: E402
from astropy.io import fits  # noqa: E402
from astropy.table import Table  # noqa: E402
from astropy.visualization import AsinhStretch, ImageNormalize  # noqa: E402
from astropy.wcs import WCS, FITSFixedWarning  # noqa: E402

# The page has a fixed size so that tests/scripts/check_quicklook.py can find the panels.
PAGE_INCHES = (18.0, 11.0)
DPI = 100
GRID_ROWS, GRID_COLS = 2, 3
# Figure fractions (left, bottom, right, top) the panel grid fills; the title sits above.
PANEL_AREA = (0.05, 0.06, 0.97, 0.90)
# Peak phi is noise where there is no polarised signal: shown only above this share
# of the brightest PI (or half the faintest catalogued source, when that is lower).
PI_MASK_FRACTION = 0.05
# Sources labelled with their catalogue row on the maps; beyond this the labels would
# hide the image (every source is still circled).
MAX_LABELS = 20
SOURCE_COLOUR = "cyan"
POINTING_COLOUR = "magenta"

UNIT_LABELS = {"rad/m^2": r"rad m$^{-2}$"}  # BUNIT as mathtext where plain text reads badly
PHI_LABEL = r"Faraday depth $\phi$ [rad m$^{-2}$]"


def product(prefix: Path, suffix: str) -> Path:
    return Path(f"{prefix}-{suffix}")


def resolve_prefix(arg: str) -> Path:
    """A folder stands for the one run whose *-qa.json it holds."""
    path = Path(arg)
    if not path.is_dir():
        return path
    qa = sorted(path.glob("*-qa.json"))
    if len(qa) != 1:
        names = ", ".join(p.name for p in qa) or "none"
        sys.exit(f"quicklook: {path} must hold exactly one *-qa.json to name the run (found: {names})")
    return qa[0].with_name(qa[0].name[: -len("-qa.json")])


@dataclass
class Run:
    """What every panel may need, read once."""

    prefix: Path
    catalogue: Table | None  # None: the run wrote no catalogue
    qa: dict | None
    pi_map: tuple | None  # (data, header) of peak-pi.fits
    config_text: str = ""  # the run's effective configuration (PREFIX-config.ini)


def read_image(path: Path):
    """(data, header) of a 2-D product, or None when the run did not write it."""
    if not path.exists():
        return None
    with fits.open(path) as hdul:
        return np.asarray(hdul[0].data, dtype=float), hdul[0].header


def read_catalogue(prefix: Path):
    """The polarised-source table, or None for runs from before the catalogue."""
    path = product(prefix, "catalogue.csv")
    if not path.exists():
        return None
    return Table.read(path, format="ascii.csv", comment="#")  # earlier versions wrote "#" lines


def read_qa(prefix: Path):
    path = product(prefix, "qa.json")
    return json.loads(path.read_text()) if path.exists() else None


def unit_label(header) -> str:
    unit = str(header.get("BUNIT", "")).strip()
    return UNIT_LABELS.get(unit, unit)


def note(ax, text: str) -> None:
    """Says in the panel why it has nothing to show."""
    ax.set_axis_off()
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True, transform=ax.transAxes)


def sky_axes(fig, cell, header, title: str):
    with warnings.catch_warnings():
        # Headers without MJD-OBS (spip's before it wrote one, other imagers'): astropy's
        # note that it derived MJD-OBS from DATE-OBS is noise here.
        warnings.simplefilter("ignore", FITSFixedWarning)
        sky = WCS(header).celestial
    ax = fig.add_subplot(cell, projection=sky)
    # The map's own frame: FK5 (J2000) from a Measurement Set, ICRS from ICRS cubes.
    frame = "ICRS" if header.get("RADESYS", "FK5").strip() == "ICRS" else "J2000"
    ax.coords[0].set_axislabel(f"RA ({frame})")
    ax.coords[1].set_axislabel(f"Dec ({frame})")
    ax.set_title(title)
    return ax


def bright_norm(data):
    """Point sources are thousands of times the noise: on a linear scale only their
    brightest pixels would show; asinh brings up the fainter sources and the sidelobes."""
    finite = data[np.isfinite(data)]
    low, high = (np.percentile(finite, 0.5), finite.max()) if finite.size else (0.0, 1.0)
    return ImageNormalize(vmin=low, vmax=max(high, low + 1e-12), stretch=AsinhStretch(0.005))


def mark_sources(ax, catalogue) -> None:
    if catalogue is None or len(catalogue) == 0:
        return
    ax.scatter(catalogue["x_pix"], catalogue["y_pix"], s=160, facecolors="none",
               edgecolors=SOURCE_COLOUR, linewidths=1.3, label=f"catalogue ({len(catalogue)})")
    for row_number, row in enumerate(catalogue[:MAX_LABELS], start=1):
        ax.annotate(str(row_number), (row["x_pix"], row["y_pix"]), xytext=(7, 7),
                    textcoords="offset points", color=SOURCE_COLOUR, fontsize=9)
    ax.legend(loc="lower left", fontsize=8, framealpha=0.6)


def mosaic_pointings(qa) -> list:
    """A mosaic's pointings, [RA, Dec] in degrees; none for one pointing (or an older run)."""
    pointings = (qa or {}).get("pointings") or []
    return pointings if len(pointings) > 1 else []


def mark_pointings(ax, qa) -> None:
    pointings = mosaic_pointings(qa)
    if not pointings:
        return
    ra, dec = zip(*pointings)
    ax.scatter(ra, dec, transform=ax.get_transform("world"), marker="+", s=200, color=POINTING_COLOUR,
               linewidths=1.5, label=f"pointings ({len(pointings)})")
    for number, (x, y) in enumerate(pointings):
        ax.annotate(f"P{number}", (x, y), xycoords=ax.get_transform("world"), xytext=(6, -12),
                    textcoords="offset points", color=POINTING_COLOUR, fontsize=9)
    ax.legend(loc="lower left", fontsize=8, framealpha=0.6)


def sky_image(fig, cell, image, name: str, title: str, cmap: str):
    """A 2-D product ((data, header), or None: a note that the run did not write `name`)
    on RA/Dec axes with a colour bar in its unit; returns the axes, or None."""
    if image is None:
        note(fig.add_subplot(cell), f"no {name} in this run")
        return None
    data, header = image
    ax = sky_axes(fig, cell, header, title)
    shown = ax.imshow(data, origin="lower", cmap=cmap, norm=bright_norm(data))
    fig.colorbar(shown, ax=ax, label=unit_label(header), pad=0.02)
    return ax


def panel_mean_i(fig, cell, run: Run):
    ax = sky_image(fig, cell, read_image(product(run.prefix, "moment-mean-I.fits")), "moment-mean-I.fits",
                   "mean Stokes I over channels", "inferno")
    if ax is not None:
        mark_pointings(ax, run.qa)


def panel_peak_pi(fig, cell, run: Run):
    ax = sky_image(fig, cell, run.pi_map, "peak-pi.fits", "peak polarised intensity", "viridis")
    if ax is not None:
        mark_sources(ax, run.catalogue)
        mark_pointings(ax, run.qa)


def pi_threshold(pi_data, catalogue) -> float:
    threshold = PI_MASK_FRACTION * np.nanmax(pi_data)
    if catalogue is not None and len(catalogue):
        threshold = min(threshold, 0.5 * float(np.min(catalogue["pi"])))
    return threshold


def panel_peak_phi(fig, cell, run: Run):
    image = read_image(product(run.prefix, "peak-phi.fits"))
    if image is None:
        note(fig.add_subplot(cell), "no peak-phi.fits in this run")
        return
    data, header = image
    hidden = ~np.isfinite(data)
    title = r"peak $\phi$"
    if run.pi_map is not None:
        threshold = pi_threshold(run.pi_map[0], run.catalogue)
        hidden |= ~(run.pi_map[0] >= threshold)  # NaN PI hides its pixel too
        title += f" where PI ≥ {threshold * 1e3:.3g} mJy/beam"
    shown_data = np.ma.masked_array(data, mask=hidden)
    limit = float(np.max(np.abs(shown_data))) if shown_data.count() else 1.0
    # Masked pixels mid grey: phi near 0 is white here and large |phi| dark, both stand out.
    colours = plt.get_cmap("RdBu_r").with_extremes(bad="0.55")
    ax = sky_axes(fig, cell, header, title)
    shown = ax.imshow(shown_data, origin="lower", cmap=colours, vmin=-limit, vmax=limit,
                      interpolation="nearest")
    fig.colorbar(shown, ax=ax, label=unit_label(header), pad=0.02)
    mark_sources(ax, run.catalogue)


def panel_rmsf(fig, cell, run: Run):
    path = product(run.prefix, "rmsf.txt")
    ax = fig.add_subplot(cell)
    if not path.exists():
        note(ax, "no rmsf.txt in this run")
        return
    phi, real, imag, amplitude = np.loadtxt(path, comments="#", unpack=True, ndmin=2)
    ax.plot(phi, real, lw=0.8, color="tab:blue", label="real")
    ax.plot(phi, imag, lw=0.8, color="tab:orange", label="imag")
    ax.plot(phi, amplitude, lw=1.6, color="black", label="amplitude")
    fwhm = re.search(r"FWHM\s+([-+0-9.eE]+)", path.read_text())
    ax.set_title("RMSF" + (f", FWHM {float(fwhm.group(1)):.3g} rad m$^{{-2}}$" if fwhm else ""))
    ax.set_xlabel(PHI_LABEL)
    ax.set_ylabel("RMSF (peak 1)")
    ax.legend(fontsize=8, loc="upper right")


def brightest_source(catalogue, pi_map):
    """(x, y, what it is, catalogue phi or None) of the brightest polarised source, or None."""
    if catalogue is not None and len(catalogue):
        row = catalogue[int(np.argmax(catalogue["pi"]))]
        x, y = int(round(row["x_pix"])), int(round(row["y_pix"]))
        return x, y, f"{row['name']} at pixel ({x}, {y})", float(row["phi"])
    if pi_map is None or not np.isfinite(pi_map[0]).any():
        return None
    # No catalogue row to go by (an empty catalogue or an older run): the brightest pixel.
    y, x = np.unravel_index(np.nanargmax(pi_map[0]), pi_map[0].shape)
    return int(x), int(y), f"the brightest PI pixel ({x}, {y})", None


def cube_column(path: Path, x: int, y: int):
    """(phi axis, spectrum, header) at one pixel, reading only that column of the cube."""
    with fits.open(path, memmap=True) as hdul:
        hdu = hdul[0]
        # The real and imaginary cubes carry RM-Tools' degenerate STOKES axis after FDEP.
        leading = (0,) * (hdu.header["NAXIS"] - 3)
        spectrum = np.asarray(hdu.section[leading + (slice(None), y, x)], dtype=float)
        header = hdu.header.copy()
    steps = np.arange(spectrum.size) + 1 - header.get("CRPIX3", 1.0)
    return header.get("CRVAL3", 0.0) + steps * header.get("CDELT3", 1.0), spectrum, header


def fdf_amplitude(prefix: Path, kind: str, x: int, y: int):
    """(phi, |FDF|, header, legend label) from the amplitude cube, else from the real and
    imaginary ones (faraday.cubes may leave the amplitude out), else None."""
    # RM-Tools' names: FDF_{real,im,tot}_dirty and FDF_clean_{real,im,tot}.
    def cube(part):
        return product(prefix, f"FDF_{part}_dirty.fits" if kind == "dirty" else f"FDF_clean_{part}.fits")

    amp = cube("tot")
    if amp.exists():
        return (*cube_column(amp, x, y), kind)
    real, imag = cube("real"), cube("im")
    if real.exists() and imag.exists():
        phi, re_part, header = cube_column(real, x, y)
        return phi, np.hypot(re_part, cube_column(imag, x, y)[1]), header, f"{kind} (from real, imag)"
    return None


def panel_fdf(fig, cell, run: Run):
    ax = fig.add_subplot(cell)
    source = brightest_source(run.catalogue, run.pi_map)
    if source is None:
        note(ax, "no catalogue and no measured peak PI: no source to show the FDF of")
        return
    x, y, what, phi_peak = source
    spectra = {kind: fdf_amplitude(run.prefix, kind, x, y) for kind in ("dirty", "clean")}
    if not any(spectra.values()):
        note(ax, f"no FDF cubes in this run (faraday.cubes)\nto show the FDF of {what}")
        return
    styles = {"dirty": dict(color="0.55", lw=1.0), "clean": dict(color="tab:red", lw=1.5)}
    units = "Jy/beam"
    for kind, spectrum in spectra.items():
        if spectrum is not None:
            phi, amplitude, header, legend = spectrum
            ax.plot(phi, amplitude, label=legend, **styles[kind])
            units = unit_label(header) or units
    if phi_peak is not None:
        ax.axvline(phi_peak, color=SOURCE_COLOUR, ls="--", lw=1.0, label=rf"catalogue $\phi$ {phi_peak:.3g}")
    ax.set_title(f"FDF of {what}")
    ax.set_xlabel(PHI_LABEL)
    ax.set_ylabel(rf"|F($\phi$)| [{units}]")
    ax.legend(fontsize=8, loc="upper right")


def channel_column(channels, key: str):
    # null in the JSON (a channel without CLEAN, say), or a blank channel (nothing imaged,
    # its figures 0), becomes a gap in the line.
    return np.array([np.nan if c.get(key) is None or c.get("blank") else c[key] for c in channels], dtype=float)


def panel_qa(fig, cell, run: Run):
    ax = fig.add_subplot(cell)
    channels = (run.qa or {}).get("channels") or []
    if not channels:
        note(ax, "no per-channel QA (qa.json) in this run")
        return
    mhz = channel_column(channels, "freq_hz") / 1e6
    ax.plot(mhz, channel_column(channels, "residual_sigma_jy") * 1e3, "o-", ms=3,
            color="tab:blue", label="residual MAD σ")
    ax.set_xlabel("frequency [MHz]")
    ax.set_ylabel("residual MAD σ [mJy/beam]", color="tab:blue")
    beam = ax.twinx()
    # The beam is fitted to the PSF unless image.beam gave it or the fit fell back to the
    # theoretical one.
    kind = "fitted"
    if run.config_text and re.search(r"^beam[ \t]*=[ \t]*\S", run.config_text, re.MULTILINE):
        kind = "given (image.beam)"
    elif any(c.get("beam_theoretical") for c in channels):
        kind = "fitted or theoretical"
    beam.plot(mhz, channel_column(channels, "beam_major_arcsec"), "s-", ms=3, color="tab:green",
              label=f"{kind} beam major")
    beam.plot(mhz, channel_column(channels, "beam_minor_arcsec"), "^-", ms=3, color="tab:purple",
              label=f"{kind} beam minor")
    beam.set_ylabel(f"{kind} beam FWHM [arcsec]")
    blank = [c["freq_hz"] / 1e6 for c in channels if c.get("blank")]
    for freq in blank:
        ax.axvline(freq, color="0.7", lw=2, label="blank (nothing imaged)")
    for stop, colour in (("diverged", "tab:red"), ("degenerate_psf", "tab:orange")):
        for freq in marked_mhz(channels, stop):
            ax.axvline(freq, color=colour, alpha=0.5, lw=2, label=MARKS[stop])
    ax.set_title("per-channel residual noise and fitted beam")
    lines = ax.get_lines() + beam.get_lines()
    labels = {line.get_label(): line for line in lines}  # one entry per kind of mark
    ax.legend(labels.values(), labels.keys(), fontsize=8, loc="best")


# qa.json's clean_stop values that mark a channel, as the page names them.
MARKS = {"diverged": "CLEAN DIVERGED (weight 0)", "degenerate_psf": "degenerate PSF, not cleaned"}


def marked_mhz(channels, stop: str) -> list[float]:
    """The frequencies of the channels whose clean_stop is `stop`."""
    return [c["freq_hz"] / 1e6 for c in channels if c.get("clean_stop") == stop]


def marked_count(qa) -> str:
    channels = (qa or {}).get("channels") or []
    counts = {name: len(marked_mhz(channels, stop)) for stop, name in MARKS.items()}
    return "; ".join(f"{count} {name}" for name, count in counts.items() if count)


def channel_count(qa) -> str:
    if qa is None:
        return "channels unknown (no qa.json)"
    count = qa.get("run", {}).get("channels", len(qa.get("channels", [])))
    return f"{count} channels"


def page_title(run: Run) -> str:
    sources = "no catalogue" if run.catalogue is None else f"{len(run.catalogue)} catalogue sources"
    marks = marked_count(run.qa)
    pointings = mosaic_pointings(run.qa)
    mosaic = f", mosaic of {len(pointings)} pointings" if pointings else ""
    return (f"spip quick look: {run.prefix} — {channel_count(run.qa)}{mosaic}, {sources}"
            + (f" — {marks}" if marks else ""))


def render(prefix: Path, out: Path) -> str:
    """Draws the page into out and returns its title."""
    config = product(prefix, "config.ini")
    run = Run(prefix, read_catalogue(prefix), read_qa(prefix), read_image(product(prefix, "peak-pi.fits")),
              config.read_text() if config.exists() else "")
    fig = plt.figure(figsize=PAGE_INCHES, dpi=DPI)
    left, bottom, right, top = PANEL_AREA
    grid = fig.add_gridspec(GRID_ROWS, GRID_COLS, left=left, bottom=bottom, right=right, top=top,
                            wspace=0.35, hspace=0.3)
    cells = [grid[row, col] for row in range(GRID_ROWS) for col in range(GRID_COLS)]
    for draw, cell in zip(PANELS, cells):
        draw(fig, cell, run)
    title = page_title(run)
    fig.suptitle(title, fontsize=15)
    # No bbox_inches="tight": the page keeps PAGE_INCHES * DPI pixels.
    fig.savefig(out, dpi=DPI)
    plt.close(fig)
    return title


# In page order, row by row; the checker replaces them to see it notices empty panels.
PANELS = [panel_mean_i, panel_peak_pi, panel_peak_phi, panel_rmsf, panel_fdf, panel_qa]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("prefix_or_dir", help="product prefix (out/demo/demo) or a folder with one run")
    args = parser.parse_args(argv)
    prefix = resolve_prefix(args.prefix_or_dir)
    if not any(product(prefix, name).exists() for name in ("qa.json", "moment-mean-I.fits", "peak-pi.fits")):
        sys.exit(f"quicklook: no spip products named {prefix}-*")
    out = product(prefix, "quicklook.png")
    render(prefix, out)
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
