"""Disease ranking variants on calib: where does the gold disease land? (no LLM)"""

import math
import os
import pickle
import sys

from kgmind.eval import metrics as mt
from kgmind.eval.methods import METHODS, Resources
from kgmind.eval.runner import EvalConfig, build_items, prepare_store, question_text
from kgmind.graphs import services
from kgmind.retrievers.exploration import DISEASE_MARK, SYMPTOM_RELATION, _resolve, rank_diseases

split = sys.argv[1]
limit = int(sys.argv[2])
seed = int(sys.argv[3])
cfg = EvalConfig(
    dataset="genmedgpt5k",
    split=split,
    methods="kgmind",
    entities="chatgpt",
    llm="none",
    limit=limit,
    seed=seed,
    store=os.environ.get("KGMIND_EVAL_STORE"),
)
items, info = build_items(cfg)
store = prepare_store(cfg)
res = Resources(
    store_uri=store, docs_dir=cfg.docs, model=None, max_tokens=None, seed=seed, context_overrides={}
)
cache = f"/tmp/linked-{split}-{limit}-{seed}.pkl"
if os.path.exists(cache):
    with open(cache, "rb") as fh:
        linked = pickle.load(fh)
else:
    linked = {}
    for it in items:
        r = METHODS["kgmind"].func(question_text(it), list(it.entities), res, 500)
        linked[it.id] = r.linked
    with open(cache, "wb") as fh:
        pickle.dump(linked, fh)
gi = services.get_graph_index(services.get_store(store))
ndis = sum(1 for t in gi.types if t == "disease")
nsym = {}


def n_symptoms(d):
    if d not in nsym:
        nsym[d] = sum(1 for e in gi.out_adj[d] if gi.edge_type[e] == SYMPTOM_RELATION)
    return nsym[d]


def votes(ids):
    nodes = _resolve(gi, ids)
    V = {}  # d -> list of (voter, n)
    order = {}
    for i in nodes:
        if gi.types[i] == "disease":
            V.setdefault(i, []).append((i, 1))
            order.setdefault(i, len(order))
        ds = {gi.edge_tail[e] for e in gi.out_adj[i] if DISEASE_MARK in gi.edge_type[e]}
        for d in ds:
            V.setdefault(d, []).append((i, len(ds)))
            order.setdefault(d, len(order))
    return V, order


def variants(V, order, ids):
    out = {}
    vt = {d: len(v) for d, v in V.items()}
    sp = {d: round(sum(1 / n for _, n in v), 9) for d, v in V.items()}
    idf = {d: sum(math.log(1 + ndis / n) for _, n in v) for d, v in V.items()}
    out["current"] = [gi.index_of[d] for d, _, _ in rank_diseases(gi, ids)]  # the shipped ranking
    out["idf"] = sorted(V, key=lambda d: (-idf[d], order[d]))
    out["spec"] = sorted(V, key=lambda d: (-sp[d], order[d]))
    for b in (0.25, 0.5, 1.0):
        s = {d: vt[d] - b * math.log(max(n_symptoms(d), 1)) for d in V}
        out[f"votes-{b}logS"] = sorted(V, key=lambda d: (-s[d], -sp[d], order[d]))
    for b in (0.5, 1.0):
        s = {d: idf[d] - b * math.log(max(n_symptoms(d), 1)) for d in V}
        out[f"idf-{b}logS"] = sorted(V, key=lambda d: (-s[d], order[d]))
    # naive Bayes, p(s|d) ~ 1/|S_d|, uniform prior:
    # score = sum of log(1/|S_d|) over the voters + (missing voters) * log(eps)
    for eps in (1e-2, 1e-3):
        nv = max(vt.values()) if vt else 0
        s = {d: sum(-math.log(max(n_symptoms(d), 1)) for _ in V[d]) + (nv - vt[d]) * math.log(eps) for d in V}
        out[f"nb{eps}"] = sorted(V, key=lambda d: (-s[d], order[d]))
    return out


stats = {}
n = 0
for it in items:
    if not it.gold_diseases:
        continue
    n += 1
    V, order = votes(linked[it.id])
    for name, ranked in variants(V, order, linked[it.id]).items():
        pos = next(
            (k for k, d in enumerate(ranked) if mt.gold_disease_hit(gi.names[d], it.gold_diseases)), None
        )
        st = stats.setdefault(name, [0, 0, 0, 0])
        if pos is not None:
            st[0] += pos == 0
            st[1] += pos < 2
            st[2] += pos < 5
            st[3] += pos < 10
print(split, "n with gold disease", n)
for name, st in stats.items():
    print(f"{name:16s} top1 {st[0] / n:.3f} top2 {st[1] / n:.3f} top5 {st[2] / n:.3f} top10 {st[3] / n:.3f}")
