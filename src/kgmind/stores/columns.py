"""Relations as columns: what a bulk load of millions of edges hands a store instead of objects.

A :class:`~kgmind.models.Relation` costs about 500 bytes in Python; a KG of 10M relations as
objects does not fit a worker. :class:`RelationColumns` holds them as integer arrays over an
entity-id table and a relation-type table (about 20 bytes an edge), deduplicated, and yields
them in row batches with the ids kgmind derives (:func:`kgmind.models.relation_id`). A store
that loads columns natively (LadybugDB: ``COPY`` of each batch, one transaction) never holds
more than one batch as Python strings; :func:`load_columns` gives any other store the objects.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from kgmind.models import Entity, Relation, relation_id
from kgmind.stores.degrees import Degrees
from kgmind.stores.protocol import LoadReport

__all__ = ["ColumnLoader", "RelationBatch", "RelationColumns", "load_columns"]


@dataclass(frozen=True)
class RelationBatch:
    """Rows ``a:z`` of a :class:`RelationColumns` as strings, the shape a bulk writer takes."""

    heads: list[str]
    ids: list[str]
    types: list[str]
    tails: list[str]
    weights: list[float]


@dataclass(frozen=True)
class RelationColumns:
    """Distinct relations ``entity_ids[heads[i]] -[type_names[types[i]]]-> entity_ids[tails[i]]``.

    Attributes:
        entity_ids: Entity id by index.
        heads: Head index per relation (int32).
        types: Relation-type index per relation (int32).
        tails: Tail index per relation (int32).
        weights: Weight per relation (float64, finite, > 0).
        type_names: Relation type by index (validated types).
    """

    entity_ids: Sequence[str]
    heads: np.ndarray
    types: np.ndarray
    tails: np.ndarray
    weights: np.ndarray
    type_names: Sequence[str]

    def __len__(self) -> int:
        return len(self.heads)

    def batch(self, a: int, z: int) -> RelationBatch:
        """Rows ``a:z`` as strings, with their relation ids."""
        ids, names = self.entity_ids, self.type_names
        heads = [ids[h] for h in self.heads[a:z].tolist()]
        tails = [ids[t] for t in self.tails[a:z].tolist()]
        types = [names[r] for r in self.types[a:z].tolist()]
        rel_ids = [relation_id(h, r, t) for h, r, t in zip(heads, types, tails, strict=True)]
        return RelationBatch(heads, rel_ids, types, tails, self.weights[a:z].tolist())

    def batches(self, size: int) -> Iterator[RelationBatch]:
        """Every row, ``size`` at a time."""
        for a in range(0, len(self), size):
            yield self.batch(a, min(len(self), a + size))

    def degrees(self) -> Degrees:
        """Per entity id and relation type, ``[out, in]`` of these relations (:mod:`kgmind.stores.degrees`).

        Counted on the arrays, so a 10M-relation import into an empty store gives its
        entities their degrees without the store counting its uncommitted edges.
        Entities no relation touches are left out.
        """
        n_types = max(len(self.type_names), 1)
        size = len(self.entity_ids) * n_types
        sides = [
            np.bincount(ends.astype(np.int64) * n_types + self.types, minlength=size)
            for ends in (self.heads, self.tails)
        ]
        out: Degrees = {}
        ids, names = self.entity_ids, self.type_names
        for key in np.flatnonzero(sides[0] + sides[1]).tolist():
            node, rtype = divmod(key, n_types)
            out.setdefault(ids[node], {})[names[rtype]] = [int(sides[0][key]), int(sides[1][key])]
        return out

    def relations(self, size: int = 100_000) -> Iterator[Relation]:
        """Every row as a :class:`Relation` (for a store without a columnar load)."""
        for b in self.batches(size):
            for h, rid, r, t, w in zip(b.heads, b.ids, b.types, b.tails, b.weights, strict=True):
                yield Relation.model_construct(id=rid, head=h, type=r, tail=t, weight=w, source="")


@runtime_checkable
class ColumnLoader(Protocol):
    """A store that bulk-loads relations as columns (all of it lands or none)."""

    def bulk_load_columns(self, entities: Iterable[Entity], relations: RelationColumns) -> LoadReport:
        """Upsert ``entities`` and ``relations`` as :meth:`GraphStore.bulk_load` does, in one unit."""
        ...


def load_columns(store: object, entities: Iterable[Entity], relations: RelationColumns) -> LoadReport:
    """Load through the store's columnar path when it has one, else its ``bulk_load`` (same result).

    Raises:
        StoreError: The store rejected the load (nothing written).
    """
    if isinstance(store, ColumnLoader):
        return store.bulk_load_columns(entities, relations)
    report: LoadReport = store.bulk_load(entities, relations.relations())  # type: ignore[attr-defined]
    return report
