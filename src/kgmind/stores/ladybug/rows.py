"""Rows of LadybugDB results as kgmind models, and the alias-key encoding of the ``Entity`` table."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa

from kgmind.models import Entity, KnowledgeDoc, Relation, WeightChange, normalize_name
from kgmind.stores import degrees as dg
from kgmind.stores.ladybug import queries as q
from kgmind.stores.ladybug.bulk import REL_SCHEMA

__all__ = [
    "SCAN_CHUNK",
    "SEP",
    "alias_keys",
    "all_rows",
    "arrow_chunks",
    "change_from_row",
    "chunked_scan",
    "column_table",
    "doc_from_row",
    "doc_table",
    "entities_from_table",
    "entity_from_row",
    "entity_table",
    "relation_from_row",
    "relation_table",
]

_ENTITY_SCHEMA = pa.schema([(c, pa.int64() if c == "degree" else pa.string()) for c in q.ENTITY_COLUMNS])
_DOC_SCHEMA = pa.schema([("id", pa.string()), ("entity_id", pa.string()), ("text", pa.string())])
_REL_SCHEMA = REL_SCHEMA  # the columns COPY_RELATIONS reads, one definition with the columnar load

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


def all_rows(conn: Any, query: str, params: dict[str, Any]) -> list[list[Any]]:
    """Every row of ``query`` run on ``conn``, the result closed."""
    result = conn.execute(query, params)
    rows: list[list[Any]] = result.get_all()
    result.close()
    return rows


def chunked_scan(conn: Any, query: str, params: dict[str, Any]) -> Iterator[dict[str, list[Any]]]:
    """``query`` run on ``conn``, its columns a chunk at a time (:func:`arrow_chunks`: read whole first)."""
    return arrow_chunks(conn.execute(query, params))


def column_table(conn: Any, query: str, params: dict[str, Any]) -> dict[str, list[Any]]:
    """The columns of ``query`` run on ``conn`` (empty lists for no rows), the result closed."""
    result = conn.execute(query, params)
    if result.get_num_tuples() == 0:
        names = result.get_column_names()
        result.close()
        return {n: [] for n in names}
    table: dict[str, list[Any]] = result.get_as_arrow(0).to_pydict()
    result.close()
    return table


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


def entity_table(entities: Sequence[Entity], degrees: dg.Degrees) -> pa.Table:
    """The Arrow table ``COPY_ENTITIES`` reads, each entity with its counted degrees (``degrees``)."""
    rows = {r["id"]: r for r in dg.degree_rows(degrees)}
    return pa.table(
        {
            "id": [e.id for e in entities],
            "name": [e.name for e in entities],
            "key": [normalize_name(e.name) for e in entities],
            "type": [e.type for e in entities],
            "aliases": [json.dumps(e.aliases, ensure_ascii=False) for e in entities],
            "alias_keys": [alias_keys(e) for e in entities],
            "description": [e.description for e in entities],
            "degree": [rows[e.id]["degree"] if e.id in rows else 0 for e in entities],
            "degrees": [rows[e.id]["degrees"] if e.id in rows else "{}" for e in entities],
        },
        schema=_ENTITY_SCHEMA,
    )


def relation_table(relations: Sequence[Relation]) -> pa.Table:
    """The Arrow table ``COPY_RELATIONS`` reads."""
    return pa.table(
        {
            "from": [r.head for r in relations],
            "to": [r.tail for r in relations],
            "id": [r.id for r in relations],
            "type": [r.type for r in relations],
            "weight": [float(r.weight) for r in relations],
            "source": [r.source for r in relations],
        },
        schema=_REL_SCHEMA,
    )


def doc_table(docs: Sequence[KnowledgeDoc]) -> pa.Table:
    """The Arrow table :data:`~kgmind.stores.ladybug.queries.COPY_DOCS` reads."""
    return pa.table(
        {
            "id": [d.id for d in docs],
            "entity_id": [d.entity_id for d in docs],
            "text": [d.text for d in docs],
        },
        schema=_DOC_SCHEMA,
    )
