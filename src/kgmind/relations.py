"""Relation roles: what a relation means for a medical answer, whatever its name and direction.

Users write their KGs in their own words: ``Measles has_symptom Fever``, ``Fever symptom_of
Measles``, ``麻疹 症状 发热``. The explorations must not care, so they never look at a relation's
name: they ask its *role* (symptom, test, treatment or other) and which end is the disease,
and they walk every relation both ways. A walk against the stored direction is a *reading*
named :data:`REVERSE_MARK` + the stored type (``~has_symptom``); that name can never be a
stored type, since stored types are identifiers.

Roles are inferred, strongest evidence first:

1. a schema file the user gave (``kg import --schema FILE``), kept in the store;
2. the entity types at the two ends (a disease and a symptom: a symptom relation);
3. the words of the name, English and Chinese (``presents_with``, ``检查``;
   :mod:`kgmind.relation_names`), with the
   disease end read from the name (``symptom_of`` ends at the disease) or, when several
   relations have roles, from the graph itself: the disease end is the one whose entities
   the relations of *other* roles share (diseases have symptoms *and* tests *and* drugs);
4. at import, where every edge's ends are known: a relation none of the above reads whose
   edges are another relation's edges reversed is that relation's inverse (same role, the
   disease at the other end).

A relation none of these reads is ``other``: it is still walked both ways and shown, but
it never votes for a disease, which is the generic fallback of a KG that is not medical.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from kgmind.models import (
    RELATION_TYPE_RULE,
    Entity,
    Relation,
    normalize_relation_type,
    valid_relation_type,
)
from kgmind.relation_names import Role, names_other, role_from_name, weak_symptom_name

__all__ = [
    "DISEASE",
    "REVERSE_MARK",
    "ROLES",
    "ROLE_ENTITY_TYPE",
    "UNTYPED",
    "Reading",
    "RelationRole",
    "RelationSchema",
    "RelationStats",
    "Role",
    "SchemaFileError",
    "infer_schema",
    "load_schema_file",
    "reading_words",
    "reverse_name",
    "role_from_name",
    "schema_from_graph",
    "stored_name",
]

#: Every role, in the order reports list them.
ROLES: tuple[Role, ...] = ("symptom", "test", "treatment", "other")
#: The entity type of a disease: the end every role but ``other`` has.
DISEASE = "disease"
#: The entity type of the other end of each medical role.
ROLE_ENTITY_TYPE: dict[str, str] = {"symptom": "symptom", "test": "test", "treatment": "medication"}
_TYPE_ROLE: dict[str, Role] = {"symptom": "symptom", "test": "test", "medication": "treatment"}
#: Prefix of a reading against the stored direction; stored types are identifiers, so never clash.
REVERSE_MARK = "~"
#: The type of an entity (or a relation's end) whose type nobody gave.
UNTYPED = "entity"


class SchemaFileError(ValueError):
    """A ``--schema`` file that cannot be read; the message names the line."""


def reverse_name(relation: str) -> str:
    """The reading of ``relation`` against its stored direction (``has_symptom`` → ``~has_symptom``)."""
    return relation[1:] if relation.startswith(REVERSE_MARK) else REVERSE_MARK + relation


def stored_name(reading: str) -> tuple[str, bool]:
    """``(stored type, whether the reading runs against it)`` of a reading name."""
    if reading.startswith(REVERSE_MARK):
        return reading[1:], True
    return reading, False


@dataclass(frozen=True)
class RelationRole:
    """The role of one stored relation type.

    Attributes:
        relation: The stored type.
        role: ``symptom``, ``test``, ``treatment`` or ``other``.
        head_type: Entity type of the head end (``disease`` at the disease end of a medical role).
        tail_type: Entity type of the tail end.
        how: What decided it, for the import report: ``schema``, ``types``, ``name``,
            ``name+structure``, ``inverse``, ``name+inverse`` or ``none``.
        via: For ``inverse`` and ``name+inverse``: the relation whose edges this one holds
            reversed.
    """

    relation: str
    role: Role
    head_type: str
    tail_type: str
    how: str = "none"
    via: str = ""

    @property
    def disease_end(self) -> str | None:
        """``head`` or ``tail`` for a medical role, else ``None``."""
        if self.role == "other":
            return None
        return "head" if self.head_type == DISEASE else "tail"

    def as_dict(self) -> dict[str, str]:
        """The role as JSON data (report and stored schema)."""
        return {
            "relation": self.relation,
            "role": self.role,
            "head_type": self.head_type,
            "tail_type": self.tail_type,
            "disease_end": self.disease_end or "",
            "how": self.how,
        }


@dataclass(frozen=True)
class Reading:
    """One direction of a relation as an exploration walks it.

    Attributes:
        name: The reading's name: the stored type, or :data:`REVERSE_MARK` + it.
        relation: The stored type.
        reverse: Whether the walk runs against the stored direction.
        role: The relation's role.
        from_type: Entity type of the end the walk starts at.
        to_type: Entity type of the end it reaches.
    """

    name: str
    relation: str
    reverse: bool
    role: Role
    from_type: str
    to_type: str

    @property
    def votes(self) -> bool:
        """Whether the walk leads from a symptom, test or drug to a disease (a vote for it)."""
        return self.role != "other" and self.to_type == DISEASE and self.from_type != DISEASE

    @property
    def lists_symptoms(self) -> bool:
        """Whether the walk lists a disease's symptoms (what MindMap skips when it expands a disease)."""
        return self.role == "symptom" and self.from_type == DISEASE

    @property
    def phrase_key(self) -> str:
        """``from>to`` entity types of a medical role (``disease>symptom``), ``""`` for ``other``."""
        return "" if self.role == "other" else f"{self.from_type}>{self.to_type}"


