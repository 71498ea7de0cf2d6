"""Bounded adjacency (issue 42): per node, relation type and direction, at most ``k`` edges listed.

``k`` is a :class:`GroupBound`: one bound for the relations an answer is about, and a smaller
one for the *context* relations of a medical KG (role ``other``: foods, recipes, departments,
complications), whose hubs hold thousands of diseases and crowd the evidence.

A node's *kept* edges are, for each group of its visible stored edges (same relation type,
same direction seen from the node), the first ``k`` by weight (heaviest first), then the
other end's degree (lowest first: the more specific neighbour), then relation id. The
degree is the store's kept degree (:mod:`kgmind.stores.degrees`): the visible stored edges
touching the node. A node lists exactly what its kept edges give it: a kept stored edge
where the node is its head or tail, and the reverse reading of a kept edge
(:mod:`kgmind.retrievers.graph_edges`) at the node's end of it, in the index's usual order.

Pushed down, the store picks the kept edges (``GraphStore.bounded_edges``) and the index
lists them when it completes the node (:mod:`kgmind.retrievers.graph_pushdown`); in memory,
:func:`apply_bounds` cuts the full index's lists to the same edges. Both modes then walk the
same graph and give the same evidence (``tests/integration/test_pushdown.py``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from kgmind.models import EDGE_TYPE
from kgmind.relations import DISEASE, REVERSE_MARK, ROLE_ENTITY_TYPE, UNTYPED, RelationSchema
from kgmind.retrievers.graph_edges import EdgeColumns, sort_key
from kgmind.tuning import KEPT_BOUNDED_ROWS

__all__ = [
    "BOUNDED_READS",
    "BoundedIndex",
    "BoundedLists",
    "BoundedReads",
    "Bounds",
    "GroupBound",
    "apply_bounds",
    "bounded_rows",
    "edges_between",
    "kept_lists",
    "reads_second_side",
    "restore_uncut",
    "stored_degrees",
]


class BoundedIndex(EdgeColumns, Protocol):
    """The columns the bounds read (a ``GraphIndex``): the edge columns and the adjacency lists."""

    out_adj: list[Any]
    in_adj: list[Any]


@dataclass(frozen=True)
class GroupBound:
    """Edges a node keeps per relation type and direction: ``k``, or ``context`` for the context types.

    Hashable: it is part of the key of every kept read (:class:`BoundedReads`).

    Attributes:
        k: The bound of every group whose type is not a context type.
        context: The bound of a group of a context type.
        context_types: The stored relation types bounded by ``context``.
    """

    k: int
    context: int = 0
    context_types: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        # context < k: a store reads k per group and the context groups are cut after (bounded_rows)
        if self.k < 1 or (self.context_types and not 1 <= self.context < self.k):
            raise ValueError(
                f"edges per group: need k >= 1 and 1 <= context < k, not {self.k} / {self.context}"
            )

    @classmethod
    def of(cls, bound: GroupBound | int) -> GroupBound:
        """``bound`` itself, or every group bounded by the int ``bound``."""
        return bound if isinstance(bound, GroupBound) else cls(int(bound))

    @classmethod
    def for_schema(cls, k: int, context: int | None, schema: RelationSchema) -> GroupBound:
        """``k`` for every type, and ``context`` for the context relations of a medical KG.

        A context relation has no medical role and joins a disease, symptom, test or drug to
        an entity of another known type (a food, a recipe, a department). A relation between
        medical entities (a disease's complications) keeps ``k``: its ends are what answers
        name. So does one whose ends' types are unknown, and every relation of a KG with no
        medical role: its relations are what its answers are about.
        """
        roles = schema.roles.values()
        if context is None or context >= k or all(r.role == "other" for r in roles):
            return cls(k)
        types = frozenset(
            r.relation for r in roles if r.role == "other" and _joins_context(r.head_type, r.tail_type)
        )
        return cls(k, context, types) if types else cls(k)

    def limit(self, rtype: str) -> int:
        """The bound of a group of stored type ``rtype``."""
        return self.context if rtype in self.context_types else self.k

    @property
    def least(self) -> int:
        """The smallest bound of any group (a node with fewer edges in all is never cut)."""
        return self.context if self.context_types else self.k


def _joins_context(head: str, tail: str) -> bool:
    """Whether a relation between entities of these types joins a medical entity to a non-medical one."""
    medical = {DISEASE, *ROLE_ENTITY_TYPE.values()}
    known = [t for t in (head, tail) if t and t != UNTYPED]
    return len(known) == 2 and any(t in medical for t in known) and any(t not in medical for t in known)


@dataclass
class Bounds:
    """A bounded full index's state: the bound, the stored degrees, and the uncut lists of the nodes cut.

    Attributes:
        k: Edges kept per node, relation type and direction.
        degree: Per node, its visible stored edges (the store's kept degree).
        uncut: Per node whose lists were cut, its visible lists before the cut (to cut again
            when weights move or disputes change).
    """

    k: GroupBound
    degree: np.ndarray
    uncut: dict[int, tuple[Any, Any]] = field(default_factory=dict)


def stored_degrees(gi: Any, nodes: int) -> np.ndarray:
    """Per node, its visible stored edges (no readings, nothing hidden): the store's kept degree."""
    stored = np.fromiter((t[:1] != REVERSE_MARK for t in gi.edge_type), dtype=bool, count=len(gi.edge_type))
    hidden = gi.hidden.edges
    if hidden:
        stored[np.fromiter(hidden, dtype=np.int64, count=len(hidden))] = False
    heads = np.asarray(gi.edge_head, dtype=np.int64)[stored]
    tails = np.asarray(gi.edge_tail, dtype=np.int64)[stored]
    return np.bincount(heads, minlength=nodes) + np.bincount(tails, minlength=nodes)


def _groups(
    gi: BoundedIndex, node: int, out: Sequence[int], inc: Sequence[int]
) -> dict[tuple[str, int], list[int]]:
    """The node's visible stored edges by (relation type, 0 out / 1 in)."""
    groups: dict[tuple[str, int], list[int]] = {}
    types = gi.edge_type
    for side, adj in ((0, out), (1, inc)):
        for e in adj:
            if types[e][:1] != REVERSE_MARK:
                groups.setdefault((types[e], side), []).append(e)
    return groups


def _kept(
    gi: BoundedIndex,
    node: int,
    out: Sequence[int],
    inc: Sequence[int],
    k: GroupBound,
    weights: np.ndarray,
    degree: Any,
) -> set[int] | None:
    """The node's kept stored edges, or ``None`` when no group is over its bound (nothing to cut)."""
    groups = _groups(gi, node, out, inc)
    if all(len(es) <= k.limit(rtype) for (rtype, _), es in groups.items()):
        return None
    ids = gi.edge_id
    kept: set[int] = set()
    for (rtype, side), es in groups.items():
        limit = k.limit(rtype)
        if len(es) <= limit:
            kept.update(es)
            continue
        ends = gi.edge_tail if side == 0 else gi.edge_head
        es.sort(key=lambda e: (-float(weights[e]), int(degree[ends[e]]), ids[e]))
        kept.update(es[:limit])
    return kept


def kept_lists(
    gi: BoundedIndex, out: Iterable[int], inc: Iterable[int], kept: Collection[int]
) -> tuple[list[int], list[int]]:
    """A node's lists cut to its kept stored edges and their readings, in the lists' order."""
    twin, types = gi.edge_twin, gi.edge_type

    def stays(e: int) -> bool:
        return (twin[e] if types[e][:1] == REVERSE_MARK else e) in kept

    return [e for e in out if stays(e)], [e for e in inc if stays(e)]


def apply_bounds(gi: Any, k: GroupBound, nodes: Iterable[int] | None = None) -> list[int]:
    """Cut a full index's lists to each node's kept edges (see the module docstring); return the nodes cut.

    With ``nodes`` only those are cut again from their uncut lists (weights moved); the
    caller holds the index lock and republishes the totals of the nodes returned.
    """
    bounds: Bounds | None = gi._bounds
    if bounds is None:
        bounds = gi._bounds = Bounds(k, stored_degrees(gi, len(gi.ids)))
    weights = gi._weights.weights
    todo = range(len(gi.ids)) if nodes is None else nodes
    changed: list[int] = []
    for n in todo:
        out, inc = bounds.uncut.get(n) or (list.__getitem__(gi.out_adj, n), list.__getitem__(gi.in_adj, n))
        if len(out) + len(inc) <= bounds.k.least and n not in bounds.uncut:
            continue
        kept = _kept(gi, n, out, inc, bounds.k, weights, bounds.degree)
        if kept is None:
            continue
        bounds.uncut.setdefault(n, (out, inc))
        new_out, new_in = kept_lists(gi, out, inc, kept)
        typ = type(out)
        list.__setitem__(gi.out_adj, n, typ("i", new_out) if typ is not list else new_out)
        list.__setitem__(gi.in_adj, n, typ("i", new_in) if typ is not list else new_in)
        changed.append(n)
    return changed


def restore_uncut(gi: Any) -> None:
    """Put every cut node's uncut lists back and forget the bounds (disputes change: cut again after)."""
    bounds: Bounds | None = gi._bounds
    if bounds is None:
        return
    for n, (out, inc) in bounds.uncut.items():
        list.__setitem__(gi.out_adj, n, out)
        list.__setitem__(gi.in_adj, n, inc)
    gi._bounds = None


def bounded_rows(
    store: Any,
    ids: Sequence[str],
    bound: GroupBound | int,
    hidden: Collection[str],
    small: Collection[str] = (),
) -> list[Any]:
    """The store's kept edges of ``ids`` (``bounded_edges``), picked in Python for a store without it.

    Rows: ``(node, edge, "out" | "in", other end's degree, way back stored)``, the edge an
    :data:`~kgmind.models.EdgeRow` (a store may give a ``StoredEdge``: read by position). The
    store cuts every group to ``bound.k``; a context type's groups are cut to their
    smaller bound here, from the head of the store's order. The Python pick reads every
    edge of ``ids`` and of their neighbours: right, not bounded (a test double, a store
    of another kind). ``small``: ids known to have at most ``bound.k`` edges in all,
    which the store may read without asking their degrees.
    """
    bound = GroupBound.of(bound)
    read = getattr(store, "bounded_edges", None)
    if callable(read):
        got = read(ids, bound.k, hidden, small=small) if small else read(ids, bound.k, hidden)
        return _context_cut(got, bound)
    k = bound.k
    rels = [r for r in store.neighbors(list(ids), "both") if r.id not in hidden]
    others = sorted({x for r in rels for x in (r.head, r.tail)})
    around = [r for r in store.neighbors(others, "both") if r.id not in hidden] if others else []
    degree: dict[str, int] = {}
    pairs = set()
    for r in {r.id: r for r in store.neighbors(others, "both")}.values() if others else []:
        pairs.add((r.head, r.tail))
    for r in {r.id: r for r in around}.values():
        degree[r.head] = degree.get(r.head, 0) + 1
        degree[r.tail] = degree.get(r.tail, 0) + 1
    rows: list[Any] = []
    for node in ids:
        groups: dict[tuple[str, str], list[Any]] = {}
        for r in {r.id: r for r in rels}.values():
            if r.head == node:
                groups.setdefault((r.type, "out"), []).append(r)
            if r.tail == node:
                groups.setdefault((r.type, "in"), []).append(r)
        for (_, side), rs in sorted(groups.items()):
            other = (lambda r: r.tail) if side == "out" else (lambda r: r.head)
            rs.sort(key=lambda r: (-r.weight, degree.get(other(r), 0), r.id))
            rows += [
                (
                    node,
                    (r.id, r.head, r.type, r.tail, r.weight, r.source),
                    side,
                    degree.get(other(r), 0),
                    (r.tail, r.head) in pairs,
                )
                for r in rs[:k]
            ]
    return _context_cut(rows, bound)


def reads_second_side(first: Collection[int], second: Collection[int], degree: Mapping[int, int]) -> bool:
    """Whether the edges between two node sets are cheaper to read from ``second``'s lists.

    A store reads one side's edge lists whole and tests each other end (``edges_between``), so
    the cost follows the edges of the side read: a question's few cut hubs hold ~90,000 edges
    on the generated 10M KG, where its ~500 candidate diseases may hold half as many, while on
    the re-crawl the hubs are the smaller side. The kept degrees say which before anything is
    read; a node of unknown degree keeps ``first``. Over 32 reads captured at 10M this side
    took 2.5 s, the hubs' side always 2.9 s, the cheaper of the two each time 2.5 s
    (``benchmarks/results/2026-11-29-votes-offsets``).
    """
    if any(n not in degree for n in (*first, *second)):
        return False
    return sum(degree[n] for n in set(second)) < sum(degree[n] for n in set(first))


def edges_between(store: Any, a: Sequence[str], b: Sequence[str]) -> list[Any]:
    """The stored edges joining a node of ``a`` to one of ``b``, either way, disputed ones included.

    The store's own statement (``edges_between``) reads only ``a``'s edge lists; a store
    without it answers from ``a``'s neighbours (a test double, a store of another kind).
    """
    read = getattr(store, "edges_between", None)
    if callable(read):
        return list(read(a, b))
    if not a or not b:
        return []
    sa, sb = set(a), set(b)
    got = (
        r
        for r in store.neighbors(list(a), "both")
        if (r.head in sa and r.tail in sb) or (r.tail in sa and r.head in sb)
    )
    return list({r.id: r for r in got}.values())


def _context_cut(rows: Iterable[Any], bound: GroupBound) -> list[Any]:
    """``rows`` (each group in the store's order) with a context type's groups cut to their bound."""
    if not bound.context_types:
        return list(rows)
    seen: dict[tuple[str, str, str], int] = {}
    out: list[Any] = []
    for row in rows:
        node, rtype, side = row[0], row[1][EDGE_TYPE], row[2]
        if rtype in bound.context_types:
            group = (node, rtype, side)
            seen[group] = taken = seen.get(group, 0) + 1
            if taken > bound.context:
                continue
        out.append(row)
    return out


class BoundedReads:
    """Bounded reads kept across questions for one store state, least recently used dropped first.

    The same hubs (fever, a blood test) come back in question after question, and a hub's
    read is the dearest one: the store orders all its edges to keep ``k`` per group. A read
    depends only on the store state, so it is kept under ``(state, k, node)`` where the
    state names the store, its fingerprint, weights version and hidden edges: any import,
    feedback or verdict changes the key, and a stale read is never served. At most
    ``max_rows`` rows are held (a row is one kept edge).
    """

    def __init__(self, max_rows: int = KEPT_BOUNDED_ROWS) -> None:
        self.max_rows = max_rows
        self._lock = threading.Lock()
        self._rows: OrderedDict[tuple[Hashable, GroupBound, str], list[Any]] = OrderedDict()
        self._held = 0

    def read(
        self,
        store: Any,
        ids: Sequence[str],
        k: GroupBound,
        hidden: Collection[str],
        state: Hashable,
        small: Collection[str] = (),
    ) -> list[Any]:
        """:func:`bounded_rows` of ``ids``, from the kept reads where they are known."""
        found: list[Any] = []
        todo: list[str] = []
        with self._lock:
            for node in ids:
                kept = self._rows.get((state, k, node))
                if kept is None:
                    todo.append(node)
                else:
                    self._rows.move_to_end((state, k, node))
                    found += kept
        if not todo:
            return found
        fresh = bounded_rows(store, todo, k, hidden, [n for n in todo if n in small])
        by_node: dict[str, list[Any]] = {n: [] for n in todo}
        for row in fresh:
            by_node[row[0]].append(row)
        with self._lock:
            for node, rows in by_node.items():
                key = (state, k, node)
                if key not in self._rows:
                    self._rows[key] = rows
                    self._held += len(rows)
            while self._held > self.max_rows and self._rows:
                self._held -= len(self._rows.popitem(last=False)[1])
        return found + fresh

    def clear(self) -> None:
        """Forget every kept read (tests, a benchmark that changes the bound)."""
        with self._lock:
            self._rows.clear()
            self._held = 0


#: The process's kept bounded reads (pushed-down indexes of every store share it).
BOUNDED_READS = BoundedReads()


class BoundedLists:
    """The bounds of a ``GraphIndex`` (a base class; the index provides these attributes)."""

    ids: list[str]
    out_adj: list[Any]
    in_adj: list[Any]
    edge_head: Any
    edge_tail: Any
    edge_type: list[str]
    edge_id: Any
    edge_twin: Any
    _lock: Any
    _weights: Any
    _complete: set[int] | None
    _bounds: Bounds | None
    _bound_k: GroupBound | None
    _node_degree: dict[int, int] | None

    if TYPE_CHECKING:  # provided by GraphIndex and PushdownGrowth (defined here they would hide those)

        def _out_list(self, node: int) -> np.ndarray: ...

        def _drop_out_arrays(self, nodes: Collection[int]) -> None: ...

        def _stored_edges_to(self, heads: Collection[int], tails: Collection[int]) -> list[int]: ...

    def bound(self, k: GroupBound | int | None) -> None:
        """Keep at most ``k`` edges per node, type and direction (:mod:`kgmind.retrievers.graph_bounds`).

        A full index cuts its lists now (and again when weights or disputes change); a
        pushed-down one is told by :meth:`neighborhood`. ``None``: every edge.
        """
        if k is None or self._complete is not None:
            return
        with self._lock:
            was_cut = list(self._bounds.uncut) if self._bounds is not None else []
            restore_uncut(self)
            self._bound_to(GroupBound.of(k), was_cut)

    def _bound_to(self, k: GroupBound, was_cut: Collection[int] = ()) -> None:
        """Cut every node to ``k`` (caller holds the lock); new totals for the nodes cut now or before."""
        self._bounds = None
        changed = {*apply_bounds(self, k), *was_cut}
        self.__dict__.pop("_hub_degree", None)
        self._drop_out_arrays(changed)
        self._weights = self._weights.retotalled(changed, self._out_list)

    def _recut(self, nodes: Collection[int]) -> None:
        """Cut ``nodes`` again from their uncut lists (weights moved; the caller holds the lock)."""
        if self._bounds is None:
            return
        cut = apply_bounds(self, self._bounds.k, [n for n in nodes if n in self._bounds.uncut])
        if cut:
            self._drop_out_arrays(cut)
            self._weights = self._weights.retotalled(cut, self._out_list)

    def edges_to(self, heads: Collection[int], tails: Collection[int]) -> list[int]:
        """The visible edges from ``heads`` to ``tails`` an unbounded index lists, whatever the bounds cut.

        In the index's edge order (stored edges by relation id, then reverse readings). A
        hub's vote for a disease its bounded list left out is found here (issue 42): in
        memory from the hub's uncut lists, pushed down by one store read of the edges
        between the two sets, not by completing every candidate.
        """
        if self._complete is not None and self._bound_k is not None:
            found = self._stored_edges_to(heads, tails)
        else:
            ts = set(tails)
            bounds = self._bounds  # read once: a dispute or a weight change publishes new bounds
            uncut = bounds.uncut if bounds is not None else {}
            found = [
                e
                for h in dict.fromkeys(heads)
                for e in (uncut[h][0] if h in uncut else self.out_adj[h])
                if self.edge_tail[e] in ts
            ]
        return sorted(set(found), key=sort_key(self))

    @property
    def bounded(self) -> bool:
        """Whether this index keeps a bounded number of edges per node (:meth:`bound`, ``neighborhood``)."""
        return self._bounds is not None or self._bound_k is not None

    def degree(self, node: int) -> int:
        """A node's degree as the hub cap reads it.

        Bounded: its visible stored edges, as the store keeps them (:mod:`kgmind.stores.degrees`),
        known before any of its edges are read; else the edges in its lists.
        """
        if self._bounds is not None:
            return int(self._bounds.degree[node])
        if self._node_degree is not None:
            return self._node_degree[node]
        return len(self.out_adj[node]) + len(self.in_adj[node])
