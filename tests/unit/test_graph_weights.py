"""Weight snapshots of a graph index: an exploration call keeps the weights it started with."""

from __future__ import annotations

import numpy as np
import pytest

from kgmind.models import Entity, Relation, entity_id
from kgmind.relations import RelationSchema
from kgmind.retrievers.graph_index import GraphIndex


def _rel(h: str, t: str, w: float = 1.0) -> Relation:
    return Relation(head=entity_id(h), type="r", tail=entity_id(t), weight=w)


class _HoodStore:
    uri = "mem:hood"

    def __init__(self, relations: list[Relation]) -> None:
        self.relations = relations

    def get_entities(self, ids: list[str]) -> list[Entity]:
        names = {r.head for r in self.relations} | {r.tail for r in self.relations}
        return [Entity(name=i.split(":", 1)[-1], id=i) for i in sorted(names) if i in ids]

    def neighbors(self, ids: list[str], direction: str) -> list[Relation]:
        return [r for r in self.relations if r.head in ids or r.tail in ids]

    def relation_schema(self) -> RelationSchema:
        return RelationSchema()  # one untyped relation "r": role other


def test_a_snapshot_keeps_its_weights_while_updates_are_published() -> None:
    gi = GraphIndex([], [_rel("A", "B", 1.0), _rel("A", "C", 3.0)], reverse_readings=False)
    snap = gi.weight_snapshot()
    a = gi.idx(entity_id("A"))
    assert gi.set_weights([(_rel("A", "B").id, 2.0), ("unknown", 9.0)]) == 1
    assert snap.weights.tolist() == [1.0, 3.0] and snap.totals[a] == 4.0  # the call's view
    assert gi.weights.tolist() == [2.0, 3.0] and gi.out_weight_total[a] == 5.0  # the next call's
    assert not gi.weights.flags.writeable and not snap.totals.flags.writeable  # published states never change
    with pytest.raises(ValueError):
        gi.weights[0] = 7.0


def test_a_snapshot_of_a_pushed_down_index_takes_the_edges_loaded_later() -> None:
    store = _HoodStore([_rel("A", "B", 1.0), _rel("B", "C", 2.0), _rel("C", "D", 4.0), _rel("C", "E", 1.0)])
    gi = GraphIndex.neighborhood(store, [entity_id("A")], complete_depth=0, reverse_readings=False)  # type: ignore[arg-type]
    snap = gi.weight_snapshot()
    loaded = gi.num_edges
    gi.set_weights([(_rel("A", "B").id, 5.0)])  # published while the call runs
    leaving = gi.out_array(gi.idx(entity_id("B")))  # completes B: loads B -> C
    c = gi.idx(entity_id("C"))
    gi.out_array(c)  # completes C: loads C -> D, C -> E
    assert gi.num_edges > loaded
    w, totals = snap.weights, snap.totals
    assert w[gi.edge_index_of[_rel("A", "B").id]] == 1.0  # still the call's weight
    assert float(w[leaving].sum()) == totals[gi.idx(entity_id("B"))] == 2.0
    assert float(w[gi.out_array(c)].sum()) == pytest.approx(float(totals[c])) == 5.0
    assert gi.weight(_rel("A", "B").id) == 5.0
    sums = np.bincount(np.asarray(gi.edge_head), weights=gi.weights, minlength=gi.num_nodes)
    assert np.allclose(sums, gi.out_weight_total)
