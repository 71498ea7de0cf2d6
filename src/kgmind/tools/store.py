"""The GraphStore protocol: the small storage interface every backend implements.

Two backends ship: :class:`kgmind.tools.ladybug.LadybugStore` (embedded, default) and
:class:`kgmind.tools.neo4j.Neo4jStore` (server). Both pass the same contract suite
(``tests/contract/test_store.py``). Retrieval reads the store through this interface
(or through an in-memory adjacency index built from :meth:`GraphStore.iter_relations`);
feedback writes through :meth:`GraphStore.apply_weight_updates` only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from kgmind.models import Entity, KnowledgeDoc, Relation, WeightChange

__all__ = [
    "Direction",
    "GraphPath",
    "GraphStore",
    "LoadReport",
    "StoreError",
    "StoreStats",
    "StoreUnavailableError",
    "WeightRule",
    "trivial_paths",
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

        Returns:
            The committed changes (the audit rows written).
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
