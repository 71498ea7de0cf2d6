"""StoreBase: what every GraphStore backend does alike, written once above the backends' database calls.

The backends differ in how they talk to their database, not in what the protocol promises.
:class:`StoreBase` implements the promised behaviour of the protocol's public methods (the
argument checks, the empty answers that need no query, lookups by id in the order asked,
the deduplicated bulk-load input, the path-search bound) and leaves a backend only its
hooks, the ``_fetch_*`` / ``_write_*`` methods that run its own statements. The helpers
beside it (:class:`LoadInput`, :class:`SiblingEdges`, :func:`neighbor_args` …) are the
rules a backend applies inside its own transactions. So the two backends cannot drift on
the contract suite's rules, and a third backend writes only the database half.
"""

from __future__ import annotations

import json
import math
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, Protocol, TypeVar, get_args

from kgmind.models import (
    DisputeState,
    Entity,
    KnowledgeDoc,
    Relation,
    VerdictRecord,
    WeightChange,
    clean_entity,
    merge_entities,
    normalize_name,
)
from kgmind.relations import RelationSchema, RelationStats, infer_schema
from kgmind.stores.disputes import WeightVerdicts, check_verdicts, dispute_states, require_text
from kgmind.stores.protocol import (
    Direction,
    GraphPath,
    LoadReport,
    RatingRules,
    StoreError,
    StoreStats,
    VerdictResult,
    WeightRule,
)
from kgmind.tuning import DisputeRule

__all__ = [
    "NO_LIMIT",
    "LoadInput",
    "NeighborArgs",
    "SiblingEdges",
    "StoreBase",
    "in_id_order",
    "neighbor_args",
    "unknown_endpoints_error",
]

#: The ``$limit`` a backend sends when the caller set no limit (its statements always take one).
NO_LIMIT = 2**62

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


