"""An in-memory adjacency index of a KG store, for fast path and neighbor search.

A :class:`GraphIndex` holds a KG read from :meth:`GraphStore.iter_entities` and
:meth:`GraphStore.iter_relations`. Entities become dense integers; edges are kept in
columnar lists (head, tail, type, id, source) plus a numpy array of weights, and every
node has an outgoing and an incoming list of edge indices in insertion order (the order
the store yielded the relations), so every search is deterministic. A pushed-down index
(:meth:`GraphIndex.neighborhood`) holds only the part of the store around a question and
completes a node from the store the first time its edges are read.

Searches:

* :meth:`GraphIndex.shortest_paths` — all shortest paths of at most ``max_hops`` edges,
  directed or undirected (:mod:`kgmind.retrievers.graph_paths`).
* :meth:`GraphIndex.out_edges` / :meth:`GraphIndex.in_edges` — edge views with the
  current weight.

Weights are published whole (:mod:`kgmind.retrievers.graph_weights`): an update builds new
arrays beside the current ones and swaps them in under the index lock, and an exploration
call reads one :meth:`GraphIndex.weight_snapshot`, so no reader sees half an update.

Disputed edges are hidden (:meth:`GraphIndex.set_hidden`, :mod:`kgmind.retrievers.graph_hidden`):
out of every adjacency list and every KGCoT normaliser, so no exploration shows them.

Indexes are built once per store and kept in step with its weights and disputes by
:mod:`kgmind.retrievers.graph_index_cache`.
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Collection, Iterable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from kgmind.models import Entity, Relation, relation_id
from kgmind.relations import REVERSE_MARK, RelationSchema, RelationStats, infer_schema, reverse_name
from kgmind.retrievers.graph_bounds import BoundedLists, GroupBound, restore_uncut
from kgmind.retrievers.graph_edges import (
    EdgeIds,
    EdgeLookup,
    EdgeView,
    LazyAdjacency,
    csr_lists,
    missing_reverse,
    repeated_edges,
)
from kgmind.retrievers.graph_hidden import HiddenEdges, relist
from kgmind.retrievers.graph_paths import PathSearch
from kgmind.retrievers.graph_pushdown import PushdownGrowth
from kgmind.retrievers.graph_weights import WeightSnapshot, WeightState
from kgmind.stores.protocol import GraphStore

__all__ = ["EdgeView", "GraphIndex", "IndexableStore"]


class IndexableStore(Protocol):
    """What :class:`GraphIndex` needs from a store (a subset of ``GraphStore``)."""

    uri: str

    def iter_entities(self) -> Iterator[Entity]:
        """Every entity."""
        ...

    def iter_relations(self) -> Iterator[Relation]:
        """Every relation with its current weight."""
        ...

    def relation_schema(self) -> RelationSchema:
        """The roles of the relation types (:mod:`kgmind.relations`)."""
        ...

    def fingerprint(self) -> str:
        """Changes when entities or relations are added or removed."""
        ...

    def weights_version(self) -> int:
        """Changes when a transaction changes weights (feedback, reset)."""
        ...


class GraphIndex(BoundedLists, PushdownGrowth, PathSearch):
    """In-memory adjacency of a KG (see the module docstring).

    Public integer-level attributes (used by :mod:`kgmind.retrievers.exploration`):
    ``ids``, ``names``, ``types``, ``descriptions`` per node; ``edge_head``,
    ``edge_tail``, ``edge_type``, ``edge_id``, ``edge_source`` per edge; ``out_adj`` /
    ``in_adj`` (edge indices per node). Weights: :meth:`weight_snapshot` (one per
    exploration call); ``weights`` and ``out_weight_total`` read the current state.
    Every edge is walkable both ways: where the KG stores no way back, a reverse reading
    ``~type`` is added (:mod:`kgmind.retrievers.graph_edges`); ``edge_twin[e]`` links a
    stored edge and its reading (``-1``: none). ``schema`` gives each reading its role.
    """

    def __init__(
        self,
        entities: Iterable[Entity],
        relations: Iterable[Relation],
        *,
        uri: str = "",
        fingerprint: str = "",
        weights_version: int = 0,
        schema: RelationSchema | None = None,
        reverse_readings: bool = True,
    ) -> None:
        """Build the index.

        Args:
            entities: Every entity of the KG.
            relations: Every relation; relations whose head or tail is not among
                ``entities`` get a placeholder node named after the id.
            uri: The store URI the index was built from.
            fingerprint: The store fingerprint at build time.
            weights_version: The store's weights version, read before ``relations``.
            schema: The relation roles (:meth:`GraphStore.relation_schema`); ``None``: inferred
                from the entity types and names of ``relations``.
            reverse_readings: Add the way back of every edge the KG stores one way only
                (the default); ``False`` walks the stored directions only, as MindMap does.
        """
        self.uri = uri
        self.fingerprint = fingerprint
        self.weights_version = weights_version
        self.ids: list[str] = []
        self.names: list[str] = []
        self.types: list[str] = []
        self.descriptions: list[str] = []
        self.index_of: dict[str, int] = {}
        for ent in entities:
            if ent.id in self.index_of:
                continue
            self.index_of[ent.id] = len(self.ids)
            self.ids.append(ent.id)
            self.names.append(ent.name)
            self.types.append(ent.type)
            self.descriptions.append(ent.description)
        self.out_adj: list[Any] = [[] for _ in self.ids]
        self.in_adj: list[Any] = [[] for _ in self.ids]
        # per edge: int32 endpoints, interned type and source strings, the id derived from
        # (head, type, tail) when the store used kgmind's ids (else kept), a hashed id lookup
        self.edge_head: Any = array("i")
        self.edge_tail: Any = array("i")
        self.edge_type: list[str] = []
        self.edge_source: list[str] = []
        self.edge_twin: Any = array("i")
        self.edge_id: EdgeIds = EdgeIds(self)
        self.edge_index_of: EdgeLookup = EdgeLookup(self)
        weights, hashes = self._read_relations(relations)
        self.edge_index_of.freeze(hashes)
        self.schema = schema if schema is not None else self._own_schema()
        self.reverse_readings = reverse_readings
        if reverse_readings:
            self._add_reverse_readings(weights)
        heads = (
            np.frombuffer(self.edge_head, dtype=np.int32) if len(self.edge_head) else np.zeros(0, np.int32)
        )
        tails = (
            np.frombuffer(self.edge_tail, dtype=np.int32) if len(self.edge_tail) else np.zeros(0, np.int32)
        )
        self.out_adj = csr_lists(heads, len(self.ids))
        self.in_adj = csr_lists(tails, len(self.ids))
        # the published weights and Σ out-weights per node (KGCoT's normaliser), swapped whole
        self._weights = WeightState.build(np.asarray(weights, dtype=np.float64), heads, len(self.ids))
        self._lock = threading.Lock()  # orders writers (updates, pushed-down growth); readers take none
        self.edge_tail_array: np.ndarray = np.array(tails, dtype=np.int32)  # a copy: edge_tail may grow
        self._out_arrays: dict[int, np.ndarray] = {}
        # pushed down (see neighborhood_index): the store to complete nodes from, and the
        # nodes whose every edge is loaded; None = a full index, where every node is complete
        self._source: GraphStore | None = None
        self._complete: set[int] | None = None
        self._reads_pending: dict[int, threading.Event] = {}
        self._pairs: set[tuple[int, int]] = set()  # pushed down, unbounded: (head, tail) of every stored edge
        self._interned: dict[str, str] = {}  # pushed down: one string per relation type and source
        self.hidden = HiddenEdges()  # disputed edges no exploration sees (set_hidden)

    def _read_relations(self, relations: Iterable[Relation]) -> tuple[Any, Any]:
        """Append the edges of ``relations`` (each id once); return their weights and id hashes.

        Nothing per edge is kept but the columns: no id string, no dict entry (an id seen
        before is found afterwards among equal hashes, :func:`repeated_edges`), so the build
        peaks near what the index holds (issue 42: ≤ 150 bytes an edge).
        """
        weights = array("d")
        hashes = array("q")
        interned: dict[str, str] = {}
        head, tail, types, sources = self.edge_head, self.edge_tail, self.edge_type, self.edge_source
        explicit, node = self.edge_id.explicit, self._node
        for rel in relations:
            e = len(head)
            h = node(rel.head)
            t = node(rel.tail)
            head.append(h)
            tail.append(t)
            rtype = interned.setdefault(rel.type, rel.type)
            types.append(rtype)
            sources.append(interned.setdefault(rel.source, rel.source))
            if rel.id != relation_id(rel.head, rtype, rel.tail):
                explicit[e] = rel.id
            hashes.append(hash(rel.id))
            weights.append(rel.weight)
        self.edge_twin.extend([-1] * (len(head) - len(self.edge_twin)))
        repeats = repeated_edges(
            np.frombuffer(hashes, dtype=np.int64) if hashes else np.zeros(0, np.int64), self
        )
        if len(repeats):
            weights, hashes = self._drop_edges(repeats, weights, hashes)
        return weights, hashes

    def _drop_edges(self, drop: np.ndarray, weights: Any, hashes: Any) -> tuple[Any, Any]:
        """Remove the edges ``drop`` (a relation id read again: the first reading is kept)."""
        keep = np.ones(len(self.edge_head), dtype=bool)
        keep[drop] = False
        new_index = np.cumsum(keep) - 1
        for name, code in (("edge_head", "i"), ("edge_tail", "i"), ("edge_twin", "i")):
            col = np.frombuffer(getattr(self, name), dtype=np.int32)[keep]
            setattr(self, name, array(code, col.tobytes()))
        kept = keep.tolist()
        self.edge_type = [v for v, k in zip(self.edge_type, kept, strict=True) if k]
        self.edge_source = [v for v, k in zip(self.edge_source, kept, strict=True) if k]
        self.edge_id.explicit = {
            int(new_index[e]): rid for e, rid in self.edge_id.explicit.items() if kept[e]
        }
        return (
            array("d", np.frombuffer(weights, dtype=np.float64)[keep].tobytes()),
            array("q", np.frombuffer(hashes, dtype=np.int64)[keep].tobytes()),
        )

    def _own_schema(self) -> RelationSchema:
        """The relation roles read from this index's own edges (an index built without a store)."""
        types = self.types
        return infer_schema(
            RelationStats.from_edges(
                (
                    (str(h), self.edge_type[e], str(t), types[h], types[t])
                    for e, (h, t) in enumerate(zip(self.edge_head, self.edge_tail, strict=True))
                ),
                keep_names=False,
            )
        )

    def _add_reverse_readings(self, weights: Any) -> None:
        """Append a reverse reading of every stored edge whose way back the KG lacks (module docstring)."""
        if not len(self.edge_head):
            return
        heads = np.frombuffer(self.edge_head, dtype=np.int32)  # views, let go before the arrays grow
        tails = np.frombuffer(self.edge_tail, dtype=np.int32)
        need = missing_reverse(heads, tails, len(self.ids))
        new_heads, new_tails = tails[need].tobytes(), heads[need].tobytes()
        del heads, tails
        if not len(need):
            return
        first = len(self.edge_head)
        names: dict[str, str] = {}
        types, sources = self.edge_type, self.edge_source
        self.edge_head.extend(array("i", new_heads))
        self.edge_tail.extend(array("i", new_tails))
        self.edge_type.extend([names.setdefault(types[e], reverse_name(types[e])) for e in need.tolist()])
        self.edge_source.extend([sources[e] for e in need.tolist()])
        self.edge_twin.extend(array("i", need.astype(np.int32).tobytes()))
        twin = self.edge_twin
        for e, v in zip(need.tolist(), range(first, first + len(need)), strict=True):
            twin[e] = v
        weights.extend(array("d", np.asarray(weights, dtype=np.float64)[need].tobytes()))

    @classmethod
    def neighborhood(
        cls,
        store: GraphStore,
        seeds: Sequence[str],
        *,
        complete_depth: int = 1,
        fingerprint: str = "",
        weights_version: int = 0,
        schema: RelationSchema | None = None,
        reverse_readings: bool = True,
        hidden: Collection[str] = (),
        bound: GroupBound | int | None = None,
        degree_values: np.ndarray | None = None,
        uniform: bool | None = None,
    ) -> GraphIndex:
        """An index of the part of ``store`` around ``seeds``, read with bounded id-keyed queries.

        Every node within ``complete_depth`` hops of a seed (either direction) is
        *complete*: all its edges are loaded (one ``neighbors(..., "both")`` query per hop
        level). Any other node is completed from the store the first time exploration
        reads its edge lists, so every search sees the same graph as on the full index;
        lists keep the full index's order (relation id, as the stores iterate), so the
        evidence is the same too (``tests/integration/test_pushdown.py``).

        Args:
            store: The store (any backend; Neo4j reads go to its readers).
            seeds: The question's linked entity ids (unknown ids are ignored).
            complete_depth: Hops around the seeds loaded up front: 1 covers paths and
                chains of up to 3 hops, the ranked neighbour lines and the disease votes
                (bounded: 0, the seeds only, any other node when read).
            fingerprint: The store fingerprint (cache keys).
            weights_version: The store's weights version, read before the edges.
            schema: The relation roles (``None``: :meth:`GraphStore.relation_schema`, one
                aggregate read; the cache passes the one it keeps per fingerprint).
            reverse_readings: As for the full index.
            hidden: Relation ids no exploration may see (:meth:`set_hidden`): loaded, as
                on the full index, so the reverse readings are the same, but never listed.
            bound: Read at most this many edges per node, relation type and direction,
                picked by the store (``bounded_edges``, :mod:`kgmind.retrievers.graph_bounds`);
                only the seeds are completed up front. ``None``: every edge.
            degree_values: Bounded: every entity's kept degree (the hub percentile's base).
            uniform: Whether the store's weights are all equal (``None``: judged from the
                edges read, which may differ from the whole KG's answer).

        Returns:
            The partial index.
        """
        schema = store.relation_schema() if schema is None else schema
        gi = cls(
            [],
            [],
            uri=store.uri,
            fingerprint=fingerprint,
            weights_version=weights_version,
            schema=schema,
            reverse_readings=reverse_readings,
        )
        gi._source = store
        gi.store_uniform = uniform
        gi._complete = set()
        gi._pairs = set()
        gi.hidden = HiddenEdges(frozenset(hidden))
        gi.out_adj = LazyAdjacency(gi)
        gi.in_adj = LazyAdjacency(gi)
        gi._depth = complete_depth
        if bound is not None:
            gi._bound_k, gi._degree_values, gi._node_degree = GroupBound.of(bound), degree_values, {}
        if seeds:
            gi.add_seeds(seeds)
        return gi

    def uniform_weights(self) -> bool:
        """Whether every edge has the same weight (nothing learnt: every learnt lift is 0), cached."""
        return self._weights.uniform

    # -- weights as readers see them ---------------------------------------------------
    @property
    def weights(self) -> np.ndarray:
        """Every edge's current weight (read-only; an exploration call reads :meth:`weight_snapshot`)."""
        return self._weights.weights

    @property
    def out_weight_total(self) -> np.ndarray:
        """Σ current outgoing weights per node (read-only; see :meth:`weight_snapshot`)."""
        return self._weights.totals

    def weight_snapshot(self) -> WeightSnapshot:
        """The weights for one exploration call: every read of the call sees the same update."""
        return WeightSnapshot(self)

    def weight_state(self, held: WeightState | None = None) -> WeightState:
        """The published weights; given a state a caller holds, that state with the edges loaded since.

        Only a pushed-down index loads edges after it is built; when its weights were also
        republished meanwhile, the held state is grown by the new edges (at their current
        weight), so the caller's earlier reads stay valid.
        """
        now = self._weights
        if held is None or held.generation == now.generation:
            return now
        n = len(held.weights)
        heads = np.asarray(self.edge_head[n : len(now.weights)], dtype=np.int64)
        hidden = self.hidden.edges
        shown = [e not in hidden for e in range(n, len(now.weights))] if hidden else None
        return held.grown(now.weights[n:].tolist(), heads.tolist(), len(now.totals), shown)

    def _out_list(self, node: int) -> np.ndarray:
        """``node``'s outgoing edges as loaded (never completes a node: callers hold the lock)."""
        return np.asarray(list.__getitem__(self.out_adj, node), dtype=np.int64)

    @property
    def pushed_down(self) -> bool:
        """Whether this index holds only the part of the store around one question."""
        return self._complete is not None

    def _node(self, entity_id: str) -> int:
        i = self.index_of.get(entity_id)
        if i is None:
            i = len(self.ids)
            self.index_of[entity_id] = i
            self.ids.append(entity_id)
            self.names.append(entity_id)
            self.types.append("entity")
            self.descriptions.append("")
            self.out_adj.append([])
            self.in_adj.append([])
        return i

    def prefetch(self, nodes: Iterable[int]) -> None:
        """Read the edges of ``nodes`` now, in one store query, when the index is pushed down.

        An exploration that is about to look at many nodes one by one (ordering paths by
        their probability) calls this first: one round trip instead of one per node, which
        is most of a pushed-down question's time (each costs milliseconds in the store).
        """
        if self._complete is not None:
            todo = [n for n in dict.fromkeys(nodes) if n not in self._complete]
            if todo:
                self._complete_nodes(todo)

    def out_array(self, node: int) -> np.ndarray:
        """``out_adj[node]`` as a cached ``int64`` array (for vectorised sampling)."""
        if self._complete is not None and node not in self._complete:
            self._complete_nodes([node])
        cache = self._out_arrays  # read once: a writer replaces the dict after the lists it invalidates
        arr = cache.get(node)
        if arr is None:
            arr = cache[node] = np.asarray(self.out_adj[node], dtype=np.int64)
        return arr

    # -- sizes and lookups -------------------------------------------------------
    @property
    def num_nodes(self) -> int:
        """Number of entities."""
        return len(self.ids)

    @property
    def num_edges(self) -> int:
        """Number of edges the explorations walk: the stored relations and their reverse readings."""
        return len(self.edge_head)

    @property
    def num_relations(self) -> int:
        """Number of stored relations (reverse readings not counted)."""
        return sum(1 for t in self.edge_type if not t.startswith(REVERSE_MARK))

    def __contains__(self, entity_id: object) -> bool:
        return entity_id in self.index_of

    def idx(self, entity_id: str) -> int:
        """Integer index of an entity id.

        Raises:
            KeyError: Unknown entity id.
        """
        return self.index_of[entity_id]

    def name(self, entity_id: str) -> str:
        """Display name of an entity (``KeyError`` if unknown)."""
        return self.names[self.index_of[entity_id]]

    def type(self, entity_id: str) -> str:
        """Type of an entity (``KeyError`` if unknown)."""
        return self.types[self.index_of[entity_id]]

    def description(self, entity_id: str) -> str:
        """Description of an entity, ``""`` when the KG has none (``KeyError`` if unknown)."""
        return self.descriptions[self.index_of[entity_id]]

    def edge(self, e: int) -> EdgeView:
        """The edge with integer index ``e`` and its current weight."""
        return EdgeView(
            id=self.edge_id[e],
            head=self.ids[self.edge_head[e]],
            type=self.edge_type[e],
            tail=self.ids[self.edge_tail[e]],
            weight=float(self.weights[e]),
            source=self.edge_source[e],
        )

    def out_edges(self, entity_id: str) -> list[EdgeView]:
        """Outgoing edges of an entity in insertion order (``[]`` if unknown)."""
        i = self.index_of.get(entity_id)
        return [] if i is None else [self.edge(e) for e in self.out_adj[i]]

    def in_edges(self, entity_id: str) -> list[EdgeView]:
        """Incoming edges of an entity in insertion order (``[]`` if unknown)."""
        i = self.index_of.get(entity_id)
        return [] if i is None else [self.edge(e) for e in self.in_adj[i]]

    def weight(self, relation_id: str) -> float:
        """Current weight of a relation (``KeyError`` if unknown)."""
        return float(self.weights[self.edge_index_of[relation_id]])

    # -- updates -------------------------------------------------------------------
    def set_weights(self, updates: Iterable[tuple[str, float]]) -> int:
        """Overwrite the weight of known relations, published to readers as one update.

        Args:
            updates: ``(relation_id, new_weight)`` pairs; unknown ids are ignored.

        Returns:
            How many edges were updated.
        """
        with self._lock:
            changes = [(e, float(w)) for rid, w in updates if (e := self.edge_index_of.get(rid)) is not None]
            twin = self.edge_twin
            readings = [
                (twin[e], w) for e, w in changes if twin[e] >= 0
            ]  # a reverse reading moves with its edge
            if changes:
                self._weights = self._weights.updated(changes + readings, self.edge_head, self._out_list)
                if self._bounds is not None:  # the heaviest edges of a cut group may be others now
                    ends = {x for e, _ in changes for x in (self.edge_head[e], self.edge_tail[e])}
                    self._recut(ends)
        return len(changes)

    def reload_weights(self, relations: Iterable[Relation], weights_version: int) -> int:
        """Take every known relation's weight from ``relations`` (another process changed them).

        Args:
            relations: The store's relations with their current weights; unknown ids are
                ignored (new relations change the fingerprint, which rebuilds the index).
            weights_version: The store's weights version read before ``relations``.

        Returns:
            How many edge weights differed.
        """
        fresh = self._weights.weights.copy()
        for rel in relations:
            e = self.edge_index_of.get(rel.id)
            if e is not None:
                fresh[e] = rel.weight
                if self.edge_twin[e] >= 0:
                    fresh[self.edge_twin[e]] = rel.weight
        heads = np.asarray(self.edge_head, dtype=np.int64)
        with self._lock:  # the totals leave out the edges hidden now
            before = self._weights
            changed = int(np.count_nonzero(fresh != before.weights))
            self._weights = WeightState.build(
                fresh, heads, len(self.ids), before.generation + 1, self.hidden.edges
            )
            self.weights_version = weights_version
            if self._bounds is not None:  # cut again by the new weights; every cut node's total again
                self._recut(list(self._bounds.uncut))
        return changed

    def set_hidden(self, relation_ids: Iterable[str]) -> int:
        """Hide exactly these stored edges, and their reverse readings, from every exploration.

        Edges hidden before and not named again come back at their place in the lists.
        A hidden edge keeps its weight and id (feedback on it still lands) but is in no
        adjacency list and in no KGCoT total, so ``p = w / Σ w`` renormalises over the
        edges left (:mod:`kgmind.retrievers.graph_hidden`). Readers take no lock: each
        changed list is replaced whole, then the caches built from the old lists go.

        Args:
            relation_ids: Every relation id to hide (disputed edges); ids the index has not
                loaded are kept, for a pushed-down index to hide when it loads them.

        Returns:
            How many edges (stored edges and readings) changed visibility.
        """
        with self._lock:
            bounds = self._bounds
            restore_uncut(self)  # hiding changes degrees: cut every node again after
            plan = relist(self, relation_ids)
            for adj, lists in ((self.out_adj, plan.out_lists), (self.in_adj, plan.in_lists)):
                for n, listed in lists.items():
                    list.__setitem__(adj, n, listed)
            self.hidden = plan.hidden
            if plan.changed:
                self._drop_out_arrays(plan.out_lists.keys())
                self.__dict__.pop("_hub_degree", None)
                self._weights = self._weights.retotalled(plan.out_lists, self._out_list)
            if bounds is not None:
                self._bound_to(bounds.k, bounds.uncut.keys())
        return plan.changed

    def hub_degree(self, percentile: float) -> int | None:
        """The degree (edges in + out) at ``percentile`` of this index's nodes, cached per percentile.

        Bounded (:meth:`bound`, :meth:`neighborhood` with ``bound``): the percentile of the
        store's kept degrees (:meth:`degree`), the same in both modes, so a pushed-down
        search knows a hub before reading its edges. Else ``None`` for a pushed-down
        index: it holds only part of each node's edges until read.

        Raises:
            ValueError: ``percentile`` outside (0, 100].
        """
        if not 0 < percentile <= 100:
            raise ValueError(f"percentile must be in (0, 100], not {percentile}")
        known = self._bounds.degree if self._bounds is not None else self._degree_values
        if known is None and self._complete is not None:
            return None
        cache: dict[float, int] = self.__dict__.setdefault("_hub_degree", {})
        if percentile not in cache and known is not None:  # bounded: the store's kept degrees
            cache[percentile] = int(np.percentile(known, percentile)) if len(known) else 0
        if percentile not in cache:
            degrees = np.fromiter(
                (len(o) + len(i) for o, i in zip(self.out_adj, self.in_adj, strict=True)),
                dtype=np.int64,
                count=len(self.out_adj),
            )
            cache[percentile] = int(np.percentile(degrees, percentile)) if len(degrees) else 0
        return cache[percentile]
