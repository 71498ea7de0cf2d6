"""The shared types: the knowledge-graph data model and the evidence every layer passes on.

Entities, relations and knowledge documents are pydantic models. Identifiers are
*stable*: they are derived from the normalised entity name (and, for relations, from
head, type and tail), so importing the same fact twice yields the same id and an
upsert merges instead of duplicating. Names are kept exactly as given for display;
:func:`normalize_name` gives the lookup key (case, ``_`` vs space, full/half width).
"""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from collections.abc import Iterable, Mapping
from typing import Any, Final, Literal, NamedTuple

from pydantic import BaseModel, Field, field_validator

__all__ = [
    "COMMON_ENTITY_TYPES",
    "EVIDENCE_PREFIX",
    "MAX_RELATION_TYPE_LENGTH",
    "MIND_MAP_ONLY",
    "MIND_MAP_ONLY_NOTE",
    "RELATION_TYPE_RULE",
    "SUPPORT_RELATION",
    "TYPE_PRIORITY",
    "VERDICTS",
    "DisputeState",
    "Entity",
    "Evidence",
    "EvidenceKind",
    "KnowledgeDoc",
    "LinkedEntity",
    "Mention",
    "Relation",
    "StoredEdge",
    "VerdictKind",
    "VerdictRecord",
    "WeightChange",
    "clean_entity",
    "doc_id",
    "entity_id",
    "evidence_entity_types",
    "merge_entities",
    "mind_map_only",
    "normalize_name",
    "normalize_relation_type",
    "relation_id",
    "valid_relation_type",
]

#: Entity types the importers produce. Other strings are allowed (non-medical KGs).
COMMON_ENTITY_TYPES: tuple[str, ...] = (
    "disease",
    "symptom",
    "test",
    "medication",
    "food",
    "department",
    "producer",
    "entity",
)

#: When one name is seen with several types (e.g. "Depression" is a disease and a
#: symptom), the entity keeps the type that comes first here. Unknown types rank last.
TYPE_PRIORITY: dict[str, int] = {t: i for i, t in enumerate(COMMON_ENTITY_TYPES)}

_WS = re.compile(r"\s+")


def normalize_name(name: str) -> str:
    """Return the lookup key of an entity name.

    NFKC folds full-width forms (``ＡＢＣ`` → ``abc``, ``（`` → ``(``), ``_`` becomes a
    space, whitespace is collapsed and the result is case-folded. CJK text is left
    otherwise untouched.

    Args:
        name: The name as written in the source or the question.

    Returns:
        The normalised key; the empty string for a blank name.
    """
    if len(name) <= _CACHED_NAME_CHARS:
        return _normalized(name)
    return _normalize(name)


#: Names up to this length have their key cached: every evidence item's names are looked up
#: many times per question (packing, sharing, grounding), and a KG has a bounded vocabulary.
_CACHED_NAME_CHARS = 200


def _normalize(name: str) -> str:
    text = unicodedata.normalize("NFKC", name).replace("_", " ")
    return _WS.sub(" ", text).strip().casefold()


_normalized = functools.lru_cache(maxsize=1 << 16)(_normalize)


def _digest(*parts: str) -> str:
    h = hashlib.blake2b(digest_size=10)
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x1f")
    return h.hexdigest()


def entity_id(name: str) -> str:
    """Stable id of the entity called ``name`` (same for every spelling that normalises alike)."""
    key = normalize_name(name)
    if not key:
        raise ValueError("an entity name must not be blank")
    return "e" + _digest(key)


def relation_id(head_id: str, rel_type: str, tail_id: str) -> str:
    """Stable id of the edge ``head -[rel_type]-> tail``."""
    return "r" + _digest(head_id, rel_type, tail_id)


def doc_id(entity: str, text: str) -> str:
    """Stable id of a knowledge document about ``entity`` (an entity id) with ``text``."""
    return "d" + _digest(entity, text)


#: Longest relation type accepted (a type becomes a Neo4j relationship type).
MAX_RELATION_TYPE_LENGTH = 64


#: The rule :func:`valid_relation_type` checks, in words (import errors quote it).
RELATION_TYPE_RULE = (
    f"a relation type is a letter or _ then letters, digits or _ in any script, at most "
    f"{MAX_RELATION_TYPE_LENGTH} characters (spaces become _; no quotes, backticks, -, ., ~ or emoji)"
)


def normalize_relation_type(name: str) -> str:
    """A relation type as stored: trimmed, spaces as ``_``, lower-case (``Has Symptom``: ``has_symptom``)."""
    return name.strip().replace(" ", "_").lower()


