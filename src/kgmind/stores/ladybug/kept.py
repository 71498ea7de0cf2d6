"""Each hub's bounded read, kept in the store and rewritten by the writes that change it (issue 42).

A hub's bounded read is the dearest read of a pushed-down question: the engine orders the
hub's whole list to keep ``k`` edges per type and direction, then reads it again for the
ways back (CMCKG re-crawl: ~66 + 51 ms a read; a shared hub of the generated 10M KG ~256 +
149 ms). The answer depends only on the store's state, and few writes change it, so those
writes compute it and keep it in the hub's ``Kept`` row; a read is then a primary-key lookup.

What moves a hub's read, and what each write does about it (inside its own transaction):

* a load: new edges, ways back, degrees and sources. A store's first load writes every
  hub's row; a later one the rows of the new edges' ends and of the hubs next to them;
* a weight write (feedback, verdicts): the order of the changed edges' ends' lists;
* a dispute or a restore: the ends' lists and degrees, so also the lists of the hubs next
  to them (a list is ordered by, and carries, the other end's degree);
* a weights reset or a clear: every row.

Rows are cut to :data:`kgmind.tuning.EDGES_PER_GROUP` (the ``Meta`` key ``kept`` says which
bound); a read with a smaller bound takes each group's head, a bigger one goes to the
engine. A row also names the disputed edges it left out, so a reader that hides another
set than the store's gets the engine's read (:func:`read_kept`): the rows never change
what a read returns, only how dear it is (``tests/integration/test_kept_reads.py``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

from kgmind.models import EdgeRow
from kgmind.stores import degrees as dg
from kgmind.stores.ladybug import queries as q
from kgmind.tuning import EDGES_PER_GROUP

__all__ = [
    "META_KEPT",
    "BoundedEdge",
    "Group",
    "engine_groups",
    "pending",
    "read_kept",
    "rebuild",
    "refresh",
    "relation_of",
    "rewrites_all",
    "wanted",
]

#: The ``Meta`` key naming the bound the ``Kept`` rows are cut to (missing or empty: no rows).
META_KEPT = "kept"

#: Hubs whose rows one engine read computes while writing, and the edges they hold at most (a
#: batch of 50 shared hubs of the generated 10M KG, ~85k edges each, held ~4M ids in Python).
_BATCH = 50
_BATCH_EDGES = 200_000

#: A load touching more entities than this writes every hub's row again rather than those next
#: to the ones it touched (one read of every hub's list is then cheaper).
_REWRITE_ALL_OVER = 10_000

#: One edge of a bounded read: (the node read, the edge, "out" | "in", the other end's degree,
#: whether the KG stores a way back).
BoundedEdge = tuple[str, EdgeRow, str, int, bool]

#: A group of a bounded read: (side, node, relation type, its rows).
Group = tuple[str, str, str, list[BoundedEdge]]


class KeptStore(Protocol):
    """What these helpers need from a ``LadybugStore``."""

    def _rows(
        self, query: str, params: dict[str, Any] | None = None, conn: Any = None
    ) -> list[list[Any]]: ...

    def _read_meta(self, key: str) -> Any: ...


def wanted() -> str:
    """The ``Meta`` ``kept`` value of a store whose rows follow the bound in force."""
    return "" if EDGES_PER_GROUP is None else str(EDGES_PER_GROUP)


def relation_of(side: str, node: str, rtype: str, rid: str, end: str, weight: Any, source: Any) -> EdgeRow:
    """The edge of a read row, whose ``node`` is its head (``out``) or its tail (``in``)."""
    head, tail = (node, end) if side == "out" else (end, node)
    return (rid, head, rtype, tail, float(weight), source or "")


def engine_groups(
    store: KeptStore, ids: list[str], k: int, hidden: Collection[str], conn: Any = None
) -> list[Group]:
    """The groups of ``ids`` cut in the engine (``BOUNDED_EDGES``), with their ways back (``END_IDS``)."""
    return _engine_read(store, ids, k, hidden, conn)[0]


def _engine_read(
    store: KeptStore, ids: list[str], k: int, hidden: Collection[str], conn: Any = None
) -> tuple[list[Group], dict[str, set[str]]]:
    """:func:`engine_groups`, and per node the disputed edges (of ``hidden``) its groups left out.

    An edge's way back is stored when its node has an edge the other way to the same end
    (disputed edges count): found in the nodes' whole lists of other ends' ids.
    """
    params = {"ids": ids, "k": k, "hidden": sorted(hidden), "rows": 1 << 62}
    read = store._rows(q.BOUNDED_EDGES, params, conn)
    ends: dict[tuple[str, str], set[str]] = {}
    left_out: dict[str, set[str]] = {n: set() for n in ids}
    for side, node, others, rids in store._rows(q.END_IDS, {"ids": ids}, conn):
        ends.setdefault((str(node), side), set()).update(str(o) for o in others if o is not None)
        left_out.setdefault(str(node), set()).update(str(r) for r in rids if r is not None and r in hidden)
    groups: list[Group] = []
    for side, node, rtype, rids, others, weights, sources, degrees in read:
        node = str(node)
        back = ends.get((node, "in" if side == "out" else "out"), set())
        rows: list[BoundedEdge] = [
            (node, relation_of(side, node, rtype, rid, end, w, src), side, int(deg or 0), str(end) in back)
            for rid, end, w, src, deg in zip(rids, others, weights, sources, degrees, strict=True)
        ]
        if rows:
            groups.append((side, node, rtype, rows))
    return groups, left_out


def read_kept(
    store: KeptStore, ids: Sequence[str], k: int, hidden: AbstractSet[str]
) -> tuple[list[Group], list[str]]:
    """The groups of the hubs ``ids`` from their rows, and the hubs the rows cannot answer.

    A row answers a read that hides ``hidden`` when every disputed edge it left out is in
    ``hidden`` and none of its first ``k`` edges of a group is: the visible edges are then a
    subset of those the row was cut from that holds its head, so the first ``k`` are the same.
    """
    kept = store._read_meta(META_KEPT)
    if not ids or not kept or int(kept) < k:
        return [], list(ids)
    texts = {str(n): t for n, t in store._rows(q.GET_KEPT, {"ids": list(ids)})}
    groups: list[Group] = []
    rest: list[str] = []
    for node in ids:
        got = _decode(node, texts.get(node), k, hidden)
        if got is None:
            rest.append(node)
        else:
            groups += got
    return groups, rest


def _decode(node: str, text: str | None, k: int, hidden: AbstractSet[str]) -> list[Group] | None:
    """A row's groups cut to ``k``, or ``None`` when it cannot answer a read hiding ``hidden``."""
    if not text:
        return None
    row = json.loads(text)
    if any(rid not in hidden for rid in row["x"]):
        return None
    groups: list[Group] = []
    for side, rtype, edges in row["g"]:
        head = edges[:k]
        if any(e[0] in hidden for e in head):
            return None
        groups.append(
            (
                side,
                node,
                rtype,
                [
                    (node, relation_of(side, node, rtype, rid, end, w, src), side, deg, back)
                    for rid, end, w, src, deg, back in head
                ],
            )
        )
    return groups


