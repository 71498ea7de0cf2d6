"""What one bulk load writes into LadybugDB, decided against the stored state before its transaction.

Planning reads the stored ids first, so the ``COPY`` statements that follow never meet a
duplicate key or a missing endpoint (a failed ``COPY`` would abort the whole load).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kgmind.models import Entity, KnowledgeDoc, Relation, merge_entities
from kgmind.stores.base import LoadInput, unknown_endpoints_error
from kgmind.stores.ladybug import queries as q
from kgmind.stores.ladybug.rows import entities_from_table

__all__ = ["LoadPlan", "plan_load"]


@dataclass
class LoadPlan:
    """What one bulk load writes: new rows, and the changes to stored ones."""

    new_entities: list[Entity] = field(default_factory=list)
    changed_entities: list[Entity] = field(default_factory=list)
    new_relations: list[Relation] = field(default_factory=list)
    source_updates: list[dict[str, str]] = field(default_factory=list)
    new_docs: list[KnowledgeDoc] = field(default_factory=list)


def plan_load(table: Callable[[str], dict[str, list[Any]]], load: LoadInput) -> LoadPlan:
    """Split a load into what is new and what changes stored rows; check every endpoint.

    Args:
        table: Runs a query on the write connection and returns its columns.
        load: The merged load.

    Raises:
        StoreError: A relation endpoint is neither loaded nor stored.

    """
    stored_entities = {e.id: e for e in entities_from_table(table(q.SCAN_ENTITIES))}
    missing = sorted(
        {
            end
            for rel in load.relations.values()
            for end in (rel.head, rel.tail)
            if end not in load.entities and end not in stored_entities
        }
    )
    if missing:
        raise unknown_endpoints_error(missing)
    plan = LoadPlan()
    for eid, ent in load.entities.items():
        old = stored_entities.get(eid)
        if old is None:
            plan.new_entities.append(ent)
            continue
        merged = merge_entities(old, ent)
        if (merged.type, merged.aliases, merged.description) != (old.type, old.aliases, old.description):
            plan.changed_entities.append(merged)
    rel_sources: dict[str, list[Any]] = {"id": [], "source": []}
    if load.relations:
        rel_sources = table(q.SCAN_RELATION_SOURCES)
    stored_sources = dict(zip(rel_sources["id"], rel_sources["source"], strict=True))
    plan.new_relations = [r for rid, r in load.relations.items() if rid not in stored_sources]
    plan.source_updates = [
        {"head": r.head, "id": rid, "source": r.source}
        for rid, r in load.relations.items()
        if rid in stored_sources and not stored_sources[rid] and r.source
    ]
    stored_docs = set(table(q.SCAN_DOC_IDS)["id"]) if load.docs else set()
    plan.new_docs = [d for did, d in load.docs.items() if did not in stored_docs]
    return plan