@dataclass
class RelationStats:
    """What the inference reads about one relation type.

    Attributes:
        relation: The stored type.
        count: How many edges have it.
        head_types: Entity type → edges whose head has it.
        tail_types: Entity type → edges whose tail has it.
        heads: Keys of the head entities (import time only: the structure cue).
        tails: Keys of the tail entities.
        pairs: ``(head key, tail key)`` of every edge (import time only: the inverse-pair cue).
    """

    relation: str
    count: int = 0
    head_types: Counter[str] = field(default_factory=Counter)
    tail_types: Counter[str] = field(default_factory=Counter)
    heads: set[str] | None = None
    tails: set[str] | None = None
    pairs: set[tuple[str, str]] | None = None

    @classmethod
    def from_edges(
        cls,
        edges: Iterable[tuple[str, str, str, str, str]],
        *,
        keep_names: bool = True,
        keep_pairs: bool = False,
    ) -> list[RelationStats]:
        """Stats per relation type from ``(head key, type, tail key, head type, tail type)`` rows.

        ``keep_pairs`` keeps every edge's ends (an import holds its rows anyway; a store's
        schema read does not pay for it).
        """
        out: dict[str, RelationStats] = {}
        for head, rtype, tail, htype, ttype in edges:
            st = out.get(rtype)
            if st is None:
                st = out[rtype] = cls(
                    rtype,
                    heads=set() if keep_names else None,
                    tails=set() if keep_names else None,
                    pairs=set() if keep_pairs else None,
                )
            st.count += 1
            st.head_types[htype] += 1
            st.tail_types[ttype] += 1
            if st.heads is not None and st.tails is not None:
                st.heads.add(head)
                st.tails.add(tail)
            if st.pairs is not None:
                st.pairs.add((head, tail))
        return [out[k] for k in sorted(out)]


def _majority(types: Counter[str]) -> str:
    """The most common typed end (``entity`` only when nothing is typed)."""
    typed = [(n, t) for t, n in types.items() if t != UNTYPED]
    return max(typed)[1] if typed else UNTYPED


def _from_types(st: RelationStats) -> RelationRole | None:
    """The role the ends' entity types give: a disease at one end, a symptom/test/drug at the other."""
    head, tail = _majority(st.head_types), _majority(st.tail_types)
    if head == DISEASE and tail in _TYPE_ROLE:
        return RelationRole(st.relation, _TYPE_ROLE[tail], head, tail, "types")
    if tail == DISEASE and head in _TYPE_ROLE:
        return RelationRole(st.relation, _TYPE_ROLE[head], head, tail, "types")
    if UNTYPED not in (head, tail):
        return RelationRole(st.relation, "other", head, tail, "types")
    return None


def _overlap(a: set[str], b: set[str]) -> float:
    """Share of the smaller set that the other holds (0 for an empty one)."""
    return len(a & b) / min(len(a), len(b)) if a and b else 0.0


