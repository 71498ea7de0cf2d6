"""Neo4j result records as kgmind objects (shared by the store and its degree reads)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kgmind.models import EdgeRow, Relation, StoredEdge

__all__ = ["edge_row_from_record", "relation_from_record", "stored_edge_from_record"]


def relation_from_record(rec: Mapping[str, Any]) -> Relation:
    """A record of ``id, head, type, tail, weight, source`` as a :class:`Relation` (stored: already valid)."""
    return Relation.model_construct(
        id=rec["id"],
        head=rec["head"],
        type=rec["type"],
        tail=rec["tail"],
        weight=float(rec["weight"]),
        source=rec["source"] or "",
    )


def edge_row_from_record(rec: Mapping[str, Any]) -> EdgeRow:
    """The record's edge as a plain tuple: what a bounded read returns, as on LadybugDB."""
    weight, source = float(rec["weight"]), rec["source"] or ""
    return (rec["id"], rec["head"], rec["type"], rec["tail"], weight, source)


def stored_edge_from_record(rec: Mapping[str, Any]) -> StoredEdge:
    """The same record as a :class:`StoredEdge`."""
    return StoredEdge._make(edge_row_from_record(rec))
