"""The GraphStore protocol: the small storage interface every backend implements.

Two backends ship: :class:`kgmind.stores.ladybug.LadybugStore` (embedded, default) and
:class:`kgmind.stores.neo4j.Neo4jStore` (server). Both pass the same contract suite
(``tests/contract/test_store.py``) and build on :class:`kgmind.stores.base.StoreBase`,
which holds once what the protocol promises. Retrieval reads the store through this interface
(or through an in-memory adjacency index built from :meth:`GraphStore.iter_relations`);
feedback writes through :meth:`GraphStore.apply_weight_updates` only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from kgmind.models import DisputeState, Entity, KnowledgeDoc, Relation, VerdictRecord, WeightChange
from kgmind.relations import RelationSchema
from kgmind.tuning import DisputeRule

__all__ = [
    "Direction",
    "GraphPath",
    "GraphStore",
    "LoadReport",
    "RatingRules",
    "StoreError",
    "StoreNotFoundError",
    "StoreStats",
    "StoreUnavailableError",
    "VerdictResult",
    "WeightRule",
]

Direction = Literal["out", "in", "both"]

#: A pure weight-update rule, called inside the store's write transaction.
#: Argument 1: ``{head_id: [(relation_id, weight), ...]}`` — every outgoing edge of each
#: head node touched by the feedback (the siblings, read inside the transaction).
#: Argument 2: the relation ids the feedback is about.
#: Returns ``{relation_id: new_weight}`` for the edges to change (all weights > 0).
WeightRule = Callable[[Mapping[str, Sequence[tuple[str, float]]], Sequence[str]], Mapping[str, float]]

#: The weight rule of each rating: ``rules("poor")`` / ``rules("excellent")`` is the
#: :data:`WeightRule` a verdict applies (``wrong`` → poor, ``right`` → excellent);
#: :func:`kgmind.stores.weights.make_rule` is one.
RatingRules = Callable[[str], WeightRule]


class StoreError(RuntimeError):
    """A store operation failed; the message says which and why."""


class StoreUnavailableError(StoreError):
    """The store cannot be opened or reached (bad path, server down, bad credentials)."""


class StoreNotFoundError(StoreUnavailableError):
    """An embedded store opened for reading does not exist (a mistyped path or name); nothing was created."""

    @classmethod
    def for_uri(cls, uri: str) -> StoreNotFoundError:
        """The error for the missing store ``uri``, saying how to make one."""
        return cls(f"no KG at {uri}; import one with `kgmind kg import FILE --name NAME`")


class GraphPath(BaseModel):
    """A path through the KG.

    Attributes:
        nodes: Entity ids in path order (``len(relations) + 1`` of them).
        relations: The edges walked, in order. On an undirected search an edge may
            be walked against its direction (``relations[i].tail == nodes[i]``).
    """

    nodes: list[str]
    relations: list[Relation]


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


class VerdictResult(BaseModel):
    """What one :meth:`GraphStore.record_verdicts` did.

    Attributes:
        feedback_id: The feedback's idempotency key.
        already_applied: The feedback id was recorded before: nothing changed this time.
        verdicts: The ``(relation_id, verdict)`` rows written (empty when already applied).
        changes: The weight changes committed with them (one audit row per moved edge).
        states: The judged edges' dispute states after the commit (under the rule given).
    """

    feedback_id: str
    already_applied: bool = False
    verdicts: list[tuple[str, str]] = Field(default_factory=list)
    changes: list[WeightChange] = Field(default_factory=list)
    states: dict[str, DisputeState] = Field(default_factory=dict)


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
        """Delete every entity, relation, doc, audit row and verdict (disputes version bumped)."""
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

    def relation_schema(self) -> RelationSchema:
        """The roles of the KG's relation types (:mod:`kgmind.relations`): given at import, else inferred."""
        ...

    def schema_overrides(self) -> dict[str, dict[str, str]]:
        """The relation roles a user gave at import (``kg import --schema``), ``{}`` when none."""
        ...

    def set_schema_overrides(self, overrides: Mapping[str, Mapping[str, str]]) -> None:
        """Keep the relation roles a user gave; changes the fingerprint."""
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
        """Set every weight back to 1.0 and drop the weight audit log; returns edges reset.

        The verdict log and so every dispute stay: undoing a dispute is :meth:`restore`.
        """
        ...

    # -- per-claim verdicts (issue 41) -----------------------------------------------------
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
        """Record verdicts on edges and apply KGCoT's bounded rule to exactly those edges, in one transaction.

        If ``feedback_id`` was recorded before, nothing changes (``already_applied``).
        Each edge's twins (:meth:`relation_twins`: the same fact stored the other way) get
        its verdict too, so a flag on either reading counts for the fact and hides both.
        Otherwise one audited verdict row per edge is written, the edges called wrong get
        the ``poor`` update and those called right the ``excellent`` update (the same
        audited weight write as :meth:`apply_weight_updates`, audit rows under
        ``feedback_id``), the weights version is bumped when a weight moved and the
        disputes version always (the edges' counts changed).

        Args:
            feedback_id: Idempotency key (one run's claim, one ``kg flag`` line).
            run_id: Who judged (the run; ``flag:SOURCE`` for a bulk file).
            verdicts: ``(relation_id, "wrong" | "right")`` pairs.
            source: Where the verdicts came from (audited).
            rule: The weight rule of each rating (:data:`RatingRules`).
            dispute_rule: The rule the returned states are evaluated under.

        Raises:
            ValueError: A bad verdict pair, one edge with both verdicts, a blank id.
            StoreError: Unknown relation ids or a failed write; nothing is written.

        """
        ...

    def dispute_states(
        self, relation_ids: Sequence[str], rule: DisputeRule | None = None
    ) -> dict[str, DisputeState]:
        """The dispute state of each given edge (a clean state for an edge never judged)."""
        ...

    def disputed_relations(self, rule: DisputeRule | None = None) -> dict[str, DisputeState]:
        """Every edge ``rule`` marks disputed, by relation id (the explorations hide these).

        ``rule`` None (everywhere in this protocol): ``KGMIND_DISPUTE_RULE`` if set, else
        :data:`kgmind.tuning.DISPUTE_RULE` (:func:`kgmind.stores.disputes.active_rule`).
        """
        ...

    def relation_twins(self, relation_ids: Sequence[str]) -> dict[str, list[str]]:
        """Each edge's twins: stored edges from its tail back to its head that state the same fact.

        A twin's type is one :meth:`kgmind.relations.RelationSchema.twin_types` names (the
        inverse relation of a KG stored both ways). Unknown ids are left out.
        """
        ...

    def restore(self, relation_id: str, *, source: str, rule: DisputeRule | None = None) -> bool:
        """Undo the dispute of an edge and its twins: audited ``restore`` rows; older verdicts stop counting.

        Returns:
            True when the edge was disputed and is restored (disputes version bumped);
            False, writing nothing, when it was not disputed.

        """
        ...

    def verdict_log(self, relation_ids: Sequence[str] | None = None) -> list[VerdictRecord]:
        """Verdict rows oldest first (restores included); only those of ``relation_ids`` when given."""
        ...

    def disputes_version(self) -> int:
        """A counter bumped in the transaction of every verdict or restore (cheap to read).

        A process compares it with the value its cached disputed set was read at.
        """
        ...

    def close(self) -> None:
        """Release files, connections and locks."""
        ...
