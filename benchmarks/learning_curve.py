"""Learning curve of KGCoT feedback: train on one GenMedGPT-5k split, measure evidence on a disjoint one.

One run, one machine, one fresh EMCKG-full store:

1. ``before``: kgmind's retrieval (the ``kgmind`` method of the eval harness: ranked, weight-aware
   neighbour lines + paths + HyKGE chains + KGCoT DFS, 800-token budget, stored ChatGPT question
   entities) on the *test* split → evidence recall / precision / gold-disease hit against the
   derived gold (EMCKG entities named in the reference answer).
2. ``train``: for every *training* question the same retrieval runs, and automatic feedback is
   given as in KGCoT's BLEU experiments, but per cited edge: every edge of the selected evidence
   whose tail (or head) is a gold entity of the reference answer is rated ``excellent``, every
   other edge of the selected evidence ``poor`` (the answer is taken to cite all selected evidence,
   as no LLM runs here). Each rating is one audited, idempotent feedback through
   :func:`kgmind.tools.feedback.apply_feedback`, written to the store.
3. ``after``: the test split again with the learnt weights, and a control with the same weights
   but ``weight_aware=False`` (retrieval that ignores weights).

The two splits are disjoint, seeded samples of the ``dev`` split; nothing is tuned on the test split.
Usage: ``python benchmarks/learning_curve.py --train 400 --test 400 --out benchmarks/results/...``
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from statistics import mean
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


@contextmanager
def _weights(res: Any, enabled: bool) -> Iterator[None]:
    """Run the graph-run ``kgmind`` method with weight-aware ranking on or off."""
    before = dict(res.context_overrides)
    res.context_overrides["weight_aware"] = enabled
    try:
        yield
    finally:
        res.context_overrides = before


def _evaluate(items: list[Any], res: Any, vocab: Any, budget: int) -> dict[str, float]:
    from kgmind.eval.methods import METHODS
    from kgmind.eval.runner import _score

    rows = []
    for item in items:
        result = METHODS["kgmind"].func(item.question, item.entities, res, budget)
        rows.append(_score(item, result, res, vocab))

    def avg(key: str) -> float:
        vals = [r[key] for r in rows if r[key] is not None]
        return round(mean(vals), 4) if vals else float("nan")

    return {
        "evidence_recall": avg("evidence_recall"),
        "evidence_precision": avg("evidence_precision"),
        "gold_disease_hit": avg("gold_disease_hit"),
        "evidence_tokens_mean": avg("evidence_tokens"),
    }


def _train(items: list[Any], res: Any, budget: int, poor: bool = True) -> dict[str, int]:
    from kgmind.eval.methods import METHODS
    from kgmind.models import normalize_name
    from kgmind.tools.feedback import apply_feedback

    store = res.store()
    gi = res.graph_index()
    stats = {"feedbacks": 0, "excellent_edges": 0, "poor_edges": 0, "changed_edges": 0}
    for item in items:
        gold_keys = {normalize_name(n) for n in item.gold_names}
        result = METHODS["kgmind"].func(item.question, item.entities, res, budget)
        good: list[str] = []
        bad: list[str] = []
        for ev in result.evidence:
            for rid in ev.relation_ids:
                e = gi.edge_index_of.get(rid)
                if e is None:
                    continue
                edge = gi.edge(e)
                head, tail = edge.head, edge.tail
                names = {normalize_name(gi.name(tail)), normalize_name(gi.name(head))}
                (good if names & gold_keys else bad).append(rid)
        for rating, rids in (("excellent", sorted(set(good))), ("poor", sorted(set(bad) - set(good)))):
            if not rids or (rating == "poor" and not poor):
                continue
            changes = apply_feedback(store, f"train-{item.id}", rating, rids)
            stats["feedbacks"] += 1
            stats[f"{rating}_edges"] += len(rids)
            stats["changed_edges"] += len(changes)
    return stats


def main(argv: list[str] | None = None) -> int:
    """Run the learning-curve benchmark and print/write its JSON."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", type=int, default=400)
    ap.add_argument("--test", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=800)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument(
        "--no-poor", action="store_true", help="give only 'excellent' feedback (edges to gold entities)"
    )
    args = ap.parse_args(argv)

    from kgmind.eval import gold as gd
    from kgmind.eval.methods import Resources
    from kgmind.eval.runner import EvalConfig, build_items, machine_info, prepare_store

    items, _ = build_items(EvalConfig(dataset="genmedgpt5k", split="dev", entities="chatgpt"))
    items = [it for it in items if it.gold and it.entities]
    rng = random.Random(args.seed)
    rng.shuffle(items)
    train, test = items[: args.train], items[args.train : args.train + args.test]
    assert not {i.id for i in train} & {i.id for i in test}

    with tempfile.TemporaryDirectory() as tmp:
        from kgmind.eval.datasets import default_path

        uri = prepare_store(
            EvalConfig(dataset="genmedgpt5k", store=f"ladybug:{tmp}/kg", kg=str(default_path("emckg")))
        )
        vocab = gd.load_emckg_vocabulary()
        res = Resources(store_uri=uri, seed=args.seed)
        t0 = time.perf_counter()
        with _weights(res, True):
            before = _evaluate(test, res, vocab, args.budget)
            stats = _train(train, res, args.budget, poor=not args.no_poor)
            after = _evaluate(test, res, vocab, args.budget)
        with _weights(res, False):
            after_unweighted = _evaluate(test, res, vocab, args.budget)
        seconds = time.perf_counter() - t0
        res.store().close()

    out = {
        "benchmark": "learning_curve",
        "date": date.today().isoformat(),
        "machine": machine_info(),
        "kg": "EMCKG-full (emckg/format_dataset.csv)",
        "entities": "chatgpt",
        "budget": args.budget,
        "seed": args.seed,
        "n_train": len(train),
        "n_test": len(test),
        "feedback": {**stats, "poor_ratings_given": not args.no_poor},
        "before": before,
        "after": after,
        "after_weights_ignored": after_unweighted,
        "delta_recall": round(after["evidence_recall"] - before["evidence_recall"], 4),
        "delta_precision": round(after["evidence_precision"] - before["evidence_precision"], 4),
        "seconds": round(seconds, 1),
    }
    text = json.dumps(out, indent=2, ensure_ascii=False)
    print(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(text + "\n", encoding="utf-8")
        rows = [("before", before), ("after feedback", after), ("after, weights ignored", after_unweighted)]
        md = [
            f"# Learning curve ({out['date']}, {len(train)} train / {len(test)} test questions, "
            f"budget {args.budget})",
            "",
            "| test split | evidence recall | evidence precision | gold-disease hit | tokens |",
            "|---|---|---|---|---|",
        ]
        md += [
            f"| {name} | {m['evidence_recall']} | {m['evidence_precision']} | {m['gold_disease_hit']} "
            f"| {m['evidence_tokens_mean']} |"
            for name, m in rows
        ]
        (args.out / "results.md").write_text("\n".join(md) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
