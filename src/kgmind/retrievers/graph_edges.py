"""The edge columns of a :class:`~kgmind.retrievers.graph_index.GraphIndex`: ids, lookup, reverse readings.

Every stored edge ``h -[r]-> t`` can be walked both ways. Where the KG does not store the
way back itself (no edge ``t -> h`` of any type), the index adds a *reverse reading*
``t -[~r]-> h`` (:data:`kgmind.relations.REVERSE_MARK`): an edge like any other for the
explorations, which carries its stored edge's id (feedback credits the stored edge) and
weight (``edge_twin`` links the two, so a weight update moves both). A KG written in one
direction then gives the explorations the same graph as the same facts stored both ways.

Also here: :class:`EdgeView`, one edge as callers outside the index see it, and
:class:`LazyAdjacency`, the per-node lists of a pushed-down index.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

import numpy as np

from kgmind.models import StoredEdge, relation_id
from kgmind.relations import REVERSE_MARK

__all__ = [
    "EdgeColumns",
    "EdgeIds",
    "EdgeLookup",
    "EdgeView",
    "LazyAdjacency",
    "csr_lists",
    "missing_reverse",
    "repeated_edges",
    "sort_key",
]


class EdgeColumns(Protocol):
    """The per-node and per-edge columns the helpers here read."""

    ids: list[str]
    edge_head: Any
    edge_tail: Any
    edge_type: list[str]
    edge_twin: Any

    @property
    def edge_id(self) -> EdgeIds:
        """Relation id per edge."""
        ...


def missing_reverse(heads: np.ndarray, tails: np.ndarray, nodes: int) -> np.ndarray:
    """Indices of the edges whose way back the KG does not store (no edge ``tail -> head``, not a loop).

    Vectorised over pair keys ``head · nodes + tail`` so a 10M-edge KG takes seconds, not a
    Python set of tuples, and about 32 bytes an edge while it runs (issue 42's build peak).
    """
    if not len(heads):
        return np.zeros(0, dtype=np.int64)
    keys = heads.astype(np.int64) * nodes + tails  # sorted in place: a few 8-byte arrays at most
    keys.sort()
    back = tails.astype(np.int64) * nodes + heads
    pos = np.searchsorted(keys, back)
    pos.clip(max=len(keys) - 1, out=pos)
    return np.flatnonzero((keys[pos] != back) & (heads != tails))


def repeated_edges(hashes: np.ndarray, gi: EdgeColumns) -> np.ndarray:
    """Indices of the edges whose relation id an earlier edge has, ascending (``hashes[e]``: its id hash).

    Only edges with equal hashes are compared by id, so a build keeps no set of id strings.
    """
    if len(hashes) < 2:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(hashes, kind="stable")  # equal hashes keep edge order: the first is kept
    ranked = hashes[order]
    same = np.flatnonzero(ranked[1:] == ranked[:-1])
    if not len(same):
        return np.zeros(0, dtype=np.int64)
    ids = gi.edge_id
    drop: set[int] = set()
    for i in np.unique(np.r_[same, same + 1]).tolist():  # the members of every run of equal hashes
        e = int(order[i])
        j = i - 1
        while j >= 0 and ranked[j] == ranked[i]:
            if int(order[j]) not in drop and ids[int(order[j])] == ids[e]:
                drop.add(e)
                break
            j -= 1
    return np.array(sorted(drop), dtype=np.int64)


def sort_key(gi: EdgeColumns) -> Any:
    """A node's edge order, as on the full index: stored edges by relation id, then reverse readings."""
    ids = gi.edge_id
    types = gi.edge_type
    return lambda e: (types[e].startswith(REVERSE_MARK), ids[e])


def csr_lists(ends: np.ndarray, nodes: int) -> list[Any]:
    """Per node, the indices of the edges whose endpoint (head or tail) it is, ascending, as int32 arrays."""
    order = np.argsort(ends, kind="stable").astype(np.int32)
    bounds = (
        np.searchsorted(ends[order], np.arange(nodes + 1)) if len(ends) else np.zeros(nodes + 1, np.int64)
    )
    data = order.tobytes()
    out: list[Any] = []
    for i in range(nodes):
        a = array("i")
        a.frombytes(data[int(bounds[i]) * 4 : int(bounds[i + 1]) * 4])
        out.append(a)
    return out


class EdgeIds:
    """``edge_id[e]``: a relation id, derived from the edge when the store used kgmind's ids.

    Keeping one string per edge was about 75 bytes of the index's per-edge cost; an id
    that is not :func:`kgmind.models.relation_id` of its edge is kept in ``explicit``.
    """

    def __init__(self, gi: EdgeColumns) -> None:
        self._gi = gi
        self.explicit: dict[int, str] = {}

    def __getitem__(self, e: int) -> str:
        rid = self.explicit.get(e)
        if rid is not None:
            return rid
        gi = self._gi
        if gi.edge_type[e].startswith(REVERSE_MARK):  # a reverse reading carries its stored edge's id
            return self[gi.edge_twin[e]]
        return relation_id(gi.ids[gi.edge_head[e]], gi.edge_type[e], gi.ids[gi.edge_tail[e]])

    def __len__(self) -> int:
        return len(self._gi.edge_head)

    def __iter__(self) -> Iterator[str]:
        return (self[e] for e in range(len(self)))


class EdgeLookup:
    """``edge_index_of``: relation id → edge index, through a sorted array of id hashes.

    Ids added after the build (a pushed-down index grows) sit in ``pending``, a dict.
    """

    def __init__(self, gi: EdgeColumns) -> None:
        self._gi = gi
        self.pending: dict[str, int] = {}
        self._hashes = np.zeros(0, dtype=np.int64)
        self._edges = np.zeros(0, dtype=np.int32)

    def freeze(self, hashes: Sequence[int]) -> None:
        """Move the build's ids from ``pending`` into the hash arrays (``hashes[e]`` = ``hash(id of e)``)."""
        h = np.asarray(hashes, dtype=np.int64)
        order = np.argsort(h, kind="stable")  # stable: a hash collision keeps edge order
        self._hashes = h[order]
        self._edges = order.astype(np.int32)
        self.pending = {}

    def get(self, rid: str, default: int | None = None) -> int | None:
        """The edge index of relation ``rid`` (its stored edge, never a reverse reading), or ``default``."""
        e = self.pending.get(rid)
        if e is not None or not len(self._hashes):
            # a pushed-down index has no frozen ids: each new edge's miss would search an empty array
            return default if e is None else e
        h = hash(rid)
        i = int(np.searchsorted(self._hashes, h))
        ids = self._gi.edge_id
        while i < len(self._hashes) and int(self._hashes[i]) == h:
            e = int(self._edges[i])
            if ids[e] == rid:
                return e
            i += 1
        return default

    def __getitem__(self, rid: str) -> int:
        e = self.get(rid)
        if e is None:
            raise KeyError(rid)
        return e

    def __contains__(self, rid: object) -> bool:
        return isinstance(rid, str) and self.get(rid) is not None

    def __setitem__(self, rid: str, e: int) -> None:
        self.pending[rid] = e

    def __len__(self) -> int:
        return len(self._hashes) + len(self.pending)


class Completing(Protocol):
    """A pushed-down index as its lazy lists see it (``GraphIndex``)."""

    _complete: set[int] | None

    def _complete_nodes(self, nodes: Sequence[int]) -> list[int]: ...


class LazyAdjacency(list[list[int]]):
    """Per-node edge lists of a pushed-down index: reading a node's list first completes the node.

    A node is *complete* when every edge touching it has been read from the store; the
    exploration code reads ``out_adj[i]`` / ``in_adj[i]`` as it does on the full index and
    never sees a partial neighbourhood.
    """

    def __init__(self, owner: Completing, items: Iterable[list[int]] = ()) -> None:
        super().__init__(items)
        self._owner = owner

    def __getitem__(self, i: Any) -> Any:
        complete = self._owner._complete
        if complete is not None and type(i) is int and i not in complete:
            self._owner._complete_nodes([i])
        return super().__getitem__(i)


#: One edge as callers outside the index see it, with its current weight: the same fields as a
#: store's bounded read returns (``head -[type]-> tail``, ``source``: the knowledge behind it, may be empty).
EdgeView = StoredEdge
