"""Degrees kept in the store (issue 42): right after import, feedback, disputes (``kg flag``) and restore.

On the real LadybugStore; the Neo4j statements are checked at the driver boundary
(``tests/unit/test_neo4j_driver_degrees.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kgmind.models import EDGE_HEAD, EDGE_ID, EDGE_TAIL, Entity, Relation
from kgmind.stores.factory import close_all_stores, open_store
from kgmind.stores.feedback import apply_verdicts, restore_dispute
from kgmind.stores.ladybug import LadybugStore
from kgmind.stores.weights import make_rule
from toy_kg import relation_columns

FLU = Entity(name="Flu", type="disease")
COLD = Entity(name="Cold", type="disease")
FEVER, COUGH, RASH = (Entity(name=n, type="symptom") for n in ("Fever", "Cough", "Rash"))
ASPIRIN = Entity(name="Aspirin", type="drug")
RELS = [
    Relation(head=FLU.id, type="has_symptom", tail=FEVER.id),
    Relation(head=FLU.id, type="has_symptom", tail=COUGH.id),
    Relation(head=COLD.id, type="has_symptom", tail=COUGH.id),
    Relation(head=FLU.id, type="treated_by", tail=ASPIRIN.id),
]
FLU_FEVER = RELS[0].id


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LadybugStore]:
    close_all_stores()
    s = open_store(f"ladybug:{tmp_path / 'kg'}", create=True)
    assert isinstance(s, LadybugStore)
    s.bulk_load([FLU, COLD, FEVER, COUGH, RASH, ASPIRIN], RELS)
    yield s
    close_all_stores()


def counted(store: LadybugStore) -> dict[str, tuple[int, dict[str, tuple[int, int]]]]:
    """The degrees counted from scratch from the store's visible edges (what the kept ones must equal)."""
    hidden = set(store.disputed_relations())
    out: dict[str, tuple[int, dict[str, tuple[int, int]]]] = {}
    for e in store.iter_entities():
        per: dict[str, list[int]] = {}
        for r in store.iter_relations():
            if r.id in hidden:
                continue
            if r.head == e.id:
                per.setdefault(r.type, [0, 0])[0] += 1
            if r.tail == e.id:
                per.setdefault(r.type, [0, 0])[1] += 1
        out[e.id] = (sum(a + b for a, b in per.values()), {t: (a, b) for t, (a, b) in per.items()})
    return out


def kept(store: LadybugStore) -> dict[str, tuple[int, dict[str, tuple[int, int]]]]:
    return store.degrees([e.id for e in store.iter_entities()])


def test_import_writes_every_degree_per_type_and_a_second_import_updates_the_stored_ends(
    store: LadybugStore,
) -> None:
    assert kept(store)[FLU.id] == (3, {"has_symptom": (2, 0), "treated_by": (1, 0)})
    assert kept(store)[COUGH.id] == (2, {"has_symptom": (0, 2)})
    assert kept(store)[RASH.id] == (0, {})
    assert kept(store) == counted(store)
    store.bulk_load([], [Relation(head=COLD.id, type="has_symptom", tail=RASH.id)])
    assert kept(store)[RASH.id] == (1, {"has_symptom": (0, 1)})
    assert kept(store)[COLD.id][0] == 2
    assert kept(store) == counted(store)
    assert sorted(store.degree_values()) == sorted(d for d, _ in counted(store).values())


def test_feedback_moves_weights_not_degrees(store: LadybugStore) -> None:
    before = kept(store)
    store.apply_weight_updates("fb1", "run1", "excellent", [FLU_FEVER], make_rule("excellent"))
    assert store.get_relations([FLU_FEVER])[0].weight != 1.0
    assert kept(store) == before


def test_a_disputed_edge_leaves_its_ends_degrees_and_a_restore_puts_it_back(store: LadybugStore) -> None:
    before = kept(store)
    apply_verdicts(store, "a:N1:right", "a", [(FLU_FEVER, "right")], source="kg flag")
    apply_verdicts(store, "b:N1:wrong", "b", [(FLU_FEVER, "wrong")], source="kg flag")
    assert kept(store) == before  # a flag against a confirmation disputes nothing (DISPUTE_RULE = (1, 1))
    apply_verdicts(store, "c:N1:wrong", "c", [(FLU_FEVER, "wrong")], source="kg flag")
    assert FLU_FEVER in store.disputed_relations()
    assert kept(store)[FLU.id] == (2, {"has_symptom": (1, 0), "treated_by": (1, 0)})
    assert kept(store)[FEVER.id] == (0, {})
    assert kept(store) == counted(store)
    assert restore_dispute(store, FLU_FEVER, source="curator") is True
    assert kept(store) == before


