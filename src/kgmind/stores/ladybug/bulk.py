"""LadybugDB's columnar bulk load (:mod:`kgmind.stores.columns`): relations ``COPY``-ed a batch at a time.

All batches are copied inside the caller's one write transaction, so the load stays all or
nothing, while Python holds one batch of strings at a time (LadybugDB keeps the uncommitted
rows in its buffer pool, about 250 bytes a relation, until the commit).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import pyarrow as pa

from kgmind.stores.base import unknown_endpoints_error
from kgmind.stores.columns import RelationBatch, RelationColumns
from kgmind.stores.ladybug import queries as q

__all__ = ["COPY_BATCH", "REL_SCHEMA", "copy_relations", "missing_endpoints", "relation_table"]

#: Relations per ``COPY`` (a batch as Python strings is about 150 MB).
COPY_BATCH = 500_000

#: Columns of the Arrow table that :data:`~kgmind.stores.ladybug.queries.COPY_RELATIONS` reads.
REL_SCHEMA = pa.schema(
    [
        ("from", pa.string()),
        ("to", pa.string()),
        ("id", pa.string()),
        ("type", pa.string()),
        ("weight", pa.float64()),
        ("source", pa.string()),
    ]
)


def relation_table(batch: RelationBatch, stored: Collection[str] = ()) -> pa.Table:
    """The Arrow table of a batch, less the relations whose id is in ``stored`` (they keep their weight)."""
    keep = [i for i, rid in enumerate(batch.ids) if rid not in stored] if stored else None

    def pick(col: list[Any]) -> list[Any]:
        return col if keep is None else [col[i] for i in keep]

    n = len(batch.ids) if keep is None else len(keep)
    return pa.table(
        {
            "from": pick(batch.heads),
            "to": pick(batch.tails),
            "id": pick(batch.ids),
            "type": pick(batch.types),
            "weight": pick(batch.weights),
            "source": pa.array([""] * n, pa.string()),
        },
        schema=REL_SCHEMA,
    )


def missing_endpoints(rows: Any, relations: RelationColumns, loaded: Mapping[str, object]) -> list[str]:
    """The endpoint ids of ``relations`` that are neither ``loaded`` nor stored, sorted.

    ``rows(query, params)`` runs a read in the caller's connection.
    """
    others = sorted(set(relations.entity_ids) - loaded.keys())
    if not others:
        return []
    stored = {r[0] for r in rows(q.GET_ENTITIES, {"ids": others})}
    return [e for e in others if e not in stored]


def copy_relations(
    conn: Any, relations: RelationColumns, stored: Collection[str], batch: int = COPY_BATCH
) -> int:
    """Copy every relation not in ``stored`` into ``REL`` (``COPY``), a batch at a time; returns how many."""
    written = 0
    for b in relations.batches(batch):
        table = relation_table(b, stored)
        if table.num_rows:
            conn.execute(q.COPY_RELATIONS, {"data": table})
            written += table.num_rows
    return written


def check_endpoints(rows: Any, relations: RelationColumns, loaded: Mapping[str, object]) -> None:
    """Raise when an endpoint is neither loaded nor stored (before the transaction: nothing written).

    Raises:
        StoreError: Unknown endpoints (the first few named).
    """
    missing = missing_endpoints(rows, relations, loaded)
    if missing:
        raise unknown_endpoints_error(missing)