def _disease_end_by_structure(
    st: RelationStats, others: Sequence[tuple[RelationStats, Role]], role: Role
) -> str | None:
    """The end whose entities relations of other roles share most (diseases), or ``None`` when unclear."""
    if st.heads is None or st.tails is None:
        return None
    peers = [o for o, r in others if r != role and o.heads is not None and o.tails is not None]
    if not peers:
        return None

    def share(side: set[str]) -> float:
        return sum(
            max(_overlap(side, cast(set[str], o.heads)), _overlap(side, cast(set[str], o.tails)))
            for o in peers
        )

    head, tail = share(st.heads), share(st.tails)
    if abs(head - tail) < 0.05 * len(peers):
        return None
    return "head" if head > tail else "tail"


def _medical(relation: str, role: Role, end: str, how: str) -> RelationRole:
    other = ROLE_ENTITY_TYPE[role]
    head, tail = (DISEASE, other) if end == "head" else (other, DISEASE)
    return RelationRole(relation, role, head, tail, how)


def infer_schema(
    stats: Sequence[RelationStats], overrides: Mapping[str, Mapping[str, str]] | None = None
) -> RelationSchema:
    """Each relation type's role, by schema file, entity types, name and structure (module docstring).

    Args:
        stats: One entry per relation type.
        overrides: ``relation -> {"role": …, "disease_end": "head"|"tail"}`` from a schema
            file (:func:`load_schema_file`); they win over everything inferred.

    Returns:
        The schema.
    """
    overrides = overrides or {}
    roles: dict[str, RelationRole] = {}
    named: list[tuple[RelationStats, Role, str | None]] = []
    for st in stats:
        given = overrides.get(st.relation)
        if given is not None:
            role = cast(Role, given["role"])
            how = given.get("how") or "schema"
            if role == "other":
                roles[st.relation] = RelationRole(
                    st.relation, "other", _majority(st.head_types), _majority(st.tail_types), how
                )
            else:
                roles[st.relation] = _medical(st.relation, role, given.get("disease_end") or "head", how)
            continue
        typed = _from_types(st)
        if typed is not None:
            roles[st.relation] = typed
            continue
        by_name, end = role_from_name(st.relation)
        if by_name is None:  # ``name``: the name says it is no medical role (``complication_of``)
            how = "name" if names_other(st.relation) else "none"
            roles[st.relation] = RelationRole(
                st.relation, "other", _majority(st.head_types), _majority(st.tail_types), how
            )
        else:
            named.append((st, by_name, end))
    # the disease end of named relations: the graph's structure first, then the name, then the head
    peers = [(st, role) for st, role, _ in named] + [
        (st, roles[st.relation].role)
        for st in stats
        if st.relation in roles and roles[st.relation].role != "other"
    ]
    unsure = [st for st in stats if st.relation in roles and roles[st.relation].how == "none"]
    for st, role, end in named:
        by_structure = _disease_end_by_structure(st, peers, role)
        how = "name+structure" if by_structure is not None else "name"
        roles[st.relation] = _medical(st.relation, role, by_structure or end or "head", how)
        if by_structure is None and end is None:
            unsure.append(st)
    unsure += _drop_weak_symptoms(stats, {st.relation for st, _, _ in named}, roles)
    _add_inverses(unsure, stats, roles)
    return RelationSchema(roles)


#: Share of a weakly named symptom relation's far ends that other symptom relations must also hold.
_WEAK_SHARE = 0.05


def _far_end(st: RelationStats, role: RelationRole) -> set[str]:
    return cast(set[str], st.tails if role.disease_end == "head" else st.heads)


def _drop_weak_symptoms(
    stats: Sequence[RelationStats], named: set[str], roles: dict[str, RelationRole]
) -> list[RelationStats]:
    """Unread the relations read as symptom relations only because they name diseases (import time).

    A name with no role word but a disease word (``possible_disease``, ``诊治疾病``) is read
    as a symptom relation, the commonest kind. When the KG has other symptom relations and
    (almost) none of this one's far ends is a symptom of theirs, the far ends are something
    else (departments that treat a disease): the relation becomes ``other`` with no role
    read (``none``), so its ends are not typed as symptoms and the report asks for it.
    Returns the relations unread.
    """
    known = [st for st in stats if st.heads is not None and roles[st.relation].role == "symptom"]
    weak = {st.relation for st in known if st.relation in named and weak_symptom_name(st.relation)}
    strong = [_far_end(st, roles[st.relation]) for st in known if st.relation not in weak]
    symptoms: set[str] = set().union(*strong)
    out: list[RelationStats] = []
    for st in known:
        far = _far_end(st, roles[st.relation])
        if st.relation in weak and symptoms and far and len(far & symptoms) / len(far) < _WEAK_SHARE:
            roles[st.relation] = RelationRole(
                st.relation, "other", _majority(st.head_types), _majority(st.tail_types), "none"
            )
            out.append(st)
    return out


