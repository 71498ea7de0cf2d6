"""LadybugDB's half of the kept degrees (:mod:`kgmind.stores.degrees`) and of the bounded reads.

Degrees are written in the transaction of the write that changes what explorations see:
the new entities of an import carry theirs in the ``COPY`` table, the stored entities an
import, a verdict or a restore touches are counted again from their edges (inside the
transaction, so the count sees its own writes). A store made before the columns existed
is counted once when it opens.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from kgmind.models import StoredEdge
from kgmind.stores import degrees as dg
from kgmind.stores.ladybug import kept
from kgmind.stores.ladybug import queries as q
from kgmind.stores.ladybug import verdicts as lv
from kgmind.stores.ladybug.kept import BoundedEdge, Group, engine_groups, read_kept
from kgmind.stores.protocol import StoreError

__all__ = [
    "META_DEGREES",
    "BoundedEdge",
    "DegreeReads",
    "DegreeWrites",
    "bounded_edges",
    "disputed_in",
    "keep_reads",
    "read_degrees",
    "refresh_degrees",
    "write_degrees",
]

_log = logging.getLogger(__name__)

#: The ``Meta`` key set once a store's degrees are counted (a store older than them has none).
META_DEGREES = "degrees"


class LadybugReader(Protocol):
    """What these helpers need from a ``LadybugStore``."""

    def _rows(
        self, query: str, params: dict[str, Any] | None = None, conn: Any = None
    ) -> list[list[Any]]: ...

    def _table(
        self, query: str, params: dict[str, Any] | None = None, conn: Any = None
    ) -> dict[str, list[Any]]: ...

    def _read_meta(self, key: str) -> Any: ...


class LadybugWriter(LadybugReader, Protocol):
    """What :meth:`DegreeWrites._keep_all` needs: the reads, and a write transaction."""

    def _transaction(self, what: str) -> AbstractContextManager[Any]: ...


class DegreeReads:
    """The reads of kept degrees and bounded edges (a base class of ``LadybugStore``)."""

    def degrees(self: LadybugReader, ids: Sequence[str]) -> dict[str, tuple[int, dict[str, tuple[int, int]]]]:
        """``{id: (degree, {type: (out, in)})}`` as kept in the store (:mod:`kgmind.stores.degrees`)."""
        return read_degrees(self, ids)

    def degree_values(self: LadybugReader) -> list[int]:
        """Every entity's degree (what a hub percentile is taken over)."""
        return [int(d or 0) for (d,) in self._rows(q.DEGREE_VALUES)]

    def bounded_edges(
        self: LadybugReader,
        ids: Sequence[str],
        k: int,
        hidden: Collection[str] = (),
        small: Collection[str] = (),
    ) -> list[BoundedEdge]:
        """Per node, type and direction the first ``k`` edges: heaviest, then most specific (see below)."""
        return bounded_edges(self, ids, k, hidden, small)

    def edges_between(self: LadybugReader, a: Sequence[str], b: Sequence[str]) -> list[StoredEdge]:
        """The stored edges joining a node of ``a`` to one of ``b``, either way, disputed ones included.

        ``a``'s edge lists are the ones read, so it should be the side with fewer edges. The
        other ends are tested by their offsets in the entity table (``EDGES_BETWEEN``), read
        first; the ids are tested again here, so an offset that came to name another entity
        between the two reads cannot add an edge. An edge whose both ends are in both sets is
        returned once.
        """
        if not a or not b:
            return []
        wanted = list(dict.fromkeys(b))
        offsets = [int(o) for (o,) in self._rows(q.ENTITY_OFFSETS, {"ids": wanted})]
        if not offsets:
            return []
        rows = self._rows(q.EDGES_BETWEEN, {"a": list(dict.fromkeys(a)), "offs": offsets})
        sa, sb = set(a), set(wanted)
        edges = {
            rid: StoredEdge(rid, head, rtype, tail, float(w), src or "")
            for head, rid, rtype, tail, w, src in rows
            if (head in sa and tail in sb) or (tail in sa and head in sb)
        }
        return list(edges.values())

    def weights_uniform(self: LadybugReader) -> bool:
        """Whether every edge has the same weight (nothing learnt), one aggregate read."""
        rows = self._rows(q.WEIGHT_RANGE)
        return not rows or rows[0][0] is None or rows[0][0] == rows[0][1]


class DegreeWrites:
    """What keeps degrees and hubs' kept reads current in a write (a base class of ``LadybugStore``)."""

    def _refresh_degrees_of(self: LadybugReader, conn: Any, relation_ids: Sequence[str]) -> None:
        """Count the degrees of the ends of ``relation_ids`` again, on ``conn`` (a verdict, a restore)."""
        ends = {
            x
            for row in self._rows(q.GET_RELATIONS, {"ids": list(relation_ids)}, conn)
            for x in (row[0], row[3])
        }
        refresh_degrees(self, conn, ends)
        keep_reads(self, conn, ends)

    def _keep(self: LadybugReader, conn: Any, ends: Collection[str] | None, *, next_to: bool = True) -> None:
        """The hubs' kept reads written again after a write, on ``conn`` (:func:`keep_reads`).

        ``None`` (every hub) only marks them pending: the caller runs :meth:`_keep_all` after
        its commit, because the engine reads a load's uncommitted edges ~2.5x slower (generated
        2M KG: 57 s against 22 s). Until then no row is read, and the engine cuts every hub.
        """
        if ends is None:
            kept.pending(conn)
        else:
            keep_reads(self, conn, ends, next_to=next_to)

    def _keep_all(self: LadybugWriter) -> None:
        """Every hub's kept read again, in a transaction of its own (after :meth:`_keep` with ``None``).

        The write before it has committed, so a failure here is logged, not raised: the
        rows stay pending (reads are right, hubs cut by the engine) until the store next opens.
        """
        try:
            with self._transaction("keep hub reads") as conn:
                keep_reads(self, conn, None)
        except StoreError as exc:
            _log.warning("hub reads left to the engine until the store reopens: %s", exc)


