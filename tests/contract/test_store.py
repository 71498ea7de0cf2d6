"""GraphStore contract suite: every backend must give these exact results.

Runs over the `store` fixture (tests/contract/conftest.py): LadybugStore always, Neo4jStore
when NEO4J_URI is set. The graph is the hand-made SmallKG documented in conftest.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from kgmind.models import Entity, KnowledgeDoc, Relation, normalize_name
from kgmind.stores.protocol import GraphPath, GraphStore, StoreError
from race_harness import assert_audit_is_serial, plus_one, run_threads


def _ids(items: Sequence[Any]) -> list[str]:
    return [x.id for x in items]


def _rel_order(rels: Sequence[Relation]) -> list[Relation]:
    return sorted(rels, key=lambda r: (r.head, r.type, -r.weight, r.tail))


def _path_ids(paths: Sequence[GraphPath]) -> set[tuple[tuple[str, ...], tuple[str, ...]]]:
    return {(tuple(p.nodes), tuple(r.id for r in p.relations)) for p in paths}


def _weights(store: GraphStore, ids: Sequence[str]) -> dict[str, float]:
    return {r.id: r.weight for r in store.get_relations(ids)}


# -- loading and merging ------------------------------------------------------------------


def test_protocol_is_implemented(store: GraphStore) -> None:
    assert isinstance(store, GraphStore)
    assert isinstance(store.uri, str) and store.uri


def test_empty_store(store: GraphStore) -> None:
    stats = store.stats()
    assert (stats.entities_total, stats.relations_total, stats.docs_total) == (0, 0, 0)
    assert list(store.iter_entities()) == []
    assert list(store.iter_relations()) == []
    assert store.find_entities("anything") == []
    assert store.weight_changes() == []


def test_bulk_load_report_and_stats(store: GraphStore, kg: Any) -> None:
    report = store.bulk_load(kg.entities.values(), kg.relations.values(), kg.docs.values())
    assert (report.entities, report.relations, report.docs) == (7, 8, 3)
    stats = store.stats()
    assert stats.entities == {"disease": 2, "symptom": 2, "medication": 1, "test": 1, "entity": 1}
    assert stats.relations == {"has_symptom": 4, "need_medication": 1, "need_test": 3}
    assert (stats.entities_total, stats.relations_total, stats.docs_total) == (7, 8, 3)


def test_iter_entities_and_relations_roundtrip(loaded: GraphStore, kg: Any) -> None:
    ents = {e.id: e for e in loaded.iter_entities()}
    assert ents == {e.id: e for e in kg.entities.values()}
    rels = {r.id: r for r in loaded.iter_relations()}
    assert rels == {r.id: r for r in kg.relations.values()}


def test_reload_same_data_is_idempotent(loaded: GraphStore, kg: Any) -> None:
    loaded.bulk_load(kg.entities.values(), kg.relations.values(), kg.docs.values())
    stats = loaded.stats()
    assert (stats.entities_total, stats.relations_total, stats.docs_total) == (7, 8, 3)
    assert {e.id: e for e in loaded.iter_entities()} == {e.id: e for e in kg.entities.values()}


def test_upsert_merges_entities(loaded: GraphStore, kg: Any) -> None:
    a, b, c = kg.entities["A"], kg.entities["B"], kg.entities["C"]
    loaded.bulk_load(
        [
            # same id (normalises alike), lower-priority type, new alias + known alias, description.
            Entity(
                name="heart attack",
                type="symptom",
                aliases=["myocardial infarction", "MI"],
                description="Blocked coronary artery.",
            ),
            # symptom -> disease (higher priority wins).
            Entity(name="chest pain", type="disease", aliases=["thoracic pain"]),
            # a description is only filled when empty.
            Entity(name="Aspirin", type="medication", description="Something else."),
        ],
        [],
    )
    got = {e.id: e for e in loaded.get_entities([a.id, b.id, c.id])}
    assert got[a.id].name == "Heart_Attack"
    assert got[a.id].type == "disease"
    assert got[a.id].aliases == ["MI", "myocardial infarction"]
    assert got[a.id].description == "Blocked coronary artery."
    assert got[b.id].name == "Chest Pain"
    assert got[b.id].type == "disease"
    assert got[b.id].aliases == ["thoracic pain"]
    assert got[c.id].description == "An antiplatelet drug."
    assert loaded.stats().entities_total == 7
    # the new alias is searchable
    assert _ids(loaded.find_entities("Myocardial_Infarction")) == [a.id]


def test_unknown_type_ranks_below_known(store: GraphStore) -> None:
    store.bulk_load([Entity(name="Thing", type="gizmo")], [])
    store.bulk_load([Entity(name="thing", type="entity")], [])
    assert [e.type for e in store.find_entities("thing")] == ["entity"]
    store.bulk_load([Entity(name="THING", type="gadget")], [])
    assert [e.type for e in store.find_entities("thing")] == ["entity"]


def test_duplicates_within_one_load_are_merged(store: GraphStore) -> None:
    x1 = Entity(name="Flu", type="symptom", aliases=["grippe"])
    x2 = Entity(name="flu", type="disease", description="Influenza.")
    y = Entity(name="Fever", type="symptom")
    r = Relation(head=x1.id, type="has_symptom", tail=y.id)
    report = store.bulk_load([x1, x2, y], [r, r.model_copy()])
    assert (report.entities, report.relations) == (2, 1)
    (flu,) = store.find_entities("FLU")
    assert (flu.name, flu.type, flu.aliases, flu.description) == ("Flu", "disease", ["grippe"], "Influenza.")
    assert store.stats().relations_total == 1


def test_existing_relation_keeps_weight(loaded: GraphStore, kg: Any) -> None:
    ab = kg.relations["AB"]
    loaded.apply_weight_updates("fb-keep", "run", "excellent", [ab.id], lambda s, ids: {ab.id: 3.0})
    loaded.bulk_load([], [ab.model_copy(update={"weight": 7.0})])
    assert _weights(loaded, [ab.id]) == {ab.id: 3.0}
    assert loaded.stats().relations_total == 8


def test_relation_to_unknown_entity_is_rejected_atomically(loaded: GraphStore, kg: Any) -> None:
    before = loaded.fingerprint()
    newcomer = Entity(name="Newcomer", type="disease")
    ghost_rel = Relation(head=newcomer.id, type="has_symptom", tail="e_not_there")
    with pytest.raises(StoreError):
        loaded.bulk_load([newcomer], [ghost_rel], [KnowledgeDoc(entity_id=newcomer.id, text="x")])
    assert loaded.find_entities("Newcomer") == []
    stats = loaded.stats()
    assert (stats.entities_total, stats.relations_total, stats.docs_total) == (7, 8, 3)
    assert loaded.fingerprint() == before


def test_relation_may_point_to_stored_entity(loaded: GraphStore, kg: Any) -> None:
    n = Entity(name="Nausea", type="symptom")
    r = Relation(head=kg.eid("A"), type="has_symptom", tail=n.id)
    loaded.bulk_load([n], [r])
    assert r.id in _ids(loaded.out_edges(kg.eid("A")))


# -- lookups ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "query",
    [
        "Heart_Attack",
        "heart attack",
        "HEART ATTACK",
        "  heart   attack ",
        "ｈｅａｒｔ＿ａｔｔａｃｋ",
        "mi",
        "ＭＩ",
    ],
)
def test_find_entities_by_name_and_alias_variants(loaded: GraphStore, kg: Any, query: str) -> None:
    assert _ids(loaded.find_entities(query)) == [kg.eid("A")]


def test_find_entities_full_width_name(loaded: GraphStore, kg: Any) -> None:
    assert _ids(loaded.find_entities("abc_syndrome")) == [kg.eid("G")]
    assert normalize_name(loaded.find_entities("ABC syndrome")[0].name) == "abc syndrome"


def test_find_entities_misses(loaded: GraphStore) -> None:
    assert loaded.find_entities("heart") == []
    assert loaded.find_entities("") == []
    assert loaded.find_entities("attack heart") == []


def test_get_entities_order_and_unknown(loaded: GraphStore, kg: Any) -> None:
    got = loaded.get_entities([kg.eid("C"), "e_unknown", kg.eid("A")])
    assert _ids(got) == [kg.eid("C"), kg.eid("A")]
    assert got[0] == kg.entities["C"]
    assert loaded.get_entities([]) == []


# -- neighbors ----------------------------------------------------------------------------


def test_neighbors_out(loaded: GraphStore, kg: Any) -> None:
    got = loaded.neighbors([kg.eid("A")])
    # has_symptom E (2.0) before has_symptom B (1.0); then need_medication, need_test
    assert _ids(got) == [kg.rid("AE"), kg.rid("AB"), kg.rid("AC"), kg.rid("AD")]
    assert got[0] == kg.relations["AE"]


def test_neighbors_in(loaded: GraphStore, kg: Any) -> None:
    got = loaded.neighbors([kg.eid("B")], direction="in")
    expected = _rel_order([kg.relations["AB"], kg.relations["GB"]])
    assert _ids(got) == _ids(expected)


def test_neighbors_both_and_many_ids(loaded: GraphStore, kg: Any) -> None:
    got = loaded.neighbors([kg.eid("B"), kg.eid("D")], direction="both")
    expected = _rel_order([kg.relations[k] for k in ("AB", "GB", "BD", "ED", "AD")])
    assert _ids(got) == _ids(expected)
    assert len(set(_ids(got))) == len(got)  # B->D touches both ids but is listed once


def test_neighbors_type_filter_and_limit(loaded: GraphStore, kg: Any) -> None:
    a = kg.eid("A")
    assert _ids(loaded.neighbors([a], relation_types=["need_test"])) == [kg.rid("AD")]
    assert _ids(loaded.neighbors([a], relation_types=["need_test", "has_symptom"])) == [
        kg.rid("AE"),
        kg.rid("AB"),
        kg.rid("AD"),
    ]
    assert loaded.neighbors([a], relation_types=[]) == []
    assert _ids(loaded.neighbors([a], limit=2)) == [kg.rid("AE"), kg.rid("AB")]
    assert loaded.neighbors([kg.eid("F")], direction="both") == []
    assert loaded.neighbors(["e_unknown"]) == []
    assert loaded.neighbors([]) == []


def test_edges_between_two_sets_either_way(loaded: GraphStore, kg: Any) -> None:
    """The edges a cut hub's votes are read from (issue 42): both stored directions, each edge once."""
    between = loaded.edges_between  # type: ignore[attr-defined]  # a bounded-read backend's statement
    got = between([kg.eid("B"), "no-such-id"], [kg.eid(x) for x in "ADG"])
    assert sorted(e.id for e in got) == sorted(kg.rid(k) for k in ("AB", "GB", "BD"))
    ab = next(e for e in got if e.id == kg.rid("AB"))
    assert (ab.head, ab.type, ab.tail, ab.weight) == (kg.eid("A"), "has_symptom", kg.eid("B"), 1.0)
    both = between([kg.eid("B"), kg.eid("D")], [kg.eid("B"), kg.eid("D")])
    assert [e.id for e in both] == [kg.rid("BD")]
    assert between([], [kg.eid("A")]) == [] and between([kg.eid("A")], []) == []


