"""Retrieval latency per stage: kgmind (in-memory index) vs MindMap's query-per-pair retriever.

Imports a KG into a LadybugDB store (reused when it already holds entities), builds
the graph index (load time reported, excluded from the per-question figures), then,
for each question's entities, times every non-LLM stage of kgmind's retrieval:

    link (EntityLinker, if available) → paths → neighbors (ranked) → HyKGE chains →
    KGCoT DFS → rerank (embedding reranker, if available) → budget (dedupe, prune,
    800-token budget, numbering)

and MindMap's retriever (``baselines.mindmap_retrieve``: one ``store.paths`` call per
entity pair, one ``store.neighbors`` per entity) on the same linked entities, plus
the same MindMap algorithm over the index. Prints a table and writes JSON.

Usage::

    python benchmarks/retrieval_latency.py --kg emckg --questions 100
    python benchmarks/retrieval_latency.py --kg recrawl --questions 50 --no-rerank

KGs: ``emckg`` = emckg/format_dataset.csv (chatdoctor format) with GenMedGPT-5k
question entities (genmedgpt5k/ner_chatgpt.jsonl); ``recrawl`` =
cmckg/recrawl_full (Chinese, ~24k entities) with CMCQA question entities
(cmcqa/qa_ner.jsonl ``question_kg``). Data from ``$KGMIND_DATA_DIR``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kgmind.retrievers.aggregate import (
    EmbeddingReranker,
    dedupe_evidence,
    fit_budget,
    number_evidence,
    prune_redundant,
    render_evidence,
    rerank_evidence,
)
from kgmind.retrievers.baselines import mindmap_retrieve
from kgmind.retrievers.evidence import Evidence
from kgmind.retrievers.exploration import hykge_chains, neighbor_evidence, path_evidence, weighted_dfs_chains
from kgmind.retrievers.graph_index import get_graph_index
from kgmind.tools.factory import open_store

DATA = Path(
    os.environ.get("KGMIND_DATA_DIR") or Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
)
HOME = Path(os.environ.get("KGMIND_HOME") or Path.home() / ".kgmind")

KGS = {
    "emckg": ("emckg/format_dataset.csv", "chatdoctor", "en"),
    "recrawl": ("cmckg/recrawl_full", "recrawl-json", "zh"),
}
_RE_Q = re.compile(r"The extracted entities are (.*?)(?:<EOS>|<END>|$)", re.S)


def question_sets(kg: str, n: int) -> list[tuple[str, list[str]]]:
    """(question text, extracted keywords) for the first ``n`` usable rows."""
    out: list[tuple[str, list[str]]] = []
    if kg == "emckg":
        with (DATA / "genmedgpt5k" / "ner_chatgpt.jsonl").open(encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                text = row.get("qustion_output", "").replace("\n", " ")
                m = _RE_Q.search(text)
                if not m:
                    continue
                q = text.split("<SEP>")[0].replace("<CLS>", "").strip()
                kws = [k.strip() for k in m.group(1).split(", ") if k.strip()]
                if kws:
                    out.append((q, kws))
                if len(out) >= n:
                    break
    else:
        with (DATA / "cmcqa" / "qa_ner.jsonl").open(encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                kws = [k.strip() for k in re.split(r"[,，]", row.get("question_kg", "")) if k.strip()]
                if kws:
                    out.append((row["question"].strip(), kws))
                if len(out) >= n:
                    break
    return out


def open_kg(kg: str, store_dir: Path) -> Any:
    rel, fmt, _ = KGS[kg]
    store = open_store(f"ladybug:{store_dir / kg}")
    if store.stats().entities_total == 0:
        from kgmind.importers import import_kg

        t = time.perf_counter()
        summary = import_kg(DATA / rel, fmt, store, progress=False)
        print(
            f"imported {kg}: {summary.entities} entities, {summary.relations} relations "
            f"in {time.perf_counter() - t:.1f}s",
            file=sys.stderr,
        )
    return store


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))
    return xs[k]


def timed(stages: dict[str, list[float]], name: str, fn: Callable[[], Any]) -> Any:
    t = time.perf_counter()
    out = fn()
    stages.setdefault(name, []).append((time.perf_counter() - t) * 1000)
    return out


def run(kg: str, n: int, store_dir: Path, link: bool, rerank: bool, budget: int) -> dict[str, Any]:
    _, _, lang = KGS[kg]
    store = open_kg(kg, store_dir)
    t = time.perf_counter()
    gi = get_graph_index(store)
    load_s = time.perf_counter() - t
    linker = None
    if link:
        try:
            from kgmind.retrievers.linker import get_linker

            linker = get_linker(store)
            linker.link(["warm up"])
        except Exception as exc:  # noqa: BLE001 - the linker is optional here
            print(f"linker unavailable ({exc}); exact-name linking", file=sys.stderr)
            linker = None
    reranker = None
    if rerank:
        try:
            from kgmind.retrievers.embeddings import get_embedder

            reranker = EmbeddingReranker(get_embedder("minilm" if lang == "en" else "e5"))
            reranker.score(["warm up"], ["warm up"])
        except Exception as exc:  # noqa: BLE001 - the embedder is optional here
            print(f"reranker unavailable ({exc})", file=sys.stderr)
            reranker = None

    ours: dict[str, list[float]] = {}
    base: dict[str, list[float]] = {}
    sizes: list[int] = []
    qs = question_sets(kg, n)
    for question, kws in qs:
        t0 = time.perf_counter()
        if linker is not None:
            linked = timed(ours, "link", lambda kws=kws: [le.entity_id for le in linker.link(kws)])
        else:
            linked = timed(
                ours, "link", lambda kws=kws: [e.id for k in kws for e in store.find_entities(k)[:1]]
            )
        t1 = time.perf_counter()
        timed(ours, "index_check", lambda: get_graph_index(store, recheck_s=1.0))
        ev: list[Evidence] = []
        ev += timed(ours, "paths", lambda linked=linked: path_evidence(gi, linked, weight_aware=True))
        ev += timed(
            ours,
            "neighbors",
            lambda linked=linked: neighbor_evidence(gi, linked, ranked=True, weight_aware=True, max_lines=30),
        )
        ev += timed(ours, "hykge", lambda linked=linked: hykge_chains(gi, linked))
        ev += timed(ours, "kgcot_dfs", lambda linked=linked: weighted_dfs_chains(gi, linked, store=store))
        rendered = timed(
            ours, "render", lambda ev=ev: [e.model_copy(update={"text": render_evidence(e)}) for e in ev]
        )
        ranked = timed(
            ours,
            "rerank",
            lambda rendered=rendered, question=question: rerank_evidence(
                rendered, question, reranker=reranker
            ),
        )
        final = timed(
            ours,
            "budget",
            lambda ranked=ranked: number_evidence(
                fit_budget(prune_redundant(dedupe_evidence(ranked)), budget)
            ),
        )
        t2 = time.perf_counter()
        ours.setdefault("total_excl_link", []).append((t2 - t1) * 1000)
        ours.setdefault("total", []).append((t2 - t0) * 1000)
        sizes.append(len(ev))
        del final
        timed(
            base,
            "mindmap_index",
            lambda linked=linked: path_evidence(gi, linked) + neighbor_evidence(gi, linked),
        )
        timed(base, "mindmap_store", lambda linked=linked: mindmap_retrieve(store, linked))

    def table(d: dict[str, list[float]]) -> dict[str, dict[str, float]]:
        return {
            k: {"p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95), "mean_ms": statistics.fmean(v)}
            for k, v in d.items()
        }

    res = {
        "kg": kg,
        "questions": len(qs),
        "entities": gi.num_nodes,
        "relations": gi.num_edges,
        "index_load_s": load_s,
        "linker": type(linker).__name__ if linker else "exact-name",
        "reranker": "EmbeddingReranker" if reranker else None,
        "budget_tokens": budget,
        "candidates_mean": statistics.fmean(sizes) if sizes else 0,
        "kgmind": table(ours),
        "mindmap": table(base),
    }
    b = res["mindmap"]["mindmap_store"]
    res["ratio_mindmap_store_over_index_p50"] = b["p50_ms"] / max(
        res["mindmap"]["mindmap_index"]["p50_ms"], 1e-9
    )
    res["ratio_mindmap_store_over_kgmind_total_excl_link_p50"] = b["p50_ms"] / max(
        res["kgmind"]["total_excl_link"]["p50_ms"], 1e-9
    )
    return res


def print_table(res: dict[str, Any]) -> None:
    print(
        f"\n{res['kg']}: {res['entities']} entities, {res['relations']} relations, "
        f"{res['questions']} questions, index load {res['index_load_s']:.2f}s, "
        f"linker={res['linker']}, reranker={res['reranker']}, "
        f"candidates/question={res['candidates_mean']:.0f}"
    )
    print(f"{'stage':<26}{'p50 ms':>10}{'p95 ms':>10}")
    for group in ("kgmind", "mindmap"):
        for k, v in res[group].items():
            print(f"{group + '.' + k:<26}{v['p50_ms']:>10.2f}{v['p95_ms']:>10.2f}")
    print(f"MindMap store / MindMap index (p50): {res['ratio_mindmap_store_over_index_p50']:.1f}x")
    print(
        f"MindMap store / kgmind total excl. linking (p50): "
        f"{res['ratio_mindmap_store_over_kgmind_total_excl_link_p50']:.1f}x"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kg", choices=[*KGS, "both"], default="emckg")
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--store-dir", type=Path, default=HOME / "bench")
    ap.add_argument("--no-link", action="store_true", help="exact-name linking instead of the EntityLinker")
    ap.add_argument("--no-rerank", action="store_true", help="skip the embedding reranker")
    ap.add_argument("--budget", type=int, default=800)
    ap.add_argument("--json", type=Path, default=None, help="write the results here")
    ap.add_argument(
        "--torch-threads",
        type=int,
        default=1,
        help="torch intra-op threads (1 avoids OpenMP oversubscription on a small, busy CPU)",
    )
    args = ap.parse_args()
    try:
        import torch

        torch.set_num_threads(args.torch_threads)
    except ImportError:
        pass
    results = []
    for kg in list(KGS) if args.kg == "both" else [args.kg]:
        res = run(kg, args.questions, args.store_dir, not args.no_link, not args.no_rerank, args.budget)
        print_table(res)
        results.append(res)
    text = json.dumps(results, indent=2)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
