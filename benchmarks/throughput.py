"""Pipeline throughput: questions/s with 1 thread vs 16 concurrent (threads and asyncio), fake LLM.

The full kgmind graph runs (hypothesis → NER → linking → 4 parallel exploration tools →
aggregation → reasoning → grounding) against the embedded LadybugDB store holding the
shipped demo KG, with the deterministic ``fake:`` chat model, so the figures measure
kgmind's own overhead (retrieval, LangGraph, store reads) without LLM latency. One
warm-up pass builds the store, entity index, gazetteer and graph index first; they are
excluded from the timings. Every configuration answers the same question list and
the benchmark checks that concurrent results equal the sequential ones.

Usage::

    python benchmarks/throughput.py                  # the product's embedders (MiniLM / e5)
    python benchmarks/throughput.py --rounds 4 --concurrency 16 --out /tmp/throughput.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

QUESTIONS = [
    "I have a fever and a cough, what disease could it be?",
    "What medication treats pneumonia?",
    "I have a headache and nausea.",
    "My child has a rash and a fever.",
    "What test confirms diabetes?",
    "I feel chest pain when breathing.",
    "What should I take for a sore throat?",
    "I have diarrhea and abdominal pain.",
    "Which tests check for tuberculosis?",
    "I sneeze a lot and have a runny nose.",
    "What can cure influenza?",
    "I have frequent urination and thirst.",
    "我发烧了，还咳嗽，是什么病？",
    "头痛应该吃什么药？",
    "I have back pain and fever, is it pyelonephritis?",
    "What is asthma treated with?",
]


def _key(out: dict[str, Any]) -> tuple[Any, ...]:
    return (out["answer"], tuple((e.id, e.text) for e in out["selected_evidence"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=2, help="passes over the 16 questions per configuration")
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--mode", default="full", help="graph mode (full, mindmap, hykge, kgcot)")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    args = ap.parse_args()

    tmp = tempfile.TemporaryDirectory(prefix="kgmind-throughput-")
    os.environ["KGMIND_HOME"] = tmp.name
    os.environ.setdefault("LANGSMITH_TRACING", "false")

    from kgmind.graphs.context import Context
    from kgmind.graphs.pipeline import graph
    from kgmind.importers import import_result, parse_demo
    from kgmind.stores.factory import close_all_stores, open_store

    uri = f"ladybug:{Path(tmp.name) / 'demo'}"
    t0 = time.perf_counter()
    store = open_store(uri, create=True)
    import_result(parse_demo(), store)
    ctx = Context(model="fake:bench", store=uri, mode=args.mode)
    questions = QUESTIONS * args.rounds
    reference = [_key(graph.invoke({"question": q}, context=ctx)) for q in QUESTIONS]  # warm-up
    warmup_s = time.perf_counter() - t0

    def run_one(q: str) -> dict[str, Any]:
        return graph.invoke({"question": q}, context=ctx)

    results: dict[str, Any] = {}

    t = time.perf_counter()
    seq = [run_one(q) for q in questions]
    results["sequential_1_thread"] = len(questions) / (time.perf_counter() - t)

    t = time.perf_counter()
    with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
        thr = list(pool.map(run_one, questions))
    results[f"threads_{args.concurrency}"] = len(questions) / (time.perf_counter() - t)

    t = time.perf_counter()
    asy = asyncio.run(
        graph.abatch(
            [{"question": q} for q in questions], context=ctx, config={"max_concurrency": args.concurrency}
        )
    )
    results[f"asyncio_abatch_{args.concurrency}"] = len(questions) / (time.perf_counter() - t)

    expected = reference * args.rounds
    consistent = [_key(o) for o in seq] == expected == [_key(o) for o in thr] == [_key(o) for o in asy]
    report = {
        "questions_per_config": len(questions),
        "embedder": "real",
        "mode": args.mode,
        "llm": "fake:bench (deterministic, no latency)",
        "warmup_s": round(warmup_s, 2),
        "questions_per_s": {k: round(v, 2) for k, v in results.items()},
        "concurrent_equals_sequential": consistent,
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    print(json.dumps(report, indent=2, ensure_ascii=False))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    close_all_stores()
    tmp.cleanup()
    if not consistent:
        sys.exit("concurrent results differ from the sequential ones")


if __name__ == "__main__":
    main()
