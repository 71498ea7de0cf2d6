"""Disputed edges stop being evidence (issue 41): hidden from all four explorations, in both index modes.

Three diseases in three KG forms (``tests/kg_forms.py``). A disputed fact is hidden with
:meth:`GraphIndex.set_hidden` on the whole-KG index and with ``hidden=`` on a pushed-down
index read from a real embedded store; the explorations must never show it, the two modes
must give the same evidence, KGCoT's probabilities must renormalise over the edges left,
and a restore must bring back exactly what was there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kg_forms import FORMS, eid, kg
from kgmind.models import Evidence, Relation
from kgmind.retrievers.exploration import (
    hykge_chains,
    neighbor_evidence,
    path_evidence,
    rank_diseases,
    weighted_dfs_chains,
)
from kgmind.retrievers.exploration.items import edge_prob
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.retrievers.graph_index_cache import clear_graph_index_cache, get_graph_index
from kgmind.stores.factory import close_all_stores, open_store

SYMPTOMS = [eid("Fever"), eid("Rash"), eid("Red eyes")]


def fact_ids(form: str, disease: str, other: str) -> list[str]:
    """The stored relation ids of the fact ``disease — other`` in ``form`` (two in ``both``, else one)."""
    ends = {eid(disease), eid(other)}
    return [r.id for r in kg(form)[1] if {r.head, r.tail} == ends]


def index(form: str) -> GraphIndex:
    ents, rels = kg(form)
    return GraphIndex(ents, sorted(rels, key=lambda r: r.id))


def shown_ids(evidence: list[Evidence]) -> set[str]:
    return {rid for ev in evidence for rid in ev.relation_ids}


def names_together(evidence: list[Evidence], a: str, b: str) -> bool:
    """Whether one triple of the evidence joins ``a`` and ``b``."""
    return any({h, t} == {a, b} for ev in evidence for h, _, t in ev.triples)


#: Every exploration the graph runs, on the seeds a question about the symptoms links.
EXPLORE: dict[str, Callable[[GraphIndex], list[Evidence]]] = {
    "paths": lambda gi: path_evidence(gi, [eid("Red eyes"), eid("Joint pain")]),
    "neighbours": lambda gi: neighbor_evidence(gi, [eid("Measles")], max_lines=8),
    "ranked neighbours": lambda gi: neighbor_evidence(gi, SYMPTOMS, ranked=True, max_lines=8),
    "hykge chains": lambda gi: hykge_chains(gi, [eid("Red eyes"), eid("Rash")]),
    "kgcot": lambda gi: weighted_dfs_chains(gi, [eid("Red eyes"), eid("Measles")], n_chains=6, max_depth=3),
}


@pytest.mark.parametrize("form", FORMS)
def test_a_disputed_fact_is_shown_by_no_exploration(form: str) -> None:
    disputed = fact_ids(form, "Measles", "Red eyes")
    gi = index(form)
    before = {name: fn(gi) for name, fn in EXPLORE.items()}
    for name, evs in before.items():  # every exploration showed the fact before: the test can fail
        assert set(disputed) & shown_ids(evs), name
    assert rank_diseases(gi, SYMPTOMS)[0][0] == eid("Measles")

    assert gi.set_hidden(disputed) == 2  # the stored edge(s) and their reverse reading (or twin)
    for name, fn in EXPLORE.items():
        evs = fn(gi)
        assert not set(disputed) & shown_ids(evs), name
        assert not names_together(evs, "Measles", "Red eyes"), name
    # Red eyes no longer votes: Measles and Dengue both have Fever and Rash, Measles listed first
    ranking = rank_diseases(gi, SYMPTOMS)
    assert {d for d, _, _ in ranking[:2]} == {eid("Measles"), eid("Dengue")}
    assert all(not set(disputed) & set(support) for _, _, support in ranking)
    assert path_evidence(gi, [eid("Red eyes"), eid("Joint pain")]) == []  # Red eyes leads nowhere now
    assert weighted_dfs_chains(gi, [eid("Red eyes")]) == []


def _set_hidden_then(gi: GraphIndex, ids: list[str]) -> GraphIndex:
    gi.set_hidden(ids)
    return gi


def _lists(gi: GraphIndex) -> tuple[list[list[int]], list[list[int]]]:
    return [list(a) for a in gi.out_adj], [list(a) for a in gi.in_adj]


@pytest.mark.parametrize("form", FORMS)
def test_restore_brings_back_every_list_total_and_item(form: str) -> None:
    gi = index(form)
    lists, totals = _lists(gi), gi.out_weight_total.copy()
    before = {name: fn(gi) for name, fn in EXPLORE.items()}
    gi.set_hidden(fact_ids(form, "Measles", "Red eyes") + fact_ids(form, "Dengue", "Fever"))
    assert _lists(gi) != lists
    assert gi.set_hidden(fact_ids(form, "Dengue", "Fever")) == 2  # Measles — Red eyes restored alone
    assert gi.set_hidden([]) == 2
    assert _lists(gi) == lists  # at their place in the list order
    assert np.array_equal(gi.out_weight_total, totals)
    assert {name: fn(gi) for name, fn in EXPLORE.items()} == before
    assert gi.set_hidden([]) == 0  # nothing to do


def test_kgcot_probabilities_renormalise_over_the_edges_left() -> None:
    gi = index("natural")
    measles = gi.idx(eid("Measles"))
    gi.set_weights([(r, 2.0) for r in fact_ids("natural", "Measles", "Fever")])
    hidden = fact_ids("natural", "Measles", "Rash")
    gi.set_hidden(hidden)
    left = list(gi.out_adj[measles])
    assert gi.edge_index_of[hidden[0]] not in left and len(left) == 4
    w = gi.weight_snapshot()
    assert gi.out_weight_total[measles] == pytest.approx(w.weights[left].sum()) == pytest.approx(5.0)
    assert sum(edge_prob(gi, w, e) for e in left) == pytest.approx(1.0)
    # the DFS's first step from Measles: p = w / Σ w over the four edges left
    chains = weighted_dfs_chains(gi, [eid("Measles")], n_chains=40, max_depth=1)
    firsts = {ev.triples[0][2]: ev.meta["probabilities"][0] for ev in chains}
    assert "Rash" not in firsts
    assert firsts["Fever"] == pytest.approx(2.0 / 5.0)
    assert firsts["Vitamin A"] == pytest.approx(1.0 / 5.0)
    # weights learnt or reloaded while hidden keep the hidden edge out of the normaliser
    gi.set_weights([(hidden[0], 9.0)])
    assert gi.out_weight_total[measles] == pytest.approx(5.0)
    rels = [r.model_copy(update={"weight": 3.0}) for r in kg("natural")[1]]
    gi.reload_weights(rels, weights_version=1)
    assert gi.out_weight_total[measles] == pytest.approx(12.0)
    assert gi.weight(hidden[0]) == 3.0  # the hidden edge's weight is kept for its restore
    gi.set_hidden([])
    assert gi.out_weight_total[measles] == pytest.approx(15.0)


def test_hub_degrees_and_cached_out_arrays_follow_the_hidden_set() -> None:
    gi = index("natural")
    fever = gi.idx(eid("Fever"))
    measles = gi.idx(eid("Measles"))
    assert len(gi.out_array(fever)) == 3 and len(gi.out_array(measles)) == 5
    assert gi.hub_degree(100) == 10  # Measles and Dengue: 5 facts, each walked both ways
    gi.set_hidden([r.id for r in kg("natural")[1] if r.head in (eid("Measles"), eid("Dengue"))])
    assert len(gi.out_array(fever)) == 1 and len(gi.out_array(measles)) == 0
    assert gi.hub_degree(100) == 8  # Influenza: 4 facts


# -- pushed down into a real embedded store: the same evidence as the whole index --------------------


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[Callable[[str], Any]]:
    clear_graph_index_cache()

    def make(form: str) -> Any:
        store = open_store(f"ladybug:{tmp_path / form}", create=True)
        store.bulk_load(*kg(form))
        return store

    yield make
    close_all_stores()
    clear_graph_index_cache()


def _key(evidence: list[Evidence]) -> list[tuple[str, tuple[str, ...], float]]:
    return [(ev.text, tuple(ev.relation_ids), round(ev.score, 9)) for ev in evidence]


#: What is disputed per case: a whole fact, or (``both`` form) one of its two stored edges only,
#: whose way back then stays walkable one way: both modes must agree on that too.
CASES = {
    "natural: Measles-Red eyes": ("natural", lambda: fact_ids("natural", "Measles", "Red eyes")),
    "reverse: Dengue-Fever": ("reverse", lambda: fact_ids("reverse", "Dengue", "Fever")),
    "both: one edge of Measles-Rash": (
        "both",
        lambda: [Relation(head=eid("Measles"), type="has_symptom", tail=eid("Rash")).id],
    ),
    "both: Influenza-Fever": ("both", lambda: fact_ids("both", "Influenza", "Fever")),
}


@pytest.mark.parametrize("case", CASES)
def test_pushdown_hides_as_the_whole_index_does(case: str, stores: Callable[[str], Any]) -> None:
    form, disputed = CASES[case][0], CASES[case][1]()
    store = stores(form)
    full = _set_hidden_then(get_graph_index(store), disputed)
    seeds = [*SYMPTOMS, eid("Joint pain")]
    part = GraphIndex.neighborhood(store, seeds, hidden=disputed)
    assert part.pushed_down and not set(disputed) & shown_ids(neighbor_evidence(full, seeds, max_lines=20))
    assert rank_diseases(part, seeds) == rank_diseases(full, seeds)
    for fn in (neighbor_evidence, hykge_chains, path_evidence, weighted_dfs_chains):
        found = fn(part, seeds)  # type: ignore[operator]
        assert _key(found) == _key(fn(full, seeds)), fn.__name__  # type: ignore[operator]
        assert not set(disputed) & shown_ids(found), fn.__name__
    ranked = neighbor_evidence(part, seeds, ranked=True)
    assert _key(ranked) == _key(neighbor_evidence(full, seeds, ranked=True))
    deep = weighted_dfs_chains(part, seeds, n_chains=8, max_depth=5, seed=2)  # completes nodes on the way
    assert _key(deep) == _key(weighted_dfs_chains(full, seeds, n_chains=8, max_depth=5, seed=2))
    # the per-node lists of every node both hold are the same, hidden edges and readings left out
    for i, node in enumerate(part.ids):
        j = full.idx(node)
        assert [part.edge_id[e] for e in part.out_adj[i]] == [full.edge_id[e] for e in full.out_adj[j]]
        assert part.out_weight_total[i] == pytest.approx(full.out_weight_total[j])


def test_a_pushed_down_index_restores_as_the_whole_index_does(stores: Callable[[str], Any]) -> None:
    store = stores("natural")
    disputed = fact_ids("natural", "Measles", "Red eyes")
    part = GraphIndex.neighborhood(store, SYMPTOMS, hidden=disputed)
    clean = GraphIndex.neighborhood(store, SYMPTOMS)
    for name, fn in EXPLORE.items():
        assert _key(fn(part)) != _key(fn(clean)), name
    assert part.set_hidden([]) == 2
    for name, fn in EXPLORE.items():
        assert _key(fn(part)) == _key(fn(clean)), name


# -- the index cache follows the store's disputed set ---------------------------------------------


class _Verdicts:
    """The store side of issue 41 as the cache reads it: a disputed set and its version."""

    def __init__(self) -> None:
        self.disputed: dict[str, str] = {}
        self.version = 0
        self.reads = 0

    def dispute(self, ids: list[str]) -> None:
        self.disputed = dict.fromkeys(ids, "disputed")
        self.version += 1

    def disputed_relations(self) -> dict[str, str]:
        self.reads += 1
        return dict(self.disputed)

    def disputes_version(self) -> int:
        return self.version


def _with_verdicts(store: Any, monkeypatch: pytest.MonkeyPatch) -> _Verdicts:
    verdicts = _Verdicts()
    monkeypatch.setattr(store, "disputed_relations", verdicts.disputed_relations, raising=False)
    monkeypatch.setattr(store, "disputes_version", verdicts.disputes_version, raising=False)
    return verdicts


def test_the_cached_indexes_follow_the_disputed_set_without_a_rebuild(
    stores: Callable[[str], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from kgmind.retrievers.graph_index_cache import get_neighborhood_index

    store = stores("natural")
    verdicts = _with_verdicts(store, monkeypatch)
    full, part = get_graph_index(store), get_neighborhood_index(store, SYMPTOMS)
    assert set(fact_ids("natural", "Measles", "Red eyes")) <= shown_ids(EXPLORE["kgcot"](full))

    verdicts.dispute(fact_ids("natural", "Measles", "Red eyes"))
    assert get_graph_index(store) is full  # hidden in place, not rebuilt
    again = get_neighborhood_index(store, SYMPTOMS)
    assert again is not part and get_neighborhood_index(store, SYMPTOMS) is again  # keyed by the version
    for name, fn in EXPLORE.items():
        assert not set(verdicts.disputed) & shown_ids(fn(full)), name
        assert _key(fn(again)) == _key(fn(full)), name
    reads = verdicts.reads
    get_graph_index(store), get_neighborhood_index(store, [eid("Rash")])
    assert verdicts.reads == reads  # the set is read once per version, not per question

    verdicts.dispute([])  # restored
    assert get_graph_index(store) is full and full.hidden.ids == frozenset()
    assert set(fact_ids("natural", "Measles", "Red eyes")) <= shown_ids(EXPLORE["kgcot"](full))


def test_a_store_that_keeps_no_verdicts_has_nothing_disputed(stores: Callable[[str], Any]) -> None:
    from kgmind.retrievers.graph_index_cache import DisputeSource, disputes_version

    class _Plain:  # an old fake store: the four methods an index needs, nothing about verdicts
        uri = "mem:plain"

        def __init__(self) -> None:
            self.ents, self.rels = kg("natural")

        def iter_entities(self) -> Iterator[Any]:
            return iter(self.ents)

        def iter_relations(self) -> Iterator[Any]:
            return iter(self.rels)

        def relation_schema(self) -> Any:
            return index("natural").schema

        def fingerprint(self) -> str:
            return "1"

        def weights_version(self) -> int:
            return 0

    plain = _Plain()
    assert not isinstance(plain, DisputeSource) and disputes_version(plain) == 0
    gi = get_graph_index(plain)
    assert gi.hidden.ids == frozenset() and gi.num_edges == 2 * len(plain.rels)
