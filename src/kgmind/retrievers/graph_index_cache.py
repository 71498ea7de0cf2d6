"""The process's graph indexes: one per store, built once, and kept in step with the store's weights.

:func:`get_graph_index` builds a :class:`~kgmind.retrievers.graph_index.GraphIndex` once
per ``(store.uri, store.fingerprint())`` and keeps it; a new fingerprint (entities or
relations added or removed) replaces it. :func:`get_neighborhood_index` keeps a pushed-down
index per store state that every question grows (bounded), and :func:`pushdown_wanted` each
store's relation count.

Weights change without changing the fingerprint (feedback): the feedback tool calls
:func:`notify_weight_changes` after a commit so the cached index follows the store.
Feedback committed by *another* process (a second CLI, a server worker, anyone sharing
the Neo4j database) is seen through the store's weights version, a counter bumped in
every weight-changing transaction: :func:`get_graph_index` compares it with the one the
index holds and re-reads the weights (not the whole graph) when they differ.

Disputed edges are hidden from every index (issue 41; :meth:`GraphIndex.set_hidden`). The
store's disputes version, a counter bumped by every verdict or restore, is read beside the
weights version: when it moved, the full index re-applies the store's disputed set (no
rebuild), and the neighbourhood indexes are keyed by it. A store that keeps no verdicts
(:class:`DisputeSource`) has nothing disputed.

Threads: every cache is a ``cachetools`` memo behind one condition, so a key is built
once while other keys are served (one store building its index never blocks another).
Each kept full index has a lock beside it that orders a weight reload against a
committed change (:class:`_Kept`).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
from cachetools import LRUCache, cached

from kgmind.models import WeightChange
from kgmind.relations import RelationSchema
from kgmind.retrievers.graph_bounds import BOUNDED_READS, GroupBound
from kgmind.retrievers.graph_index import GraphIndex, IndexableStore
from kgmind.settings import get_settings
from kgmind.stores.feedback import on_disputes_changes, on_weight_changes
from kgmind.stores.protocol import GraphStore
from kgmind.tuning import (
    EDGES_PER_CONTEXT_GROUP,
    EDGES_PER_GROUP,
    KEPT_NEIGHBORHOOD_EDGES,
)

__all__ = [
    "PUSHDOWN_MIN_RELATIONS",
    "DisputeSource",
    "clear_graph_index_cache",
    "disputed_relation_ids",
    "disputes_version",
    "get_graph_index",
    "get_neighborhood_index",
    "notify_disputes_changed",
    "notify_weight_changes",
    "pushdown_wanted",
    "relation_schema_of",
    "set_edges_per_group",
    "set_kept_neighborhood_edges",
]

#: Guards every cache below; waiters for a key being built wait on it.
_cond = threading.Condition()


@runtime_checkable
class DisputeSource(Protocol):
    """A store that keeps verdicts on its edges (issue 41): what the indexes hide comes from it."""

    def disputed_relations(self) -> Mapping[str, Any]:
        """Every disputed edge, by relation id."""
        ...

    def disputes_version(self) -> int:
        """A counter bumped whenever the disputed set changes."""
        ...


def disputes_version(store: object) -> int:
    """The store's disputes version; ``0`` for a store that keeps no verdicts (nothing is ever disputed)."""
    return int(store.disputes_version()) if isinstance(store, DisputeSource) else 0


@cached(LRUCache(maxsize=8), key=lambda store, fp, version: (store.uri, fp, version), lock=threading.Lock())
def _disputed(store: Any, fingerprint: str, version: int) -> frozenset[str]:
    return frozenset(store.disputed_relations()) if isinstance(store, DisputeSource) else frozenset()


def disputed_relation_ids(store: Any, fingerprint: str, version: int) -> frozenset[str]:
    """The ids of the store's disputed edges, read once per store content and disputes version.

    Args:
        store: Any store (``uri``); one without verdicts has none.
        fingerprint: The store's fingerprint (a store imported again starts its counter again).
        version: :func:`disputes_version`, read before: a change after it costs one more
            read at the next version, never a stale set kept under a new one.
    """
    return _disputed(store, fingerprint, version)


@dataclass
class _Kept:
    """A full index as kept: the lock that orders its weight refreshes, and when it was last checked.

    Attributes:
        index: The index.
        lock: Held while the weights are reloaded or a committed change is applied, so a
            change never lands between a reload's read of the weights and its swap.
        checked_at: ``time.monotonic()`` of the last fingerprint check.
        disputes_version: The store's disputes version whose disputed set the index hides.
    """

    index: GraphIndex
    lock: threading.Lock = field(default_factory=threading.Lock)
    checked_at: float = -math.inf
    disputes_version: int = 0


#: Full indexes by store URI.
_full: dict[str, _Kept] = {}


