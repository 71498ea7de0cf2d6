"""LadybugDB's half of the kept degrees (:mod:`kgmind.stores.degrees`) and of the bounded reads.

Degrees are written in the transaction of the write that changes what explorations see:
the new entities of an import carry theirs in the ``COPY`` table, the stored entities an
import, a verdict or a restore touches are counted again from their edges (inside the
transaction, so the count sees its own writes). A store made before the columns existed
is counted once when it opens.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, Protocol

from kgmind.models import Relation
from kgmind.stores import degrees as dg
from kgmind.stores.ladybug import queries as q
from kgmind.stores.ladybug import verdicts as lv

__all__ = [
    "META_DEGREES",
    "BoundedEdge",
    "bounded_edges",
    "disputed_in",
    "read_degrees",
    "refresh_degrees",
    "write_degrees",
]

#: The ``Meta`` key set once a store's degrees are counted (a store older than them has none).
META_DEGREES = "degrees"

#: One edge of a bounded read: (the node read, the edge, "out" | "in", the other end's degree,
#: whether the KG stores a way back).
BoundedEdge = tuple[str, Relation, str, int, bool]


class LadybugReader(Protocol):
    """What these helpers need from a ``LadybugStore``."""

    def _rows(
        self, query: str, params: dict[str, Any] | None = None, conn: Any = None
    ) -> list[list[Any]]: ...

    def _table(self, query: str, conn: Any = None) -> dict[str, list[Any]]: ...


def disputed_in(store: LadybugReader, conn: Any) -> set[str]:
    """The disputed relation ids as ``conn`` sees them (inside a write: with its own verdicts)."""
    return dg.disputed_ids(lv.read_verdicts(store, conn, None))  # type: ignore[arg-type]


def refresh_degrees(store: LadybugReader, conn: Any, ids: Collection[str] | None) -> int:
    """Count the degrees of ``ids`` (``None``: every entity) again and write them on ``conn``.

    The engine counts (one row per entity and relation type), so refreshing a 10M-edge
    load never brings its edges into Python.

    Returns:
        How many entities were written.
    """
    params: dict[str, Any] = {"hidden": sorted(disputed_in(store, conn))}
    if ids is None:
        every = store._table(q.SCAN_ENTITIES, conn)["id"]
        counts = dg.degrees_from_counts(
            every, store._rows(q.DEGREES_OUT_ALL, params, conn), store._rows(q.DEGREES_IN_ALL, params, conn)
        )
    else:
        if not ids:
            return 0
        params["ids"] = sorted(ids)
        counts = dg.degrees_from_counts(
            ids, store._rows(q.DEGREES_OUT_OF, params, conn), store._rows(q.DEGREES_IN_OF, params, conn)
        )
    return write_degrees(conn, counts)


def write_degrees(conn: Any, counts: dg.Degrees) -> int:
    """Write ``counts`` on the entities they name (in the caller's transaction); returns how many."""
    rows = dg.degree_rows(counts)
    for i in range(0, len(rows), 20_000):
        conn.execute(q.SET_DEGREES, {"rows": rows[i : i + 20_000]})
    conn.execute(q.SET_META, {"key": META_DEGREES, "version": "1"})
    return len(rows)


def read_degrees(
    store: LadybugReader, ids: Sequence[str]
) -> dict[str, tuple[int, dict[str, tuple[int, int]]]]:
    """``{id: (degree, {type: (out, in)})}`` of the known ``ids``."""
    return {
        str(eid): (int(total or 0), dg.parse_degrees(per))
        for eid, total, per in store._rows(q.GET_DEGREES, {"ids": list(ids)})
    }


def bounded_edges(
    store: LadybugReader, ids: Sequence[str], k: int, hidden: Collection[str]
) -> list[BoundedEdge]:
    """Per node of ``ids``, relation type and direction, its first ``k`` edges in the store's order.

    The order (:data:`kgmind.stores.ladybug.queries.BOUNDED_EDGES`): weight, heaviest first;
    then the other end's degree, lowest first; then relation id. Disputed ids in
    ``hidden`` are left out. Each edge says whether the KG stores a way back.
    """
    if not ids or k <= 0:
        return []
    ids = list(dict.fromkeys(ids))  # each node once: the statement unwinds them
    params = {"ids": ids, "k": k, "hidden": sorted(hidden), "rows": 1 << 62}
    found: list[tuple[str, Relation, str, int]] = []
    for side, node, rtype, rids, ends, weights, sources, degrees in store._rows(q.BOUNDED_EDGES, params):
        for rid, end, w, src, deg in zip(rids, ends, weights, sources, degrees, strict=True):
            head, tail = (node, end) if side == "out" else (end, node)
            rel = Relation.model_construct(
                id=rid, head=head, type=rtype, tail=tail, weight=float(w), source=src or ""
            )
            found.append((str(node), rel, side, int(deg or 0)))
    others = sorted({r.tail if side == "out" else r.head for _, r, side, _ in found})
    params = {"ids": ids, "others": others}
    stored = {(str(a), str(b)) for a, b in store._rows(q.BACK_EDGES, params)} if found else set()
    return [(n, r, side, deg, (r.tail, r.head) in stored) for n, r, side, deg in found]
