import sys

from kgmind.eval import metrics as mt
from kgmind.eval.methods import METHODS, Resources
from kgmind.eval.runner import EvalConfig, build_items, prepare_store, question_text
from kgmind.graphs import services
from kgmind.prompts.grounded import MAX_MEDICATIONS, MAX_TESTS, workups

cfg = EvalConfig(
    dataset="genmedgpt5k",
    split="calib",
    methods="kgmind",
    entities="chatgpt",
    llm="none",
    limit=int(sys.argv[1]),
    seed=11,
)  # the default eval store (the run used a copy of it)
items, info = build_items(cfg)
store = prepare_store(cfg)
res = Resources(
    store_uri=store, docs_dir=cfg.docs, model=None, max_tokens=None, seed=11, context_overrides={}
)
pos_hist = {}
rec = {k: [] for k in ("first", "top2", "best")}
for it in items:
    r = METHODS["kgmind"].func(question_text(it), list(it.entities), res, 500)
    ev = r.evidence
    types = services.entity_types(store, ev)
    wu = [(d, t) for d, t in workups(ev, types).items() if t["tests"] or t["medications"]]

    def rec_of(picks, it=it):
        text = " ; ".join(
            d + " ; " + " ; ".join(t["tests"][:MAX_TESTS] + t["medications"][:MAX_MEDICATIONS])
            for d, t in picks
        )
        return mt.evidence_recall(text, it.gold) if it.gold else None

    hit = [i for i, (d, t) in enumerate(wu) if mt.gold_disease_hit(d, it.gold_diseases)]
    p = hit[0] if hit else -1
    pos_hist[p] = pos_hist.get(p, 0) + 1
    if it.gold:
        rec["first"].append(rec_of(wu[:1]))
        rec["top2"].append(rec_of(wu[:2]))
        rec["best"].append(max([rec_of([w]) for w in wu] or [0]))
print("actionable gold position:", sorted(pos_hist.items()))
print({k: round(sum(v) / len(v), 3) for k, v in rec.items()}, len(items))
