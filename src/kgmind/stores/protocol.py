"""The GraphStore protocol: the small storage interface every backend implements.

Two backends ship: :class:`kgmind.stores.ladybug.LadybugStore` (embedded, default) and
:class:`kgmind.stores.neo4j.Neo4jStore` (server). Both pass the same contract suite
(``tests/contract/test_store.py``). Retrieval reads the store through this interface
(or through an in-memory adjacency index built from :meth:`GraphStore.iter_relations`);
feedback writes through :meth:`GraphStore.apply_weight_updates` only.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol, TypeVar, get_args, runtime_checkable

from pydantic import BaseModel, Field

from kgmind.models import Entity, KnowledgeDoc, Relation, WeightChange, clean_entity, merge_entities

__all__ = [
    "Direction",
    "GraphPath",
    "GraphStore",
    "LoadInput",
    "LoadReport",
    "NeighborArgs",
    "SiblingEdges",
    "StoreError",
    "StoreStats",
    "StoreUnavailableError",
    "WeightRule",
    "in_id_order",
    "neighbor_args",
    "trivial_paths",
    "unknown_endpoints_error",
]

Direction = Literal["out", "in", "both"]

#: A pure weight-update rule, called inside the store's write transaction.
#: Argument 1: ``{head_id: [(relation_id, weight), ...]}`` — every outgoing edge of each
#: head node touched by the feedback (the siblings, read inside the transaction).
#: Argument 2: the relation ids the feedback is about.
#: Returns ``{relation_id: new_weight}`` for the edges to change (all weights > 0).
WeightRule = Callable[[Mapping[str, Sequence[tuple[str, float]]], Sequence[str]], Mapping[str, float]]


class StoreError(RuntimeError):
    """A store operation failed; the message says which and why."""


class StoreUnavailableError(StoreError):
    """The store cannot be opened or reached (bad path, server down, bad credentials)."""


class GraphPath(BaseModel):
    """A path through the KG.

    Attributes:
        nodes: Entity ids in path order (``len(relations) + 1`` of them).
        relations: The edges walked, in order. On an undirected search an edge may
            be walked against its direction (``relations[i].tail == nodes[i]``).
    """

    nodes: list[str]
    relations: list[Relation]


def trivial_paths(
    store: GraphStore, source: str, target: str, max_hops: int, limit: int
) -> list[GraphPath] | None:
    """The answer of :meth:`GraphStore.paths` when no search is needed, else ``None``.

    Every backend answers these cases alike: nothing for ``limit <= 0``, a negative or
    zero bound, or an unknown source; the single empty path for ``source == target``.
    """
    if limit <= 0 or max_hops < 0 or not store.get_entities([source]):
        return []
    if source == target:
        return [GraphPath(nodes=[source], relations=[])]
    if max_hops == 0:
        return []
    return None


class StoreStats(BaseModel):
    """Counts of a store's content (the JSON of ``kgmind kg stats``)."""

    entities: dict[str, int] = Field(default_factory=dict)
    relations: dict[str, int] = Field(default_factory=dict)
    entities_total: int = 0
    relations_total: int = 0
    docs_total: int = 0


class LoadReport(BaseModel):
    """What a bulk load wrote."""

    entities: int = 0
    relations: int = 0
    docs: int = 0