def test_out_edges_weights(loaded: GraphStore, kg: Any) -> None:
    got = loaded.out_edges(kg.eid("A"))
    assert {r.id: r.weight for r in got} == {
        kg.rid("AB"): 1.0,
        kg.rid("AE"): 2.0,
        kg.rid("AC"): 1.0,
        kg.rid("AD"): 0.5,
    }
    assert all(r.head == kg.eid("A") for r in got)
    assert loaded.out_edges(kg.eid("D")) == []


def test_get_relations_order_and_unknown(loaded: GraphStore, kg: Any) -> None:
    got = loaded.get_relations([kg.rid("ED"), "r_unknown", kg.rid("AB")])
    assert got == [kg.relations["ED"], kg.relations["AB"]]
    assert loaded.get_relations([]) == []


# -- paths --------------------------------------------------------------------------------


def test_paths_directed_single(loaded: GraphStore, kg: Any) -> None:
    got = loaded.paths(kg.eid("A"), kg.eid("D"), max_hops=3)
    assert _path_ids(got) == {((kg.eid("A"), kg.eid("D")), (kg.rid("AD"),))}


def test_paths_directed_all_shortest(loaded: GraphStore, kg: Any) -> None:
    g, b, e, d = kg.eid("G"), kg.eid("B"), kg.eid("E"), kg.eid("D")
    got = loaded.paths(g, d, max_hops=4)
    assert _path_ids(got) == {
        ((g, b, d), (kg.rid("GB"), kg.rid("BD"))),
        ((g, e, d), (kg.rid("GE"), kg.rid("ED"))),
    }
    for p in got:
        assert len(p.nodes) == len(p.relations) + 1
        assert all(r.head == p.nodes[i] and r.tail == p.nodes[i + 1] for i, r in enumerate(p.relations))


