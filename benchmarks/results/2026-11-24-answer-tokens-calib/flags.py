"""Calib experiment wrapper: set the answer-schema switches from the environment, then run the driver.

Usage (with E12.patch applied; the switches are not in the shipped code):
    KGV_ROOT_FROM_EVIDENCE=0|1 KGV_OWN_FROM_HYPOTHESIS=0|1 python flags.py \
    ../2026-11-24-grounded-calib/run_variant.py METHODS LIMIT SEED OUT
"""

import os
import runpy
import sys

import kgmind.prompts.grounded as G

for name in ("ROOT_FROM_EVIDENCE", "OWN_FROM_HYPOTHESIS"):
    value = os.environ.get("KGV_" + name)
    if value is not None:
        setattr(G, name, value == "1")
    print(name, getattr(G, name), file=sys.stderr)
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
