#!/usr/bin/env python3
"""Mean CLEAN components and major cycles per channel, from spip's qa.json or WSClean's log.

usage: clean_counts.py spip QA_JSON | clean_counts.py wsclean LOG
"""
import json
import re
import sys

import numpy as np


def main():
    kind, path = sys.argv[1:3]
    if kind == "spip":
        channels = json.load(open(path))["channels"]
        components = [c["iterations"] for c in channels]
        majors = [c["major_cycles"] for c in channels]
    else:
        # WSClean logs a running total per major iteration and a count per channel.
        log = open(path).read()
        # Multiscale runs close each channel with "Total: N components" instead.
        components = [int(n) for n in re.findall(r"^Total: (\d+) components", log, re.M)]
        if not components:
            per_channel = log.split("major iterations were performed")[:-1]
            components = [int(re.findall(r"Performed (\d+) iterations in total", block)[-1]) for block in per_channel]
        majors = [int(m) for m in re.findall(r"(\d+) major iterations were performed", log)]
    print(f"{np.mean(components):.0f} {np.mean(majors):.2f}")


if __name__ == "__main__":
    main()