def _encode(groups: Iterable[Group], left_out: Iterable[str]) -> str:
    rows = [
        [
            side,
            rtype,
            [
                [rid, tail if side == "out" else head, w, src, d, b]
                for _, (rid, head, _, tail, w, src), _, d, b in e
            ],
        ]
        for side, _node, rtype, e in groups
    ]
    return json.dumps({"x": sorted(left_out), "g": rows}, ensure_ascii=False)


def _hubs(rows: Iterable[Sequence[Any]], k: int) -> dict[str, int]:
    """The ``(id, degrees JSON)`` rows with a group over ``k``: id -> edges (every type, both ways)."""
    hubs: dict[str, int] = {}
    for n, per in rows:
        groups = dg.parse_degrees(per).values() if n is not None else ()
        if any(max(v) > k for v in groups):
            hubs[str(n)] = sum(a + b for a, b in groups)
    return hubs


def _batches(hubs: dict[str, int]) -> Iterable[list[str]]:
    """``hubs`` in id order, cut into batches of at most ``_BATCH`` hubs and ``_BATCH_EDGES`` edges."""
    batch: list[str] = []
    edges = 0
    for n in sorted(hubs):
        if batch and (len(batch) == _BATCH or edges + hubs[n] > _BATCH_EDGES):
            yield batch
            batch, edges = [], 0
        batch.append(n)
        edges += hubs[n]
    if batch:
        yield batch