@cached(_full, key=lambda store, fingerprint, weights_version, disputes: store.uri, condition=_cond)
def _built(store: IndexableStore, fingerprint: str, weights_version: int, disputes: int) -> _Kept:
    """The index of ``store`` read now, its disputed edges hidden (the versions read before it)."""
    gi = GraphIndex(
        store.iter_entities(),
        store.iter_relations(),
        uri=store.uri,
        fingerprint=fingerprint,
        weights_version=weights_version,
        schema=store.relation_schema(),
    )
    gi.set_hidden(disputed_relation_ids(store, fingerprint, disputes))
    gi.bound(_bound.of(gi.schema))  # the edges a pushed-down read keeps, so both modes give the same evidence
    return _Kept(gi, disputes_version=disputes)


def get_graph_index(store: IndexableStore, *, recheck_s: float = 0.0) -> GraphIndex:
    """Return the cached :class:`GraphIndex` of ``store``, rebuilt when its fingerprint changes.

    One index is kept per store URI; a new fingerprint (entities or relations added
    or removed) replaces it; new weights are re-read and a new disputed set is hidden
    in place. Reading the versions is a store query (a few ms on LadybugDB), so hot
    paths may pass ``recheck_s`` to re-read them at most that often.

    Args:
        store: A ``GraphStore`` (or anything with ``uri``, ``fingerprint()``,
            ``iter_entities()`` and ``iter_relations()``).
        recheck_s: Trust a cached index for this many seconds after its fingerprint
            was last checked (``0``: check on every call).

    Returns:
        The index.
    """
    now = time.monotonic()
    with _cond:
        kept = _full.get(store.uri)
    if kept is not None and recheck_s > 0 and now - kept.checked_at < recheck_s:
        return kept.index
    fp = store.fingerprint()
    # read before the relations: a commit in between costs one more reload, never a stale index
    wv = store.weights_version()
    dv = disputes_version(store)
    kept = _built(store, fp, wv, dv)
    if kept.index.fingerprint != fp:  # the KG changed: build it again
        with _cond:
            if _full.get(store.uri) is kept:
                del _full[store.uri]
        kept = _built(store, fp, wv, dv)
    with kept.lock:
        if kept.index.weights_version != wv:  # weights moved in another process (or a reset)
            kept.index.reload_weights(store.iter_relations(), wv)
        if kept.disputes_version != dv:  # a verdict or restore: hide the new disputed set
            kept.index.set_hidden(disputed_relation_ids(store, fp, dv))
            kept.disputes_version = dv
        kept.checked_at = now
    return kept.index


@on_weight_changes
def notify_weight_changes(
    store_uri: str, changes: Sequence[WeightChange], weights_version: int | None = None
) -> None:
    """Apply committed weight changes to the cached index of ``store_uri`` (if any).

    Registered with the feedback tool (:func:`kgmind.stores.feedback.on_weight_changes`),
    which calls it after each commit, because weight changes do not change the store
    fingerprint.

    Args:
        store_uri: The store's ``uri``.
        changes: The committed changes (their ``new_weight`` is applied).
        weights_version: The store's weights version read after the commit. When it is
            exactly one past the index's, this commit was the only one since, so the
            index takes that version and the next lookup needs no reload; otherwise
            another process committed too and the next lookup re-reads the weights.
            An index already at (or past) it holds these changes and is left alone.
    """
    with _cond:
        kept = _full.get(store_uri)
    if kept is None or not changes:
        return
    gi = kept.index
    with kept.lock:  # not between a reload's read of the weights and its swap
        if weights_version is not None and gi.weights_version >= weights_version:
            return
        gi.set_weights((c.relation_id, c.new_weight) for c in changes)
        if weights_version is not None and gi.weights_version == weights_version - 1:
            gi.weights_version = weights_version


@on_disputes_changes
def notify_disputes_changed(store_uri: str) -> None:
    """Make the next lookup of ``store_uri``'s full index read the disputes version again.

    A verdict or restore committed in this process calls it (as feedback calls
    :func:`notify_weight_changes`), so a ``recheck_s`` window never shows a disputed edge
    to the next question; a commit in another process is seen at the next check.
    """
    with _cond:
        kept = _full.get(store_uri)
    if kept is not None:
        kept.checked_at = -math.inf


@dataclass
class _Bound:
    """The edges kept per node, relation type and direction by every index this process builds."""

    k: int | None = EDGES_PER_GROUP
    context: int | None = EDGES_PER_CONTEXT_GROUP

    def of(self, schema: RelationSchema) -> GroupBound | None:
        """The bound of a KG with these relation roles (``None``: every edge)."""
        return None if self.k is None else GroupBound.for_schema(self.k, self.context, schema)