def test_paths_limit_and_hop_bound(loaded: GraphStore, kg: Any) -> None:
    g, d = kg.eid("G"), kg.eid("D")
    one = loaded.paths(g, d, max_hops=4, limit=1)
    assert len(one) == 1
    assert _path_ids(one) <= _path_ids(loaded.paths(g, d, max_hops=4))
    assert loaded.paths(g, d, max_hops=1) == []


def test_paths_directed_none_found(loaded: GraphStore, kg: Any) -> None:
    assert loaded.paths(kg.eid("C"), kg.eid("B"), max_hops=5) == []
    assert loaded.paths(kg.eid("A"), kg.eid("F"), max_hops=5, directed=False) == []
    assert loaded.paths(kg.eid("A"), "e_unknown", max_hops=3) == []


def test_paths_undirected(loaded: GraphStore, kg: Any) -> None:
    a, b, c, d, e, g = (kg.eid(x) for x in "ABCDEG")
    got = loaded.paths(c, b, max_hops=3, directed=False)
    assert _path_ids(got) == {((c, a, b), (kg.rid("AC"), kg.rid("AB")))}
    # the first edge is walked against its direction
    assert got[0].relations[0].tail == got[0].nodes[0]
    got = loaded.paths(b, e, max_hops=2, directed=False)
    assert _path_ids(got) == {
        ((b, a, e), (kg.rid("AB"), kg.rid("AE"))),
        ((b, g, e), (kg.rid("GB"), kg.rid("GE"))),
        ((b, d, e), (kg.rid("BD"), kg.rid("ED"))),
    }
    assert len(loaded.paths(b, e, max_hops=2, directed=False, limit=2)) == 2


