"""Exploration on a real LadybugStore: index vs per-pair baseline, tools, weight updates, EMCKG-full."""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from kgmind.models import entity_id
from kgmind.retrievers.aggregate import aggregate_evidence
from kgmind.retrievers.baselines import kg_shortest_path, mindmap_neighbors, mindmap_paths, mindmap_retrieve
from kgmind.retrievers.exploration import hykge_chains, neighbor_evidence, path_evidence, weighted_dfs_chains
from kgmind.retrievers.graph_index_cache import (
    clear_graph_index_cache,
    get_graph_index,
    notify_weight_changes,
)
from kgmind.stores.factory import close_all_stores, open_store
from kgmind.tools.exploration import (
    EXPLORATION_TOOLS,
    hykge_chains_tool,
    neighbor_evidence_tool,
    path_evidence_tool,
    weighted_dfs_chains_tool,
)
from kgmind.tuning import PIPELINE
from toy_kg import disease_kg

DATA = Path(os.environ.get("KGMIND_DATA_DIR") or Path(__file__).parents[2] / ".." / "shared" / "data")

KG = {
    "Flu": (["Fever", "Cough"], ["Swab"], ["Oseltamivir"]),
    "Cold": (["Cough", "Sore throat"], ["Swab"], ["Paracetamol"]),
    "Measles": (["Fever", "Rash"], ["Serology"], ["Paracetamol", "Vitamin A"]),
    "Strep throat": (["Sore throat", "Fever"], ["Throat culture"], ["Penicillin"]),
}


def build(store) -> None:
    store.bulk_load(*disease_kg(KG, with_docs=True))


@pytest.fixture()
def store(tmp_path: Path) -> Iterator:
    clear_graph_index_cache()
    s = open_store("ladybug:" + str(tmp_path / "kg"), create=True)
    build(s)
    yield s
    close_all_stores()
    clear_graph_index_cache()


def ids(*names: str) -> list[str]:
    return [entity_id(n) for n in names]


def rel_sets(evs) -> set[frozenset[str]]:
    return {frozenset(ev.relation_ids) for ev in evs}


def check_against_store(store, evs) -> None:
    """Every cited edge exists in the store with the triple's names and type."""
    for ev in evs:
        rels = store.get_relations(ev.relation_ids)
        assert [r.id for r in rels] == ev.relation_ids
        heads = {e.id: e.name for e in store.get_entities([r.head for r in rels] + [r.tail for r in rels])}
        assert [(heads[r.head], r.type, heads[r.tail]) for r in rels] == ev.triples


def test_index_matches_store(store) -> None:
    gi = get_graph_index(store)
    assert gi.num_edges == store.stats().relations_total
    assert gi.num_nodes == store.stats().entities_total
    for name in ("Flu", "Fever"):
        assert {e.id for e in gi.out_edges(entity_id(name))} == {
            r.id for r in store.out_edges(entity_id(name))
        }
    assert gi.description(entity_id("Flu")) == "Flu is a common illness."


@pytest.mark.parametrize(
    "linked",
    [
        ("Fever", "Cough"),
        ("Rash", "Sore throat", "Cough"),
        ("Fever", "Measles"),
        ("Swab", "Penicillin", "Rash"),
    ],
)
def test_index_and_per_pair_baseline_agree(store, linked) -> None:
    gi = get_graph_index(store)
    idx_paths = path_evidence(gi, ids(*linked), max_paths=50)
    base_paths = mindmap_paths(store, ids(*linked), max_paths=50)
    assert rel_sets(idx_paths) == rel_sets(base_paths)
    idx_lines = neighbor_evidence(gi, ids(*linked), max_lines=100)
    base_lines = mindmap_neighbors(store, ids(*linked), max_lines=100)
    assert rel_sets(idx_lines) == rel_sets(base_lines)
    check_against_store(store, idx_paths + idx_lines)
    assert len(mindmap_retrieve(store, ids(*linked))) <= 10
    sp = kg_shortest_path(store, ids(*linked))
    assert len(sp) <= 1 and (not sp or sp[0].relation_ids == base_paths[0].relation_ids)


def test_chains_and_dfs_on_store(store) -> None:
    gi = get_graph_index(store)
    chains = hykge_chains(gi, ids("Fever", "Sore throat"))
    assert chains and {ev.meta["chain_type"] for ev in chains} >= {"co_ancestor"}
    check_against_store(store, chains)
    dfs = weighted_dfs_chains(gi, ids("Fever"), n_chains=5, max_depth=3, seed=3, store=store)
    check_against_store(store, dfs)
    for ev in dfs:  # every edge has a doc source: its text is attached
        assert all(k.endswith("is a common illness.") for k in ev.meta["knowledge"])


