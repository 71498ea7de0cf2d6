"""HNSW entity index against the flat one: recall@k and search time for real mention vectors.

The CMCQA questions' mentions that the re-crawl KG does not name exactly (what linking
searches for) are embedded with e5 and searched in the store's entity index twice: the
flat inner-product scan and the HNSW graph :meth:`EntityIndex.search` uses above
:data:`~kgmind.retrievers.entity_index.HNSW_MIN_VECTORS` names. recall@k = the share of
the flat top-k entities the HNSW top-k also returns; top-1 agreement and the share of
mentions whose linking at the calibrated δ is unchanged are reported too.

Usage::

    python benchmarks/entity_ann.py --store ladybug:$HOME/.kgmind/bench/recrawl --questions 400
"""

from __future__ import annotations

import os

if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")

import argparse
import json
import re
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import cpu_model
from kgmind.retrievers.entity_index_cache import get_entity_index
from kgmind.retrievers.entity_search import HNSW_EF_SEARCH, HNSW_M
from kgmind.retrievers.linker import get_linker
from kgmind.retrievers.ner import clean_mention
from kgmind.settings import data_dir
from kgmind.stores.factory import open_store
from kgmind.tuning import LINK_THRESHOLD
from retrieval_latency import pct


def main() -> None:
    """Compare the two searches and print (and optionally write) the result."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--store", required=True, help="store holding cmckg/recrawl_full (its e5 index is used)")
    ap.add_argument("--questions", type=int, default=400)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    store = open_store(args.store)
    linker = get_linker(store, "e5")
    index = get_entity_index(store, "e5")
    if index.ann() is None:
        sys.exit(f"the index has {len(index)} vectors: below the HNSW threshold, nothing to compare")
    mentions: list[str] = []
    with (data_dir() / "cmcqa" / "qa_ner.jsonl").open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= args.questions:
                break
            for raw in re.split(r"[,，]", json.loads(line).get("question_kg", "")):
                m = clean_mention(raw.strip())
                if m and not linker.exact_ids(m):
                    mentions.append(m)
    mentions = list(dict.fromkeys(mentions))
    vecs = linker.embed(mentions)
    delta = LINK_THRESHOLD["e5"]
    flat = index.index
    if flat is None:  # a saved index reads its float vectors from its file: scan them in memory here
        import faiss

        flat = faiss.IndexFlatIP(index.rows.d)
        flat.add(index.matrix)
    res: dict[str, object] = {
        "machine": cpu_model(),
        "vectors": len(index),
        "mentions": len(mentions),
        "hnsw": {"M": HNSW_M, "efSearch": HNSW_EF_SEARCH},
        "command": "python benchmarks/entity_ann.py " + " ".join(sys.argv[1:]),
    }
    for k in (1, 5, 10):
        t_ann: list[float] = []
        t_flat: list[float] = []
        hits = 0
        total = 0
        same_link = 0
        top1 = 0
        for v in vecs:
            q = v.reshape(1, -1)
            t = time.perf_counter()
            a = index.search(q, k)[0]
            t_ann.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            fetch = min(flat.ntotal, max(k * 4, k + 8))
            scores, idx = flat.search(np.ascontiguousarray(q, dtype=np.float32), fetch)
            f: dict[str, float] = {}
            for s_, i_ in zip(scores[0], idx[0], strict=True):
                eid = index.vector_ids[int(i_)]
                if eid not in f:
                    f[eid] = float(s_)
                    if len(f) >= k:
                        break
            t_flat.append((time.perf_counter() - t) * 1000)
            got = {e for e, _ in a}
            hits += len(got & set(f))
            total += len(f)
            top1 += bool(a) and bool(f) and a[0][0] == next(iter(f))
            same_link += {e for e, s_ in a if s_ >= delta} == {e for e, s_ in f.items() if s_ >= delta}
        res[f"k={k}"] = {
            "recall_at_k": hits / max(total, 1),
            "top1_agreement": top1 / max(len(vecs), 1),
            "same_links_at_delta": same_link / max(len(vecs), 1),
            "hnsw_ms_p50": pct(t_ann, 0.5),
            "flat_ms_p50": pct(t_flat, 0.5),
            "hnsw_ms_mean": statistics.fmean(t_ann),
            "flat_ms_mean": statistics.fmean(t_flat),
        }
        print(k, json.dumps(res[f"k={k}"]), flush=True)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
