"""Calib only: kgmind with and without HyKGE's hypothesis call, interleaved with llm_only (answers, wall).

Usage: ``python answers_hypothesis.py N SEED OUT`` (``KGMIND_DATA_DIR`` set); ``KGV_ENTITIES`` (default
``chatgpt``) and ``KGV_METHODS`` (default ``llm_only,kgmind,kgmind_nohyp``) as in NOTES.md.
"""

import json
import os
import sys
import time

from kgmind.eval import methods as M

# ``kgmind_nohyp``: the shipped graph in full mode with the call off, registered before the runner is imported
M.GRAPH_MODES["kgmind_nohyp"] = "full"
M.GRAPH_OVERRIDES["kgmind_nohyp"] = {"hypothesis": False}
M.METHODS["kgmind_nohyp"] = M._graph_spec("kgmind_nohyp")
from kgmind.eval.report import write_results  # noqa: E402
from kgmind.eval.runner import EvalConfig, run_eval  # noqa: E402

limit, seed, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
cfg = EvalConfig(
    dataset="genmedgpt5k",
    methods=os.environ.get("KGV_METHODS", "llm_only,kgmind,kgmind_nohyp"),
    llm="local",
    split="calib",
    limit=limit,
    seed=seed,
    memory_sample=0,
    bertscore=False,
    llm_cache="off",
    interleave=True,
    entities=os.environ.get("KGV_ENTITIES", "chatgpt"),
)
t = time.time()
res = run_eval(cfg, keep_rows=True)
os.makedirs(out, exist_ok=True)
write_results(res, out)
keys = (
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
summ: dict = {
    m: {k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items() if k in keys}
    for m, r in res["methods"].items()
}
summ["minutes"] = round((time.time() - t) / 60, 1)
with open(os.path.join(out, "summary.json"), "w") as fh:
    json.dump(summ, fh, indent=1)
print(json.dumps(summ))
