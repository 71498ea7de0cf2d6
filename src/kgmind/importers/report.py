"""The import report: what a user needs to know about their KG before asking it anything.

Issue 44: a natural triples file imported fine and then gave no evidence, and nothing said
why. After every import the CLI prints (``kg import``) or dumps (``kg import --json``) this
report: the entity types found; each relation type with its count, inferred role, the
direction it runs in (which end is the disease) and what decided it; and warnings in words
a user can act on (a relation with no role, a role stored from one side only, a disease end
that was assumed, a store that reads a relation otherwise). The data is built here; the CLI
renders it.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, Field

from kgmind.relations import ROLES, RelationRole, RelationSchema, role_from_name

__all__ = ["ImportReport", "RelationLine", "build_report", "decided_by"]

_PLURAL = {"symptom": "symptoms", "test": "tests", "treatment": "treatments"}


class RelationLine(BaseModel):
    """One relation type of the import.

    Attributes:
        relation: The stored type.
        count: Edges of this type in the file.
        role: ``symptom``, ``test``, ``treatment`` or ``other``.
        head_type: Entity type at the head.
        tail_type: Entity type at the tail.
        disease_end: ``head`` or ``tail`` for a medical role, ``""`` for ``other``.
        how: What decided the role (:attr:`kgmind.relations.RelationRole.how`).
        via: For an inverse: the relation it reverses.
        store_role: ``role/disease end`` the store reads after the load (by entity types,
            over everything it holds), where that differs; ``""`` otherwise.
    """

    relation: str
    count: int
    role: str
    head_type: str
    tail_type: str
    disease_end: str
    how: str
    via: str = ""
    store_role: str = ""


class ImportReport(BaseModel):
    """The report of one import.

    Attributes:
        entity_types: Entities of the file per type (after role typing).
        relations: One line per relation type, by name.
        medical: Whether any relation has a medical role (else answers are generic).
        warnings: What the user should check or fix, in words.
        notes: What is fine but worth knowing.
    """

    entity_types: dict[str, int] = Field(default_factory=dict)
    relations: list[RelationLine] = Field(default_factory=list)
    medical: bool = False
    warnings: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def decided_by(line: RelationLine) -> str:
    """What decided a relation's role, in a few words (the report's last column)."""
    words = {
        "schema": "--schema",
        "types": "entity types",
        "name": "name" if line.role != "other" else "name (not medical)",
        "name+structure": "name + graph",
        "inverse": f"inverse of `{line.via}`",
        "name+inverse": f"name + inverse of `{line.via}`",
        "none": "nothing",
    }
    return words.get(line.how, line.how)


def _line(role: RelationRole, count: int, store: RelationRole | None) -> RelationLine:
    store_role = ""
    if store is not None and (store.role, store.disease_end) != (role.role, role.disease_end):
        store_role = store.role + (f"/{store.disease_end}" if store.disease_end else "")
    return RelationLine(
        relation=role.relation,
        count=count,
        role=role.role,
        head_type=role.head_type,
        tail_type=role.tail_type,
        disease_end=role.disease_end or "",
        how=role.how,
        via=role.via,
        store_role=store_role,
    )


def _words(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _direction_warnings(lines: list[RelationLine]) -> list[str]:
    """Medical roles stored from one side only: the walk the explorations take against them."""
    sides: dict[str, list[str]] = {"head": [], "tail": []}
    for role in ROLES[:-1]:
        ends = {ln.disease_end for ln in lines if ln.role == role}
        if len(ends) == 1:
            sides[ends.pop()].append(role)
    out: list[str] = []
    for side, roles in sides.items():
        if not roles:
            continue
        plural = _words([_PLURAL[r] for r in roles])
        names = ", ".join(f"`{ln.relation}`" for ln in lines if ln.role in roles)
        if side == "head":
            out.append(
                f"{plural} have no edges of their own (their relations start at the disease: {names}): "
                f"they will be walked in reverse, from {plural} to diseases"
            )
        else:
            out.append(
                f"diseases have no {_words(list(roles))} edges of their own (those relations end at the "
                f"disease: {names}): diseases will reach their {plural} by walking them in reverse"
            )
    return out


def _relation_warnings(ln: RelationLine) -> list[str]:
    """What to check about one relation's reading."""
    rel = f"relation `{ln.relation}`"
    _, name_end = role_from_name(ln.relation)
    out: list[str] = []
    if ln.how == "none":
        out.append(
            f"{rel} has no inferred role: give it one with --schema (a line `{ln.relation},ROLE,END`: "
            "ROLE symptom, test, treatment or other; END head or tail, the disease's end)"
        )
    elif ln.how == "name" and ln.role != "other" and name_end is None:
        other = "tail" if ln.disease_end == "head" else "head"
        out.append(
            f"{rel} reads as a {ln.role} relation by its name, but neither its name nor the graph says "
            f"which end is the disease; the {ln.disease_end} was assumed: if wrong, give "
            f"`{ln.relation},{ln.role},{other}` with --schema"
        )
    elif ln.how == "name+structure" and name_end not in (None, ln.disease_end):
        out.append(
            f"{rel}: its name puts the disease at the {name_end}, the graph's structure at the "
            f"{ln.disease_end}; the structure was followed (give it with --schema if that is wrong)"
        )
    if ln.store_role:
        out.append(
            f"{rel}: the store reads it as {ln.store_role} (by the entity types at its ends, over all "
            f"it holds), not {ln.role}{'/' + ln.disease_end if ln.disease_end else ''}; questions use "
            "the store's reading: give the role with --schema to fix it"
        )
    return out


def build_report(
    entity_types: Mapping[str, int],
    relation_counts: Mapping[str, int],
    schema: RelationSchema,
    *,
    overrides: Mapping[str, object] | None = None,
    store_schema: RelationSchema | None = None,
) -> ImportReport:
    """The report of an import: roles and directions of its relations, and what to act on.

    Args:
        entity_types: Entities per type after role typing.
        relation_counts: Edges per relation type in the file.
        schema: The roles the import read (:func:`kgmind.importers.roles.type_by_roles`).
        overrides: The roles given with ``--schema`` (names not in the file are reported).
        store_schema: The store's reading after the load (differences are reported).

    Returns:
        The report.
    """
    lines = [
        _line(
            schema.role(rel),
            n,
            store_schema.roles.get(rel) if store_schema is not None else None,
        )
        for rel, n in sorted(relation_counts.items())
    ]
    medical = any(ln.role != "other" for ln in lines)
    warnings = _direction_warnings(lines)
    for ln in lines:
        warnings += _relation_warnings(ln)
    unused = sorted(set(overrides or {}) - set(relation_counts))
    if unused:
        names = ", ".join(f"`{n}`" for n in unused)
        warnings.append(f"--schema names relations this file does not have: {names} (kept for the store)")
    notes: list[str] = []
    if not medical:
        notes.append(
            "no relation has a medical role (symptom, test, treatment): kgmind will draw generic "
            "conclusions from this KG, not diagnoses; if it is medical, give the roles with --schema"
        )
    untyped = entity_types.get("entity", 0)
    if untyped and medical:
        notes.append(
            f"{untyped:,} {'entity has' if untyped == 1 else 'entities have'} no type: "
            f"{'it is an end' if untyped == 1 else 'they are ends'} only of relations with no medical role"
        )
    return ImportReport(
        entity_types=dict(sorted(entity_types.items())),
        relations=lines,
        medical=medical,
        warnings=warnings,
        notes=notes,
    )
