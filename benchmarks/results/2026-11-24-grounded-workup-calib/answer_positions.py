"""Where the gold entities of grounded answers sit: summary line, diagnoses, and each test/medication position.

Usage: python answer_positions.py RESULTS_JSON SPLIT METHOD [METHOD ...]  (a run with keep_rows; calib only)
Counts distinct vocabulary entities per part of the rendered answer and how many are gold; positions past 6 pool.
"""

import json, re, sys, statistics as st
from kgmind.eval import gold as gd
from kgmind.eval.runner import EvalConfig, build_items
from kgmind.models import normalize_name
path, split = sys.argv[1], sys.argv[2]
r = json.load(open(path))
cfg = EvalConfig(dataset="genmedgpt5k", split=split, limit=r["limit"], seed=r["seed"], methods="kgmind")
items, _ = build_items(cfg)
by = {it.id: it for it in items}
vocab = gd.load_emckg_vocabulary(None)
for m in sys.argv[3:]:
    agg = {"sum_all": 0, "sum_gold": 0, "dx_all": 0, "dx_gold": 0, "t_all": 0, "t_gold": 0, "m_all": 0, "m_gold": 0, "gold": 0}
    pos = {}
    for row in r["rows"][m]:
        it = by[row["id"]]
        gold = {normalize_name(n) for n in it.gold_names}
        agg["gold"] += len(gold)
        lines = row["answer"].split("\n")
        summ, concl = lines[0], "\n".join(lines[1:])
        agg["sum_all"] += len({normalize_name(e.name) for e in vocab.matcher.find(summ)})
        agg["sum_gold"] += len({normalize_name(e.name) for e in vocab.matcher.find(summ)} & gold)
        for key, lab in (("dx", "Likely diagnoses"), ("t", "Tests"), ("m", "Medications")):
            mm = re.search(lab + r": (.*?)(?:\. (?:Tests|Medications):|\.$)", concl)
            if not mm: continue
            names = [normalize_name(e.name) for e in vocab.matcher.find(mm.group(1))]
            seen = []
            for n in names:
                if n not in seen: seen.append(n)
            agg[key + "_all"] += len(seen); agg[key + "_gold"] += len(set(seen) & gold)
            for i, n in enumerate(seen):
                p = pos.setdefault((key, min(i, 6)), [0, 0]); p[0] += 1; p[1] += n in gold
    print(m, agg)
    print(sorted((k, v[1], v[0]) for k, v in pos.items()))
