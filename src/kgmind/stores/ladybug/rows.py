"""Rows of LadybugDB results as kgmind models, and the alias-key encoding of the ``Entity`` table."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

from kgmind.models import Entity, KnowledgeDoc, Relation, WeightChange, normalize_name

__all__ = [
    "SCAN_CHUNK",
    "SEP",
    "alias_keys",
    "arrow_chunks",
    "change_from_row",
    "doc_from_row",
    "entities_from_table",
    "entity_from_row",
    "relation_from_row",
]

SEP = "\x1f"  # never part of a normalised key (``\s`` in normalize_name folds it)

#: Rows of a whole-KG scan made into Python objects at a time (:func:`arrow_chunks`): small enough
#: that even EMCKG-full (45,600 edges) is read in a dozen chunks, and no slower to read.
SCAN_CHUNK = 4_096


def arrow_chunks(result: Any, size: int | None = None) -> Iterator[dict[str, list[Any]]]:
    """A query result's columns ``size`` (:data:`SCAN_CHUNK`) rows at a time, each chunk freed once read.

    A whole-KG scan read as one Python dict costs about 400 bytes an edge (six objects per
    row); read a chunk at a time, the Python objects of one chunk exist at once, and the Arrow
    result (about 130 bytes an edge) shrinks as it is consumed. The result is read whole
    (and closed) before the first chunk is returned, so a reader never holds it open.
    """
    if result.get_num_tuples() == 0:
        names = result.get_column_names()
        result.close()
        return iter([{n: [] for n in names}])
    batches = result.get_as_arrow(size or SCAN_CHUNK).to_batches()
    result.close()
    batches.reverse()

    def chunks() -> Iterator[dict[str, list[Any]]]:
        while batches:
            chunk: dict[str, list[Any]] = batches.pop().to_pydict()
            yield chunk

    return chunks()


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