def test_a_store_made_before_degrees_is_counted_when_it_opens(tmp_path: Path) -> None:
    close_all_stores()
    path = tmp_path / "old"
    s = LadybugStore(path)
    s.bulk_load([FLU, FEVER, COUGH], RELS[:2])
    conn = s._write_conn()
    conn.execute("MATCH (e:Entity) SET e.degree = 0, e.degrees = '{}'")
    conn.execute("MATCH (m:Meta {key: 'degrees'}) DELETE m")
    s.close()
    again = LadybugStore(path, create=False)
    try:
        assert again.degrees([FLU.id]) == {FLU.id: (2, {"has_symptom": (2, 0)})}
    finally:
        again.close()


def test_bounded_reads_keep_k_edges_per_node_type_and_direction_heaviest_then_most_specific(
    store: LadybugStore,
) -> None:
    store.apply_weight_updates("fb1", "run1", "excellent", [RELS[1].id], make_rule("excellent"))
    got = store.bounded_edges([FLU.id], 1)
    assert [(n, r[EDGE_ID], side) for n, r, side, _, _ in got] == [
        (FLU.id, RELS[1].id, "out"),  # has_symptom: the heavier of two
        (FLU.id, RELS[3].id, "out"),  # treated_by: its only edge
    ]
    assert [deg for *_, deg, _ in got] == [2, 1]  # the other end's kept degree
    store.reset_weights()
    # equal weights: the more specific end first (Fever, degree 1, before Cough, degree 2)
    assert [r[EDGE_TAIL] for _, r, *_ in store.bounded_edges([FLU.id], 1)] == [FEVER.id, ASPIRIN.id]
    assert [r[EDGE_HEAD] for _, r, *_ in store.bounded_edges([COUGH.id], 5)] == [COLD.id, FLU.id]
    assert store.bounded_edges([COUGH.id], 5, hidden={RELS[1].id})[0][1][EDGE_HEAD] == COLD.id
    assert len(store.bounded_edges([COUGH.id], 5, hidden={RELS[1].id})) == 1


def test_a_columnar_import_counts_degrees_fresh_and_onto_stored_edges(tmp_path: Path) -> None:
    close_all_stores()
    s = LadybugStore(tmp_path / "cols")
    try:
        every = [FLU, COLD, FEVER, COUGH, RASH, ASPIRIN]
        s.bulk_load_columns(every, relation_columns(every, RELS[:3]))  # a fresh store: every degree counted
        assert kept(s)[COUGH.id] == (2, {"has_symptom": (0, 2)})
        assert kept(s) == counted(s)
        # onto stored edges: one already stored (not counted twice), two new
        more = [RELS[0], RELS[3], Relation(head=COLD.id, type="has_symptom", tail=RASH.id)]
        s.bulk_load_columns([], relation_columns(every, more))
        assert kept(s)[FLU.id] == (3, {"has_symptom": (2, 0), "treated_by": (1, 0)})
        assert kept(s)[RASH.id] == (1, {"has_symptom": (0, 1)})
        assert kept(s) == counted(s)
    finally:
        s.close()


def test_a_columnar_import_into_a_store_of_entities_only_counts_the_stored_ends(tmp_path: Path) -> None:
    """No relations stored yet: the load's own counts (a loop in both directions) reach stored ends too."""
    close_all_stores()
    s = LadybugStore(tmp_path / "cols")
    try:
        every = [FLU, COLD, FEVER, COUGH, RASH, ASPIRIN]
        s.bulk_load_columns(every[:4], relation_columns(every[:4], []))  # entities only
        loop = Relation(head=FLU.id, type="related_to", tail=FLU.id)
        s.bulk_load_columns(
            every, relation_columns(every, [*RELS, loop])
        )  # FLU..COUGH stored, RASH, ASPIRIN new
        assert kept(s)[FLU.id] == (5, {"has_symptom": (2, 0), "related_to": (1, 1), "treated_by": (1, 0)})
        assert kept(s)[ASPIRIN.id] == (1, {"treated_by": (0, 1)})
        assert kept(s)[RASH.id] == (0, {})
        assert kept(s) == counted(s)
    finally:
        s.close()
