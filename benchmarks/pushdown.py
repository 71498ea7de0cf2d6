"""Whole-KG index against pushed-down exploration: memory, build time, per-question time, same evidence.

For each KG (EMCKG-full for GenMedGPT-5k, the CMCKG re-crawl for CMCQA, in the embedded
store ``kgmind eval`` uses), one process:

1. builds the whole-KG ``GraphIndex`` as ``exploration="memory"`` does, timed, with
   tracemalloc's peak (bytes per edge);
2. runs the retrieval graph (no LLM, stored question entities, shipped defaults) on a
   seeded sample of questions, once with ``exploration="memory"`` and once with
   ``"pushdown"``, and records the wall time per question, the edges the per-question
   index loaded and whether the selected evidence is identical.

Usage::

    python benchmarks/pushdown.py --kg both --questions 100 --questions-recrawl 20 \\
        --out benchmarks/results/2026-11-23-pushdown
"""

from __future__ import annotations

import argparse
import json
import os
import time
import tracemalloc
from datetime import date
from pathlib import Path
from statistics import median
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

DATASET = {"emckg": "genmedgpt5k", "recrawl": "cmcqa"}


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * len(s)))], 1)


def measure(kg: str, questions: int, seed: int) -> dict[str, Any]:
    """Measure one KG (see the module doc)."""
    from kgmind.eval.config import EvalConfig
    from kgmind.eval.items import build_items
    from kgmind.eval.kg import prepare_store
    from kgmind.eval.methods import run_graph
    from kgmind.eval.resources import Resources
    from kgmind.retrievers import graph_index_cache as gx
    from kgmind.stores.factory import open_store

    cfg = EvalConfig(dataset=DATASET[kg], split="test", limit=questions, seed=seed)
    uri = prepare_store(cfg)
    assert uri is not None
    store = open_store(uri)
    stats = store.stats()
    items = [it for it in build_items(cfg)[0] if it.entities]

    gx.clear_graph_index_cache()
    tracemalloc.start()
    t0 = time.perf_counter()
    full = gx.get_graph_index(store)
    build_s = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()

    res = Resources(store_uri=uri, seed=seed)
    rows = []
    for item in items:
        row: dict[str, Any] = {"id": item.id}
        evidence = {}
        for mode in ("memory", "pushdown"):
            res.context_overrides = {"exploration": mode}
            t = time.perf_counter()
            budget = res.context("full", 500).budget_tokens
            out = run_graph("full", item.question, item.entities, res, budget)
            row[f"{mode}_ms"] = (time.perf_counter() - t) * 1000
            evidence[mode] = [(e.id, e.text, tuple(e.relation_ids)) for e in out.evidence]
            if mode == "pushdown":
                hood = gx.get_neighborhood_index(store, out.linked)
                row["pushdown_edges"] = hood.num_edges
        row["same_evidence"] = evidence["memory"] == evidence["pushdown"]
        rows.append(row)
    mem = [r["memory_ms"] for r in rows]
    push = [r["pushdown_ms"] for r in rows]
    loaded = [r["pushdown_edges"] for r in rows]
    return {
        "kg": kg,
        "store": uri,
        "relations": stats.relations_total,
        "entities": stats.entities_total,
        "index_build_s": round(build_s, 2),
        "index_traced_bytes": peak,
        "index_bytes_per_edge": round(peak / max(full.num_edges, 1), 1),
        "questions": len(rows),
        "same_evidence": sum(r["same_evidence"] for r in rows),
        "memory_ms_p50": _pct(mem, 0.5),
        "memory_ms_p95": _pct(mem, 0.95),
        "pushdown_ms_p50": _pct(push, 0.5),
        "pushdown_ms_p95": _pct(push, 0.95),
        "pushdown_edges_p50": median(loaded),
        "pushdown_edges_max": max(loaded),
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    """Run the measurement and write results.json / results.md."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kg", choices=("emckg", "recrawl", "both"), default="both")
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument(
        "--questions-recrawl", type=int, default=None, help="questions on the re-crawl (default --questions)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    from kgmind.eval.environment import machine_info

    kgs = ["emckg", "recrawl"] if args.kg == "both" else [args.kg]
    out = {
        "benchmark": "pushdown",
        "date": date.today().isoformat(),
        "machine": machine_info(),
        "argv": argv,
        "kgs": [
            measure(
                kg, args.questions_recrawl or args.questions if kg == "recrawl" else args.questions, args.seed
            )
            for kg in kgs
        ],
    }
    lines = [
        "| KG | relations | whole-KG index: build, bytes/edge | questions, same evidence | "
        "memory ms p50/p95 | pushdown ms p50/p95 | edges loaded p50/max |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in out["kgs"]:
        lines.append(
            f"| {r['kg']} | {r['relations']:,} | {r['index_build_s']} s, {r['index_bytes_per_edge']} | "
            f"{r['questions']}, {r['same_evidence']} | {r['memory_ms_p50']} / {r['memory_ms_p95']} | "
            f"{r['pushdown_ms_p50']} / {r['pushdown_ms_p95']} | {r['pushdown_edges_p50']:,} / "
            f"{r['pushdown_edges_max']:,} |"
        )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(out, indent=2) + "\n")
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