_bound = _Bound()


def set_edges_per_group(k: int | None, context: int | str | None = "same") -> None:
    """Bound every index built from now on to ``k`` edges per node, type and direction (``None``: all).

    ``context``: the bound of a medical KG's context relations (``None``: ``k``; ``"same"``:
    left as it is). The shipped values are :data:`kgmind.tuning.EDGES_PER_GROUP` and
    :data:`kgmind.tuning.EDGES_PER_CONTEXT_GROUP`; the benchmark that fits them
    (``benchmarks/pushdown.py --edges-per-group``) tries others. Forgets the cached indexes.
    """
    if k is not None and k < 1:
        raise ValueError(f"edges per group must be >= 1 or None, not {k}")
    if context != "same" and context is not None and (not isinstance(context, int) or context < 1):
        raise ValueError(f"edges per context group must be an int >= 1 or None, not {context!r}")
    _bound.k = k
    if context != "same":
        _bound.context = context if isinstance(context, int) else None
    clear_graph_index_cache()


_StateKey = tuple[str, str, int, int]


class _SharedNeighborhoods:
    """The pushed-down indexes a worker keeps: one per store state, grown by every question.

    Questions come back to the same nodes (a symptom, a common disease), and a node's lists
    are the same whichever question completed it, so one index per store state (URI,
    fingerprint, weights and disputes versions) serves every question: each node's edges
    are read from the store once, not once a question, and the evidence is a fresh
    index's (``tests/integration/test_pushdown.py``). The explore nodes of one run, and
    concurrent runs, share it.

    What it holds is bounded: a question whose seeds it has not completed yet starts a new
    index once the newest holds more than ``max_edges`` edges; older ones are dropped while
    those kept hold more than ``max_edges`` in all (the newest always stays, and a run
    holding a dropped one keeps it until it ends). ``max_edges=0``: every new set of seeds
    gets its own index, as each question did before.
    """

    def __init__(self, max_edges: int | None = None) -> None:
        self._max_edges = max_edges
        self._lock = threading.Lock()
        self._kept: list[tuple[_StateKey, GraphIndex]] = []  # oldest first
        self._running: dict[tuple[int, tuple[str, ...]], threading.Event] = {}  # seeds being completed

    @property
    def max_edges(self) -> int:
        """The bound given, else ``KGMIND_PUSHDOWN_KEPT_EDGES``, else the tuned one (read at first use)."""
        if self._max_edges is None:
            setting = get_settings().pushdown_kept_edges
            self._max_edges = KEPT_NEIGHBORHOOD_EDGES if setting is None else setting
        return self._max_edges

    def index(self, store: GraphStore, key: _StateKey, seeds: tuple[str, ...]) -> GraphIndex:
        """The index a question with ``seeds`` explores in state ``key``.

        One that completed these seeds (another explore node of the run), else the newest
        while it holds at most ``max_edges``, else a new one.
        """
        with self._lock:
            mine = [gi for k, gi in self._kept if k == key]
            gi = next((g for g in reversed(mine) if seeds in g.asked), None)
            if gi is None and mine and mine[-1].num_edges <= self.max_edges:
                gi = mine[-1]
        if gi is None:
            fresh = _empty_neighborhood(store, key)
            with self._lock:  # another run of this state may have added one meanwhile: share it
                mine = [g for k, g in self._kept if k == key]
                if mine and (seeds in mine[-1].asked or mine[-1].num_edges <= self.max_edges):
                    gi = mine[-1]
                else:
                    gi = fresh
                    self._kept.append((key, gi))
                    self._trim()
        with self._lock:  # most recently used last
            self._kept = [kv for kv in self._kept if kv[1] is not gi] + [(key, gi)]
        return gi

    def add_seeds(self, gi: GraphIndex, seeds: tuple[str, ...]) -> None:
        """Complete ``seeds`` in ``gi`` once: a second caller (another explore node of the run) waits.

        Should the first fail, the waiters go on: any node is completed when first read.
        """
        if seeds in gi.asked:
            return
        key = (id(gi), seeds)
        with self._lock:
            running = self._running.get(key)
            if running is None:
                self._running[key] = done = threading.Event()
        if running is not None:
            running.wait()
            return
        try:
            gi.add_seeds(seeds)
        finally:
            with self._lock:
                del self._running[key]
            done.set()

    def _trim(self) -> None:
        """Drop the oldest while those kept hold more than ``max_edges`` (caller holds the lock)."""
        while len(self._kept) > 1 and sum(gi.num_edges for _, gi in self._kept) > self.max_edges:
            self._kept.pop(0)

    def clear(self) -> None:
        with self._lock:
            self._kept = []

    def __len__(self) -> int:
        return len(self._kept)


_NEIGHBORHOODS = _SharedNeighborhoods()


