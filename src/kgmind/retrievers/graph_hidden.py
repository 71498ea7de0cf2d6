"""Disputed edges hidden from a graph index: out of every adjacency list and out of KGCoT's normaliser.

An edge whose verdicts mark it as disputed stops being evidence (issue 41). Every
exploration reads a node's edges through ``out_adj`` / ``in_adj`` (or ``out_array``), so an
edge missing from those lists is missing from all four explorations and from the packing
they feed. A hidden edge stays in the columns: its id, weight and reverse reading remain
known, so feedback on it still lands and a restore puts it back at its place in the list
order. A pushed-down index loads hidden edges too and lists none of them, so it adds the
same reverse readings as the full index and both give the same evidence.

:func:`relist` plans a change: the new hidden set and, for each node whose lists change,
its new list, built beside the old one. :meth:`GraphIndex.set_hidden` swaps them in under
the index lock, one assignment per list, so a lock-free reader sees a node's old list or
its new one, never half of either (``tests/reliability/test_hidden_race.py``).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from kgmind.retrievers.graph_edges import EdgeIds, EdgeLookup, sort_key

__all__ = ["HiddenEdges", "Relisting", "relist"]


@dataclass(frozen=True)
class HiddenEdges:
    """What an index hides: relation ids, and the edges of those it has loaded.

    Attributes:
        ids: The hidden relation ids (stored edges), loaded or not: a pushed-down index
            checks every edge it loads later against them.
        edges: The loaded edges hidden: each stored edge of ``ids`` and its reverse reading.
    """

    ids: frozenset[str] = frozenset()
    edges: frozenset[int] = frozenset()

    def with_loaded(self, edges: Iterable[int]) -> HiddenEdges:
        """This set with newly loaded hidden edges (a pushed-down index growing)."""
        return HiddenEdges(self.ids, self.edges | frozenset(edges))


class HidingIndex(Protocol):
    """The columns :func:`relist` reads (a ``GraphIndex``)."""

    ids: list[str]
    out_adj: list[Any]
    in_adj: list[Any]
    edge_head: Any
    edge_tail: Any
    edge_type: list[str]
    edge_twin: Any
    edge_index_of: EdgeLookup
    hidden: HiddenEdges

    @property
    def edge_id(self) -> EdgeIds:
        """Relation id per edge."""
        ...

    @property
    def pushed_down(self) -> bool:
        """Whether lists are ordered by relation id (a pushed-down index) rather than by edge index."""
        ...


@dataclass(frozen=True)
class Relisting:
    """A planned change of an index's hidden set (see :func:`relist`).

    Attributes:
        hidden: The new hidden set.
        out_lists: Per node whose outgoing list changes, its new list.
        in_lists: Per node whose incoming list changes, its new list.
        changed: How many edges (stored edges and readings) change visibility.
    """

    hidden: HiddenEdges
    out_lists: dict[int, Any] = field(default_factory=dict)
    in_lists: dict[int, Any] = field(default_factory=dict)
    changed: int = 0


def _loaded_edges(gi: HidingIndex, ids: frozenset[str]) -> frozenset[int]:
    """The loaded stored edges of ``ids`` and their reverse readings."""
    out: set[int] = set()
    twin = gi.edge_twin
    for rid in ids:
        e = gi.edge_index_of.get(rid)
        if e is not None:
            out.add(e)
            if twin[e] >= 0:
                out.add(twin[e])
    return frozenset(out)


def relist(gi: HidingIndex, relation_ids: Iterable[str]) -> Relisting:
    """Plan hiding exactly ``relation_ids`` on ``gi``: the lists that change, built new (``gi`` untouched).

    Edges hidden before and not in ``relation_ids`` come back at their place: by edge
    index on a full index (the order it was built in), by the pushed-down order
    (:func:`~kgmind.retrievers.graph_edges.sort_key`) on a pushed-down one.

    Args:
        gi: The index; the caller holds its lock.
        relation_ids: Every relation id to hide (unknown ids are kept for edges loaded later).

    Returns:
        The plan; ``changed == 0`` when no loaded edge changes visibility.
    """
    ids = frozenset(relation_ids)
    new = HiddenEdges(ids, _loaded_edges(gi, ids))
    gone = new.edges - gi.hidden.edges
    back = gi.hidden.edges - new.edges
    key = sort_key(gi) if gi.pushed_down else None
    return Relisting(
        hidden=new,
        out_lists=_new_lists(gi.out_adj, gi.edge_head, gone, back, key),
        in_lists=_new_lists(gi.in_adj, gi.edge_tail, gone, back, key),
        changed=len(gone) + len(back),
    )


def _new_lists(
    adj: list[Any], ends: Any, gone: frozenset[int], back: frozenset[int], key: Any
) -> dict[int, Any]:
    """Per node at an end of a changed edge, its list without ``gone`` and with ``back``, in list order."""
    by_node: dict[int, tuple[set[int], list[int]]] = {}
    for e in gone:
        by_node.setdefault(int(ends[e]), (set(), []))[0].add(e)
    for e in back:
        by_node.setdefault(int(ends[e]), (set(), []))[1].append(e)
    out: dict[int, Any] = {}
    for n, (drop, add) in by_node.items():
        old = list.__getitem__(adj, n)  # as loaded: never completes a node (the caller holds the lock)
        kept = [e for e in old if e not in drop]
        if add:
            listed = set(kept)
            kept = sorted(kept + [e for e in add if e not in listed], key=key)
        out[n] = array("i", kept) if isinstance(old, array) else kept
    return out
