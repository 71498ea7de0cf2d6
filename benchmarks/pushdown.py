"""Whole-KG index against pushed-down exploration: memory, time, edges read, evidence recall, same evidence.

For each KG (EMCKG-full for GenMedGPT-5k, the CMCKG re-crawl for CMCQA, in the embedded
store ``kgmind eval`` uses), one process:

1. runs the retrieval graph (no LLM, stored question entities, shipped defaults) on a
   seeded sample of the split with ``exploration="pushdown"``: wall time per question,
   the edges it loaded from the store (a worker's questions share what they read, so a
   node an earlier question completed costs nothing; ``--kept-edges 0`` gives each
   question its own index, as before), the process's resident memory before and after
   the pass (the whole-KG index is not built yet);
2. builds the whole-KG ``GraphIndex`` as ``exploration="memory"`` does, timed, with
   tracemalloc's peak (bytes per edge);
3. runs the same questions with ``exploration="memory"``, and records whether the
   selected evidence is identical and each mode's evidence recall (the ``kgmind eval``
   rule: gold entities named in the rendered evidence);
4. with ``--recall-all``, runs every question of the split in memory mode (recall only),
   and in pushdown mode too when ``--recall-all both``;
5. with ``--rss-questions N``, asks N questions pushed down (the split's questions over and
   over) and records the process's resident memory every 100: a worker's memory over time.

``--store NAME=URI`` adds a store the benchmark did not import (the generated KGs of
``benchmarks/big_kg.py``), explored with CMCQA's questions: shard 0 of a generated KG is the
re-crawl, so its entities are the questions' entities. ``--modes pushdown`` skips the whole-KG
index (the 10M row: its index alone is ~0.8 GB and ~5 GB while building).

Usage::

    python benchmarks/pushdown.py --kg both --questions 100 --questions-recrawl 20 \\
        --out benchmarks/results/2026-11-23-pushdown
    python benchmarks/pushdown.py --kg none --store gen10m=ladybug:$KGMIND_HOME/big10m --modes pushdown \\
        --questions 100 --rss-questions 1000 --out benchmarks/results/…
"""

from __future__ import annotations

import argparse
import json
import os
import time
import tracemalloc
from datetime import date
from pathlib import Path
from statistics import mean, median
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

DATASET = {"emckg": "genmedgpt5k", "recrawl": "cmcqa"}


def _pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return round(s[min(len(s) - 1, int(q * len(s)))], 1)