def set_kept_neighborhood_edges(max_edges: int | None) -> None:
    """Bound what pushed-down indexes keep between questions (``None``: the setting; 0: one per question)."""
    _NEIGHBORHOODS._max_edges = max_edges


def _empty_neighborhood(store: GraphStore, key: _StateKey) -> GraphIndex:
    """A pushed-down index of ``store`` in state ``key``, no node read yet."""
    _, fingerprint, weights, disputes = key
    schema = _schema(store, fingerprint)
    bound = _bound.of(schema)
    bounded = bound is not None
    return GraphIndex.neighborhood(
        store,
        (),
        fingerprint=fingerprint,
        weights_version=weights,
        schema=schema,
        hidden=disputed_relation_ids(store, fingerprint, disputes),
        bound=bound,
        degree_values=_degree_values(store, fingerprint, disputes) if bounded else None,
        uniform=_weights_uniform(store, fingerprint, weights),
    )


@cached(LRUCache(maxsize=8), key=lambda store, fp, version: (store.uri, fp, version), lock=threading.Lock())
def _weights_uniform(store: GraphStore, fingerprint: str, version: int) -> bool | None:
    """Whether the store's weights are all equal, once per content and weights version (None: unknown)."""
    read = getattr(store, "weights_uniform", None)
    return bool(read()) if callable(read) else None


@cached(LRUCache(maxsize=8), key=lambda store, fp, version: (store.uri, fp, version), lock=threading.Lock())
def _degree_values(store: GraphStore, fingerprint: str, version: int) -> np.ndarray:
    """Every entity's kept degree (the hub percentile's base), read once per content and disputes version."""
    read = getattr(store, "degree_values", None)
    if callable(read):
        return np.asarray(read(), dtype=np.int64)
    return np.zeros(0, dtype=np.int64)


@cached(LRUCache(maxsize=8), key=lambda store, fingerprint: (store.uri, fingerprint), lock=threading.Lock())
def _schema(store: GraphStore, fingerprint: str) -> RelationSchema:
    """The store's relation roles, read once per content version (one aggregate query over the KG)."""
    return store.relation_schema()


def relation_schema_of(store: GraphStore) -> RelationSchema:
    """The store's relation roles (:meth:`GraphStore.relation_schema`), cached per content version."""
    return _schema(store, store.fingerprint())


def get_neighborhood_index(store: GraphStore, seeds: Sequence[str]) -> GraphIndex:
    """Return a pushed-down index with ``seeds`` completed (see :meth:`GraphIndex.neighborhood`).

    Nothing of the graph beyond the neighbourhoods questions explored is read into Python.
    The index is shared by the questions of one store state (:class:`_SharedNeighborhoods`):
    the explore nodes of one run, which run in parallel on the same seeds, complete them
    once, and a later question reads only the nodes no earlier one completed. The store's
    disputed edges are hidden in it, as in the full index.
    """
    fp, wv, dv = store.fingerprint(), store.weights_version(), disputes_version(store)
    wanted = tuple(sorted(set(seeds)))
    gi = _NEIGHBORHOODS.index(store, (store.uri, fp, wv, dv), wanted)
    _NEIGHBORHOODS.add_seeds(gi, wanted)
    return gi


#: ``exploration="auto"`` pushes exploration down into stores with more relations than this
#: (README, "Neo4j as the store of record": where the per-question reads cost less than
#: holding the whole graph in every worker).
PUSHDOWN_MIN_RELATIONS = 2_000_000


@cached({}, key=lambda stats, uri: uri, lock=_cond)
def _relation_count(stats: Any, uri: str) -> int:
    return int(stats().relations_total)


def pushdown_wanted(store: Any, mode: str) -> bool:
    """Whether exploration on ``store`` runs on a per-question index (``mode``: auto, memory, pushdown).

    ``auto`` reads the store's relation count once per store and process (a store that
    grows past the threshold switches at the next start); a store without counts
    (``stats``) is explored in memory.

    Raises:
        ValueError: Unknown mode.
    """
    if mode not in ("auto", "memory", "pushdown"):
        raise ValueError(f"exploration must be auto, memory or pushdown, got {mode!r}")
    if mode != "auto":
        return mode == "pushdown"
    stats, uri = getattr(store, "stats", None), getattr(store, "uri", None)
    if not callable(stats) or not isinstance(uri, str):
        return False
    return _relation_count(stats, uri) > PUSHDOWN_MIN_RELATIONS


def clear_graph_index_cache() -> None:
    """Forget every cached index and relation count (tests)."""
    for memo in (_built, _relation_count, _disputed, _degree_values, _weights_uniform):
        memo.cache_clear()
    _NEIGHBORHOODS.clear()
    BOUNDED_READS.clear()
