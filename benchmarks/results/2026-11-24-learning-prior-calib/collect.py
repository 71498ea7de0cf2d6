"""Learn on a calib prefix; dump, per evaluated item, the ranked candidates with their learnt lifts.

Usage (repository root): ``python collect.py NTRAIN OUT.json``; then ``python lift_table.py OUT.json``.
"""

import json
import math
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
from split import RUN, calib_split

from kgmind.eval import gold as gd
from kgmind.eval.learn import LearnConfig, run_learn
from kgmind.eval.methods import METHODS, Resources
from kgmind.eval.runner import _score
from kgmind.retrievers import exploration as ex

ntrain, out = int(sys.argv[1]), sys.argv[2]
uri, train, test, train_d = calib_split(ntrain)
vocab = gd.load_emckg_vocabulary()


def lifts(gi, linked):
    """``disease id -> (forward lift, reverse lift)``, as ``rank_diseases`` sums them."""
    fwd, sup = {}, {}
    for i in ex._resolve(gi, linked):
        dedges = [e for e in gi.out_adj[i] if ex.DISEASE_MARK in gi.edge_type[e]]
        if not dedges:
            continue
        n, tot = len(dedges), float(gi.weights[dedges].sum())
        best = {}
        for e in dedges:
            dd = gi.edge_tail[e]
            r = float(gi.weights[e]) * n / tot if tot > 0 else 1.0
            if dd not in best or r > best[dd][0]:
                best[dd] = (r, e)
        for dd, (r, e) in best.items():
            fwd[dd] = fwd.get(dd, 0.0) + math.log(r)
            sup.setdefault(dd, []).append(e)
    return {
        gi.ids[dd]: (fwd.get(dd, 0.0), sum(ex._reverse_lift(gi, dd, gi.edge_head[e]) for e in sup[dd]))
        for dd in sup
    }


def run(res, its, tag):
    gi = res.graph_index()
    rows = []
    for it in its:
        mr = METHODS["kgmind"].func(it.question, it.entities, res, 300)
        r = _score(it, mr, res, vocab)
        lift = lifts(gi, mr.linked)
        cands = [
            [did, gi.name(did), round(score, 3), *[round(x, 3) for x in lift.get(did, (0.0, 0.0))]]
            for did, score, _s in ex.rank_diseases(gi, mr.linked, weight_aware=True)[:15]
        ]
        rows.append(
            dict(
                id=it.id,
                tag=tag,
                gold=[g[0] for g in it.gold_diseases],
                seen=any(g[0].lower() in train_d for g in it.gold_diseases),
                recall=r["evidence_recall"],
                precision=r["evidence_precision"],
                hit=r["gold_disease_hit"],
                tokens=r["evidence_tokens"],
                cands=cands,
            )
        )
    return rows


res = Resources(store_uri=uri, seed=0)
rows = run(res, test, "before") + run(res, train[:300], "rep_before")
run_learn(LearnConfig(split="calib", store=uri, ids=f"{RUN}/train.txt"))
res = Resources(store_uri=uri, seed=0)
rows += run(res, test, "after") + run(res, train[:300], "rep_after")
with open(out, "w") as f:
    json.dump(rows, f)
