"""The lean whole-KG build (issue 42): no per-edge id strings kept while building, scans read in chunks.

A relation id read again is found among equal id hashes after the read (the first reading
kept, the explicit ids of later edges renumbered); LadybugDB's relation scan gives the same
relations, in the same order, whatever its chunk size.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kgmind.models import Entity, Relation
from kgmind.retrievers.graph_edges import repeated_edges
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.stores.factory import close_all_stores, open_store
from kgmind.stores.ladybug import rows


def test_a_repeated_id_keeps_its_first_reading_and_later_ids_move_down() -> None:
    a, b, c, d = (Entity(name=n) for n in "ABCD")
    first = Relation(id="x-1", head=a.id, type="r", tail=b.id, weight=2.0)
    again = Relation(id="x-1", head=c.id, type="s", tail=d.id, weight=5.0)  # same id, other edge
    derived = Relation(head=b.id, type="r", tail=c.id)
    last = Relation(id="x-2", head=c.id, type="r", tail=d.id, weight=3.0)
    gi = GraphIndex([a, b, c, d], [first, derived, again, derived, last], reverse_readings=False)
    assert [gi.edge_id[e] for e in range(gi.num_edges)] == ["x-1", derived.id, "x-2"]
    assert gi.edge_id.explicit == {0: "x-1", 2: "x-2"}
    assert list(gi.weights) == [2.0, 1.0, 3.0] and gi.weight("x-2") == 3.0
    assert [gi.edge_type[e] for e in range(3)] == ["r", "r", "r"]
    assert gi.edge_index_of["x-1"] == 0 and gi.edge_index_of["x-2"] == 2
    assert [list(gi.out_adj[gi.idx(n.id)]) for n in (a, b, c, d)] == [[0], [1], [2], []]


def test_equal_hashes_of_different_ids_are_kept() -> None:
    a, b = Entity(name="A"), Entity(name="B")
    gi = GraphIndex([a, b], [Relation(id=f"id{i}", head=a.id, type="r", tail=b.id) for i in range(3)])
    import numpy as np

    collide = np.array([7, 7, 7], dtype=np.int64)  # as if every id hashed alike
    assert repeated_edges(collide, gi).tolist() == []
    gi.edge_id.explicit[2] = "id0"  # now the third edge repeats the first id
    assert repeated_edges(collide, gi).tolist() == [2]


def test_relation_scan_in_chunks_gives_every_relation_in_id_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_store(f"ladybug:{tmp_path}/kg", create=True)
    try:
        ents = [Entity(name=f"n{i}") for i in range(12)]
        rels = [Relation(head=ents[i].id, type="r", tail=ents[(i * 5) % 12].id) for i in range(12)]
        store.bulk_load(ents, rels)
        whole = [r.model_dump() for r in store.iter_relations()]
        monkeypatch.setattr(rows, "SCAN_CHUNK", 5)
        chunked = [r.model_dump() for r in store.iter_relations()]
        assert chunked == whole and len(whole) == 12
        assert [r["id"] for r in whole] == sorted(r.id for r in rels)
        store.clear()
        assert list(store.iter_relations()) == []
    finally:
        close_all_stores()