def valid_relation_type(name: str) -> bool:
    """Whether ``name`` is an identifier in any script: a letter or ``_``, then letters, digits, marks, ``_``.

    Why not ASCII only: a Chinese KG names its relations ``症状``. What stays out is what
    could break out of a Cypher identifier or clash with a reading: spaces, quotes,
    backticks, punctuation, ``~`` (:data:`kgmind.relations.REVERSE_MARK`).
    """
    if not name or len(name) > MAX_RELATION_TYPE_LENGTH or not (name[0].isalpha() or name[0] == "_"):
        return False
    return all(c.isalnum() or c == "_" or unicodedata.category(c) in ("Mn", "Mc") for c in name)


class Entity(BaseModel):
    """A KG node.

    Attributes:
        id: Stable id, by default :func:`entity_id` of ``name``.
        name: Display name, as given by the source.
        type: Entity type, e.g. ``disease``, ``symptom``, ``test``, ``medication``.
        aliases: Other names that should link to this entity.
        description: Free text about the entity (HyKGE attaches it to chains).
    """

    id: str = ""
    name: str
    type: str = "entity"
    aliases: list[str] = Field(default_factory=list)
    description: str = ""

    @field_validator("name")
    @classmethod
    def _name_not_blank(cls, v: str) -> str:
        if not normalize_name(v):
            raise ValueError("entity name must not be blank")
        return v.strip()

    @field_validator("type")
    @classmethod
    def _type_lower(cls, v: str) -> str:
        v = v.strip().lower()
        return v or "entity"

    def model_post_init(self, __context: Any) -> None:
        """Derive the stable id when none was given."""
        if not self.id:
            self.id = entity_id(self.name)

    @property
    def key(self) -> str:
        """The normalised lookup key of :attr:`name`."""
        return normalize_name(self.name)


class Relation(BaseModel):
    """A directed, weighted KG edge ``head -[type]-> tail``.

    Attributes:
        id: Stable id, by default :func:`relation_id` of head, type and tail.
        head: Head entity id.
        type: Relation type, an identifier in any script (``has_symptom``, ``症状`` …).
        tail: Tail entity id.
        weight: KGCoT edge weight; starts at 1.0, always > 0.
        source: Reference to the knowledge behind the edge (a document id or a
            citation), which KGCoT stores on each edge.
    """

    id: str = ""
    head: str
    type: str
    tail: str
    weight: float = 1.0
    source: str = ""

    @field_validator("type")
    @classmethod
    def _type_ok(cls, v: str) -> str:
        v = normalize_relation_type(v)
        if not valid_relation_type(v):
            raise ValueError(f"bad relation type {v!r}: {RELATION_TYPE_RULE}")
        return v

    @field_validator("weight")
    @classmethod
    def _weight_positive(cls, v: float) -> float:
        if not v > 0 or v != v or v == float("inf"):
            raise ValueError("relation weight must be a finite number > 0")
        return float(v)

    def model_post_init(self, __context: Any) -> None:
        """Derive the stable id when none was given."""
        if not self.id:
            self.id = relation_id(self.head, self.type, self.tail)


class StoredEdge(NamedTuple):
    """A stored edge as an index shows it: :class:`Relation`'s fields, unchecked (bounded reads: ``EdgeRow``).

    A pushed-down question reads ~10k edges and a worker keeps ~10^5 of them between questions
    (``BoundedReads``); a pydantic model per edge, even unvalidated, was a fifth of a re-crawl
    question's CPU samples (py-spy). The store validated each edge when it was written.
    """

    id: str
    head: str
    type: str
    tail: str
    weight: float
    source: str


#: A :class:`StoredEdge`'s fields as a plain tuple, as bounded reads return them: ``(id, head,
#: type, tail, weight, source)`` (read by position: :data:`EDGE_ID`, :data:`EDGE_HEAD`, …).
#: CPython's cyclic GC stops tracking an exact tuple of strings and numbers the first time it
#: looks at it, never a tuple subclass: a cold re-crawl question lists ~10k edges, and held as
#: ``StoredEdge`` rows they lived long enough to reach the oldest generation, whose full
#: collections then took 30-60 ms of each of a worker's first 40-200 questions (``gc.callbacks``;
#: issue 42, ``benchmarks/results/2026-11-29-gc-rows``).
EdgeRow = tuple[str, str, str, str, float, str]
EDGE_ID: Final = 0
EDGE_HEAD: Final = 1
EDGE_TYPE: Final = 2
EDGE_TAIL: Final = 3
EDGE_WEIGHT: Final = 4
EDGE_SOURCE: Final = 5


