"""Fit kgmind's evidence value (kgmind.tuning.EvidenceValue) on a calibration split.

For every question of the split, the shipped retrieval graph (``full`` mode, no LLM, the
data set's stored entities) explores as usual; its evidence candidates (rendered,
reranked, deduplicated: ``aggregate.rank_candidates``) and the entities' types are kept.
From them and the derived gold (the KG diseases, tests and medications the reference
answer names):

- ``disease_by_rank``: the share of candidate diseases at vote rank r that are gold (made
  non-increasing in r by pooling adjacent violators; every share smoothed, see JEFFREYS);
- ``tail_given_disease``: for a gold candidate disease's own lines, the share of their
  tails of each type that are gold;
- ``other``: the share of the other answer-type entities in the candidates that are gold;
- ``min_density``: the floor of expected gold entities per token at which packing stops,
  the lowest of a sweep whose mean evidence tokens at the 800 budget stay within faithful
  MindMap's on the same questions (MindMap's evidence is the cost kgmind is held to).

Then the packing is replayed offline with the fitted value at each floor and at several
budgets (``aggregate.select_evidence``, the shipped code), and recall, disease hit and
tokens are reported beside MindMap's. Nothing here reads a ``test`` split.

Usage::

    python benchmarks/fit_evidence_value.py --dataset genmedgpt5k --split calib --out benchmarks/results/DIR
    python benchmarks/fit_evidence_value.py --dataset cmcqa --split calib --out benchmarks/results/DIR
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from _common import cpu_model, git_commit

os.environ.setdefault("HF_HUB_OFFLINE", "1")

FLOORS = (
    0.0,
    1e-4,
    1.2e-4,
    1.5e-4,
    2e-4,
    2.5e-4,
    3e-4,
    4e-4,
    5e-4,
    6e-4,
    7e-4,
    8e-4,
    1e-3,
    1.5e-3,
    2e-3,
    3e-3,
    5e-3,
)
BUDGETS = (250, 500, 800)
MAX_RANK = 12
#: Every share is (hits + 1/2) / (n + 1), Jeffreys' estimate: a type never seen gold in a small
#: split (CMCQA's calib has 77 questions) keeps a small chance instead of none.
JEFFREYS = 0.5


def collect(cfg: Any, limit_log: int = 50) -> tuple[list[dict[str, Any]], Any]:
    """Per question: candidates, entity types and gold, from the shipped retrieval graph."""
    from kgmind.eval.items import build_items, question_text
    from kgmind.eval.kg import prepare_store
    from kgmind.eval.resources import Resources
    from kgmind.graphs import services
    from kgmind.graphs.pipeline import build_retrieval_graph
    from kgmind.retrievers import aggregate

    items, _info = build_items(cfg)
    res = Resources(store_uri=prepare_store(cfg), model=None, seed=cfg.seed)
    graph = build_retrieval_graph().compile(name="kgmind-retrieval")
    rows = []
    t0 = time.time()
    for n, it in enumerate(items, 1):
        ctx = res.context("full", 100_000)
        payload: dict[str, Any] = {"question": question_text(it)}
        if it.entities:
            payload["entities"] = list(it.entities)
        pool: list[Any] = []
        linked: list[str] = []
        for update in graph.stream(payload, context=ctx, stream_mode="updates"):
            for out in update.values():
                if not isinstance(out, dict):
                    continue
                for key in ("path_evidence", "neighbor_evidence", "chain_evidence", "kgcot_evidence"):
                    pool.extend(out.get(key) or [])
                linked = [le.entity_id for le in out.get("linked_entities") or []] or linked
        candidates = aggregate.rank_candidates(pool, it.question)
        types = services.index_entity_types(ctx, linked, pool)
        rows.append({"item": it, "candidates": candidates, "types": types})
        if n % limit_log == 0:
            print(f"  {n}/{len(items)} ({time.time() - t0:.0f} s)", file=sys.stderr, flush=True)
    return rows, res


def non_increasing(cells: list[tuple[float, float]]) -> list[float]:
    """Shares ``hits / n`` made non-increasing by pooling adjacent violators (weighted by ``n``).

    A deeper vote rank is never more likely to be the needed disease; the raw shares of
    the deep ranks are a few hits each and cross one another by chance.
    """
    blocks: list[list[float]] = []  # [hits, n, cells]
    for hits, n in cells:
        blocks.append([hits, max(n, 1.0), 1.0])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] < blocks[-1][0] / blocks[-1][1]:
            h, m, c = blocks.pop()
            blocks[-1] = [blocks[-1][0] + h, blocks[-1][1] + m, blocks[-1][2] + c]
    return [b[0] / b[1] for b in blocks for _ in range(int(b[2]))]


def fit(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The chances of :class:`EvidenceValue` from the candidates and the gold."""
    from kgmind.models import normalize_name
    from kgmind.retrievers.packing import ANSWER_TYPES, disease_ranks, line_disease

    rank_n: defaultdict[int, int] = defaultdict(int)
    rank_gold: defaultdict[int, int] = defaultdict(int)
    tail_n: defaultdict[str, int] = defaultdict(int)
    tail_gold: defaultdict[str, int] = defaultdict(int)
    other_n: defaultdict[str, int] = defaultdict(int)
    other_gold: defaultdict[str, int] = defaultdict(int)
    for row in rows:
        it, cands, types = row["item"], row["candidates"], row["types"]
        gold = {normalize_name(n) for n in it.gold_names}
        if not gold:
            continue
        ranks = disease_ranks(cands)
        for name, rank in ranks.items():
            rank_n[min(rank, MAX_RANK)] += 1
            rank_gold[min(rank, MAX_RANK)] += name in gold
        tails: set[str] = set()
        for ev in cands:
            head = line_disease(ev, ranks)
            if head is not None and head in gold:
                for _h, _r, t in ev.triples:
                    key = normalize_name(t)
                    kind = types.get(key, "")
                    if kind in ANSWER_TYPES and key not in ranks and key not in tails:
                        tails.add(key)
                        tail_n[kind] += 1
                        tail_gold[kind] += key in gold
        seen: set[str] = set()
        for ev in cands:
            for h, _r, t in ev.triples:
                for name in (h, t):
                    key = normalize_name(name)
                    kind = types.get(key, "")
                    if kind in ANSWER_TYPES and key not in ranks and key not in tails and key not in seen:
                        seen.add(key)
                        other_n[kind] += 1
                        other_gold[kind] += key in gold
    cells = [(rank_gold[r] + JEFFREYS, rank_n[r] + 2 * JEFFREYS) for r in range(1, MAX_RANK + 1)]
    by_rank = [round(p, 4) for p in non_increasing(cells)]

    def share(hits: int, n: int) -> float:
        return round((hits + JEFFREYS) / (n + 2 * JEFFREYS), 4)

    return {
        "disease_by_rank": tuple(by_rank),
        "tail_given_disease": {k: share(tail_gold[k], tail_n[k]) for k in sorted(tail_n)},
        "other": {k: share(other_gold[k], other_n[k]) for k in sorted(other_n)},
        "counts": {
            "rank": {r: rank_n[r] for r in sorted(rank_n)},
            "tail": dict(tail_n),
            "other": dict(other_n),
        },
    }