def _rss_mb(field: str = "VmRSS") -> float:
    """The process's resident memory now (MB), from /proc: all of it, or ``RssAnon`` (not file pages)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    return 0.0


def _run(item: Any, mode: str, res: Any) -> dict[str, Any]:
    """One question in one exploration mode: time, evidence, recall (and edges loaded when pushed down)."""
    from kgmind.eval import metrics as mt
    from kgmind.eval.methods import evidence_text, run_graph
    from kgmind.retrievers.graph_pushdown import edges_loaded

    res.context_overrides = {"exploration": mode}
    loaded = edges_loaded()
    t = time.perf_counter()
    budget = res.context("full", 500).budget_tokens
    out = run_graph("full", item.question, item.entities, res, budget)
    row: dict[str, Any] = {"ms": (time.perf_counter() - t) * 1000}
    row["evidence"] = [(e.id, e.text, tuple(e.relation_ids)) for e in out.evidence]
    row["recall"] = mt.evidence_recall(evidence_text(out.evidence, res), item.gold)
    if mode == "pushdown":  # what this question read from the store (nodes others completed: nothing)
        row["edges"] = edges_loaded() - loaded
    return row


def _recall(values: list[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return round(mean(got), 4) if got else None


def measure(
    kg: str,
    questions: int,
    seed: int,
    split: str,
    recall_all: str,
    modes: str = "both",
    uri: str | None = None,
    rss_questions: int = 0,
) -> dict[str, Any]:
    """Measure one KG (see the module doc); ``uri``: a given store, asked CMCQA's questions."""
    from kgmind.eval.config import EvalConfig
    from kgmind.eval.items import build_items
    from kgmind.eval.kg import prepare_store
    from kgmind.eval.resources import Resources
    from kgmind.retrievers import graph_index_cache as gx
    from kgmind.stores.factory import open_store

    cfg = EvalConfig(dataset=DATASET.get(kg, "cmcqa"), split=split, limit=questions, seed=seed)
    uri = uri or prepare_store(cfg)
    assert uri is not None
    store = open_store(uri)
    stats = store.stats()
    items = [it for it in build_items(cfg)[0] if it.entities]
    res = Resources(store_uri=uri, seed=seed)
    gx.clear_graph_index_cache()
    _run(items[0], "memory" if modes == "memory" else "pushdown", res)  # warm-up: models, caches
    rss_start = _rss_mb()
    push = [_run(it, "pushdown", res) for it in items] if modes != "memory" else []
    rss_pushdown = _rss_mb()
    trace = _rss_trace(cfg, res, rss_questions) if rss_questions else {}
    if modes == "pushdown":
        return _pushdown_only(kg, uri, split, stats, push, items, rss_start, rss_pushdown) | trace

    tracemalloc.start()
    t0 = time.perf_counter()
    full = gx.get_graph_index(store)
    build_s = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    mem = [_run(it, "memory", res) for it in items]
    if not push:  # memory only: the pushed-down columns repeat the memory ones, marked below
        push = [{**m, "edges": 0} for m in mem]
    rows = [
        {
            "id": it.id,
            "memory_ms": m["ms"],
            "pushdown_ms": p["ms"],
            "pushdown_edges": p["edges"],
            "memory_recall": m["recall"],
            "pushdown_recall": p["recall"],
            "same_evidence": m["evidence"] == p["evidence"],
        }
        for it, m, p in zip(items, mem, push, strict=True)
    ]
    out: dict[str, Any] = {
        "kg": kg,
        "store": uri,
        "split": split,
        "relations": stats.relations_total,
        "entities": stats.entities_total,
        "index_build_s": round(build_s, 2),
        "index_traced_bytes": peak,
        "index_bytes_per_edge": round(peak / max(full.num_edges, 1), 1),
        "questions": len(rows),
        "same_evidence": sum(r["same_evidence"] for r in rows),
        "memory_ms_p50": _pct([r["memory_ms"] for r in rows], 0.5),
        "memory_ms_p95": _pct([r["memory_ms"] for r in rows], 0.95),
        "pushdown_ms_p50": _pct([r["pushdown_ms"] for r in rows], 0.5),
        "pushdown_ms_p95": _pct([r["pushdown_ms"] for r in rows], 0.95),
        "pushdown_edges_p50": median(r["pushdown_edges"] for r in rows),
        "pushdown_edges_max": max(r["pushdown_edges"] for r in rows),
        "modes": modes,
        "rss_mb_before_pushdown": rss_start,
        "rss_mb_after_pushdown": rss_pushdown,
        "rss_mb_after_memory": _rss_mb(),
        "memory_recall": _recall([r["memory_recall"] for r in rows]),
        "pushdown_recall": _recall([r["pushdown_recall"] for r in rows]),
        "rows": rows,
    }
    if recall_all != "no":
        out.update(_recall_all(cfg, res, recall_all))
    return out | trace


def _pushdown_only(
    kg: str, uri: str, split: str, stats: Any, push: list[dict[str, Any]], items: list[Any], *rss: float
) -> dict[str, Any]:
    """The pushed-down half of :func:`measure`'s result (no whole-KG index, no memory pass)."""
    rows = [
        {"id": it.id, "pushdown_ms": p["ms"], "pushdown_edges": p["edges"], "pushdown_recall": p["recall"]}
        for it, p in zip(items, push, strict=True)
    ]
    return {
        "kg": kg,
        "store": uri,
        "split": split,
        "relations": stats.relations_total,
        "entities": stats.entities_total,
        "questions": len(rows),
        "modes": "pushdown",
        "pushdown_ms_p50": _pct([r["pushdown_ms"] for r in rows], 0.5),
        "pushdown_ms_p95": _pct([r["pushdown_ms"] for r in rows], 0.95),
        "pushdown_edges_p50": median(r["pushdown_edges"] for r in rows),
        "pushdown_edges_max": max(r["pushdown_edges"] for r in rows),
        "rss_mb_before_pushdown": rss[0],
        "rss_mb_after_pushdown": rss[1],
        "pushdown_recall": _recall([r["pushdown_recall"] for r in rows]),
        "rows": rows,
    }