#: Share of a relation's flipped pairs another relation must hold for it to be read as its inverse.
_INVERSE_SHARE = 0.5


def _add_inverses(
    unsure: Sequence[RelationStats], stats: Sequence[RelationStats], roles: dict[str, RelationRole]
) -> None:
    """Read a relation as the inverse of a relation with a role when it holds that relation's pairs flipped.

    Form (e) of issue 44: both directions stored, one direction's name unreadable
    (``Fever seen_in Measles`` beside ``Measles presents_with Fever``). Applies to relations
    with no role (``none``) and to named ones whose disease end nothing said; the partner
    must have a medical role whose disease end was decided (not assumed). Needs
    :attr:`RelationStats.pairs` (an import's stats).
    """
    unsure_names = {st.relation for st in unsure}
    decided = [
        st
        for st in stats
        if st.pairs and roles[st.relation].role != "other" and st.relation not in unsure_names
    ]
    for st in unsure:
        candidates = [d for d in decided if d.relation != st.relation]
        if not st.pairs or not candidates:
            continue
        flipped = {(t, h) for h, t in st.pairs}
        share, partner = max(
            (len(flipped & cast(set[tuple[str, str]], d.pairs)) / len(flipped), d.relation)
            for d in candidates
        )
        if share <= _INVERSE_SHARE:
            continue
        p, own = roles[partner], roles[st.relation]
        if own.role not in ("other", p.role):  # the name gave another role: the pairs give no end for it
            continue
        end = "tail" if p.disease_end == "head" else "head"
        other = ROLE_ENTITY_TYPE[p.role]
        head, tail = (DISEASE, other) if end == "head" else (other, DISEASE)
        how = "inverse" if own.role == "other" else "name+inverse"
        roles[st.relation] = RelationRole(st.relation, p.role, head, tail, how, via=partner)


#: MindMap's words for walking a medical relation from its far end to the disease.
_TOWARD_DISEASE_WORDS: dict[str, str] = {
    "symptom": "possible disease",
    "test": "can check disease",
    "treatment": "possible cure disease",
}


def reading_words(reading: Reading) -> str:
    """The relation as words in MindMap's ``A->rel->B`` text: the name, or what a reverse walk means.

    A stored relation reads as its name (``_`` as spaces). A reverse walk of a medical role
    toward the disease reads as MindMap's own inverse names (``possible disease``); any
    other reverse walk as ``<name> (reverse)``.
    """
    words = reading.relation.replace("_", " ")
    if not reading.reverse:
        return words
    if reading.votes:
        return _TOWARD_DISEASE_WORDS[reading.role]
    return f"{words} (reverse)"


