"""Whether two runs' FITS products are bit-identical: every HDU's data bytes, file by file.

    python3 bench/same_products.py OUT_A OUT_B

Used to show that a refactoring changed no product (the CLEAN driver of issue 27 was
checked so on the sample and on bench/make-realistic-ms.sh's set, with and without
clean.auto_mask). Prints one line per file that differs and a summary; exits 1 if any
differs or is missing.
"""
import pathlib
import sys

import numpy as np
from astropy.io import fits


def same_hdu(a, b):
    if a.data is None or b.data is None:
        return a.data is None and b.data is None
    if isinstance(a, fits.BinTableHDU):
        return a.data.tobytes() == b.data.tobytes()
    return a.data.shape == b.data.shape and np.array_equal(a.data.view(np.uint8), b.data.view(np.uint8))


def main(first, second):
    same = differ = 0
    for path in sorted(pathlib.Path(first).glob("*.fits")):
        other = pathlib.Path(second) / path.name
        if not other.exists():
            print(f"missing: {other}")
            differ += 1
            continue
        with fits.open(path) as a, fits.open(other) as b:
            if len(a) != len(b) or not all(same_hdu(x, y) for x, y in zip(a, b)):
                print(f"differs: {path.name}")
                differ += 1
            else:
                same += 1
    print(f"{first} vs {second}: {same} files bit-identical, {differ} differ")
    return 1 if differ or not same else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