# -- docs ---------------------------------------------------------------------------------


def test_docs_for_and_get_docs(loaded: GraphStore, kg: Any) -> None:
    got = loaded.docs_for([kg.eid("A")])
    assert sorted(_ids(got)) == sorted([kg.docs["A1"].id, kg.docs["A2"].id])
    assert {d.text for d in got} == {kg.docs["A1"].text, kg.docs["A2"].text}
    assert sorted(_ids(loaded.docs_for([kg.eid("A"), kg.eid("C")]))) == sorted(d.id for d in kg.docs.values())
    assert loaded.docs_for([kg.eid("B")]) == []
    got = loaded.get_docs([kg.docs["C1"].id, "d_unknown", kg.docs["A1"].id])
    assert got == [kg.docs["C1"], kg.docs["A1"]]


# -- fingerprint --------------------------------------------------------------------------


def test_fingerprint_changes_on_load_not_on_weights(store: GraphStore, kg: Any) -> None:
    empty = store.fingerprint()
    store.bulk_load(kg.entities.values(), kg.relations.values(), kg.docs.values())
    loaded_fp = store.fingerprint()
    assert loaded_fp != empty
    assert store.fingerprint() == loaded_fp  # stable when nothing happens
    ab = kg.rid("AB")
    store.apply_weight_updates("fb-fp", "run", "excellent", [ab], lambda s, ids: {ab: 1.7})
    assert store.fingerprint() == loaded_fp
    store.reset_weights()
    assert store.fingerprint() == loaded_fp
    n = Entity(name="Nausea", type="symptom")
    store.bulk_load([n], [Relation(head=kg.eid("A"), type="has_symptom", tail=n.id)])
    assert store.fingerprint() not in (loaded_fp, empty)
    after_add = store.fingerprint()
    store.clear()
    assert store.fingerprint() != after_add


