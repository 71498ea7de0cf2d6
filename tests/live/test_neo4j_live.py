"""Live Neo4j checks of what only a real server shows: schema, labels, Cypher, locking.

Skipped ("NEO4J_URI not set") unless NEO4J_URI, NEO4J_USER and NEO4J_PASSWORD are set.
The full cross-backend behaviour is in tests/contract, which also runs on Neo4j then.
"""

from __future__ import annotations

import pytest

from kgmind.models import Entity, KnowledgeDoc, Relation
from kgmind.stores.neo4j import Neo4jStore
from kgmind.stores.protocol import GraphPath, StoreError
from race_harness import assert_audit_is_serial, plus_one, run_threads

pytestmark = pytest.mark.neo4j_live

FLU = Entity(name="Flu", type="disease", aliases=["Influenza"])
FEVER = Entity(name="Fever", type="symptom")
COUGH = Entity(name="Cough", type="symptom")
PARACETAMOL = Entity(name="Paracetamol", type="medication")
R_FEVER = Relation(head=FLU.id, type="has_symptom", tail=FEVER.id)
R_COUGH = Relation(head=FLU.id, type="has_symptom", tail=COUGH.id, weight=2.0)
R_CURE = Relation(head=PARACETAMOL.id, type="treats", tail=FEVER.id)
DOC = KnowledgeDoc(entity_id=FLU.id, text="Influenza is a viral infection.")


def load(store: Neo4jStore) -> None:
    store.bulk_load([FLU, FEVER, COUGH, PARACETAMOL], [R_FEVER, R_COUGH, R_CURE], [DOC])


def test_import_small_graph_with_type_labels(neo4j_store: Neo4jStore) -> None:
    load(neo4j_store)
    stats = neo4j_store.stats()
    assert stats.entities == {"disease": 1, "symptom": 2, "medication": 1}
    assert stats.relations == {"has_symptom": 2, "treats": 1}
    assert stats.docs_total == 1
    assert neo4j_store.labels_of(FLU.id) == ["Disease", "Entity"]
    assert neo4j_store.find_entities("influenza") == [FLU]
    # a type upgrade swaps the type label
    neo4j_store.bulk_load([Entity(name="fever", type="disease")], [])
    assert neo4j_store.labels_of(FEVER.id) == ["Disease", "Entity"]


def test_failed_import_leaves_nothing(neo4j_store: Neo4jStore) -> None:
    ghost = Relation(head=FLU.id, type="has_symptom", tail="e_missing")
    with pytest.raises(StoreError, match="e_missing"):
        neo4j_store.bulk_load([FLU], [ghost], [DOC])
    assert neo4j_store.stats().entities_total == 0
    assert neo4j_store.stats().docs_total == 0


def test_neighbors_and_paths(neo4j_store: Neo4jStore) -> None:
    load(neo4j_store)
    assert [r.id for r in neo4j_store.neighbors([FLU.id])] == [R_COUGH.id, R_FEVER.id]
    assert [r.id for r in neo4j_store.neighbors([FEVER.id], "in")] == sorted(
        [R_FEVER.id, R_CURE.id], key=lambda rid: {R_FEVER.id: FLU.id, R_CURE.id: PARACETAMOL.id}[rid]
    )
    assert neo4j_store.paths(FLU.id, PARACETAMOL.id, 3) == []
    undirected = neo4j_store.paths(FLU.id, PARACETAMOL.id, 3, directed=False)
    assert undirected == [GraphPath(nodes=[FLU.id, FEVER.id, PARACETAMOL.id], relations=[R_FEVER, R_CURE])]


def test_weight_update_is_audited_and_idempotent(neo4j_store: Neo4jStore) -> None:
    load(neo4j_store)
    fp = neo4j_store.fingerprint()
    changes = neo4j_store.apply_weight_updates("fb-live", "run", "excellent", [R_FEVER.id], plus_one)
    assert [(c.relation_id, c.old_weight, c.new_weight) for c in changes] == [(R_FEVER.id, 1.0, 2.0)]
    assert neo4j_store.apply_weight_updates("fb-live", "run", "excellent", [R_FEVER.id], plus_one) == []
    assert neo4j_store.get_relations([R_FEVER.id])[0].weight == 2.0
    assert neo4j_store.weight_changes("fb-live") == changes
    assert neo4j_store.fingerprint() == fp
    assert neo4j_store.reset_weights() == 2  # R_FEVER (2.0) and R_COUGH (2.0)
    assert neo4j_store.weight_changes() == []


def test_concurrent_feedback_on_one_head_loses_no_update(neo4j_store: Neo4jStore) -> None:
    load(neo4j_store)
    n = 8

    def worker(i: int) -> None:
        target = R_FEVER.id if i % 2 == 0 else R_COUGH.id
        neo4j_store.apply_weight_updates(f"fb-{i}", "run", "excellent", [target], plus_one)

    assert run_threads(worker, n) == []
    weights = {r.id: r.weight for r in neo4j_store.out_edges(FLU.id)}
    assert weights == {R_FEVER.id: 1.0 + n / 2, R_COUGH.id: 2.0 + n / 2}
    assert_audit_is_serial(neo4j_store.weight_changes(), {R_FEVER.id: 1.0, R_COUGH.id: 2.0})


def test_pushed_down_exploration_matches_the_whole_kg_index(neo4j_store: Neo4jStore) -> None:
    """On a real server: per-question indexes read from Neo4j give the evidence of the whole-KG index."""
    from kgmind.importers.demo_store import load_demo
    from kgmind.retrievers.exploration import (
        hykge_chains,
        neighbor_evidence,
        path_evidence,
        weighted_dfs_chains,
    )
    from kgmind.retrievers.graph_index import GraphIndex

    load_demo(neo4j_store)
    full = GraphIndex(neo4j_store.iter_entities(), neo4j_store.iter_relations())
    symptoms = [full.ids[i] for i in range(full.num_nodes) if full.types[i] == "symptom"][:6]
    for seeds in (symptoms[:2], symptoms[2:5], symptoms[5:6]):
        part = GraphIndex.neighborhood(neo4j_store, seeds)
        assert part.num_edges < full.num_edges

        def key(evs: list) -> list:  # type: ignore[type-arg]
            return [(e.text, tuple(e.relation_ids)) for e in evs]

        assert key(neighbor_evidence(part, seeds, ranked=True)) == key(
            neighbor_evidence(full, seeds, ranked=True)
        )
        assert key(path_evidence(part, seeds, max_hops=3)) == key(path_evidence(full, seeds, max_hops=3))
        assert key(hykge_chains(part, seeds, max_hops=3)) == key(hykge_chains(full, seeds, max_hops=3))
        assert key(weighted_dfs_chains(part, seeds, seed=1)) == key(weighted_dfs_chains(full, seeds, seed=1))