def _write(store: KeptStore, conn: Any, hubs: dict[str, int], k: int, hidden: Collection[str]) -> None:
    """Compute and write the rows of ``hubs`` on ``conn`` (the caller's write transaction)."""
    for batch in _batches(hubs):
        by_node: dict[str, list[Group]] = {n: [] for n in batch}
        groups, left_out = _engine_read(store, batch, k, hidden, conn)
        for group in groups:
            by_node[group[1]].append(group)
        for group_list in by_node.values():
            group_list.sort(key=lambda g: (g[0] != "out", g[2]))
        rows = [{"node": n, "groups": _encode(by_node[n], left_out[n])} for n in batch]
        conn.execute(q.SET_KEPT, {"rows": rows})


def rewrites_all(first: bool, ends: Collection[str]) -> bool:
    """Whether a load writes every hub's row again (after its commit): a store's first, or a big one."""
    return first or len(ends) > _REWRITE_ALL_OVER


def pending(conn: Any) -> None:
    """Drop every row and mark them to be written again (a write that changes every hub's read).

    Readers then cut every hub in the engine until :func:`rebuild` commits; a store left
    pending (the rebuild failed, the process died) is rebuilt when it next opens.
    """
    conn.execute(q.DELETE_ALL_KEPT)
    conn.execute(q.SET_META, {"key": META_KEPT, "version": ""})


def rebuild(store: KeptStore, conn: Any, hidden: Collection[str]) -> int:
    """Every hub's row again, on ``conn`` (a first load, a weights reset, a clear, an older store).

    Returns:
        How many hubs have a row.
    """
    conn.execute(q.DELETE_ALL_KEPT)
    k = EDGES_PER_GROUP
    if k is None:
        conn.execute(q.SET_META, {"key": META_KEPT, "version": wanted()})
        return 0
    hubs = _hubs(store._rows(q.HUB_CANDIDATES, {"k": k}, conn), k)
    _write(store, conn, hubs, k, hidden)
    conn.execute(q.SET_META, {"key": META_KEPT, "version": str(k)})
    return len(hubs)


def refresh(
    store: KeptStore, conn: Any, ends: Collection[str], hidden: Collection[str], *, next_to: bool
) -> None:
    """Write again the rows of ``ends`` and, with ``next_to``, of the hubs next to them, on ``conn``.

    ``ends``: the entities whose edges a write changed (after their degrees were counted
    again in the same transaction). ``next_to``: their degrees changed too (a load, a
    dispute, a restore), which moves them in their neighbours' lists.
    """
    kept = store._rows(q.GET_META, {"key": META_KEPT}, conn)
    if not ends or not kept or not kept[0][0]:
        return
    k = int(kept[0][0])
    ids = sorted(ends)
    rows = [(n, per) for n, _degree, per in store._rows(q.GET_DEGREES, {"ids": ids}, conn)]
    if next_to:
        rows += [(n, per) for n, per in store._rows(q.HUBS_NEXT_TO, {"ids": ids, "k": k}, conn)]
    touched = sorted({str(n) for n, _ in rows if n is not None})
    conn.execute(q.DELETE_KEPT, {"ids": touched})
    _write(store, conn, _hubs(rows, k), k, hidden)