def test_weights_version_counts_weight_commits_only(store: GraphStore, kg: Any) -> None:
    start = store.weights_version()
    store.bulk_load(kg.entities.values(), kg.relations.values(), kg.docs.values())
    assert store.weights_version() == start  # loading is the fingerprint's business
    ab, ae = kg.rid("AB"), kg.rid("AE")
    store.apply_weight_updates("fb-v1", "run", "excellent", [ab], lambda s, ids: {ab: 1.7})
    assert store.weights_version() == start + 1
    store.apply_weight_updates("fb-v1", "run", "excellent", [ab], lambda s, ids: {ab: 3.0})  # a repeat
    store.apply_weight_updates("fb-v2", "run", "excellent", [ae], lambda s, ids: {ae: 2.0})  # no change
    with pytest.raises(StoreError):
        store.apply_weight_updates("fb-v3", "run", "poor", [ab, "r-unknown"], lambda s, ids: {ab: 0.5})
    assert store.weights_version() == start + 1  # nothing committed, nothing counted
    store.apply_weight_updates("fb-v4", "run", "poor", [ab], lambda s, ids: {ab: 0.5})
    assert store.weights_version() == start + 2
    store.reset_weights()
    assert store.weights_version() == start + 3


# -- feedback -----------------------------------------------------------------------------


def test_apply_weight_updates_reads_siblings_and_audits(loaded: GraphStore, kg: Any) -> None:
    ab, ae, ac, ad = kg.rid("AB"), kg.rid("AE"), kg.rid("AC"), kg.rid("AD")
    gb = kg.rid("GB")
    seen: dict[str, Any] = {}

    def rule(siblings: Mapping[str, Sequence[tuple[str, float]]], ids: Sequence[str]) -> dict[str, float]:
        seen["siblings"] = {h: sorted(v) for h, v in siblings.items()}
        seen["ids"] = list(ids)
        return {ab: 1.5, ae: 2.0, gb: 0.25}  # ae unchanged -> no audit row

    changes = loaded.apply_weight_updates("fb-1", "run-1", "excellent", [ab, gb], rule)
    assert seen["ids"] == [ab, gb]
    assert seen["siblings"] == {
        kg.eid("A"): sorted([(ab, 1.0), (ae, 2.0), (ac, 1.0), (ad, 0.5)]),
        kg.eid("G"): sorted([(gb, 1.0), (kg.rid("GE"), 1.0)]),
    }
    assert {(c.relation_id, c.old_weight, c.new_weight) for c in changes} == {(ab, 1.0, 1.5), (gb, 1.0, 0.25)}
    assert all((c.feedback_id, c.run_id, c.rating) == ("fb-1", "run-1", "excellent") for c in changes)
    assert _weights(loaded, [ab, ae, gb]) == {ab: 1.5, ae: 2.0, gb: 0.25}
    audit = loaded.weight_changes("fb-1")
    assert sorted(audit, key=lambda c: c.relation_id) == sorted(changes, key=lambda c: c.relation_id)
    for c in audit:
        assert c.at.endswith("+00:00") or c.at.endswith("Z")