def test_weight_updates_reach_the_cached_index(store) -> None:
    gi = get_graph_index(store)
    fever_flu = next(r for r in store.out_edges(entity_id("Fever")) if r.tail == entity_id("Flu"))

    def rule(siblings, rel_ids):
        return {rid: 50.0 for rid in rel_ids}

    changes = store.apply_weight_updates("fb1", "run1", "excellent", [fever_flu.id], rule)
    assert changes and gi.weight(fever_flu.id) == 1.0  # the store changed, the cache not yet
    notify_weight_changes(store.uri, changes)
    assert get_graph_index(store) is gi and gi.weight(fever_flu.id) == 50.0
    draws = weighted_dfs_chains(gi, ids("Fever"), n_chains=20, max_depth=1, seed=0)
    assert draws[0].triples[0][2] == "Flu"
    assert sum(ev.meta["draws"] for ev in draws if ev.triples[0][2] == "Flu") >= 17


def test_tools_round_trip(store) -> None:
    assert [t.name for t in EXPLORATION_TOOLS] == [
        "path_evidence",
        "neighbor_evidence",
        "hykge_chains",
        "weighted_dfs_chains",
    ]
    args = {"store_uri": store.uri, "entity_ids": ids("Fever", "Rash", "Cough")}
    paths = path_evidence_tool.invoke(args)
    gi = get_graph_index(store)
    pipeline = {"max_hops": PIPELINE.max_hops, "max_paths": PIPELINE.max_paths, "weight_aware": True}
    assert [p["relation_ids"] for p in paths] == [  # the tool's defaults are the graph's (PIPELINE)
        ev.relation_ids for ev in path_evidence(gi, args["entity_ids"], **pipeline)
    ]
    lines = neighbor_evidence_tool.invoke({**args, "ranked": True, "max_lines": 3})
    assert len(lines) == 3 and lines[0]["meta"]["disease"] == "Measles"
    chains = hykge_chains_tool.invoke({**args, "max_chains": 4})
    assert 0 < len(chains) <= 4 and all(c["kind"] == "chain" for c in chains)
    dfs = weighted_dfs_chains_tool.invoke({**args, "n_chains": 2, "seed": 1})
    assert dfs and all("knowledge" in d["meta"] for d in dfs)
    json.dumps([paths, lines, chains, dfs])  # JSON-serialisable
    with pytest.raises(ValueError):
        neighbor_evidence_tool.invoke({**args, "max_lines": 0})


# -- EMCKG-full (real data) --------------------------------------------------------------
_RE_Q = re.compile(r"The extracted entities are (.*?)(?:<EOS>|<END>|$)", re.S)


@pytest.fixture(scope="module")
def emckg(tmp_path_factory) -> Iterator:
    csv = DATA / "emckg" / "format_dataset.csv"
    ner = DATA / "genmedgpt5k" / "ner_chatgpt.jsonl"
    if not csv.exists() or not ner.exists():
        pytest.skip(f"EMCKG data not found under {DATA} (set KGMIND_DATA_DIR)")
    from kgmind.importers import import_kg

    clear_graph_index_cache()
    s = open_store("ladybug:" + str(tmp_path_factory.mktemp("emckg") / "kg"), create=True)
    import_kg(csv, "chatdoctor", s, progress=False)
    questions: list[list[str]] = []
    with ner.open(encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            m = _RE_Q.search(row.get("qustion_output", "").replace("\n", " "))
            if not m:
                continue
            linked: list[str] = []
            for kw in m.group(1).split(", "):
                linked += [e.id for e in s.find_entities(kw.strip())][:1]
            if len(linked) >= 2:
                questions.append(linked)
            if len(questions) >= 12:
                break
    yield s, questions
    close_all_stores()
    clear_graph_index_cache()


@pytest.mark.data
def test_emckg_full_exploration_invariants(emckg) -> None:
    store, questions = emckg
    assert len(questions) >= 10
    gi = get_graph_index(store)
    for linked in questions:
        paths = path_evidence(gi, linked)
        lines = neighbor_evidence(gi, linked)
        ranked = neighbor_evidence(gi, linked, ranked=True, max_lines=30)
        chains = hykge_chains(gi, linked)
        dfs = weighted_dfs_chains(gi, linked, seed=0)
        assert len(paths) <= 5 and len(lines) <= 5 and len(chains) <= 30
        for ev in paths:  # consecutive triples share their junction, never repeated
            names = [ev.triples[0][0]] + [t[2] for t in ev.triples]
            assert all(a != b for a, b in itertools.pairwise(names))
            assert all(ev.triples[i][2] == ev.triples[i + 1][0] for i in range(len(ev.triples) - 1))
        check_against_store(store, paths[:2] + lines[:2] + ranked[:2] + chains[:2] + dfs[:2])
        # the ranked lines start with the disease most linked entities point to
        support = ranked[0]
        assert support.meta["relation"] in ("support", "has_symptom", "need_medical_test", "need_medication")
        out = aggregate_evidence(paths + ranked, "question", budget_tokens=800)
        assert out and len({ev.id for ev in out}) == len(out)
