"""How a pushed-down :class:`~kgmind.retrievers.graph_index.GraphIndex` grows: nodes completed from the store.

A pushed-down index (:meth:`GraphIndex.neighborhood`) holds the part of the store around
one question; reading a node's edge list first *completes* the node (every edge touching
it is read from the store in one query). The new edges get the reverse readings the full
index would give them, the lists keep the full index's order (stored edges by relation id,
then readings), and an edge the index hides (:mod:`kgmind.retrievers.graph_hidden`) is
loaded but never listed, so both index modes give the same evidence.

Readers take no lock: columns, weights and the tail array are published before any list
names a new edge, and each changed list is replaced whole (never sorted in place, which
shows other threads an empty list while it runs).
"""

from __future__ import annotations

import threading
from array import array
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from kgmind.models import EDGE_HEAD, EDGE_ID, EDGE_TAIL, EdgeRow, Entity
from kgmind.relations import reverse_name
from kgmind.retrievers.graph_bounds import (
    BOUNDED_READS,
    Bounds,
    GroupBound,
    edges_between,
    reads_second_side,
)
from kgmind.retrievers.graph_edges import EdgeIds, EdgeLookup, sort_key
from kgmind.retrievers.graph_hidden import HiddenEdges
from kgmind.retrievers.graph_weights import WeightState
from kgmind.stores.protocol import GraphStore

__all__ = ["PushdownGrowth", "edges_loaded"]


