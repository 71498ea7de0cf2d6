"""Calibrate the entity-linking threshold δ per embedding model and time linking.

Data (read-only, ``$KGMIND_DATA_DIR``, default ``../shared/data``):

* KG: MindMap's EMCKG (``emckg/mindmap_emckg_triples.tsv``, 1,123 entities), read with
  the ``mindmap-tsv`` importer when it is available, else directly from the TSV.
* Mentions: ChatGPT question entities (``genmedgpt5k/ner_chatgpt.jsonl``, field
  ``qustion_output``: ``<CLS>…<SEP>The extracted entities are a, b, c<EOS>``).
* Gold: the question-side KG entities ``input_KG`` of ``genmedgpt5k/gold_kg_entities.jsonl``.

For every question the mentions are linked (exact name/alias match = 1.0, else the
``top_k`` nearest names by cosine); the linked set at each δ is compared with the gold
set (micro precision / recall / F1 over questions). Prints Markdown tables.

Optional ``--cmcqa N``: an e5 sanity check on the Chinese CMCQA questions
(``cmcqa/qa_ner.jsonl`` ``question_kg`` mentions vs the 38k CMCKG entity names): the
share of mentions linked exactly / at δ and examples of non-exact links (no gold exists).

Run: ``PYTHONPATH=src python benchmarks/calibrate_linking.py [--models minilm,e5,e5-passage]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("KGMIND_HOME", tempfile.mkdtemp(prefix="kgmind-calib-"))

from kgmind.models import Entity, normalize_name
from kgmind.retrievers.embeddings import Embedder, get_embedder
from kgmind.retrievers.embeddings.e5 import E5Embedder
from kgmind.retrievers.entity_index import build_entity_index
from kgmind.retrievers.linker import EntityLinker
from kgmind.retrievers.ner import Gazetteer, embedding_spans, mask_spans, parse_entity_list
from kgmind.settings import data_dir

# 0.50 .. 0.85 by 0.05, then 0.86 .. 0.97 by 0.01 (e5 cosines are compressed into ~0.8-1.0).
DELTAS = [round(0.5 + 0.05 * i, 2) for i in range(8)] + [round(0.86 + 0.01 * i, 2) for i in range(12)]


class ListStore:
    """A read-only in-memory store with just what the linker needs."""

    def __init__(self, entities: list[Entity], uri: str) -> None:
        self.uri = uri
        self._entities = {e.id: e for e in entities}

    def iter_entities(self) -> Iterator[Entity]:
        return iter(self._entities.values())

    def fingerprint(self) -> str:
        return f"{len(self._entities)}"

    def get_entities(self, ids: list[str]) -> list[Entity]:
        return [self._entities[i] for i in ids if i in self._entities]

    def find_entities(self, name: str) -> list[Entity]:
        key = normalize_name(name)
        return [
            e for e in self._entities.values() if key in {normalize_name(n) for n in (e.name, *e.aliases)}
        ]


def load_emckg(root: Path) -> list[Entity]:
    path = root / "emckg" / "mindmap_emckg_triples.tsv"
    try:
        from kgmind.importers import parse

        return list(parse(path, "mindmap-tsv").entities)
    except Exception as exc:  # noqa: BLE001 - the importer may not be there yet
        print(f"(importer unavailable: {exc}; reading the TSV directly)", file=sys.stderr)
    names: dict[str, Entity] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        for name in (parts[0], parts[2]):
            ent = Entity(name=name.replace("_", " "))
            names.setdefault(ent.id, ent)
    return list(names.values())


def load_rows(root: Path) -> list[tuple[int, list[str], set[str]]]:
    """``(id, mentions, gold entity ids)`` per annotated GenMedGPT question."""
    ner: dict[int, str] = {}
    with (root / "genmedgpt5k" / "ner_chatgpt.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            ner[int(d["id"])] = d["qustion_output"]
    rows: list[tuple[int, list[str], set[str]]] = []
    seen: set[int] = set()
    with (root / "genmedgpt5k" / "gold_kg_entities.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            rid = int(d["id"])
            if rid in seen or rid not in ner:
                continue
            seen.add(rid)
            gold = {Entity(name=n.replace("_", " ")).id for n in d["input_KG"].split(",") if n.strip()}
            rows.append((rid, parse_entity_list(ner[rid]), gold))
    return rows


def make_embedder(spec: str) -> Embedder:
    if spec == "e5-passage":
        return E5Embedder(entity_prefix="passage")
    if spec == "e5-query":
        return E5Embedder(entity_prefix="query")
    return get_embedder(spec)


def prf(tp: int, npred: int, ngold: int) -> tuple[float, float, float]:
    p = tp / npred if npred else 0.0
    r = tp / ngold if ngold else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return p, r, f


def calibrate_all(
    spec: str, store: ListStore, rows: list[tuple[int, list[str], set[str]]], top_ks: list[int]
) -> list[dict]:
    embedder = make_embedder(spec)
    t0 = time.perf_counter()
    index = build_entity_index(store, embedder)
    build_s = time.perf_counter() - t0
    linker = EntityLinker(store, embedder.name, embedder=embedder, index=index)
    out = []
    for top_k in top_ks:
        res = calibrate(linker, rows, top_k)
        res.update(spec=spec, build_s=build_s, vectors=len(index), top_k=top_k)
        out.append(res)
    return out


def calibrate(linker: EntityLinker, rows: list[tuple[int, list[str], set[str]]], top_k: int) -> dict:
    # Warm the model so the timing below is per question, not the model load.
    linker.link(["warm up"], threshold=None)
    linker.clear_cache()
    lat_ms: list[float] = []
    results: list[tuple[list[tuple[str, float]], list[str], set[str]]] = []
    for _, mentions, gold in rows:
        t = time.perf_counter()
        scored = linker.link(mentions, top_k=top_k, threshold=0.0)
        lat_ms.append((time.perf_counter() - t) * 1000)
        forced = linker.link(mentions, threshold=None)
        results.append(([(le.entity_id, le.score) for le in scored], [le.entity_id for le in forced], gold))
    ngold = sum(len(g) for _, _, g in results)
    table = []
    for delta in DELTAS:
        tp = npred = 0
        for scored, _, gold in results:
            pred = {e for e, s in scored if s >= delta}
            npred += len(pred)
            tp += len(pred & gold)
        table.append((delta, *prf(tp, npred, ngold), npred))
    ftp = fpred = 0
    for _, forced, gold in results:
        fset = set(forced)
        fpred += len(fset)
        ftp += len(fset & gold)
    # Timing of exactly 5 mentions (non-exact ones need the model), cold cache.
    five_ms: list[float] = []
    five_cpu: list[float] = []
    pool = [m for _, ms, _ in rows for m in ms if not linker.exact_ids(m)]
    for i in range(0, min(len(pool), 5 * 60), 5):
        linker.clear_cache()
        t, c = time.perf_counter(), time.process_time()
        linker.link(pool[i : i + 5], top_k=top_k)
        five_ms.append((time.perf_counter() - t) * 1000)
        five_cpu.append((time.process_time() - c) * 1000)
    return {
        "table": table,
        "forced": (*prf(ftp, fpred, ngold), fpred),
        "q_ms_p50": statistics.median(lat_ms),
        "five_ms_p50": statistics.median(five_ms) if five_ms else float("nan"),
        "five_cpu_p50": statistics.median(five_cpu) if five_cpu else float("nan"),
        "five_ms_p90": sorted(five_ms)[int(0.9 * (len(five_ms) - 1))] if five_ms else float("nan"),
    }


def print_result(res: dict) -> float:
    print(
        f"\n### {res['spec']} (top_k={res['top_k']}; {res['vectors']} name vectors, "
        f"index built in {res['build_s']:.1f}s)\n"
    )
    print("| δ | P | R | F1 | linked |")
    print("|---|---|---|---|---|")
    best = max(res["table"], key=lambda r: (r[3], r[0]))
    for delta, p, r, f, n in res["table"]:
        mark = " **best F1**" if (delta, p, r, f, n) == best else ""
        print(f"| {delta:.2f} | {p:.3f} | {r:.3f} | {f:.3f} | {n}{mark} |")
    p, r, f, n = res["forced"]
    print(f"| forced top-1 (MindMap) | {p:.3f} | {r:.3f} | {f:.3f} | {n} |")
    hp = [row for row in res["table"] if row[1] >= 0.8]
    if hp:
        hb = max(hp, key=lambda row: row[2])
        print(f"\nP ≥ 0.8 with best recall: δ={hb[0]:.2f} (P={hb[1]:.3f}, R={hb[2]:.3f})")
    else:
        print("\nNo δ reaches P ≥ 0.8 (the gold lists only part of the question's KG entities).")
    print(
        f"\nlinking one question (all its mentions): p50 {res['q_ms_p50']:.1f} ms; "
        f"5 non-exact mentions, cold cache: p50 {res['five_ms_p50']:.1f} ms, p90 {res['five_ms_p90']:.1f} ms "
        f"(CPU time p50 {res['five_cpu_p50']:.1f} ms; load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} CPUs)"
    )
    return float(best[0])


def load_questions(root: Path) -> list[tuple[str, set[str]]]:
    """``(question text, gold entity ids)`` per annotated GenMedGPT question."""
    out: list[tuple[str, set[str]]] = []
    seen: set[int] = set()
    with (root / "genmedgpt5k" / "gold_kg_entities.jsonl").open(encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if int(d["id"]) in seen:
                continue
            seen.add(int(d["id"]))
            gold = {Entity(name=n.replace("_", " ")).id for n in d["input_KG"].split(",") if n.strip()}
            out.append((d["input"], gold))
    return out


def calibrate_spans(
    store: ListStore, questions: list[tuple[str, set[str]]], limit: int, model: str = "minilm"
) -> None:
    """NER without an LLM: gazetteer alone, then gazetteer + embedding spans at each δ_span.

    Two kinds of span vectors: per span (each candidate embedded alone, capped to
    ``kgmind.tuning.MAX_SPANS``) and contextual (the question embedded once, every candidate
    the mean of its token states: the default with MiniLM).
    """
    embedder = get_embedder(model)
    index = build_entity_index(store, embedder)
    gaz = Gazetteer(store.iter_entities())
    for kind in ("per span", "contextual"):
        linker = EntityLinker(store, model, embedder=embedder, index=index, cache_size=0)
        per_q: list[tuple[set[str], list[tuple[str, float]], set[str]]] = []
        t_ms: list[float] = []
        for text, gold in questions[: limit or None]:
            t = time.perf_counter()
            spans = gaz.find_spans(text)
            found = {m.entity_id for _, _, m in spans if m.entity_id}
            masked = mask_spans(text, [(a, b) for a, b, _ in spans])
            context = text if kind == "contextual" else None
            emb = embedding_spans(masked, linker, 0.4, language="en", context=context)
            t_ms.append((time.perf_counter() - t) * 1000)
            per_q.append((found, [(m.entity_id or "", m.score) for m in emb], gold))
        ngold = sum(len(g) for _, _, g in per_q)
        print(
            f"\n### NER without LLM, {model}, {kind} span vectors "
            f"({len(per_q)} questions, gazetteer + spans)\n"
        )
        print("| δ_span | P | R | F1 | entities |\n|---|---|---|---|---|")
        tp = npred = 0
        for found, _, gold in per_q:
            tp += len(found & gold)
            npred += len(found)
        p, r, f = prf(tp, npred, ngold)
        print(f"| gazetteer only | {p:.3f} | {r:.3f} | {f:.3f} | {npred} |")
        for delta in [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9]:
            tp = npred = 0
            for found, emb, gold in per_q:
                pred = found | {e for e, sc in emb if sc >= delta}
                tp += len(pred & gold)
                npred += len(pred)
            p, r, f = prf(tp, npred, ngold)
            print(f"| {delta:.2f} | {p:.3f} | {r:.3f} | {f:.3f} | {npred} |")
        print(
            f"\nextraction per question (gazetteer + {kind} spans, warm model): "
            f"p50 {statistics.median(t_ms):.0f} ms"
        )


def cmcqa_check(root: Path, n_rows: int, delta: float) -> None:
    names = [x.strip() for x in (root / "cmcqa" / "cmckg_entity_names.txt").read_text("utf-8").splitlines()]
    store = ListStore([Entity(name=x) for x in names if normalize_name(x)], "memory:cmckg")
    mentions: list[str] = []
    with (root / "cmcqa" / "qa_ner.jsonl").open(encoding="utf-8") as f:
        for i, line in enumerate(f):
            if i >= n_rows:
                break
            mentions += [m.strip() for m in json.loads(line)["question_kg"].split(",") if m.strip()]
    embedder = get_embedder("e5")
    t0 = time.perf_counter()
    index = build_entity_index(store, embedder, progress=True)
    print(
        f"\n### e5 sanity check on CMCQA ({n_rows} questions, {len(mentions)} mentions, "
        f"{len(index)} CMCKG names, index {time.perf_counter() - t0:.0f}s)\n"
    )
    linker = EntityLinker(store, "e5", embedder=embedder, index=index)
    exact = sum(1 for m in mentions if linker.exact_ids(m))
    non_exact = [m for m in mentions if not linker.exact_ids(m)]
    hits = linker.nearest(non_exact, k=1)
    above = [(m, row[0]) for m, row in zip(non_exact, hits, strict=True) if row and row[0][1] >= delta]
    print(f"exact: {exact}/{len(mentions)}; non-exact linked at δ={delta}: {len(above)}/{len(non_exact)}")
    print("\n| mention | nearest CMCKG entity | cosine |\n|---|---|---|")
    for m, row in list(zip(non_exact, hits, strict=True))[:25]:
        if row:
            print(f"| {m} | {index.entities[row[0][0]][0]} | {row[0][1]:.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="minilm,e5-query,e5-passage")
    ap.add_argument("--top-k", default="1,5", help="comma-separated top_k values to evaluate")
    ap.add_argument("--cmcqa", type=int, default=0, help="CMCQA questions for the e5 sanity check (0: skip)")
    ap.add_argument("--limit", type=int, default=0, help="only the first N GenMedGPT rows (0: all)")
    ap.add_argument("--spans", action="store_true", help="also calibrate δ_span of the embedding-span NER")
    args = ap.parse_args()
    root = data_dir()
    if not (root / "genmedgpt5k" / "gold_kg_entities.jsonl").exists():
        sys.exit(f"data not found under {root} (set KGMIND_DATA_DIR)")
    store = ListStore(load_emckg(root), "memory:emckg")
    rows = load_rows(root)
    if args.limit:
        rows = rows[: args.limit]
    n_mentions = sum(len(m) for _, m, _ in rows)
    n_gold = sum(len(g) for _, _, g in rows)
    print(
        f"# Linking calibration: {len(rows)} GenMedGPT-5k questions, {n_mentions} ChatGPT mentions, "
        f"{n_gold} gold question entities, EMCKG {len(list(store.iter_entities()))} entities"
    )
    best: dict[str, float] = {}
    top_ks = [int(k) for k in args.top_k.split(",") if k.strip()]
    for spec in [s.strip() for s in args.models.split(",") if s.strip()]:
        for res in calibrate_all(spec, store, rows, top_ks):
            best[f"{spec}@top{res['top_k']}"] = print_result(res)
    print("\nδ maximising F1:", json.dumps(best))
    if args.spans:
        for spec in [s.strip() for s in args.models.split(",") if s.strip().startswith("minilm")]:
            calibrate_spans(store, load_questions(root), args.limit, spec)
    if args.cmcqa:
        delta = best.get(f"e5-query@top{top_ks[-1]}", best.get(f"e5@top{top_ks[-1]}", 0.9))
        cmcqa_check(root, args.cmcqa, delta)


if __name__ == "__main__":
    main()
