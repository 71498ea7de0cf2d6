"""Fit the default reranker's question mode on the calibration split (never on the reported test split).

For each mode of :class:`kgmind.retrievers.aggregate.EntityVectorReranker` (``ignore``:
the question is left out; ``embed``: embedded like the hypothesis chunks; ``anchors``:
the linked entities stand in for it) the shipped graph runs ``kgmind eval genmedgpt5k
--split calib --methods kgmind --set rerank_question=MODE`` (stored ChatGPT entities,
800-token budget). With
``--llm none`` there is no hypothesis, so the modes differ only in how the question is
used; with ``--llm local`` (and ``--limit``) the hypothesis chunks are scored too.

Usage::

    python benchmarks/calibrate_reranker.py --out benchmarks/results/DIR [--llm none] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import os
from datetime import date
from pathlib import Path

from _common import git_commit

os.environ.setdefault("HF_HUB_OFFLINE", "1")

MODES = ("ignore", "embed", "anchors")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--llm", default="none")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--store", default=None, help="Store URI (default: kgmind eval's EMCKG-full store).")
    args = ap.parse_args()

    from kgmind.eval.config import EvalConfig
    from kgmind.eval.datasets import default_path
    from kgmind.eval.environment import machine_info
    from kgmind.eval.runner import run_eval
    from kgmind.tuning import RERANK_QUESTION_MODE

    rows = {}
    for mode in MODES:
        cfg = EvalConfig(
            dataset="genmedgpt5k",
            methods="kgmind",
            llm=args.llm,
            split="calib",
            limit=args.limit,
            seed=args.seed,
            memory_sample=0,
            bertscore=False,
            store=args.store,
            kg=str(default_path("emckg")) if args.store else None,
            context={"rerank_question": mode},  # the graph's Context.rerank_question
        )
        res = run_eval(cfg)["methods"]["kgmind"]
        rows[mode] = {
            k: res.get(k)
            for k in (
                "evidence_recall",
                "gold_disease_hit",
                "evidence_precision",
                "evidence_tokens_mean",
                "scored",
            )
        }
        print(mode, json.dumps(rows[mode]), flush=True)
    best = max(rows, key=lambda m: (rows[m]["evidence_recall"] or 0.0, rows[m]["gold_disease_hit"] or 0.0))
    commit = git_commit()
    out = {
        "benchmark": "calibrate_reranker",
        "split": "calib",
        "llm": args.llm,
        "limit": args.limit,
        "date": date.today().isoformat(),
        "commit": commit,
        "machine": machine_info(),
        "modes": rows,
        "best": best,
        "shipped_default": RERANK_QUESTION_MODE,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(out, indent=2), encoding="utf-8")
    print("best:", best)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