class RelationSchema:
    """The roles of a KG's relation types, and the readings explorations walk (module docstring)."""

    def __init__(self, roles: Mapping[str, RelationRole] | None = None) -> None:
        self.roles: dict[str, RelationRole] = dict(roles or {})
        self._readings: dict[str, Reading] = {}
        self._votes: dict[str, bool] = {}
        self._lists: dict[str, bool] = {}

    def role(self, relation: str) -> RelationRole:
        """The role of a stored type (``other`` with untyped ends when the schema has none)."""
        found = self.roles.get(relation)
        return found if found is not None else RelationRole(relation, "other", UNTYPED, UNTYPED)

    def reading(self, name: str) -> Reading:
        """The reading of a stored type or of its reverse (``~`` + type), cached."""
        found = self._readings.get(name)
        if found is None:
            relation, reverse = stored_name(name)
            r = self.role(relation)
            ends = (r.tail_type, r.head_type) if reverse else (r.head_type, r.tail_type)
            found = self._readings[name] = Reading(name, relation, reverse, r.role, ends[0], ends[1])
        return found

    def votes(self, name: str) -> bool:
        """Whether walking ``name`` leads to a disease it votes for (:attr:`Reading.votes`); cached per name.

        Asked once per edge of every linked entity (thousands on a hub), so it is a dict lookup.
        """
        found = self._votes.get(name)
        if found is None:
            found = self._votes[name] = self.reading(name).votes
        return found

    def lists_symptoms(self, name: str) -> bool:
        """Whether walking ``name`` lists a disease's symptoms (:attr:`Reading.lists_symptoms`); cached."""
        found = self._lists.get(name)
        if found is None:
            found = self._lists[name] = self.reading(name).lists_symptoms
        return found

    def twin_types(self, relation: str) -> list[str]:
        """Stored types whose edge from this type's tail back to its head states the same fact.

        A KG stored both ways (``has_symptom`` and ``possible_disease``) holds each fact as two
        edges; a person who flags one reading flags the fact, so verdicts must reach both. A
        medical role's twin has the same role with the disease at the other end; an ``other``
        relation's twin is the one import read as its inverse (``via``).
        """
        own = self.role(relation)
        if own.role == "other":
            inverse = {k for k, r in self.roles.items() if r.via == relation}
            return sorted((inverse | {own.via}) - {relation, ""})
        return sorted(
            k
            for k, r in self.roles.items()
            if r.role == own.role and r.disease_end is not None and r.disease_end != own.disease_end
        )

    def as_dict(self) -> dict[str, dict[str, str]]:
        """``relation -> role data`` (the import report's ``relations``)."""
        return {k: self.roles[k].as_dict() for k in sorted(self.roles)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RelationSchema) and self.roles == other.roles

    def __hash__(self) -> int:  # pragma: no cover - schemas are not dict keys, but keep eq/hash consistent
        return hash(tuple(sorted(self.roles.items())))


def _override(relation: str, role: str, end: str, where: str) -> dict[str, str]:
    role = role.strip().lower()
    end = end.strip().lower()
    if role not in ROLES:
        raise SchemaFileError(f"{where}: role must be one of {', '.join(ROLES)}, not {role!r}")
    if role != "other" and end not in ("head", "tail"):
        raise SchemaFileError(f"{where}: disease_end must be head or tail for role {role!r}, not {end!r}")
    if not relation.strip():
        raise SchemaFileError(f"{where}: blank relation name")
    if not valid_relation_type(normalize_relation_type(relation)):
        raise SchemaFileError(f"{where}: bad relation type {relation!r}: {RELATION_TYPE_RULE}")
    return {"role": role, "disease_end": end if role != "other" else ""}


def load_schema_file(path: str | Path) -> dict[str, dict[str, str]]:
    """Read a schema file: relation roles a user gives where the names cannot be read.

    Two forms: JSON, ``{"relation": {"role": "symptom", "disease_end": "head"}, …}``; or
    text, one ``relation<TAB or comma>role[<TAB or comma>disease_end]`` per line (``#`` starts
    a comment). ``disease_end`` says which end is the disease (``head`` or ``tail``); it is
    required for every role but ``other``.

    Raises:
        FileNotFoundError: No such file.
        SchemaFileError: A line or entry that is not as above (the message names it).
    """
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"schema file not found: {p}")
    text = p.read_text(encoding="utf-8-sig")
    out: dict[str, dict[str, str]] = {}
    if text.lstrip().startswith("{"):
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SchemaFileError(f"{p}: not valid JSON: {exc}") from exc
        for rel, spec in data.items():
            if not isinstance(spec, dict):
                raise SchemaFileError(f"{p}: {rel!r}: expected an object with role and disease_end")
            out[normalize_relation_type(rel)] = _override(
                rel, str(spec.get("role", "")), str(spec.get("disease_end", "")), f"{p}: {rel!r}"
            )
        return out
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        cells = [c.strip() for c in (line.split("\t") if "\t" in line else line.split(","))]
        if len(cells) not in (2, 3):
            raise SchemaFileError(f"{p}:{n}: expected relation, role[, disease_end], got {len(cells)} cells")
        if n == 1 and cells[0].lower() == "relation":
            continue
        out[normalize_relation_type(cells[0])] = _override(
            cells[0], cells[1], cells[2] if len(cells) == 3 else "", f"{p}:{n}"
        )
    return out


def schema_from_graph(entities: Iterable[Entity], relations: Iterable[Relation]) -> RelationSchema:
    """The roles of a KG held as lists (an index or a test fake built without a store), by types and names."""
    types = {e.id: e.type for e in entities}
    return infer_schema(
        RelationStats.from_edges(
            (
                (r.head, r.type, r.tail, types.get(r.head, UNTYPED), types.get(r.tail, UNTYPED))
                for r in relations
            ),
            keep_names=False,
        )
    )