def keep_reads(
    store: LadybugReader, conn: Any, ends: Collection[str] | None, *, next_to: bool = True
) -> None:
    """Write the hubs' kept reads again on ``conn`` (:mod:`kgmind.stores.ladybug.kept`).

    ``ends``: the entities whose edges the write changed (``None``: every hub);
    ``next_to``: their degrees changed too, so the hubs next to them are written again.
    """
    if ends is None:
        kept.rebuild(store, conn, disputed_in(store, conn))
    elif ends:
        kept.refresh(store, conn, ends, disputed_in(store, conn), next_to=next_to)


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
        every = store._table(q.SCAN_ENTITY_IDS, None, conn)["id"]
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
    store: LadybugReader, ids: Sequence[str], k: int, hidden: Collection[str], small: Collection[str] = ()
) -> list[BoundedEdge]:
    """Per node of ``ids``, relation type and direction, its first ``k`` edges in the store's order.

    The order (:data:`kgmind.stores.ladybug.queries.BOUNDED_EDGES`): weight, heaviest first;
    then the other end's degree, lowest first; then relation id. Disputed ids in
    ``hidden`` are left out. Each edge says whether the KG stores a way back.

    Most nodes have no group over ``k`` (their kept degrees say so), and ordering their
    edges in the engine and asking again for the ways back cost ~20 ms a read whatever the
    node's size. Their whole lists are read instead (``WHOLE_EDGES``) and put in the same
    order here. The nodes with a bigger group (hubs) are read from the rows their writes
    keep (:mod:`kgmind.stores.ladybug.kept`), or cut in the engine where no row answers.
    Rows come in the statement's order: outgoing groups, then incoming, each by node and type.

    ``small``: nodes the caller knows have at most ``k`` edges in all (their kept degree
    came with an earlier read), read whole without asking their degrees first; a group
    found over ``k`` after all still goes to the engine's cut.
    """
    if not ids or k <= 0:
        return []
    ids = list(dict.fromkeys(ids))  # each node once: the statements unwind them
    known = set(small) & set(ids)
    degrees = read_degrees(store, [n for n in ids if n not in known]) if len(known) < len(ids) else {}
    whole = [
        n for n in ids if n in known or (n in degrees and all(max(v) <= k for v in degrees[n][1].values()))
    ]
    hidden, read_whole = set(hidden), set(whole)
    groups, cut = _whole_groups(store, whole, k, hidden) if whole else ([], [])
    hubs = [n for n in ids if n in degrees and n not in read_whole] + cut  # an unknown id has no edges
    if hubs:
        kept, rest = read_kept(store, hubs, k, hidden)
        groups += kept + (engine_groups(store, rest, k, hidden) if rest else [])
    groups.sort(key=lambda g: (g[0] != "out", g[1], g[2]))
    return [row for group in groups for row in group[3]]


def _whole_groups(
    store: LadybugReader, ids: list[str], k: int, hidden: set[str]
) -> tuple[list[Group], list[str]]:
    """The groups of nodes read whole, ordered here; and the nodes found to have a group over ``k``.

    A node's lists are whole, so an edge's way back is stored exactly when the node has an
    edge the other way to the same end (disputed edges count, as in ``END_IDS``). A group
    over ``k`` (kept degrees older than the rule in force) sends its node to the engine's cut.
    """
    read = store._rows(q.WHOLE_EDGES, {"ids": ids})
    ends_of: dict[tuple[str, str], set[str]] = {}  # (node, side) -> every other end on that side
    for side, node, _t, _r, ends, *_ in read:
        ends_of.setdefault((node, side), set()).update(ends)
    groups: list[Group] = []
    cut: set[str] = set()
    for side, node, rtype, rids, ends, weights, sources, degs in read:
        # plain tuples sort in C: heaviest first, then a known lower degree, then the (unique) id
        keyed = sorted(
            (-float(w), deg is None, deg or 0, rid, end, src)
            for rid, end, w, src, deg in zip(rids, ends, weights, sources, degs, strict=True)
            if rid not in hidden
        )
        if not keyed:
            continue
        if len(keyed) > k:
            cut.add(node)
            continue
        back = ends_of.get((node, "in" if side == "out" else "out"), set())
        node = str(node)
        out = side == "out"  # the edges built here, not through relation_of: ~5 % of a re-crawl question
        rows = [
            (
                node,
                (rid, node if out else end, rtype, end if out else node, -w, src or ""),
                side,
                deg,
                end in back,
            )
            for w, _, deg, rid, end, src in keyed
        ]
        groups.append((side, node, rtype, rows))
    return [g for g in groups if g[1] not in cut], sorted(cut)