def _rss_trace(cfg: Any, res: Any, n: int) -> dict[str, Any]:
    """Ask ``n`` questions pushed down (the split's, repeated) and read the RSS every 100."""
    from dataclasses import replace
    from itertools import cycle, islice

    from kgmind.eval.items import build_items

    items = [it for it in build_items(replace(cfg, limit=None))[0] if it.entities]
    trace, ms = [{"questions": 0, "rss_mb": _rss_mb(), "rss_anon_mb": _rss_mb("RssAnon")}], []
    for i, it in enumerate(islice(cycle(items), n), 1):
        ms.append(_run(it, "pushdown", res)["ms"])
        if i % 100 == 0 or i == n:
            point = {"questions": i, "rss_mb": _rss_mb(), "rss_anon_mb": _rss_mb("RssAnon")}
            trace.append(point | {"ms_p50_last": _pct(ms[-100:], 0.5), "ms_p95_last": _pct(ms[-100:], 0.95)})
    return {"rss_trace": trace, "rss_trace_distinct_questions": min(n, len(items))}


def _recall_all(cfg: Any, res: Any, which: str) -> dict[str, Any]:
    """Evidence recall over every question of the split (memory mode; pushdown too for ``both``)."""
    from dataclasses import replace

    from kgmind.eval.items import build_items

    items = [it for it in build_items(replace(cfg, limit=None))[0] if it.entities]
    out: dict[str, Any] = {"all_questions": len(items)}
    for mode in ("memory", "pushdown") if which == "both" else ("memory",):
        got = [_run(it, mode, res) for it in items]
        out[f"all_{mode}_recall"] = _recall([g["recall"] for g in got])
        out[f"all_{mode}_ms_p50"] = _pct([g["ms"] for g in got], 0.5)
        out[f"all_{mode}_ms_p95"] = _pct([g["ms"] for g in got], 0.95)
        if mode == "pushdown":
            out["all_pushdown_edges_p50"] = median(g["edges"] for g in got)
            out["all_pushdown_edges_max"] = max(g["edges"] for g in got)
            out["all_rss_mb_after_pushdown"] = _rss_mb()
        out[f"all_{mode}_evidence"] = [g["evidence"] for g in got]
    if which == "both":
        pairs = zip(out.pop("all_memory_evidence"), out.pop("all_pushdown_evidence"), strict=True)
        out["all_same_evidence"] = sum(m == p for m, p in pairs)
    else:
        out.pop("all_memory_evidence")
    return out


