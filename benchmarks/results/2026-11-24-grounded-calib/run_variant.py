"""Calib experiment driver: patch constants from KGV_* env vars, run an interleaved eval, print a summary."""

import json
import os
import sys
import time

import kgmind.prompts.grounded as G
import kgmind.prompts.schemas as S

for name in (
    "MAX_STEPS",
    "MAX_NODES",
    "MAX_LEAVES",
    "MAX_OWN",
    "STEP_CHARS",
    "SUMMARY_CHARS",
    "OWN_CHARS",
    "MIN_DIAGNOSES",
    "MAX_DIAGNOSES",
    "CANDIDATE_DIAGNOSES",
    "LABEL_CHARS",
):
    v = os.environ.get("KGV_" + name)
    if v is not None:
        setattr(G, name, int(v))
# workup lists: KGV_TESTS_BY_RANK="3,4;1,2" ((min, max) per rank); the earlier KGV_MIN_/MAX_TESTS and
# KGV_MIN_/MAX_MEDICATIONS set one pair for every rank (what they meant before the bounds went by rank)
for field in ("TESTS", "MEDICATIONS"):
    v = os.environ.get(f"KGV_{field}_BY_RANK")
    low, high = os.environ.get(f"KGV_MIN_{field}"), os.environ.get(f"KGV_MAX_{field}")
    if v is not None:
        setattr(G, f"{field}_BY_RANK", tuple(tuple(int(x) for x in p.split(",")) for p in v.split(";")))
    elif low is not None or high is not None:
        (default,) = getattr(G, f"{field}_BY_RANK")[:1]
        pair = (int(low) if low is not None else default[0], int(high) if high is not None else default[1])
        setattr(G, f"{field}_BY_RANK", (pair,))
for name in ("HYPOTHESIS_CHARS", "MAX_HYPOTHESIS_ENTITIES", "ENTITY_CHARS"):
    v = os.environ.get("KGV_" + name)
    if v is not None:
        setattr(S, name, int(v))
        S.HypothesisOut.model_fields  # noqa
if any(os.environ.get("KGV_" + n) for n in ("HYPOTHESIS_CHARS", "MAX_HYPOTHESIS_ENTITIES", "ENTITY_CHARS")):
    # rebuild the json schema extras of HypothesisOut
    f = S.HypothesisOut.model_fields
    f["hypothesis"].json_schema_extra = {"maxLength": S.HYPOTHESIS_CHARS}
    f["entities"].json_schema_extra = {
        "maxItems": S.MAX_HYPOTHESIS_ENTITIES,
        "items": {"type": "string", "maxLength": S.ENTITY_CHARS},
    }
    S.HypothesisOut.model_rebuild(force=True)
from kgmind.eval.report import write_results  # noqa: E402  (after the constants are patched)
from kgmind.eval.runner import EvalConfig, run_eval  # noqa: E402

methods, limit, seed, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
sets = {}
budget = None
for kv in sys.argv[5:]:
    k, v = kv.split("=", 1)
    if k == "budget":
        budget = int(v)
        continue
    sets[k] = int(v) if v.isdigit() else {"true": True, "false": False}.get(v.lower(), v)
extra = {"budget": budget} if budget else {}
cfg = EvalConfig(
    dataset="genmedgpt5k",
    methods=methods,
    llm="local",
    split="calib",
    limit=limit,
    seed=seed,
    memory_sample=0,
    bertscore=False,
    llm_cache="off",
    interleave=True,
    context=sets,
    entities=os.environ.get("KGV_ENTITIES", "chatgpt"),
    **extra,
)
t = time.time()
res = run_eval(cfg, keep_rows=True)
os.makedirs(out, exist_ok=True)
write_results(res, out)
summ = {
    m: {
        k: (round(v, 3) if isinstance(v, float) else v)
        for k, v in r.items()
        if k
        in (
            "evidence_recall",
            "gold_disease_hit",
            "evidence_tokens_mean",
            "answer_entity_recall",
            "answer_precision",
            "citation_rate",
            "citation_support",
            "wall_ms_p50",
            "wall_ms_p95",
        )
    }
    for m, r in res["methods"].items()
}
if "kgmind" in summ and "llm_only" in summ:
    summ["ratio"] = round(summ["kgmind"]["wall_ms_p50"] / summ["llm_only"]["wall_ms_p50"], 3)
summ["env"] = {k: v for k, v in os.environ.items() if k.startswith("KGV_")}
summ["sets"] = sets
summ["budget"] = cfg.budget
summ["minutes"] = round((time.time() - t) / 60, 1)
with open(os.path.join(out, "summary.json"), "w") as fh:
    json.dump(summ, fh, indent=1)
print(json.dumps(summ))