class KnowledgeDoc(BaseModel):
    """A piece of text knowledge about one entity (e.g. a disease description).

    Attributes:
        id: Stable id, by default :func:`doc_id` of entity id and text.
        entity_id: The entity the text is about.
        text: The text.
    """

    id: str = ""
    entity_id: str
    text: str

    def model_post_init(self, __context: Any) -> None:
        """Derive the stable id when none was given."""
        if not self.id:
            self.id = doc_id(self.entity_id, self.text)


class WeightChange(BaseModel):
    """One audited edge-weight change made by a feedback (one audit row).

    Attributes:
        feedback_id: Idempotency key of the feedback that made the change.
        run_id: The pipeline run the feedback was about.
        relation_id: The edge whose weight changed.
        old_weight: Weight before the feedback.
        new_weight: Weight after the feedback.
        rating: ``excellent`` or ``poor``.
        at: ISO-8601 UTC time of the commit.
    """

    feedback_id: str
    run_id: str
    relation_id: str
    old_weight: float
    new_weight: float
    rating: str
    at: str


#: What a person can say about one KG edge: it is ``wrong`` or ``right``.
VERDICTS: tuple[str, ...] = ("wrong", "right")

#: A verdict row's kind: a person's verdict, or ``restore`` (a dispute undone; older verdicts stop counting).
VerdictKind = Literal["wrong", "right", "restore"]


class VerdictRecord(BaseModel):
    """One audited verdict on one KG edge (one row of a store's verdict log).

    Attributes:
        feedback_id: Idempotency key of the feedback that carried the verdict (one run's
            claim, one line of a ``kg flag`` file, or a ``kg restore``).
        run_id: Who judged: the run whose answer was flagged (``flag:SOURCE`` for a bulk
            file; empty for a restore).
        relation_id: The judged edge.
        verdict: ``wrong``, ``right`` or ``restore``.
        source: Where it came from (``cli``, ``human``, a curator's name …).
        at: ISO-8601 UTC time of the commit.
    """

    feedback_id: str
    run_id: str
    relation_id: str
    verdict: VerdictKind
    source: str = ""
    at: str = ""


class DisputeState(BaseModel):
    """What the verdicts since an edge's last restore say about it.

    Counts are of distinct judges (run ids), so one run that flags two claims resting on
    the same edge counts once: a single answer review cannot dispute an edge alone.

    Attributes:
        relation_id: The edge.
        wrong: Distinct runs that called it wrong since the last restore.
        right: Distinct runs that confirmed it since the last restore.
        runs: The run ids that called it wrong, first first.
        disputed: Whether the dispute rule (:class:`kgmind.tuning.DisputeRule`) marks it
            disputed, so the explorations stop showing it.
    """

    relation_id: str
    wrong: int = 0
    right: int = 0
    runs: list[str] = Field(default_factory=list)
    disputed: bool = False


def _type_rank(entity_type: str) -> int:
    return TYPE_PRIORITY.get(entity_type, len(TYPE_PRIORITY))


def merge_entities(old: Entity, new: Entity) -> Entity:
    """Merge ``new`` into ``old`` (same id), as every store's upsert does.

    The name is kept, the type is the higher-priority one (:data:`TYPE_PRIORITY`),
    aliases are unioned and deduplicated by normalised key (never repeating the name),
    and the description is filled only when empty.
    """
    etype = new.type if _type_rank(new.type) < _type_rank(old.type) else old.type
    seen = {normalize_name(old.name)}
    aliases: list[str] = []
    for alias in [*old.aliases, *new.aliases]:
        key = normalize_name(alias)
        if key and key not in seen:
            seen.add(key)
            aliases.append(alias)
    return Entity.model_construct(
        id=old.id, name=old.name, type=etype, aliases=aliases, description=old.description or new.description
    )


def clean_entity(entity: Entity) -> Entity:
    """``entity`` with aliases deduplicated by key and without its own name."""
    bare = Entity.model_construct(
        id=entity.id, name=entity.name, type=entity.type, aliases=[], description=entity.description
    )
    return merge_entities(bare, entity)


# -- retrieval types shared by tools, retrievers, graphs and eval ---------------------------


EvidenceKind = Literal["path", "neighbor", "chain", "kgcot", "doc"]