@runtime_checkable
class GraphStore(Protocol):
    """Storage operations the kgmind pipeline needs.

    Every method is synchronous and thread-safe. Names are looked up by
    :func:`kgmind.models.normalize_name`. All query text is fixed; values travel as
    parameters.
    """

    uri: str

    # -- writing ---------------------------------------------------------------
    def bulk_load(
        self,
        entities: Iterable[Entity],
        relations: Iterable[Relation],
        docs: Iterable[KnowledgeDoc] = (),
    ) -> LoadReport:
        """Upsert entities, relations and docs as one unit: all of it lands or none.

        Existing entities with the same id are merged (name kept, aliases unioned,
        description filled if empty, type by :data:`kgmind.models.TYPE_PRIORITY`);
        existing relations keep their current weight. Relations whose head or tail
        is neither loaded nor already stored are an error.
        """
        ...

    def clear(self) -> None:
        """Delete every entity, relation, doc and audit row."""
        ...

    # -- reading ---------------------------------------------------------------
    def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        """Entities by id, in the order asked; unknown ids are skipped."""
        ...

    def find_entities(self, name: str) -> list[Entity]:
        """Entities whose name or an alias normalises like ``name``."""
        ...

    def iter_entities(self) -> Iterator[Entity]:
        """Every entity (for building the name index)."""
        ...

    def iter_relations(self) -> Iterator[Relation]:
        """Every relation with its current weight (for the in-memory adjacency index)."""
        ...

    def neighbors(
        self,
        ids: Sequence[str],
        direction: Direction = "out",
        relation_types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[Relation]:
        """Edges touching ``ids`` in ``direction``, optionally filtered by type.

        Ordered by head id, relation type, descending weight, tail id; at most ``limit``.
        Type names are matched as keys (``"Has Symptom"`` finds ``has_symptom``).

        Raises:
            ValueError: ``direction`` is not ``out``, ``in`` or ``both``.

        """
        ...

    def paths(
        self,
        source: str,
        target: str,
        max_hops: int,
        directed: bool = True,
        limit: int = 10,
    ) -> list[GraphPath]:
        """All shortest paths ``source`` → ``target`` of at most ``max_hops`` edges."""
        ...

    def get_relations(self, ids: Sequence[str]) -> list[Relation]:
        """Relations by id, in the order asked; unknown ids are skipped."""
        ...

    def out_edges(self, entity_id: str) -> list[Relation]:
        """Every outgoing edge of one node with its weight (KGCoT's DFS step)."""
        ...

    def docs_for(self, entity_ids: Sequence[str]) -> list[KnowledgeDoc]:
        """Knowledge documents about the given entities."""
        ...

    def get_docs(self, ids: Sequence[str]) -> list[KnowledgeDoc]:
        """Knowledge documents by id (the ``source`` of an edge)."""
        ...

    def stats(self) -> StoreStats:
        """Counts per entity type and relation type."""
        ...

    def fingerprint(self) -> str:
        """A string that changes whenever entities or relations are added or removed.

        Weight changes do not change it (the entity index does not depend on weights).
        """
        ...

    def weights_version(self) -> int:
        """A counter bumped in the transaction of every weight change (feedback, reset).

        Cheap to read, so a process can check per question whether another process moved
        weights its cached graph index holds (the fingerprint ignores weights). Each
        committed feedback that changed weights adds exactly 1.
        """
        ...

    # -- feedback ----------------------------------------------------------------
    def apply_weight_updates(
        self,
        feedback_id: str,
        run_id: str,
        rating: str,
        relation_ids: Sequence[str],
        rule: WeightRule,
    ) -> list[WeightChange]:
        """Apply one feedback in one transaction, idempotently.

        Inside a single write transaction: if ``feedback_id`` was already applied,
        change nothing and return ``[]``; otherwise read the outgoing edges of every
        head node of ``relation_ids``, call ``rule``, write the new weights and one
        audit row per changed edge. Any failure rolls the whole feedback back.

        Args:
            feedback_id: Idempotency key; a feedback id already applied changes
                nothing and returns ``[]``.
            run_id: The pipeline run the feedback is about.
            rating: ``excellent`` or ``poor`` (stored in the audit rows).
            relation_ids: The edges the feedback is about.
            rule: Pure function from the heads' sibling edges to new weights.

        Returns:
            The committed changes (one audit row per edge whose weight changed), by
            relation id.

        Raises:
            StoreError: Unknown relation ids, a rule that fails or returns a weight
                that is not finite and > 0 or an edge that is not a sibling, or a
                failed write; in every case nothing is changed.

        """
        ...

    def weight_changes(self, feedback_id: str | None = None) -> list[WeightChange]:
        """Audit rows, oldest first; only those of ``feedback_id`` when given."""
        ...

    def reset_weights(self) -> int:
        """Set every weight back to 1.0 and drop the audit log; returns edges reset."""
        ...

    def close(self) -> None:
        """Release files, connections and locks."""
        ...


# -- what every backend does alike ---------------------------------------------------
# The backends differ in how they talk to their database, not in what the protocol
# promises; these helpers hold the promised behaviour once, so the backends cannot drift.

_DIRECTIONS: tuple[str, ...] = get_args(Direction)


class NeighborArgs(NamedTuple):
    """The arguments of :meth:`GraphStore.neighbors`, checked and normalised.

    Attributes:
        ids: The entity ids asked about (never empty).
        types: Relation type keys to keep (``"Has Symptom"`` → ``has_symptom``), or
            ``None`` for every type.
        limit: The most edges to return (> 0), or ``None`` for no bound.
    """

    ids: list[str]
    types: list[str] | None
    limit: int | None


def neighbor_args(
    ids: Sequence[str],
    direction: str,
    relation_types: Sequence[str] | None,
    limit: int | None,
) -> NeighborArgs | None:
    """Check and normalise the arguments of :meth:`GraphStore.neighbors`.

    Returns:
        The normalised arguments, or ``None`` when the answer is empty without a query
        (no ids, or ``limit <= 0``).

    Raises:
        ValueError: ``direction`` is not ``out``, ``in`` or ``both`` (checked first, so
            a bad direction fails even on an empty ``ids``).

    """
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be 'out', 'in' or 'both', not {direction!r}")
    wanted = list(ids)
    if not wanted or (limit is not None and limit <= 0):
        return None
    types = None if relation_types is None else [t.strip().replace(" ", "_").lower() for t in relation_types]
    return NeighborArgs(wanted, types, None if limit is None else int(limit))


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


_ItemT = TypeVar("_ItemT", bound=_Identified)


def in_id_order(ids: Sequence[str], fetch: Callable[[list[str]], Iterable[_ItemT]]) -> list[_ItemT]:
    """Look items up by id with one ``fetch`` call and return them in the order asked.

    This is the protocol's contract for every lookup by id (:meth:`GraphStore.get_entities`,
    :meth:`~GraphStore.get_relations`, :meth:`~GraphStore.get_docs`): unknown ids are
    skipped, and no query is made for an empty ``ids``.
    """
    wanted = list(ids)
    if not wanted:
        return []
    found = {item.id: item for item in fetch(wanted)}
    return [found[i] for i in wanted if i in found]


@dataclass
class LoadInput:
    """The input of one :meth:`GraphStore.bulk_load`, deduplicated by id.

    Repeated entities are merged by the protocol's rules, a repeated relation keeps its
    first occurrence (with the first non-empty ``source``), a repeated doc its last.

    Attributes:
        entities: Entities by id, cleaned and merged.
        relations: Relations by id.
        docs: Knowledge documents by id.
    """

    entities: dict[str, Entity] = field(default_factory=dict)
    relations: dict[str, Relation] = field(default_factory=dict)
    docs: dict[str, KnowledgeDoc] = field(default_factory=dict)

    @classmethod
    def merge(
        cls, entities: Iterable[Entity], relations: Iterable[Relation], docs: Iterable[KnowledgeDoc]
    ) -> LoadInput:
        """Deduplicate the three inputs of a bulk load (see the class docstring)."""
        load = cls(docs={d.id: d for d in docs})
        for ent in entities:
            prev = load.entities.get(ent.id)
            load.entities[ent.id] = clean_entity(ent) if prev is None else merge_entities(prev, ent)
        for rel in relations:
            prev_rel = load.relations.get(rel.id)
            if prev_rel is None:
                load.relations[rel.id] = rel
            elif not prev_rel.source and rel.source:
                load.relations[rel.id] = prev_rel.model_copy(update={"source": rel.source})
        return load

    def report(self) -> LoadReport:
        """What :meth:`GraphStore.bulk_load` returns: the distinct items of the input."""
        return LoadReport(entities=len(self.entities), relations=len(self.relations), docs=len(self.docs))

    def is_empty(self) -> bool:
        """Whether there is nothing to write (the load then touches no database)."""
        return not (self.entities or self.relations or self.docs)


def unknown_endpoints_error(missing: Sequence[str]) -> StoreError:
    """The error of a bulk load whose relations name entities neither loaded nor stored."""
    shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
    return StoreError(f"bulk_load: {len(missing)} relation endpoint(s) are unknown entities: {shown}")


@dataclass
class SiblingEdges:
    """The outgoing edges of the head nodes one feedback touches, read inside its transaction.

    They are what a :data:`WeightRule` sees and the only edges it may change.

    Attributes:
        by_head: ``{head_id: [(relation_id, weight), ...]}``, the rule's first argument.
        head_of: The head of every sibling edge, by relation id.
        weight: The current weight of every sibling edge, by relation id.
    """

    by_head: dict[str, list[tuple[str, float]]]
    head_of: dict[str, str] = field(default_factory=dict)
    weight: dict[str, float] = field(default_factory=dict)

    @classmethod
    def collect(cls, heads: Iterable[str], edges: Iterable[Sequence[Any]]) -> SiblingEdges:
        """Gather ``(head_id, relation_id, weight)`` rows (as a backend reads them) under the ``heads``."""
        siblings = cls(by_head={h: [] for h in sorted(heads)})
        for head, rid, weight in edges:
            siblings.by_head[head].append((rid, float(weight)))
            siblings.head_of[rid] = head
            siblings.weight[rid] = float(weight)
        return siblings

    def updates(
        self, feedback_id: str, rule: WeightRule, relation_ids: Sequence[str]
    ) -> list[tuple[str, float]]:
        """Call ``rule`` and return the weights it changes, as ``(relation_id, weight)`` by id.

        A rule is user code, so its output is checked before anything is written.

        Raises:
            StoreError: The rule failed, changed an edge that is not a sibling, or gave
                a weight that is not a finite number > 0.

        """
        where = f"feedback {feedback_id!r}"
        try:
            new_weights = rule(self.by_head, list(relation_ids))
        except Exception as exc:
            raise StoreError(f"{where}: the weight rule failed: {exc}") from exc
        updates: list[tuple[str, float]] = []
        for rid, value in new_weights.items():
            if rid not in self.weight:
                raise StoreError(f"{where}: the rule changed {rid!r}, not a sibling edge")
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise StoreError(f"{where}: weight of {rid!r} is not a number: {value!r}")
            new = float(value)
            if not math.isfinite(new) or new <= 0:
                raise StoreError(f"{where}: weight of {rid!r} must be finite and > 0: {new}")
            if new != self.weight[rid]:
                updates.append((rid, new))
        return sorted(updates)

    def changes(
        self, feedback_id: str, run_id: str, rating: str, at: str, updates: Sequence[tuple[str, float]]
    ) -> list[WeightChange]:
        """The audit rows of ``updates`` (from :meth:`updates`), all stamped ``at``."""
        return [
            WeightChange(
                feedback_id=feedback_id,
                run_id=run_id,
                relation_id=rid,
                old_weight=self.weight[rid],
                new_weight=new,
                rating=rating,
                at=at,
            )
            for rid, new in updates
        ]