def _table(kgs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| KG | relations | whole-KG index: build, bytes/edge | questions, same evidence | "
        "memory ms p50/p95 | pushdown ms p50/p95 | edges loaded p50/max | RSS MB before → after pushdown | "
        "recall memory / pushdown |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in kgs:
        if r["modes"] == "pushdown":
            lines.append(
                f"| {r['kg']} | {r['relations']:,} | – | {r['questions']}, – | – | "
                f"{r['pushdown_ms_p50']} / {r['pushdown_ms_p95']} | {r['pushdown_edges_p50']:,} / "
                f"{r['pushdown_edges_max']:,} | {r['rss_mb_before_pushdown']} → "
                f"{r['rss_mb_after_pushdown']} | – / {r['pushdown_recall']} |"
            )
            continue
        lines.append(
            f"| {r['kg']} | {r['relations']:,} | {r['index_build_s']} s, {r['index_bytes_per_edge']} | "
            f"{r['questions']}, {r['same_evidence']} | {r['memory_ms_p50']} / {r['memory_ms_p95']} | "
            f"{r['pushdown_ms_p50']} / {r['pushdown_ms_p95']} | {r['pushdown_edges_p50']:,} / "
            f"{r['pushdown_edges_max']:,} | {r['rss_mb_before_pushdown']} → {r['rss_mb_after_pushdown']} | "
            f"{r['memory_recall']} / {r['pushdown_recall']} |"
        )
    for r in kgs:
        if "rss_trace" in r:
            points = ", ".join(
                f"{p['questions']}: {p['rss_mb']} ({p.get('rss_anon_mb', '–')})" for p in r["rss_trace"]
            )
            lines += ["", f"RSS MB (not file pages) of {r['kg']} by questions asked pushed down: {points}"]
    every = [r for r in kgs if "all_questions" in r]
    if every:
        lines += [
            "",
            f"Whole {kgs[0]['split']} split:",
            "",
            "| KG | questions | memory recall, ms p50/p95 | pushdown recall, ms p50/p95, edges p50/max "
            "| same |",
            "|---|---|---|---|---|",
        ]
        for r in every:
            push = (
                f"{r['all_pushdown_recall']}, {r['all_pushdown_ms_p50']} / {r['all_pushdown_ms_p95']}, "
                f"{r['all_pushdown_edges_p50']:,} / {r['all_pushdown_edges_max']:,}"
                if "all_pushdown_recall" in r
                else "–"
            )
            lines.append(
                f"| {r['kg']} | {r['all_questions']} | {r['all_memory_recall']}, {r['all_memory_ms_p50']} / "
                f"{r['all_memory_ms_p95']} | {push} | {r.get('all_same_evidence', '–')} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run the measurement and write results.json / results.md."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kg", choices=("emckg", "recrawl", "both", "none"), default="both")
    ap.add_argument(
        "--store", action="append", default=[], help="NAME=URI: a store to measure with CMCQA's questions"
    )
    ap.add_argument("--rss-questions", type=int, default=0, help="questions of the RSS trace (0: none)")
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument(
        "--questions-recrawl", type=int, default=None, help="questions on the re-crawl (default --questions)"
    )
    ap.add_argument("--split", default="test", help="the split (calib to fit bounds; test to report)")
    ap.add_argument(
        "--recall-all",
        choices=("no", "memory", "both"),
        default="no",
        help="also the evidence recall of every question of the split (memory mode, or both modes)",
    )
    ap.add_argument(
        "--edges-per-group",
        default="shipped",
        help="edges kept per node, relation type and direction: an int, none (every edge) or shipped",
    )
    ap.add_argument(
        "--edges-per-context-group",
        default="shipped",
        help="edges kept per group of a medical KG's context relations: an int, none (as --edges-per-group) "
        "or shipped",
    )
    ap.add_argument(
        "--modes",
        choices=("both", "memory", "pushdown"),
        default="both",
        help="memory: no pushed-down pass; pushdown: no whole-KG index",
    )
    ap.add_argument(
        "--kept-edges",
        type=int,
        default=None,
        help="edges a pushed-down worker keeps for later questions (default: the shipped bound; 0: an index "
        "per question, as before they were shared)",
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    if args.kept_edges is not None:
        from kgmind.retrievers import graph_index_cache as gx

        gx.set_kept_neighborhood_edges(args.kept_edges)
    from kgmind.eval.environment import machine_info

    if args.edges_per_group != "shipped" or args.edges_per_context_group != "shipped":
        from kgmind.retrievers import graph_index_cache as gx
        from kgmind.tuning import EDGES_PER_GROUP

        def bound(given: str, shipped: Any) -> Any:
            return {"shipped": shipped, "none": None}[given] if given in ("shipped", "none") else int(given)

        gx.set_edges_per_group(
            bound(args.edges_per_group, EDGES_PER_GROUP), bound(args.edges_per_context_group, "same")
        )
    kgs = {"both": ["emckg", "recrawl"], "none": []}.get(args.kg, [args.kg])
    given = dict(spec.split("=", 1) for spec in args.store)
    out = {
        "benchmark": "pushdown",
        "date": date.today().isoformat(),
        "machine": machine_info(),
        "argv": argv,
        "edges_per_group": args.edges_per_group,
        "kept_edges": args.kept_edges,
        "kgs": [
            measure(
                kg,
                args.questions_recrawl or args.questions if kg == "recrawl" else args.questions,
                args.seed,
                args.split,
                args.recall_all,
                args.modes,
                rss_questions=args.rss_questions,
            )
            for kg in kgs
        ]
        + [
            measure(
                name,
                args.questions,
                args.seed,
                args.split,
                args.recall_all,
                args.modes,
                uri,
                args.rss_questions,
            )
            for name, uri in given.items()
        ],
    }
    lines = _table(out["kgs"])
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(out, indent=2) + "\n")
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
