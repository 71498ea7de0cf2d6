"""What a question was shown, as facts of the KG: the ``shown`` field of a ``--rows`` result row.

Issue 41: a benchmark, or any outside check, must tell which facts reached which question.
Each shown evidence item becomes ``{"id": "N1", "triples": [[head, relation, tail], …]}``:
one triple per distinct stored edge behind the item, written as the KG file wrote it
(entity names, the stored relation type and direction). An item walked through a reverse
reading carries its stored edge's id, so it gives the stored triple, never ``~type``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from kgmind.models import Entity, Evidence, Relation

__all__ = ["RelationSource", "shown_triples"]


class RelationSource(Protocol):
    """What :func:`shown_triples` reads from a store (a subset of ``GraphStore``)."""

    def get_relations(self, ids: Sequence[str]) -> list[Relation]:
        """Relations by id (unknown ids skipped)."""
        ...

    def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        """Entities by id (unknown ids skipped)."""
        ...


def shown_triples(evidence: Sequence[Evidence], store: RelationSource | None) -> list[dict[str, Any]]:
    """Per shown evidence item, its id and the stored triples behind it.

    The relations and their entities are read in one ``get_relations`` and one
    ``get_entities`` call for all the items. An item with no KG edge (a document) has no
    triples; an edge id the store does not hold is left out; an endpoint without an
    entity is written as its id.

    Args:
        evidence: The items shown to the LLM, in order (numbered).
        store: The KG the evidence came from (``None``: no KG, no triples).

    Returns:
        ``[{"id": ..., "triples": [[head name, relation type, tail name], ...]}, ...]``.
    """
    ids = list(dict.fromkeys(rid for ev in evidence for rid in ev.relation_ids))
    rels = {r.id: r for r in store.get_relations(ids)} if ids and store is not None else {}
    ends = sorted({x for r in rels.values() for x in (r.head, r.tail)})
    names = {e.id: e.name for e in store.get_entities(ends)} if ends and store is not None else {}
    out: list[dict[str, Any]] = []
    for ev in evidence:
        stored = [rels[rid] for rid in dict.fromkeys(ev.relation_ids) if rid in rels]
        triples = [[names.get(r.head, r.head), r.type, names.get(r.tail, r.tail)] for r in stored]
        out.append({"id": ev.id, "triples": triples})
    return out
