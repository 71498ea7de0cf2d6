"""The process's graph indexes: one per store, built once, and kept in step with the store's weights.

:func:`get_graph_index` builds a :class:`~kgmind.retrievers.graph_index.GraphIndex` once
per ``(store.uri, store.fingerprint())`` and keeps it; a new fingerprint (entities or
relations added or removed) replaces it. :func:`get_neighborhood_index` keeps the last
pushed-down indexes of questions, and :func:`pushdown_wanted` each store's relation count.

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
from kgmind.stores.feedback import on_disputes_changes, on_weight_changes
from kgmind.stores.protocol import GraphStore
from kgmind.tuning import (
    EDGES_PER_CONTEXT_GROUP,
    EDGES_PER_GROUP,
    KEPT_NEIGHBORHOOD_EDGES,
    KEPT_NEIGHBORHOODS,
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


class _KeptNeighborhoods(LRUCache[Any, GraphIndex]):
    """Per-question indexes kept for reuse, bounded by count and by the edges they hold in all.

    A pushed-down index keeps growing while its question is explored, so the edges are
    summed when the next one comes in: older ones go (least recently used first) until
    the kept ones hold at most ``max_edges``; the newest always stays. The callers hold
    the index they work on, so dropping one costs at most a rebuild, never evidence.
    """

    def __init__(self, maxsize: int, max_edges: int) -> None:
        super().__init__(maxsize=maxsize)
        self.max_edges = max_edges

    def __setitem__(self, key: Any, value: GraphIndex) -> None:
        super().__setitem__(key, value)
        while len(self) > 1 and sum(v.num_edges for v in self.values()) > self.max_edges:
            self.popitem()


_NeighborhoodKey = tuple[str, str, int, int, tuple[str, ...]]
_KEPT_HOODS = _KeptNeighborhoods(KEPT_NEIGHBORHOODS, KEPT_NEIGHBORHOOD_EDGES)


@cached(_KEPT_HOODS, key=lambda store, key: key, condition=_cond)
def _neighborhood(store: GraphStore, key: _NeighborhoodKey) -> GraphIndex:
    _, fingerprint, weights, disputes, seeds = key
    schema = _schema(store, fingerprint)
    bound = _bound.of(schema)
    bounded = bound is not None
    return GraphIndex.neighborhood(
        store,
        seeds,
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
    """Return a pushed-down index around ``seeds`` (see :meth:`GraphIndex.neighborhood`), cached.

    Nothing of the graph beyond the question's neighbourhood is read into Python; the
    explore nodes of one run, which run in parallel on the same seeds, build it once.
    The store's disputed edges are hidden in it, as in the full index.
    """
    fp, wv, dv = store.fingerprint(), store.weights_version(), disputes_version(store)
    return _neighborhood(store, (store.uri, fp, wv, dv, tuple(sorted(set(seeds)))))


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
    for memo in (_built, _neighborhood, _relation_count, _disputed, _degree_values, _weights_uniform):
        memo.cache_clear()
    BOUNDED_READS.clear()
