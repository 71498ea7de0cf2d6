"""Neo4j result records as kgmind objects (shared by the store and its degree reads)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kgmind.models import Relation, StoredEdge

__all__ = ["relation_from_record", "stored_edge_from_record"]


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


def stored_edge_from_record(rec: Mapping[str, Any]) -> StoredEdge:
    """The same record as a :class:`StoredEdge`: what a bounded read returns, as on LadybugDB."""
    weight, source = float(rec["weight"]), rec["source"] or ""
    return StoredEdge(rec["id"], rec["head"], rec["type"], rec["tail"], weight, source)