def test_apply_weight_updates_is_idempotent(loaded: GraphStore, kg: Any) -> None:
    ab = kg.rid("AB")

    def double(siblings: Mapping[str, Sequence[tuple[str, float]]], ids: Sequence[str]) -> dict[str, float]:
        return {rid: w * 2 for edges in siblings.values() for rid, w in edges if rid in ids}

    first = loaded.apply_weight_updates("fb-same", "run", "excellent", [ab], double)
    second = loaded.apply_weight_updates("fb-same", "run", "excellent", [ab], double)
    assert [c.new_weight for c in first] == [2.0]
    assert second == []
    assert _weights(loaded, [ab]) == {ab: 2.0}
    assert len(loaded.weight_changes("fb-same")) == 1


def test_rule_that_raises_changes_nothing(loaded: GraphStore, kg: Any) -> None:
    ab = kg.rid("AB")

    def boom(siblings: Mapping[str, Sequence[tuple[str, float]]], ids: Sequence[str]) -> dict[str, float]:
        raise ValueError("rule failed")

    before = {r.id: r.weight for r in loaded.iter_relations()}
    with pytest.raises(StoreError):
        loaded.apply_weight_updates("fb-boom", "run", "poor", [ab], boom)
    assert {r.id: r.weight for r in loaded.iter_relations()} == before
    assert loaded.weight_changes() == []
    # the feedback id was not consumed: a later good attempt applies
    assert len(loaded.apply_weight_updates("fb-boom", "run", "poor", [ab], lambda s, i: {ab: 0.5})) == 1


@pytest.mark.parametrize("bad", [0.0, -1.0, math.nan, math.inf])
def test_invalid_new_weight_changes_nothing(loaded: GraphStore, kg: Any, bad: float) -> None:
    ab, ac = kg.rid("AB"), kg.rid("AC")
    with pytest.raises(StoreError):
        loaded.apply_weight_updates("fb-bad", "run", "poor", [ab], lambda s, i: {ac: 3.0, ab: bad})
    assert _weights(loaded, [ab, ac]) == {ab: 1.0, ac: 1.0}
    assert loaded.weight_changes() == []


def test_unknown_relation_id_changes_nothing(loaded: GraphStore, kg: Any) -> None:
    ab = kg.rid("AB")
    with pytest.raises(StoreError):
        loaded.apply_weight_updates("fb-unknown", "run", "poor", [ab, "r_unknown"], lambda s, i: {ab: 3.0})
    assert _weights(loaded, [ab]) == {ab: 1.0}
    assert loaded.weight_changes() == []


def test_weight_changes_oldest_first_and_filter(loaded: GraphStore, kg: Any) -> None:
    ab, bd = kg.rid("AB"), kg.rid("BD")
    loaded.apply_weight_updates("fb-a", "run-a", "excellent", [ab], lambda s, i: {ab: 2.0})
    loaded.apply_weight_updates("fb-b", "run-b", "poor", [bd], lambda s, i: {bd: 0.5})
    loaded.apply_weight_updates("fb-c", "run-c", "excellent", [ab], lambda s, i: {ab: 4.0})
    all_rows = loaded.weight_changes()
    assert [(c.feedback_id, c.relation_id, c.old_weight, c.new_weight) for c in all_rows] == [
        ("fb-a", ab, 1.0, 2.0),
        ("fb-b", bd, 1.0, 0.5),
        ("fb-c", ab, 2.0, 4.0),
    ]
    assert [c.rating for c in all_rows] == ["excellent", "poor", "excellent"]
    assert [c.feedback_id for c in loaded.weight_changes("fb-b")] == ["fb-b"]
    assert loaded.weight_changes("fb-none") == []


