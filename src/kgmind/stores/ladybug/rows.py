"""Rows of LadybugDB results as kgmind models, and the alias-key encoding of the ``Entity`` table."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from kgmind.models import Entity, KnowledgeDoc, Relation, WeightChange, normalize_name

__all__ = [
    "SEP",
    "alias_keys",
    "change_from_row",
    "doc_from_row",
    "entities_from_table",
    "entity_from_row",
    "relation_from_row",
]

SEP = "\x1f"  # never part of a normalised key (``\s`` in normalize_name folds it)


def alias_keys(entity: Entity) -> str:
    """The entity's normalised aliases joined and framed by :data:`SEP` (``""`` without aliases)."""
    keys = [normalize_name(a) for a in entity.aliases]
    return SEP + SEP.join(keys) + SEP if keys else ""


def entity_from_row(row: Sequence[Any]) -> Entity:
    """An entity from an ``id, name, type, aliases, description`` row."""
    eid, name, etype, aliases, description = row
    return Entity.model_construct(
        id=eid,
        name=name,
        type=etype,
        aliases=list(json.loads(aliases)) if aliases else [],
        description=description or "",
    )


def entities_from_table(table: dict[str, list[Any]]) -> Iterator[Entity]:
    """The entities of a ``SCAN_ENTITIES`` result read as columns (see ``LadybugStore._table``)."""
    columns = ("id", "name", "type", "aliases", "description")
    for row in zip(*(table[c] for c in columns), strict=True):
        yield entity_from_row(row)


def relation_from_row(row: Sequence[Any]) -> Relation:
    """A relation from a ``head, id, type, tail, weight, source`` row."""
    head, rid, rtype, tail, weight, source = row
    return Relation.model_construct(
        id=rid, head=head, type=rtype, tail=tail, weight=float(weight), source=source or ""
    )


def doc_from_row(row: Sequence[Any]) -> KnowledgeDoc:
    """A knowledge document from an ``id, entity_id, text`` row."""
    did, entity_id, text = row
    return KnowledgeDoc.model_construct(id=did, entity_id=entity_id, text=text)


def change_from_row(row: Sequence[Any]) -> WeightChange:
    """An audit row (columns in :class:`WeightChange`'s field order, see ``q.WEIGHT_CHANGES``)."""
    return WeightChange.model_validate(dict(zip(WeightChange.model_fields, row, strict=True)))
