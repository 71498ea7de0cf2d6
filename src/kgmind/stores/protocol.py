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

from kgmind.models import Entity, KnowledgeDoc, Relation, WeightChange
from kgmind.relations import RelationSchema

__all__ = [
    "Direction",
    "GraphPath",
    "GraphStore",
    "LoadReport",
    "StoreError",
    "StoreNotFoundError",
    "StoreStats",
    "StoreUnavailableError",
    "WeightRule",
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
        """Set every weight back to 1.0 and drop the audit log; returns edges reset."""
        ...

    def close(self) -> None:
        """Release files, connections and locks."""
        ...