def score(rows: list[dict[str, Any]], evidence_of: Any) -> dict[str, float]:
    """Mean evidence recall, disease hit and tokens of ``evidence_of(row)`` over ``rows``."""
    from kgmind.eval import metrics as mt
    from kgmind.retrievers import aggregate

    rec, hit, tok = [], [], []
    for row in rows:
        it = row["item"]
        kept = evidence_of(row)
        text = "\n".join(ev.text for ev in kept)
        r = mt.evidence_recall(text, it.gold)
        if r is None:
            continue
        rec.append(r)
        h = mt.gold_disease_hit(text, it.gold_diseases)
        if h is not None:
            hit.append(h)
        tok.append(sum(aggregate.count_tokens(ev.text) + aggregate.ID_OVERHEAD for ev in kept))
    return {
        "recall": round(sum(rec) / len(rec), 4),
        "disease_hit": round(sum(hit) / len(hit), 4) if hit else None,
        "tokens": round(sum(tok) / len(tok), 1),
        "n": len(rec),
    }


def replay(rows: list[dict[str, Any]], value: Any, budget: int) -> dict[str, float]:
    """Recall, disease hit and tokens of the shipped packing with ``value`` at ``budget``."""
    from kgmind.retrievers import aggregate

    def evidence_of(row: dict[str, Any]) -> list[Any]:
        return aggregate.select_evidence(row["candidates"], budget, value=value, types=row["types"])

    return score(rows, evidence_of)


