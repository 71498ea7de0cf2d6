"""Learn on a calib prefix; evaluate held-out and repeat items with and without a learnt-disease prior.

Usage (repository root): ``python sim.py NTRAIN MODES`` with MODES a comma list of ``off`` (the
shipped values), ``gt`` (missing mass by Good-Turing) or a number (the missing mass forced).
"""

import os
import sys
from collections import Counter
from statistics import mean

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import numpy as np
from split import RUN, calib_split

from kgmind.eval import gold as gd
from kgmind.eval.learn import LearnConfig, run_learn
from kgmind.eval.methods import METHODS, Resources
from kgmind.eval.runner import _score
from kgmind.models import normalize_name
from kgmind.retrievers import packing as pk

ntrain, modes = int(sys.argv[1]), sys.argv[2].split(",")
uri, train, test, train_d = calib_split(ntrain)
cnt = Counter(g[0].lower() for i in train for g in i.gold_diseases[:1])
N, N1 = sum(cnt.values()), sum(1 for v in cnt.values() if v == 1)
u_gt = N1 / N  # Good-Turing: the chance that the next question's disease was never learnt
print("N", N, "N1", N1, "u", round(u_gt, 3))
vocab = gd.load_emckg_vocabulary()
run_learn(LearnConfig(split="calib", store=uri, ids=f"{RUN}/train.txt"))
res = Resources(store_uri=uri, seed=0)
gi = res.graph_index()
learnt = set()
for k in range(len(gi.ids)):
    if gi.types[k] != "disease":
        continue
    es = [e for e in gi.out_adj[k] if gi.edge_type[e] == "has_symptom"]
    if es and not np.all(gi.weights[es] == gi.weights[es[0]]):
        learnt.add(normalize_name(gi.names[k]))
print("learnt diseases", len(learnt), "train diseases", len(cnt))
shipped = pk.entity_values
MODE = {"m": "off"}


def with_prior(ev, value, types, ranks):
    """The shipped values, a ranked disease's (and its line's tails') scaled by the learnt prior."""
    out = shipped(ev, value, types, ranks)
    if MODE["m"] == "off" or not ranks:
        return out
    s = sum(1 for x in ranks if x in learnt) / len(ranks)
    u = u_gt if MODE["m"] == "gt" else float(MODE["m"])
    if s in (0.0, 1.0):
        return out

    def factor(key):
        if key in learnt:
            return min((1 - u) / s, 1 / max(value.disease(ranks[key]), 1e-9))
        return u / (1 - s)

    head = pk.line_disease(ev, ranks)
    for key in out:
        if key in ranks:
            out[key] *= factor(key)
        elif head is not None and key != head:
            out[key] *= factor(head)
    return out


pk.entity_values = with_prior


def summ(its):
    rows = []
    for it in its:
        r = _score(it, METHODS["kgmind"].func(it.question, it.entities, res, 300), res, vocab)
        r["seen"] = any(g[0].lower() in train_d for g in it.gold_diseases)
        r["has"] = bool(it.gold_diseases)
        rows.append(r)
    out = {}
    scenarios = (
        ("all", lambda r: True),
        ("b", lambda r: r["seen"]),
        ("c", lambda r: r["has"] and not r["seen"]),
    )
    for sc, sel in scenarios:
        rs = [r for r in rows if sel(r)]

        def m(k, rs=rs):
            return round(mean([r[k] for r in rs if r[k] is not None] or [0]), 4)

        keys = ("evidence_recall", "evidence_precision", "gold_disease_hit", "evidence_tokens")
        out[sc] = (len(rs), *(m(k) for k in keys))
    return out


for mode in modes:
    MODE["m"] = mode
    t, rp = summ(test), summ(train[:300])
    print(mode, "b", t["b"], "c", t["c"], "all", t["all"], "rep", rp["all"], flush=True)
