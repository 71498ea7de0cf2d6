"""0.5B (commit d37171b) vs 1.5B (this folder) kgmind answers on the same 50 seeded test questions.

Answer recall, precision, F1 of the two means (the README's "answer F1"), mean per-question F1, a
paired count, and wall time p50 of each method in its own run. Run from the repository root.
"""

import importlib.util
import json

R = "benchmarks/results/"
A = R + "2026-11-24-grounded-answers-50-workups/results.json"  # 0.5B, d37171b
B = R + "2026-11-24-grounded-answers-50-1.5b/results.json"  # 1.5B


def load(path: str) -> dict:
    with open(path) as fh:
        return json.load(fh)


# the paired measures of the earlier comparison, one copy
_spec = importlib.util.spec_from_file_location("pool_1123", R + "2026-11-23-local-models/pool.py")
assert _spec and _spec.loader
_earlier = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_earlier)
f1, mean = _earlier.f1, _earlier.mean


ra, rb = load(A), load(B)
for method in ("kgmind", "mindmap", "llm_only"):
    a = {y["id"]: y for y in ra["rows"][method]}
    b = {y["id"]: y for y in rb["rows"][method]}
    ids = sorted(a)
    assert set(ids) == set(b), method
    for label, d, run in (("0.5b", a, ra), ("1.5b", b, rb)):
        r, p = mean(d, ids, "answer_entity_recall"), mean(d, ids, "answer_precision")
        per_row = sum(f1(d[i]) for i in ids) / len(ids)
        wall = run["methods"][method]["wall_ms_p50"] / 1000
        print(
            f"{method} n={len(ids)} {label}: recall {r:.3f} precision {p:.3f} F1 {2 * r * p / (r + p):.3f} "
            f"mean per-question F1 {per_row:.3f} wall p50 {wall:.1f} s"
        )
    diff = [f1(b[i]) - f1(a[i]) for i in ids]
    better, worse = sum(x > 0 for x in diff), sum(x < 0 for x in diff)
    print(f"  1.5b better {better}, worse {worse}, tied {len(diff) - better - worse}")
