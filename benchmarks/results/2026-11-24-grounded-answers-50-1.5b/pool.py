"""0.5B (commit d37171b) vs 1.5B (this folder) kgmind answers on the same 50 seeded test questions.

Answer recall, precision, F1 of the two means (the README's "answer F1"), mean per-question F1, a
paired count, and wall time p50 of each method in its own run. Run from the repository root;
``python pool.py A B [LABEL_A LABEL_B]`` pairs two other runs' ``results.json`` (the first as "0.5b").
"""

import importlib.util
import json
import sys

R = "benchmarks/results/"
A = R + "2026-11-24-grounded-answers-50-workups/results.json"  # 0.5B, d37171b
B = R + "2026-11-24-grounded-answers-50-1.5b/results.json"  # 1.5B


def load(path: str) -> dict:
    with open(path) as fh:
        return json.load(fh)


# the paired measures and their printout: the earlier comparison's, one copy
_spec = importlib.util.spec_from_file_location("pool_1123", R + "2026-11-23-local-models/pool.py")
assert _spec and _spec.loader
_earlier = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_earlier)

labels = ("0.5b", "1.5b")
if len(sys.argv) in (3, 5):
    A, B = sys.argv[1:3]
    labels = tuple(sys.argv[3:5]) or labels  # type: ignore[assignment]
ra, rb = load(A), load(B)
for method in ("kgmind", "mindmap", "llm_only"):
    _earlier.compare(
        method,
        {y["id"]: y for y in ra["rows"][method]},
        {y["id"]: y for y in rb["rows"][method]},
        walls=(ra["methods"][method]["wall_ms_p50"] / 1000, rb["methods"][method]["wall_ms_p50"] / 1000),
        labels=labels,
    )