class StoreBase(ABC):
    """The protocol's public methods over a backend's hooks (see the module docstring).

    Attributes:
        uri: The store's URI.
        max_path_hops: Longest shortest path :meth:`paths` searches; a longer bound is
            searched as this (the backend's largest).
        neighbor_queries: The backend's statement of :meth:`neighbors` for each direction.
    """

    uri: str
    max_path_hops: ClassVar[int]
    neighbor_queries: ClassVar[Mapping[Direction, str]]

    # -- writing -------------------------------------------------------------------
    def bulk_load(
        self, entities: Iterable[Entity], relations: Iterable[Relation], docs: Iterable[KnowledgeDoc] = ()
    ) -> LoadReport:
        """Upsert entities, relations and docs as one unit: all of it lands or none.

        Entities with an id already stored (or repeated in the input) are merged: name
        kept, aliases unioned (deduplicated by normalised key), description filled if
        empty, type by :data:`kgmind.models.TYPE_PRIORITY`. Stored relations keep their
        weight (an empty ``source`` is filled). Docs with a known id are kept as stored.
        An empty input touches no database.

        Args:
            entities: Entities to upsert.
            relations: Relations to upsert; both endpoints must be loaded or stored.
            docs: Knowledge documents to upsert.

        Returns:
            Distinct entities, relations and docs in the input.

        Raises:
            StoreError: A relation endpoint is unknown, or the write failed (nothing
                was written).
            StoreUnavailableError: The store cannot be reached.

        """
        load = LoadInput.merge(entities, relations, docs)
        if not load.is_empty():
            self._write_load(load)
        return load.report()

    @abstractmethod
    def _write_load(self, load: LoadInput) -> None:
        """Write a deduplicated, non-empty load in one transaction (see :meth:`bulk_load`)."""

    def apply_weight_updates(
        self, feedback_id: str, run_id: str, rating: str, relation_ids: Sequence[str], rule: WeightRule
    ) -> list[WeightChange]:
        """See :meth:`GraphStore.apply_weight_updates` (relation ids deduplicated in order)."""
        return self._apply_feedback(feedback_id, run_id, rating, list(dict.fromkeys(relation_ids)), rule)

    @abstractmethod
    def _apply_feedback(
        self, feedback_id: str, run_id: str, rating: str, rel_ids: list[str], rule: WeightRule
    ) -> list[WeightChange]:
        """Apply one feedback in one idempotent write transaction (distinct ``rel_ids``)."""

    # -- lookups by id -----------------------------------------------------------------
    def get_entities(self, ids: Sequence[str]) -> list[Entity]:
        """See :meth:`GraphStore.get_entities`."""
        return in_id_order(ids, self._fetch_entities)

    def get_relations(self, ids: Sequence[str]) -> list[Relation]:
        """See :meth:`GraphStore.get_relations`."""
        return in_id_order(ids, self._fetch_relations)

    def get_docs(self, ids: Sequence[str]) -> list[KnowledgeDoc]:
        """See :meth:`GraphStore.get_docs`."""
        return in_id_order(ids, self._fetch_docs)

    @abstractmethod
    def _fetch_entities(self, ids: list[str]) -> Iterable[Entity]:
        """The stored entities among ``ids`` (a non-empty list), in any order."""

    @abstractmethod
    def _fetch_relations(self, ids: list[str]) -> Iterable[Relation]:
        """The stored relations among ``ids`` (a non-empty list), in any order."""

    @abstractmethod
    def _fetch_docs(self, ids: list[str]) -> Iterable[KnowledgeDoc]:
        """The stored documents among ``ids`` (a non-empty list), in any order."""

    # -- searches ----------------------------------------------------------------------
    def find_entities(self, name: str) -> list[Entity]:
        """Entities whose name or an alias normalises like ``name`` (ordered by id)."""
        key = normalize_name(name)
        return self._fetch_by_key(key) if key else []

    @abstractmethod
    def _fetch_by_key(self, key: str) -> list[Entity]:
        """Entities whose name or an alias has the normalised ``key`` (not empty), ordered by id."""

    def neighbors(
        self,
        ids: Sequence[str],
        direction: Direction = "out",
        relation_types: Sequence[str] | None = None,
        limit: int | None = None,
    ) -> list[Relation]:
        """See :meth:`GraphStore.neighbors`."""
        args = neighbor_args(ids, direction, relation_types, limit)
        if args is None:
            return []
        query = self.neighbor_queries[direction]
        return self._fetch_neighbors(
            query, args.ids, args.types, NO_LIMIT if args.limit is None else args.limit
        )

    @abstractmethod
    def _fetch_neighbors(
        self, query: str, ids: list[str], types: list[str] | None, limit: int
    ) -> list[Relation]:
        """Run ``query``, the backend's statement of :meth:`neighbors` for one direction.

        ``ids`` is not empty, ``types`` are keys (``None``: every type), ``limit`` > 0
        (:data:`NO_LIMIT` for no bound).
        """

    def paths(
        self, source: str, target: str, max_hops: int, directed: bool = True, limit: int = 10
    ) -> list[GraphPath]:
        """All shortest paths ``source`` → ``target`` of at most ``max_hops`` edges.

        Paths are sorted by their node ids, then relation ids; at most ``limit``.
        Nothing for ``limit <= 0``, a negative bound or an unknown source; the single
        empty path for ``source == target``; a bound above :attr:`max_path_hops` is
        searched as :attr:`max_path_hops`.
        """
        if limit <= 0 or max_hops < 0 or not self.get_entities([source]):
            return []
        if source == target:
            return [GraphPath(nodes=[source], relations=[])]
        if max_hops == 0:
            return []
        return self._shortest_paths(source, target, min(int(max_hops), self.max_path_hops), directed, limit)

    @abstractmethod
    def _shortest_paths(
        self, source: str, target: str, hops: int, directed: bool, limit: int
    ) -> list[GraphPath]:
        """The search of :meth:`paths` for distinct endpoints and a bound in ``1..max_path_hops``."""

    def docs_for(self, entity_ids: Sequence[str]) -> list[KnowledgeDoc]:
        """Knowledge documents about the given entities, ordered by entity id then doc id."""
        ids = list(entity_ids)
        return self._fetch_docs_for(ids) if ids else []

    @abstractmethod
    def _fetch_docs_for(self, entity_ids: list[str]) -> list[KnowledgeDoc]:
        """The documents of :meth:`docs_for` for a non-empty id list."""

    # -- counts ------------------------------------------------------------------------
    def stats(self) -> StoreStats:
        """Count entities per type and relations per type."""
        entities, relations, docs = self._counts()
        return StoreStats(
            entities=entities,
            relations=relations,
            entities_total=sum(entities.values()),
            relations_total=sum(relations.values()),
            docs_total=docs,
        )

    @abstractmethod
    def _counts(self) -> tuple[dict[str, int], dict[str, int], int]:
        """Entities per type, relations per type and the number of documents."""

    # -- relation roles ------------------------------------------------------------------
    def relation_schema(self) -> RelationSchema:
        """The roles of this KG's relation types: the stored schema file, else inferred.

        One aggregate read (relation type × entity types of its ends) plus the schema a
        user gave at import; see :mod:`kgmind.relations`.
        """
        stats: dict[str, RelationStats] = {}
        for rtype, head_type, tail_type, count in self._relation_profile():
            st = stats.setdefault(rtype, RelationStats(rtype))
            st.count += count
            st.head_types[head_type or "entity"] += count
            st.tail_types[tail_type or "entity"] += count
        return infer_schema([stats[k] for k in sorted(stats)], self.schema_overrides())

    @abstractmethod
    def _relation_profile(self) -> Iterable[tuple[str, str, str, int]]:
        """``(relation type, head entity type, tail entity type, edges)`` over the whole KG."""

    def schema_overrides(self) -> dict[str, dict[str, str]]:
        """The relation roles a user gave (``kg import --schema``), ``{}`` when none."""
        raw = self._read_schema()
        return json.loads(raw) if raw else {}

    def set_schema_overrides(self, overrides: Mapping[str, Mapping[str, str]]) -> None:
        """Keep the relation roles a user gave; bumps the content version, so indexes rebuild with them."""
        self._write_schema(json.dumps({k: dict(v) for k, v in sorted(overrides.items())}, ensure_ascii=False))

    @abstractmethod
    def _read_schema(self) -> str:
        """The stored schema JSON, ``""`` when none."""

    @abstractmethod
    def _write_schema(self, text: str) -> None:
        """Store the schema JSON and bump the content version, in one transaction."""

    # -- per-claim verdicts ------------------------------------------------------------
    def record_verdicts(
        self,
        feedback_id: str,
        run_id: str,
        verdicts: Sequence[tuple[str, str]],
        *,
        source: str,
        rule: RatingRules,
        dispute_rule: DisputeRule | None = None,
    ) -> VerdictResult:
        """See :meth:`GraphStore.record_verdicts` (everything is checked before the transaction)."""
        fid = require_text("feedback id", feedback_id)
        run = require_text("run id", run_id)
        src = require_text("source", source)
        checked = check_verdicts(verdicts)
        if not checked.rows():
            raise ValueError(f"feedback {fid!r} holds no verdict")
        checked = self._with_twins(checked)
        changes = self._write_verdicts(fid, run, checked, src, rule)
        states = self.dispute_states(checked.relation_ids(), dispute_rule)
        if changes is None:
            return VerdictResult(feedback_id=fid, already_applied=True, states=states)
        return VerdictResult(feedback_id=fid, verdicts=checked.rows(), changes=changes, states=states)

    @abstractmethod
    def _write_verdicts(
        self, feedback_id: str, run_id: str, verdicts: WeightVerdicts, source: str, rule: RatingRules
    ) -> list[WeightChange] | None:
        """Write one feedback's verdicts in one transaction; ``None`` when it was recorded before.

        Otherwise check the edges, write the verdict rows, apply ``rule("poor")`` to the wrong
        and ``rule("excellent")`` to the right edges through the feedback weight write, bump
        both versions, and return the weight changes.
        """

    def relation_twins(self, relation_ids: Sequence[str]) -> dict[str, list[str]]:
        """See :meth:`GraphStore.relation_twins` (two reads in all; verdicts and restores only)."""
        schema = self.relation_schema()
        rels = self.get_relations(list(dict.fromkeys(relation_ids)))
        kinds = {rel.id: schema.twin_types(rel.type) for rel in rels}
        all_kinds = sorted({k for ks in kinds.values() for k in ks})
        tails = list(dict.fromkeys(rel.tail for rel in rels if kinds[rel.id]))
        back = self.neighbors(tails, "out", all_kinds) if tails else []  # one read for every edge's way back
        by_ends: dict[tuple[str, str], list[Relation]] = {}
        for b in back:
            by_ends.setdefault((b.head, b.tail), []).append(b)
        return {
            rel.id: [
                b.id
                for b in by_ends.get((rel.tail, rel.head), [])
                if b.type in kinds[rel.id] and b.id != rel.id
            ]
            for rel in rels
        }

    def _with_twins(self, checked: WeightVerdicts) -> WeightVerdicts:
        """``checked`` with each edge's twins given its verdict, unless the feedback judges a twin itself."""
        twins = self.relation_twins(checked.relation_ids())
        judged = set(checked.relation_ids())
        wrong = list(checked.wrong)
        right = list(checked.right)
        for rid in checked.wrong:
            wrong += [t for t in twins.get(rid, []) if t not in judged and t not in wrong]
        for rid in checked.right:
            right += [t for t in twins.get(rid, []) if t not in judged and t not in right and t not in wrong]
        return WeightVerdicts(wrong, right)

    def dispute_states(
        self, relation_ids: Sequence[str], rule: DisputeRule | None = None
    ) -> dict[str, DisputeState]:
        """See :meth:`GraphStore.dispute_states`."""
        ids = list(dict.fromkeys(relation_ids))
        return dispute_states(self._read_verdicts(ids), rule, ids) if ids else {}

    def disputed_relations(self, rule: DisputeRule | None = None) -> dict[str, DisputeState]:
        """See :meth:`GraphStore.disputed_relations` (one scan of the verdict log)."""
        states = dispute_states(self._read_verdicts(None), rule)
        return {rid: st for rid, st in states.items() if st.disputed}

    def restore(self, relation_id: str, *, source: str, rule: DisputeRule | None = None) -> bool:
        """See :meth:`GraphStore.restore`; the edge's state is read inside the write transaction."""
        rid = require_text("relation id", relation_id)
        src = require_text("source", source)

        restored = False
        for edge in [rid, *self.relation_twins([rid]).get(rid, [])]:

            def disputed(rows: Sequence[VerdictRecord], edge: str = edge) -> bool:
                return dispute_states(rows, rule, [edge])[edge].disputed

            restored = self._write_restore(edge, f"restore:{uuid.uuid4().hex}", src, disputed) or restored
        return restored

    @abstractmethod
    def _write_restore(
        self, relation_id: str, feedback_id: str, source: str, disputed: Callable[[list[VerdictRecord]], bool]
    ) -> bool:
        """Restore one edge in one write transaction when its verdicts dispute it.

        Read the edge's verdict rows inside the transaction; unless ``disputed(rows)`` return
        False; else write a ``restore`` row, bump the disputes version and return True.
        """

    def verdict_log(self, relation_ids: Sequence[str] | None = None) -> list[VerdictRecord]:
        """See :meth:`GraphStore.verdict_log`."""
        if relation_ids is None:
            return self._read_verdicts(None)
        ids = list(dict.fromkeys(relation_ids))
        return self._read_verdicts(ids) if ids else []

    @abstractmethod
    def _read_verdicts(self, relation_ids: list[str] | None) -> list[VerdictRecord]:
        """Verdict rows oldest first: of ``relation_ids`` (not empty), or all for ``None``."""
