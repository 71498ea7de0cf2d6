"""Lay-term link recall: does "I have <lay>" / "我<lay>" link the clinical entity, per language and half.

For every pair of the shipped lists (``kgmind/data/lay_terms_{en,zh}.tsv``, halves by
:func:`kgmind.retrievers.lay_terms.lay_term_split`) the question is run through the
product's own nodes, ``extract_entities`` then ``link_entities``, with the default
:class:`~kgmind.graphs.context.Context` on the KG that holds the pair's clinical name: the
shipped demo KG when it has it, else the full KG of the language (English: EMCKG-full,
``emckg/format_dataset.csv``; Chinese: the CMCKG re-crawl, ``cmckg/recrawl_full``). A pair
*links* when the clinical entity is among the linked entities; each lay term is asked
twice, alone (``short``, the reported figure) and inside a longer sentence (``context``).
Pairs whose clinical name no KG has, or whose lay term is itself a name of that KG, are
counted apart (not scored).

The stores are built once under ``--work`` (LadybugDB, entity indexes beside them) and
reused. Run it on main's code for the "before" figure: the lay-term module and lists are
inert data there (nothing in main's linker reads them).

A listed lay term links by construction, so ``--list-half calib`` also measures the linker
on words outside its list: the product then reads only the calibration half's pairs while
the test half is scored (``--halves test``), which is what a new everyday word meets.

Run: ``PYTHONPATH=src python benchmarks/lay_terms.py --work /tmp/lay-kgs --out DIR [--languages en zh]``
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))

from langgraph.runtime import Runtime

from _common import cpu_model, git_commit
from kgmind.graphs.context import Context
from kgmind.graphs.extract_entities import extract_entities
from kgmind.graphs.link_entities import link_entities
from kgmind.importers import import_kg
from kgmind.importers.demo_store import ensure_demo_store
from kgmind.retrievers.lay_terms import LayTerm, load_lay_terms
from kgmind.settings import data_dir
from kgmind.stores.factory import open_store
from kgmind.stores.protocol import GraphStore

#: The questions each lay term is asked in: ``short`` (the figure reported) and ``context``, the
#: words inside a longer patient sentence (Chinese: other characters right before and after).
TEMPLATES = {
    "en": {
        "short": "I have {lay}.",
        "context": "Doctor, for three days I have had {lay} and it is getting worse. What should I do?",
    },
    "zh": {"short": "我{lay}。", "context": "医生，我这几天一直{lay}，越来越厉害，怎么办？"},
}

#: The full KG of each language: (store name, file under the data dir, importer format).
FULL_KGS = {
    "en": ("emckg-full", "emckg/format_dataset.csv", "chatdoctor"),
    "zh": ("cmckg-recrawl", "cmckg/recrawl_full", "recrawl-json"),
}


def open_kgs(work: Path, language: str) -> list[tuple[str, GraphStore]]:
    """The demo store and the language's full KG store under ``work``, importing them when empty."""
    demo = ensure_demo_store(f"ladybug:{work / 'demo'}")
    name, rel, fmt = FULL_KGS[language]
    full = open_store(f"ladybug:{work / name}")
    if full.stats().entities_total == 0:
        t0 = time.perf_counter()
        import_kg(data_dir() / rel, fmt, full, progress=False)
        print(f"imported {rel} in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return [("demo", demo), (name, full)]


def holder(kgs: list[tuple[str, GraphStore]], term: LayTerm) -> tuple[str, GraphStore, set[str]] | None:
    """The first KG with an entity named like the pair's clinical name, with those entities' ids."""
    for name, store in kgs:
        ids = {e.id for e in store.find_entities(term.clinical)}
        if ids:
            return name, store, ids
    return None


def link_question(store: GraphStore, question: str, language: str) -> list[Any]:
    """The linked entities of ``question``: the product's extract_entities → link_entities nodes."""
    runtime = Runtime(context=Context(store=store.uri))
    state: dict[str, Any] = {"question": question, "language": language}
    state.update(extract_entities(state, runtime))  # type: ignore[arg-type]
    return list(link_entities(state, runtime)["linked_entities"])  # type: ignore[arg-type]


def score_pair(kgs: list[tuple[str, GraphStore]], term: LayTerm) -> dict[str, Any]:
    """One row: the pair, its half and KG, whether its question linked the clinical entity, what linked."""
    row: dict[str, Any] = {
        "lay": term.lay,
        "clinical": term.clinical,
        "split": term.split,
        "language": term.language,
    }
    found = holder(kgs, term)
    if found is None:
        return {**row, "kg": None, "status": "clinical name in no KG"}
    kg, store, ids = found
    if store.find_entities(term.lay):
        return {**row, "kg": kg, "status": "lay term is a KG name"}
    row.update(kg=kg, status="scored")
    for name, template in TEMPLATES[term.language].items():
        linked = link_question(store, template.format(lay=term.lay), term.language)
        row[name] = {
            "linked": any(le.entity_id in ids for le in linked),
            "linked_names": [f"{le.mention}→{le.name} ({le.score:.2f})" for le in linked],
        }
    return row


def summarise(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Link recall per language × half (all KGs together) and per language × half × KG."""
    out: list[dict[str, Any]] = []
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        for kg in ("all", r["kg"] or "none"):
            groups.setdefault((r["language"], r["split"], kg), []).append(r)
    for (lang, split, kg), group in sorted(groups.items()):
        scored = [r for r in group if r["status"] == "scored"]
        entry: dict[str, Any] = {"language": lang, "split": split, "kg": kg, "pairs": len(group)}
        entry["scored"] = len(scored)
        for name in ("short", "context"):
            linked = sum(bool(r[name]["linked"]) for r in scored)
            entry[f"linked_{name}"] = linked
            entry[f"recall_{name}"] = round(linked / len(scored), 4) if scored else None
        entry["not_scored"] = dict(Counter(r["status"] for r in group if r["status"] != "scored"))
        out.append(entry)
    return out


def markdown(summary: list[dict[str, Any]], rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    """The results table, then the pairs that did not link."""
    lines = [
        f"# Lay-term link recall (commit {meta['commit']}, {meta['cpu']}; list: {meta['list_half']} pairs)",
        "",
        "Questions: " + "; ".join(f"{lg} {k}: `{v}`" for lg, t in TEMPLATES.items() for k, v in t.items()),
        "",
        "| language | half | KG | pairs | scored | linked (short) | recall (short) | recall (context) "
        "| not scored |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        short, context = (
            "–" if s[f"recall_{k}"] is None else f"{s[f'recall_{k}']:.3f}" for k in ("short", "context")
        )
        extra = ", ".join(f"{k}: {v}" for k, v in s["not_scored"].items()) or ""
        lines.append(
            f"| {s['language']} | {s['split']} | {s['kg']} | {s['pairs']} | {s['scored']} "
            f"| {s['linked_short']} | {short} | {context} | {extra} |"
        )
    for name in ("short", "context"):
        misses = [r for r in rows if r["status"] == "scored" and not r[name]["linked"]]
        lines += ["", f"## Not linked, {name} question ({len(misses)})", ""]
        for r in misses:
            got = "; ".join(r[name]["linked_names"]) or "nothing"
            where = f"{r['language']}/{r['split']}/{r['kg']}"
            lines.append(f"- {where}: {r['lay']} → {r['clinical']}: linked {got}")
    return "\n".join(lines) + "\n"


def hold_out_test_half() -> None:
    """Make the product's lay-term list the calibration half only (the benchmark keeps the full list).

    The gazetteer and the linker read the list through ``lay_synonyms``, which reads
    ``load_lay_terms`` of its own module: both are replaced before any store is opened.
    """
    from kgmind.retrievers import lay_terms

    shipped = lay_terms.load_lay_terms

    def calib_only(language: str | None = None) -> tuple[LayTerm, ...]:
        return tuple(t for t in shipped(language) if t.split == "calib")

    lay_terms.load_lay_terms = calib_only  # type: ignore[assignment]
    lay_terms.lay_synonyms.cache_clear()
    assert all(lay_terms.lay_term_split(lay) == "calib" for lay in lay_terms.lay_synonyms())


def main() -> None:
    """Score every pair of the chosen languages and write ``results.json`` and ``results.md``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, required=True, help="where the KG stores are built and kept")
    ap.add_argument("--out", type=Path, required=True, help="folder for results.json and results.md")
    ap.add_argument("--languages", nargs="+", default=["en", "zh"], choices=["en", "zh"])
    ap.add_argument("--commit", help="the commit of the code run (default: HEAD of the working directory)")
    ap.add_argument(
        "--list-half",
        choices=["all", "calib"],
        default="all",
        help="the pairs the product reads while linking: all (as shipped) or the calibration half only",
    )
    ap.add_argument("--halves", nargs="+", default=["calib", "test"], choices=["calib", "test"])
    args = ap.parse_args()
    if args.list_half == "calib":
        hold_out_test_half()
    args.work.mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    for lang in args.languages:
        kgs = open_kgs(args.work, lang)
        for term in load_lay_terms(lang):
            if term.split in args.halves:
                rows.append(score_pair(kgs, term))
    summary = summarise(rows)
    meta = {
        "list_half": args.list_half,
        "commit": args.commit or git_commit(),
        "cpu": cpu_model(),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    (args.out / "results.json").write_text(
        json.dumps({"meta": meta, "summary": summary, "pairs": rows}, ensure_ascii=False, indent=1),
        encoding="utf-8",
    )
    (args.out / "results.md").write_text(markdown(summary, rows, meta), encoding="utf-8")
    for s in summary:
        if s["kg"] == "all":
            print(f"{s['language']} {s['split']}: short {s['recall_short']}, context {s['recall_context']}")


if __name__ == "__main__":
    main()