class _Tally:
    """Edges every pushed-down index of this process loaded from its store (benchmarks read it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.total = 0

    def add(self, n: int) -> None:
        with self._lock:
            self.total += n


_LOADED = _Tally()


def edges_loaded() -> int:
    """Edges (stored and their reverse readings) pushed-down indexes loaded so far in this process.

    The difference around one question is what it read from the store: a question whose
    nodes earlier ones completed in a shared index reads less.
    """
    return _LOADED.total


class PushdownGrowth:
    """The growth of a pushed-down index (a base class of ``GraphIndex``, which provides these attributes)."""

    ids: list[str]
    names: list[str]
    types: list[str]
    descriptions: list[str]
    index_of: dict[str, int]
    out_adj: list[Any]
    in_adj: list[Any]
    edge_head: Any
    edge_tail: Any
    edge_type: list[str]
    edge_source: list[str]
    edge_twin: Any
    edge_id: EdgeIds
    edge_index_of: EdgeLookup
    edge_tail_array: np.ndarray
    #: The storage ``edge_tail_array`` views: grown by doubling, so a read appends its tails
    #: instead of copying every tail loaded so far (a question completes ~15-80 nodes).
    _tail_buffer: np.ndarray | None = None
    reverse_readings: bool
    hidden: HiddenEdges
    _weights: WeightState
    _lock: threading.Lock
    _out_arrays: dict[int, np.ndarray]
    _source: GraphStore | None
    _complete: set[int] | None
    #: Bounded: the nodes a thread is reading now, each with the event set when that read ends.
    _reads_pending: dict[int, threading.Event]
    _pairs: set[tuple[int, int]]
    #: One string object per relation type and source, shared by the edges that read them.
    _interned: dict[str, str]
    fingerprint: str
    weights_version: int
    #: Bounded (issue 42): edges kept per node, relation type and direction, and per node its kept
    #: degree in the store; a full index that was cut keeps its state in ``_bounds``.
    _bound_k: GroupBound | None = None
    _node_degree: dict[int, int] | None = None
    _degree_values: np.ndarray | None = None
    _bounds: Bounds | None = None
    #: Pushed down: whether the store's weights are all equal (``None``: read the loaded ones).
    store_uniform: bool | None = None
    #: Pushed down: the hops around a question's seeds loaded up front (unbounded), and the seed
    #: sets completed so far (a frozenset, replaced whole: readers take no lock).
    _depth: int = 1
    asked: frozenset[tuple[str, ...]] = frozenset()

    def _out_list(self, node: int) -> np.ndarray:
        raise NotImplementedError

    def _source_degrees(self, ids: Sequence[str]) -> dict[str, int]:
        """The store's kept degrees of ``ids`` (0 for a store that keeps none)."""
        read = getattr(self._source, "degrees", None)
        return {i: d for i, (d, _) in read(ids).items()} if callable(read) else dict.fromkeys(ids, 0)

    def _add_entities(self, entities: Iterable[Entity]) -> list[int]:
        """Append unknown entities as nodes (sorted by id, as the stores iterate); return their indices."""
        out: list[int] = []
        for ent in sorted(entities, key=lambda x: x.id):
            if ent.id in self.index_of:
                continue
            self.index_of[ent.id] = len(self.ids)
            out.append(len(self.ids))
            self.ids.append(ent.id)
            self.names.append(ent.name)
            self.types.append(ent.type)
            self.descriptions.append(ent.description)
            # one shared empty tuple until the node completes: a list per node stays tracked by the GC
            list.append(self.out_adj, ())
            list.append(self.in_adj, ())
        if out:
            self._weights = self._weights.grown((), (), len(self.ids))
        return out

    def add_seeds(self, seeds: Sequence[str]) -> None:
        """Complete a question's ``seeds`` (and, unbounded, the hops around them the index loads up front).

        An index shared by the questions of a worker (``graph_index_cache``) takes each
        question's seeds here; seeds another question completed cost nothing, and ids the
        store does not hold are ignored. Safe beside readers and other questions' reads.
        """
        assert self._source is not None and self._complete is not None
        wanted = sorted(set(seeds))
        unknown = [i for i in wanted if i not in self.index_of]
        fetched = self._source.get_entities(unknown) if unknown else []
        with self._lock:
            added = self._add_entities(fetched)
        if self._bound_k is not None and added:
            known = self._source_degrees([self.ids[n] for n in added])
            with self._lock:
                for ent_id, degree in known.items():
                    self._node_degree[self.index_of[ent_id]] = degree  # type: ignore[index]
        frontier = [self.index_of[i] for i in wanted if i in self.index_of]
        depth = 0 if self._bound_k is not None else self._depth
        for level in range(depth + 1):
            if not frontier:
                break
            added = self._complete_nodes(frontier)
            frontier = added if level < depth else []
        with self._lock:
            self.asked = self.asked | {tuple(wanted)}

    def _complete_nodes(self, nodes: Sequence[int]) -> list[int]:
        """Load every edge touching ``nodes`` (one query); return the nodes this added to the index.

        Bounded, the store is read outside the lock: the explorations run in threads, and
        their reads then overlap in the store (which releases the GIL; two threads read a 2M
        KG's small nodes 1.6x as fast as one) instead of queueing on the index. A node
        another thread is reading is not read again: this thread reads the rest, then waits
        for that read (a cold re-crawl question's four explorations start from the same
        seeds, and read ~18 % more nodes when each read its own). A thread never waits while
        a read of its own is pending, so no two wait on each other; a read that failed
        leaves its nodes incomplete, and whoever waited on it reads them itself.
        """
        assert self._source is not None and self._complete is not None
        added: list[int] = []
        while True:
            with self._lock:
                todo = [n for n in dict.fromkeys(nodes) if n not in self._complete]
                if not todo:
                    return added
                if self._bound_k is None:
                    return added + self._complete_whole(todo)
                pending = self._reads_pending
                theirs = {id(pending[n]): pending[n] for n in todo if n in pending}
                mine = [n for n in todo if n not in pending]
                done = threading.Event()
                for n in mine:
                    pending[n] = done
            if mine:
                try:
                    added += self._read_bounded(mine)
                finally:
                    with self._lock:
                        for n in mine:
                            pending.pop(n, None)
                    done.set()
            for other in theirs.values():
                other.wait()

    def _read_bounded(self, todo: list[int]) -> list[int]:
        """Read the bounded edges of ``todo`` (registered as this thread's read) and list them."""
        assert self._source is not None and self._bound_k is not None
        k = self._bound_k
        with self._lock:
            hidden = self.hidden.ids  # a frozenset: hashed once, part of the kept reads' key
            store = getattr(self._source, "uri", None) or id(self._source)
            state = (store, self.fingerprint, self.weights_version, hidden)
            ids = [self.ids[n] for n in todo]
            # a node whose kept degree came with an earlier read, and is at most the bound, is read whole
            known = self._node_degree or {}
            small = {self.ids[n] for n in todo if known.get(n, k.k + 1) <= k.k}
        rows = BOUNDED_READS.read(self._source, ids, k, hidden, state, small)
        # the new ends' entities are read outside the lock too (the index only grows: known stays known)
        index_of = self.index_of  # bound once: the set below looks at every end of every row
        asked = sorted({x for _, r, *_ in rows for x in (r[EDGE_HEAD], r[EDGE_TAIL]) if x not in index_of})
        fetched = self._source.get_entities(asked) if asked else []
        with self._lock:
            complete = self._complete
            assert complete is not None
            todo = [n for n in todo if n not in complete]
            return self._complete_bounded(todo, rows, fetched) if todo else []

    def _stored_edges_to(self, heads: Collection[int], tails: Collection[int]) -> list[int]:
        """The visible edges from ``heads`` to ``tails``, read from the store whatever the bounds cut.

        One statement reads the stored edges between the two sets, either way, so each
        edge's way back is among them; it reads the lists of the side with fewer edges
        (:func:`reads_second_side`). The new ones load as a bounded read's rows do (columns
        and reverse readings, listed nowhere): a node's lists stay what its bounded read
        kept, and both index modes still walk the same graph.
        """
        assert self._source is not None
        a = sorted({self.ids[n] for n in heads})
        b = sorted({self.ids[n] for n in tails})
        if reads_second_side(heads, tails, self._node_degree or {}):
            a, b = b, a
        rels = edges_between(self._source, a, b)
        pairs = {(r.head, r.tail) for r in rels}
        with self._lock:
            new = {r.id: r for r in rels if r.id not in self.edge_index_of}
            if new:
                back = {rid: (r.tail, r.head) in pairs for rid, r in new.items()}
                self._load_edges([new[rid] for rid in sorted(new)], back=back)
            hs, ts, hidden = set(heads), set(tails), self.hidden.edges
            found = {self.edge_index_of[r.id] for r in rels}
            found |= {int(self.edge_twin[e]) for e in found if self.edge_twin[e] >= 0}
            heads_of, tails_of = self.edge_head, self.edge_tail
            return [e for e in found if heads_of[e] in hs and tails_of[e] in ts and e not in hidden]

    def _complete_whole(self, todo: Sequence[int]) -> list[int]:
        """Load every edge of ``todo`` (one store query; caller holds the lock)."""
        assert self._source is not None and self._complete is not None
        rels = [
            r
            for r in self._source.neighbors([self.ids[n] for n in todo], "both")
            if r.id not in self.edge_index_of
        ]
        rels = list({r.id: r for r in rels}.values())
        index_of = self.index_of  # not ``set - index_of.keys()``: that walks every key of the index
        missing = sorted({x for r in rels for x in (r.head, r.tail) if x not in index_of})
        added = self._add_entities(self._source.get_entities(missing)) if missing else []
        for ent_id in missing:  # an endpoint the store has no entity for: a placeholder, as on the full index
            if ent_id not in self.index_of:
                added += self._add_entities([Entity(id=ent_id, name=ent_id, type="entity")])
        rels.sort(key=lambda r: r.id)
        self._load_edges([(r.id, r.head, r.type, r.tail, r.weight, r.source) for r in rels])
        self._complete.update(todo)
        return added

    def _complete_bounded(
        self, todo: Sequence[int], read: Sequence[Any], fetched: Sequence[Entity]
    ) -> list[int]:
        """List exactly the kept edges of ``todo`` from the rows ``read`` (caller holds the lock).

        ``fetched``: the entities of the rows' ends that were unknown when the rows were read.
        A question lists ~6,000 edges here on the re-crawl, so each pass is one loop over
        the rows with the dicts bound locally, and a node's lists are sorted on plain tuples.
        """
        assert self._source is not None and self._complete is not None and self._node_degree is not None
        wanted = {self.ids[n] for n in todo}
        rows = [row for row in read if row[0] in wanted]
        lookup = self.edge_index_of.pending  # a pushed-down index has no frozen ids: every id is here
        rels: dict[str, Any] = {}
        back: dict[str, bool] = {}
        for _, rel, _, _, has_back in rows:
            rid = rel[EDGE_ID]
            if rid not in lookup:
                rels[rid] = rel
                back[rid] = has_back
        index_of = self.index_of
        # not ``set - index_of.keys()``: that walks every key of the index (~0.4 ms at 25,000 nodes)
        ends = (x for r in rels.values() for x in (r[EDGE_HEAD], r[EDGE_TAIL]))
        missing = sorted({x for x in ends if x not in index_of})
        found = {e.id: e for e in fetched}  # every end unknown now was unknown when they were read
        added = self._add_entities([found[x] for x in missing if x in found]) if missing else []
        for ent_id in missing:  # an end the store has no entity for: a placeholder, as on the full index
            if ent_id not in index_of:
                added += self._add_entities([Entity(id=ent_id, name=ent_id, type="entity")])
        self._load_edges([rels[rid] for rid in sorted(rels)], back=back)
        # a list is ordered as the full index's (stored edges by relation id, then reverse readings
        # by their stored edge's id); a row's side says which list of its node takes the edge, and
        # the other takes its reading (a self-loop goes on both: its node is both its ends)
        out: dict[int, set[tuple[bool, str, int]]] = {n: set() for n in todo}
        inc: dict[int, set[tuple[bool, str, int]]] = {n: set() for n in todo}
        node_degree, twins = self._node_degree, self.edge_twin
        for node, rel, side, degree, _ in rows:
            rid, head, tail = rel[EDGE_ID], rel[EDGE_HEAD], rel[EDGE_TAIL]
            e = lookup[rid]
            twin = twins[e]
            n = index_of[node]
            if head == tail:
                node_degree.setdefault(n, degree)
                out[n].add((False, rid, e))
                inc[n].add((False, rid, e))
            elif side == "out":
                node_degree.setdefault(index_of[tail], degree)
                out[n].add((False, rid, e))
                if twin >= 0:
                    inc[n].add((True, rid, twin))
            else:
                node_degree.setdefault(index_of[head], degree)
                inc[n].add((False, rid, e))
                if twin >= 0:
                    out[n].add((True, rid, twin))
        for n in todo:
            list.__setitem__(self.out_adj, n, array("i", [e for *_, e in sorted(out[n])]))
            list.__setitem__(self.in_adj, n, array("i", [e for *_, e in sorted(inc[n])]))
        self._drop_out_arrays(todo)
        self._weights = self._weights.with_totals(todo, self._out_list)
        self._complete.update(todo)
        return added

    def _load_edges(self, rels: Sequence[EdgeRow], back: Mapping[str, bool] | None = None) -> None:
        """Append ``rels`` and the ways back the KG lacks (as on the full index), then list the visible ones.

        Columns, weights and the tail array are published before any list names a new
        edge, and each changed list is replaced whole, so a lock-free reader never reads
        an edge it cannot look up, nor a list half sorted.
        """
        first = len(self.edge_head)
        bounded = back is not None  # a bounded read lists nothing here, and says where a way back is stored
        weights: list[float] = []
        ends: list[int] = []  # per new edge, its head
        shown: list[bool] = []  # per new edge: not hidden
        index_of, hidden, pairs, interned = self.index_of, self.hidden.ids, self._pairs, self._interned
        heads, tails, types, sources, twins = (
            self.edge_head,
            self.edge_tail,
            self.edge_type,
            self.edge_source,
            self.edge_twin,
        )  # the ways back below read the new edges from these columns
        # every id kept as read: a question's index is small, and deriving an id hashes the edge
        # again on each lookup (the lists are ordered by id): 5 % of a re-crawl question (py-spy)
        explicit, lookup = self.edge_id.explicit, self.edge_index_of.pending
        for rid, head, rtype, tail, weight, source in rels:
            h, t = index_of[head], index_of[tail]
            rtype = interned.setdefault(rtype, rtype)  # one string per type and source, not per edge
            e = self._append_edge(h, t, rtype, interned.setdefault(source, source), -1)
            lookup[rid] = e
            explicit[e] = rid
            weights.append(weight)
            ends.append(h)
            shown.append(rid not in hidden)
            if not bounded:  # a bounded read says where the way back is; a whole read looks it up
                pairs.add((h, t))
        if self.reverse_readings:
            for i, rel in enumerate(rels):  # the way back the KG lacks
                e = first + i
                h, t = heads[e], tails[e]
                stored_back = back.get(rel[EDGE_ID], False) if back is not None else (t, h) in pairs
                if h != t and not stored_back:
                    rtype = reverse_name(types[e])
                    twins[e] = self._append_edge(t, h, interned.setdefault(rtype, rtype), sources[e], e)
                    weights.append(weights[i])
                    ends.append(t)
                    shown.append(shown[i])
        if not weights:
            return
        new = range(first, len(self.edge_head))
        _LOADED.add(len(new))
        if False in shown:  # the set is copied whole when it grows: only when an edge is hidden
            self.hidden = self.hidden.with_loaded(e for e, ok in zip(new, shown, strict=True) if not ok)
        counted = [False] * len(shown) if bounded else shown  # bounded: a node's totals when it completes
        self._weights = self._weights.grown(weights, ends, len(self.ids), counted)
        self._publish_tails(first)
        if not bounded:
            self._list_edges([e for e, ok in zip(new, shown, strict=True) if ok])

    def _publish_tails(self, first: int) -> None:
        """``edge_tail_array`` after the tails from ``first`` on were appended (caller holds the lock).

        A lock-free reader may hold the old view: the new tails are written past its end, and
        a grown buffer is a new array, so what it reads never changes.
        """
        n = len(self.edge_tail)
        buf = self._tail_buffer
        if buf is None or len(buf) < n:
            buf = np.empty(max(n, 2 * (0 if buf is None else len(buf)), 1024), dtype=np.int64)
            buf[:n] = self.edge_tail
            self._tail_buffer = buf
        else:
            buf[first:n] = self.edge_tail[first:n]
        self.edge_tail_array = buf[:n]

    def _list_edges(self, edges: Sequence[int]) -> None:
        """Add ``edges`` to their ends' lists, in the full index's order (:func:`sort_key`)."""
        key = sort_key(self)
        for adj, ends in ((self.out_adj, self.edge_head), (self.in_adj, self.edge_tail)):
            by_node: dict[int, list[int]] = {}
            for e in edges:
                by_node.setdefault(ends[e], []).append(e)
            for n, es in by_node.items():
                list.__setitem__(adj, n, sorted([*list.__getitem__(adj, n), *es], key=key))
        self._drop_out_arrays({self.edge_head[e] for e in edges})

    def _drop_out_arrays(self, nodes: Collection[int]) -> None:
        """Forget the cached out-arrays of ``nodes`` (their lists were replaced): a new dict, swapped whole.

        A reader that took the old dict may still fill it from an old list; nobody reads it again.
        Readers insert into the dict lock-free: it is copied whole (one C call), never iterated.
        """
        if nodes:
            kept = self._out_arrays.copy()
            for n in nodes:
                kept.pop(n, None)
            self._out_arrays = kept

    def _append_edge(self, h: int, t: int, rtype: str, source: str, twin: int) -> int:
        """Append one edge to the columns (listed by :meth:`_list_edges`); return its index."""
        e = len(self.edge_head)
        self.edge_head.append(h)
        self.edge_tail.append(t)
        self.edge_type.append(rtype)
        self.edge_source.append(source)
        self.edge_twin.append(twin)
        return e