def mindmap(rows: list[dict[str, Any]], res: Any, budget: int) -> dict[str, float]:
    """Faithful MindMap on the same questions (``kgmind eval``'s ``mindmap`` method)."""
    from kgmind.eval.items import question_text
    from kgmind.eval.methods import METHODS

    def evidence_of(row: dict[str, Any]) -> list[Any]:
        it = row["item"]
        return list(METHODS["mindmap"].func(question_text(it), list(it.entities), res, budget).evidence)

    return score(rows, evidence_of)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="genmedgpt5k")
    ap.add_argument("--split", default="calib")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.split == "test":
        raise SystemExit("the evidence value is fitted on a calibration split, never on test")

    from kgmind.eval.config import EvalConfig
    from kgmind.tuning import EvidenceValue

    cfg = EvalConfig(
        dataset=args.dataset,
        split=args.split,
        limit=args.limit,
        seed=args.seed,
        llm="none",
        entities="chatgpt",
    )
    t0 = time.time()
    rows, res = collect(cfg)
    fitted = fit(rows)
    base = EvidenceValue(
        disease_by_rank=fitted["disease_by_rank"],
        tail_given_disease=fitted["tail_given_disease"],
        other=fitted["other"],
    )
    reference = {b: mindmap(rows, res, b) for b in (800,)}
    sweep: list[dict[str, Any]] = []
    for floor in FLOORS:
        value = replace(base, min_density=floor)
        sweep.append({"min_density": floor, **{str(b): replay(rows, value, b) for b in BUDGETS}})
    rank_order = {str(b): replay(rows, None, b) for b in BUDGETS}
    within = [s for s in sweep if s["800"]["tokens"] <= reference[800]["tokens"]]
    chosen = min(within, key=lambda s: s["min_density"]) if within else sweep[-1]
    value = replace(base, min_density=chosen["min_density"])
    out = {
        "benchmark": "fit_evidence_value",
        "dataset": args.dataset,
        "split": args.split,
        "limit": args.limit,
        "seed": args.seed,
        "n": len(rows),
        "commit": git_commit(),
        "machine": cpu_model(),
        "command": "python " + " ".join(sys.argv),
        "seconds": round(time.time() - t0, 1),
        "fitted": {**asdict(value), "counts": fitted["counts"]},
        "mindmap": reference,
        "rank_order": rank_order,
        "sweep": sweep,
        "chosen_min_density": chosen["min_density"],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "fit.json").write_text(json.dumps(out, indent=2, ensure_ascii=False), encoding="utf-8")
    print(
        json.dumps({k: out[k] for k in ("fitted", "mindmap", "rank_order", "chosen_min_density")}, indent=1)
    )
    for s in sweep:
        print(
            s["min_density"],
            {b: (s[b]["recall"], s[b]["disease_hit"], s[b]["tokens"]) for b in map(str, BUDGETS)},
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
