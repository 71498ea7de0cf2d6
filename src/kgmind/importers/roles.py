"""Entity types from relation roles: what a file with no entity types (a triples file) needs at import.

A user's ``Measles,presents_with,Fever`` says nothing of types, and the store's schema
(:meth:`kgmind.stores.protocol.GraphStore.relation_schema`) is read from entity types at
query time. So the import infers each relation's role while it still holds every edge (the
structure and inverse-pair cues of :func:`kgmind.relations.infer_schema` need the ends'
names), then gives each end the type its role says: the disease end ``disease``, the other
end :data:`kgmind.relations.ROLE_ENTITY_TYPE` of the role. Types merge by
:data:`kgmind.models.TYPE_PRIORITY`, as :class:`~kgmind.importers.base.GraphBuilder` does.

Relations of the fixed vocabulary (:mod:`kgmind.importers.vocab`) were typed by the parser
and are left alone (so the fitted imports stay byte-for-byte the same), unless a schema
file names them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from kgmind.importers.base import ImportResult
from kgmind.importers.vocab import RELATION_TYPES
from kgmind.models import TYPE_PRIORITY, Entity
from kgmind.relations import RelationRole, RelationSchema, RelationStats, infer_schema

__all__ = ["infer_and_type", "relation_stats", "retype_ends", "type_by_roles", "typed_before"]

#: Passes of infer → retype at most: a relation no cue read in the first pass may get its role
#: from the types the others gave its ends (as the store's schema read would), and type the rest.
_MAX_PASSES = 3


def typed_before(result: Any, given: dict[str, dict[str, str]]) -> RelationSchema | None:
    """The schema ``result`` was typed with, ``None`` before typing (typing changes entities once).

    Raises:
        ValueError: It was typed with overrides other than ``given``.
    """
    if result.roles_schema is None:
        return None
    if given != result.roles_overrides:
        raise ValueError(f"{result.source} was already typed by relation roles with another schema")
    schema: RelationSchema = result.roles_schema
    return schema


def relation_stats(result: ImportResult, *, cues: bool = True) -> list[RelationStats]:
    """Per relation type: counts, the ends' types and, with ``cues``, the ends' ids and pairs."""
    types = {e.id: e.type for e in result.entities}
    return RelationStats.from_edges(
        (
            (r.head, r.type, r.tail, types.get(r.head, "entity"), types.get(r.tail, "entity"))
            for r in result.relations
        ),
        keep_names=cues,
        keep_pairs=cues,
    )


def retype_ends(schema: RelationSchema) -> dict[str, tuple[str, str]]:
    """``relation -> (head type, tail type)`` of every relation whose ends an import types."""
    return {rel: (r.head_type, r.tail_type) for rel, r in schema.roles.items() if _retypes(r)}


def _retype(result: ImportResult, ends: Mapping[str, tuple[str, str]], ents: dict[str, Entity]) -> int:
    """Give the ends of every retypable medical relation their role's types; returns entities changed."""
    changed = 0
    if not ends:
        return 0
    for rel in result.relations:
        pair = ends.get(rel.type)
        if pair is None:
            continue
        for eid, etype in ((rel.head, pair[0]), (rel.tail, pair[1])):
            ent = ents[eid]
            if _rank(etype) < _rank(ent.type):
                ent.type = etype
                changed += 1
    return changed


def _rank(entity_type: str) -> int:
    return TYPE_PRIORITY.get(entity_type, len(TYPE_PRIORITY))


def _retypes(role: RelationRole) -> bool:
    """Whether an import types the ends of this relation: a medical role, outside the vocabulary or given."""
    return role.role != "other" and (role.relation not in RELATION_TYPES or role.how == "schema")


def type_by_roles(
    result: ImportResult, overrides: Mapping[str, Mapping[str, str]] | None = None
) -> RelationSchema:
    """Infer the roles of ``result``'s relations and type their ends accordingly (in place).

    A result is typed once: a second call with the same overrides returns the same
    schema; with other overrides it raises, because types only ever rise in priority and
    the first call's cannot be taken back.

    Args:
        result: A parsed KG (entities are changed in place).
        overrides: Roles a user gave (``kg import --schema``, :func:`kgmind.relations.load_schema_file`).

    Returns:
        The schema the import read: for each relation, the first pass's role where a cue
        gave it one, else the role the ends' new types give (what the store will read).

    Raises:
        ValueError: ``result`` was already typed with other overrides.
    """
    given = {k: dict(v) for k, v in (overrides or {}).items()}
    before = typed_before(result, given)
    if before is not None:
        return before
    ents = {e.id: e for e in result.entities}
    schema = infer_and_type(
        relation_stats(result),
        given,
        lambda ends: _retype(result, ends, ents),
        lambda: relation_stats(result, cues=False),
    )
    result.roles_schema, result.roles_overrides = schema, given
    return schema


def infer_and_type(
    stats: list[RelationStats],
    given: Mapping[str, Mapping[str, str]],
    retype: Callable[[Mapping[str, tuple[str, str]]], int],
    typed_stats: Callable[[], list[RelationStats]],
) -> RelationSchema:
    """Infer the roles from ``stats``, then type the ends by them until the reading settles.

    The passes of :func:`type_by_roles`, for any holder of the edges: ``retype`` gives the
    ends of each relation of :func:`retype_ends` its types (returns how many changed) and
    ``typed_stats`` reads the ends' types again (no cues needed), so an import that holds its
    edges as columns (:mod:`kgmind.importers.columnar`) reads the same schema.
    """
    schema = infer_schema(stats, given)
    for _ in range(_MAX_PASSES):
        if not retype(retype_ends(schema)):
            break
        # what the store will read from the new types: the roles no cue gave, and their ends
        retyped = infer_schema(_with_types(stats, typed_stats()), given)
        roles = {rel: _after_retyping(role, retyped.role(rel)) for rel, role in schema.roles.items()}
        if roles == schema.roles:
            break
        schema = RelationSchema(roles)
    return schema


def _after_retyping(role: RelationRole, new: RelationRole) -> RelationRole:
    """A relation's role once its ends are retyped.

    A medical role stays; one no cue read takes what the types now say; another ``other``
    keeps its reason, with its ends' types as they are now.
    """
    if role.role != "other":
        return role
    if role.how == "none":
        return new
    return replace(role, head_type=new.head_type, tail_type=new.tail_type)


def _with_types(stats: list[RelationStats], typed: list[RelationStats]) -> list[RelationStats]:
    """``stats`` with the ends' type counts of ``typed`` (names and pairs kept)."""
    fresh = {st.relation: st for st in typed}
    out = []
    for st in stats:
        new = fresh[st.relation]
        out.append(
            RelationStats(st.relation, st.count, new.head_types, new.tail_types, st.heads, st.tails, st.pairs)
        )
    return out