#: Id prefix per kind when evidence is numbered (P1…, N1…, C1…, K1…, D1…).
EVIDENCE_PREFIX: dict[str, str] = {
    "path": "P",
    "neighbor": "N",
    "chain": "C",
    "kgcot": "K",
    "doc": "D",
}


#: ``meta["relation"]`` of a ranked neighbor line that lists the question's findings pointing to one
#: candidate disease (``meta["disease"]``): why that disease is a candidate, not what to do about it.
SUPPORT_RELATION = "support"

#: ``meta`` key (``True``) of an evidence item shown after the answer, for the mind map only: the model
#: did not read it, so evidence metrics leave it out.
MIND_MAP_ONLY = "mind_map_only"
#: What the renderers say of such an item (marked ``†`` in the evidence table).
MIND_MAP_ONLY_NOTE = "added after the answer, for the mind map: the model did not read it"


class Mention(BaseModel):
    """A span of the question (or hypothesis) that may name a KG entity.

    Attributes:
        text: The span as written.
        source: Which extractor found it: ``gazetteer``, ``llm``, ``embedding``, ``given``.
        entity_id: Set when the extractor already knows the entity (gazetteer).
        score: Extractor confidence in [0, 1].
    """

    text: str
    source: str = "given"
    entity_id: str | None = None
    score: float = 1.0


class LinkedEntity(BaseModel):
    """A mention linked to a KG entity.

    Attributes:
        mention: The mention text.
        entity_id: The KG entity.
        name: The entity's display name.
        type: The entity's type.
        score: Similarity of mention and entity name (1.0 for exact matches).
    """

    mention: str
    entity_id: str
    name: str
    type: str = "entity"
    score: float = 1.0


class Evidence(BaseModel):
    """One unit of KG evidence.

    Attributes:
        id: Citation id assigned when evidence is numbered (``P1``, ``N3``, ``K2``…);
            empty before :func:`number_evidence`.
        kind: ``path`` (MindMap path-based), ``neighbor`` (MindMap neighbor-based),
            ``chain`` (HyKGE path / co-ancestor / co-occurrence chain), ``kgcot``
            (KGCoT weighted-DFS chain), ``doc`` (a retrieved document).
        text: The evidence as one natural-language sentence (or the raw form before
            rendering).
        triples: ``(head name, relation type, tail name)`` per edge, in order.
        relation_ids: The KG edges used, aligned with ``triples`` where possible.
        entity_ids: KG entities the evidence mentions.
        entity_types: ``display name -> entity type`` of those entities, filled by the tool
            that built the item (it had them at hand), so no later stage asks the store again;
            empty for items built without them (documents, checkpoints written before the
            field existed). A cut item keeps the types of the entities it no longer shows.
        readings: ``relation (as in triples) -> "from>to"`` entity types of its medical
            role (``disease>symptom``, ``symptom>disease`` …), filled by the tool that built
            the item from the KG's relation roles (:mod:`kgmind.relations`), so its sentence
            reads right whatever the user named the relation; relations without a medical
            role are absent.
        score: Ranking score (higher is better).
        source: The tool that produced it.
        meta: Extra data (e.g. ``{"knowledge": …}`` for KGCoT edges, ``chain_type``).
    """

    id: str = ""
    kind: EvidenceKind
    text: str = ""
    triples: list[tuple[str, str, str]] = Field(default_factory=list)
    relation_ids: list[str] = Field(default_factory=list)
    entity_ids: list[str] = Field(default_factory=list)
    entity_types: dict[str, str] = Field(default_factory=dict)
    readings: dict[str, str] = Field(default_factory=dict)
    score: float = 0.0
    source: str = ""
    meta: dict[str, Any] = Field(default_factory=dict)


def evidence_entity_types(evidence: Iterable[Evidence]) -> dict[str, str]:
    """``normalize_name(name) -> entity type`` over the types the evidence items carry.

    Ids derive from normalised names (:func:`entity_id`), so a name has one type whichever
    item says it; only a KG that gives two entities of one name their own ids and types
    sees the last item's type win.
    """
    return {normalize_name(name): etype for ev in evidence for name, etype in ev.entity_types.items()}


def mind_map_only(ev: Evidence | Mapping[str, Any]) -> bool:
    """Whether an evidence item (or its ``kgmind ask --json`` dict) was added for the mind map only."""
    meta = ev.meta if isinstance(ev, Evidence) else ev.get("meta") or {}
    return bool(meta.get(MIND_MAP_ONLY))