def test_reset_weights(loaded: GraphStore, kg: Any) -> None:
    ab, bd = kg.rid("AB"), kg.rid("BD")
    loaded.apply_weight_updates("fb-r", "run", "excellent", [ab, bd], lambda s, i: {ab: 2.0, bd: 3.0})
    # AE (2.0), AD (0.5), AB and BD differ from 1.0
    assert loaded.reset_weights() == 4
    assert {r.weight for r in loaded.iter_relations()} == {1.0}
    assert loaded.weight_changes() == []
    assert loaded.reset_weights() == 0


def test_concurrent_feedback_has_no_lost_updates(loaded: GraphStore, kg: Any) -> None:
    ab, ae = kg.rid("AB"), kg.rid("AE")
    n_threads, per_thread = 4, 5

    def worker(t: int) -> None:
        for i in range(per_thread):
            target = ab if (t + i) % 2 == 0 else ae  # siblings sharing head A
            loaded.apply_weight_updates(f"fb-{t}-{i}", "run", "excellent", [target], plus_one)

    assert run_threads(worker, n_threads) == []
    n_ab = sum(1 for t in range(n_threads) for i in range(per_thread) if (t + i) % 2 == 0)
    n_ae = n_threads * per_thread - n_ab
    assert _weights(loaded, [ab, ae]) == {ab: 1.0 + n_ab, ae: 2.0 + n_ae}
    rows = loaded.weight_changes()
    assert len(rows) == n_threads * per_thread
    assert_audit_is_serial(rows, {ab: 1.0, ae: 2.0})


def test_concurrent_readers(loaded: GraphStore, kg: Any) -> None:
    a = kg.eid("A")
    expected = _ids(loaded.neighbors([a]))
    results: list[bool] = []

    def reader(_k: int) -> None:
        for _ in range(10):
            results.append(_ids(loaded.neighbors([a])) == expected)
            results.append(_ids(loaded.find_entities("mi")) == [a])

    assert run_threads(reader, 4) == []
    assert results and all(results)


# -- clearing and persistence -------------------------------------------------------------


def test_clear(loaded: GraphStore, kg: Any) -> None:
    ab = kg.rid("AB")
    loaded.apply_weight_updates("fb-clear", "run", "excellent", [ab], lambda s, i: {ab: 2.0})
    loaded.clear()
    stats = loaded.stats()
    assert (stats.entities_total, stats.relations_total, stats.docs_total) == (0, 0, 0)
    assert loaded.weight_changes() == []
    assert loaded.find_entities("mi") == []
    # usable after clearing
    loaded.bulk_load(kg.entities.values(), kg.relations.values())
    assert loaded.stats().relations_total == 8


def test_persistence_across_reopen(backend: str, tmp_path: Any, kg: Any) -> None:
    if backend != "ladybug":
        pytest.skip("persistence across reopen is checked for the embedded backend only")
    from kgmind.stores.ladybug import LadybugStore

    path = str(tmp_path / "persist")
    s1 = LadybugStore(path)
    s1.bulk_load(kg.entities.values(), kg.relations.values(), kg.docs.values())
    ab = kg.rid("AB")
    s1.apply_weight_updates("fb-p", "run", "excellent", [ab], lambda s, i: {ab: 2.5})
    fp = s1.fingerprint()
    s1.close()
    s2 = LadybugStore(path)
    try:
        assert s2.fingerprint() == fp
        assert s2.stats().relations_total == 8
        assert _weights(s2, [ab]) == {ab: 2.5}
        assert len(s2.weight_changes("fb-p")) == 1
        assert _ids(s2.find_entities("mi")) == [kg.eid("A")]
        assert s2.apply_weight_updates("fb-p", "run", "excellent", [ab], lambda s, i: {ab: 9.0}) == []
    finally:
        s2.close()
