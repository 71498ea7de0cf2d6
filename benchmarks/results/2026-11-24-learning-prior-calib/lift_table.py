"""Gold rate of the ranked candidates by rank and by the sign of their learnt lift (collect.py's JSON)."""

import json
import sys
from collections import defaultdict


def bucket(x: float) -> str:
    return "+" if x > 1e-9 else ("-" if x < -1e-9 else "0")


with open(sys.argv[1]) as f:
    rows = json.load(f)
for tag, scenario in (("before", "b"), ("after", "b"), ("after", "c"), ("rep_after", "all")):
    tab: dict[tuple[int, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in rows:
        if r["tag"] != tag or not r["gold"]:
            continue
        if scenario != "all" and r["seen"] != (scenario == "b"):
            continue
        gold = {g.lower() for g in r["gold"]}
        for k, c in enumerate(r["cands"][:5]):
            key = (k + 1, bucket(c[4]))  # c = [id, name, score, forward lift, reverse lift]
            tab[key][0] += c[1].lower() in gold
            tab[key][1] += 1
    print(f"{tag} ({scenario}): rank, sign of p(symptom | disease) lift -> gold / candidates")
    for key in sorted(tab):
        g, n = tab[key]
        print(f"  {key[0]} {key[1]}  {g:3d} / {n:3d}  {g / n:.3f}")
