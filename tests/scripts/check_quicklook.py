#!/usr/bin/env python3
"""Checks scripts/quicklook.py on the products of a spip run.

    check_quicklook.py QUICKLOOK_PY PREFIX

PREFIX names a complete run's products (with its catalogue). The page of that run, and
of two copies made here with the catalogue emptied and with the catalogue and the FDF
cubes gone (an older run), must have the fixed size and content in every panel that has
its products; a page whose panels are left empty must fail the same check.
"""
from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.image  # noqa: E402
import numpy as np  # noqa: E402
from astropy.io import fits  # noqa: E402

# quicklook.py fixes its page at 18 x 11 inches and 100 dpi.
EXPECTED_PIXELS = (1100, 1800)  # rows, columns
# A panel must vary (a blank one has one grey) and hold colour: images, data lines and
# markers are coloured, while the axes, ticks and text of an empty panel are black on
# white, and antialiasing gives them only greys.
MIN_GREY_STD = 0.04
MIN_COLOURS = 50
CHROMA = 0.15  # max - min of R, G, B above which a pixel counts as coloured


def load_quicklook(path: Path):
    sys.dont_write_bytecode = True  # no __pycache__ left in the source tree's scripts/
    spec = importlib.util.spec_from_file_location("quicklook", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["quicklook"] = module  # dataclasses look their module up while it loads
    spec.loader.exec_module(module)
    return module


def run_quicklook(script: Path, arg: str, expected_png: Path) -> None:
    """Runs it as users do and checks it prints where the page went."""
    done = subprocess.run([sys.executable, str(script), arg], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"quicklook.py {arg} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
    printed = done.stdout.strip().splitlines()
    if not printed or Path(printed[-1]).resolve() != expected_png.resolve():
        sys.exit(f"quicklook.py {arg} printed {done.stdout!r}, expected the path {expected_png}")
    if not expected_png.is_file():
        sys.exit(f"quicklook.py {arg} did not write {expected_png}")


def panel_regions(page, quicklook):
    """The page cut into quicklook's panel grid, row by row, as numpy views."""
    height, width = page.shape[:2]
    left, bottom, right, top = quicklook.PANEL_AREA
    rows = np.linspace((1 - top) * height, (1 - bottom) * height, quicklook.GRID_ROWS + 1).astype(int)
    cols = np.linspace(left * width, right * width, quicklook.GRID_COLS + 1).astype(int)
    return [page[rows[r]:rows[r + 1], cols[c]:cols[c + 1]]
            for r in range(quicklook.GRID_ROWS) for c in range(quicklook.GRID_COLS)]


def panel_stats(region):
    rgb = region[..., :3]
    grey_std = float(rgb.mean(axis=2).std())
    coloured = rgb[(rgb.max(axis=2) - rgb.min(axis=2)) > CHROMA]
    colours = len(np.unique((coloured * 255).round().astype(np.uint8), axis=0))
    return grey_std, colours


def empty_panels(png: Path, quicklook) -> list[int]:
    """Numbers (1-based) of the panels that show nothing; stops if the size is wrong."""
    page = matplotlib.image.imread(png)
    if page.shape[:2] != EXPECTED_PIXELS:
        sys.exit(f"{png}: {page.shape[1]} x {page.shape[0]} pixels, expected "
                 f"{EXPECTED_PIXELS[1]} x {EXPECTED_PIXELS[0]}")
    empty = []
    for number, region in enumerate(panel_regions(page, quicklook), start=1):
        grey_std, colours = panel_stats(region)
        print(f"  {png.name} panel {number}: grey std {grey_std:.3f}, {colours} colours")
        if grey_std < MIN_GREY_STD or colours < MIN_COLOURS:
            empty.append(number)
    return empty


def expect_empty(png: Path, quicklook, expected: list[int], what: str) -> None:
    found = empty_panels(png, quicklook)
    if found != expected:
        sys.exit(f"{what}: empty panels {found}, expected {expected or 'none'} ({png})")
    print(f"ok: {what}")


def expect_title(quicklook, prefix: Path, parts: list[str]) -> None:
    """The title is not readable from the pixels; quicklook's own function builds it."""
    run = quicklook.Run(prefix, quicklook.read_catalogue(prefix), quicklook.read_qa(prefix), None)
    title = quicklook.page_title(run)
    missing = [part for part in parts if part not in title]
    if missing:
        sys.exit(f"title {title!r} lacks {missing}")


def catalogue_rows(path: Path) -> int:
    with path.open() as f:
        return sum(1 for _ in csv.reader(f)) - 1


def copy_of_run(prefix: Path, folder: Path, keep) -> Path:
    """Links the products keep() accepts into folder, as another run's prefix."""
    copy = folder / prefix.name
    for path in prefix.parent.glob(f"{prefix.name}-*"):
        suffix = path.name[len(prefix.name) + 1:]
        if keep(suffix) and suffix != "quicklook.png":
            os.symlink(path.resolve(), folder / path.name)
    return copy


def check_complete_run(script: Path, quicklook, prefix: Path) -> None:
    png = Path(f"{prefix}-quicklook.png")
    png.unlink(missing_ok=True)
    run_quicklook(script, str(prefix), png)
    expect_empty(png, quicklook, [], "complete run, by prefix")
    png.unlink()
    run_quicklook(script, str(prefix.parent), png)  # the folder form finds the same prefix
    expect_empty(png, quicklook, [], "complete run, by folder")
    channels = len(json.loads(Path(f"{prefix}-qa.json").read_text())["channels"])
    sources = catalogue_rows(Path(f"{prefix}-catalogue.csv"))
    expect_title(quicklook, prefix, [str(prefix), f"{channels} channels", f"{sources} catalogue sources"])


def check_empty_catalogue(script: Path, quicklook, prefix: Path, folder: Path) -> None:
    """No polarised source found: no markers, the FDF of the brightest PI pixel."""
    copy = copy_of_run(prefix, folder, lambda suffix: suffix != "catalogue.csv")
    with Path(f"{prefix}-catalogue.csv").open() as full, Path(f"{copy}-catalogue.csv").open("w") as empty:
        empty.write(full.readline())  # the header row alone
    run_quicklook(script, str(copy), Path(f"{copy}-quicklook.png"))
    expect_empty(Path(f"{copy}-quicklook.png"), quicklook, [], "empty catalogue")
    expect_title(quicklook, copy, ["0 catalogue sources"])


def check_real_and_imaginary_only(script: Path, quicklook, prefix: Path, folder: Path) -> None:
    """faraday.cubes without the amplitudes: |FDF| from the real and imaginary cubes,
    whose STOKES axis once made the page take the wrong column and fail."""
    copy = copy_of_run(prefix, folder, lambda suffix: "_tot" not in suffix)
    run_quicklook(script, str(copy), Path(f"{copy}-quicklook.png"))
    expect_empty(Path(f"{copy}-quicklook.png"), quicklook, [], "run with real and imaginary FDF cubes only")


def check_no_polarised_pixel(script: Path, quicklook, prefix: Path, folder: Path) -> None:
    """A peak-PI map blank everywhere (faraday.fractional_threshold above every source)
    and an empty catalogue: the page comes, and the FDF panel says why it is empty."""
    copy = copy_of_run(prefix, folder, lambda suffix: suffix not in ("catalogue.csv", "peak-pi.fits"))
    with Path(f"{prefix}-catalogue.csv").open() as full, Path(f"{copy}-catalogue.csv").open("w") as empty:
        empty.write(full.readline())  # the header row alone
    with fits.open(f"{prefix}-peak-pi.fits") as hdul:
        blank = hdul[0].data * np.nan
        fits.PrimaryHDU(blank, hdul[0].header).writeto(f"{copy}-peak-pi.fits")
    run_quicklook(script, str(copy), Path(f"{copy}-quicklook.png"))
    expect_empty(Path(f"{copy}-quicklook.png"), quicklook, [5], "run without a polarised pixel")


def check_older_run(script: Path, quicklook, prefix: Path, folder: Path) -> None:
    """No catalogue and no FDF cubes: the page still comes, the FDF panel says why."""
    copy = copy_of_run(prefix, folder, lambda suffix: suffix != "catalogue.csv" and "FDF_" not in suffix)
    run_quicklook(script, str(copy), Path(f"{copy}-quicklook.png"))
    expect_empty(Path(f"{copy}-quicklook.png"), quicklook, [5], "run without catalogue and FDF cubes")
    expect_title(quicklook, copy, ["no catalogue"])


def check_marked_channels(script: Path, quicklook, prefix: Path, folder: Path) -> None:
    """Channels whose CLEAN diverged, or whose PSF is degenerate, are named in the title."""
    copy = copy_of_run(prefix, folder, lambda suffix: suffix != "qa.json")
    qa = json.loads(Path(f"{prefix}-qa.json").read_text())
    qa["channels"][0]["clean_stop"] = "diverged"
    qa["channels"][-1]["clean_stop"] = "degenerate_psf"
    Path(f"{copy}-qa.json").write_text(json.dumps(qa))
    run_quicklook(script, str(copy), Path(f"{copy}-quicklook.png"))
    expect_empty(Path(f"{copy}-quicklook.png"), quicklook, [], "run with marked channels")
    expect_title(quicklook, copy, ["1 CLEAN DIVERGED (weight 0)", "1 degenerate PSF, not cleaned"])


def check_mosaic(script: Path, quicklook, prefix: Path, folder: Path) -> None:
    """A mosaic's pointings are marked on the maps and counted in the title."""
    copy = copy_of_run(prefix, folder, lambda suffix: suffix != "qa.json")
    qa = json.loads(Path(f"{prefix}-qa.json").read_text())
    with fits.open(f"{prefix}-moment-mean-I.fits") as hdul:
        ra, dec = hdul[0].header["CRVAL1"], hdul[0].header["CRVAL2"]
    qa["pointings"] = [[ra + 0.5, dec], [ra - 0.5, dec]]
    Path(f"{copy}-qa.json").write_text(json.dumps(qa))
    run_quicklook(script, str(copy), Path(f"{copy}-quicklook.png"))
    expect_empty(Path(f"{copy}-quicklook.png"), quicklook, [], "mosaic")
    expect_title(quicklook, copy, ["mosaic of 2 pointings"])
    fig = quicklook.plt.figure()
    ax = quicklook.sky_image(fig, 111, quicklook.read_image(Path(f"{copy}-moment-mean-I.fits")), "mean I", "", "gray")
    quicklook.mark_pointings(ax, qa)
    labels = ax.get_legend_handles_labels()[1]
    quicklook.plt.close(fig)
    if labels != ["pointings (2)"]:
        sys.exit(f"mosaic: the mean-I panel marks {labels}, not the 2 pointings")


def check_detects_empty_panels(quicklook, prefix: Path, folder: Path) -> None:
    """Panels drawn as axes without data must fail, or the checks above prove nothing."""
    def bare_axes(fig, cell, run):
        ax = fig.add_subplot(cell)
        ax.set_title("nothing drawn")
        ax.set_xlabel("x")
        ax.set_ylabel("y")

    quicklook.PANELS = [bare_axes] * len(quicklook.PANELS)
    png = folder / "bare-quicklook.png"
    quicklook.render(prefix, png)
    expect_empty(png, quicklook, list(range(1, len(quicklook.PANELS) + 1)), "bare axes count as empty")


def main() -> int:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    script, prefix = Path(sys.argv[1]), Path(sys.argv[2])
    quicklook = load_quicklook(script)
    check_complete_run(script, quicklook, prefix)
    with tempfile.TemporaryDirectory(dir=prefix.parent) as scratch:
        for name, check in (("empty", check_empty_catalogue), ("older", check_older_run),
                            ("real_imag", check_real_and_imaginary_only), ("blank_pi", check_no_polarised_pixel),
                            ("marked", check_marked_channels), ("mosaic", check_mosaic)):
            (Path(scratch) / name).mkdir()
            check(script, quicklook, prefix, Path(scratch) / name)
        check_detects_empty_panels(quicklook, prefix, Path(scratch))
    print("quicklook: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
