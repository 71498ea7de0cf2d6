"""Neo4j's half of the kept degrees (:mod:`kgmind.stores.degrees`) and of the bounded reads.

Degrees are counted again, inside the write transaction, for every entity an import, a
verdict or a restore touches (the count sees the transaction's own writes). Reads go to
the cluster's readers (``routing_=READ``, :meth:`Neo4jStore._read`).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import neo4j

from kgmind.models import EdgeRow, StoredEdge
from kgmind.stores import degrees as dg
from kgmind.stores.neo4j import queries as q
from kgmind.stores.neo4j import verdicts as nv
from kgmind.stores.neo4j.records import edge_row_from_record, stored_edge_from_record

__all__ = ["BoundedEdge", "Neo4jDegrees", "refresh_in_tx"]

#: One edge of a bounded read: (node read, edge, "out" | "in", other end's degree, way back stored).
BoundedEdge = tuple[str, EdgeRow, str, int, bool]

_BATCH = 5_000


def refresh_in_tx(tx: neo4j.ManagedTransaction, ids: Collection[str]) -> None:
    """Count the degrees of ``ids`` again from their visible edges and write them, in ``tx``."""
    if not ids:
        return
    hidden = dg.disputed_ids([nv.verdict_record(r) for r in tx.run(q.VERDICTS, {"ids": None})])
    todo = sorted(ids)
    for i in range(0, len(todo), _BATCH):
        batch = todo[i : i + _BATCH]
        edges = [(r["head"], r["type"], r["tail"], r["id"]) for r in tx.run(q.DEGREE_EDGES, {"ids": batch})]
        rows = dg.degree_rows(dg.count_degrees(batch, edges, hidden))
        tx.run(q.SET_DEGREES, {"rows": rows}).consume()


class Neo4jDegrees:
    """The degree and bounded reads of ``Neo4jStore`` (a base class; the store provides ``_read``)."""

    def _read(self, query: str, params: dict[str, Any], what: str) -> list[Any]:
        raise NotImplementedError

    def degrees(self, ids: Sequence[str]) -> dict[str, tuple[int, dict[str, tuple[int, int]]]]:
        """``{id: (degree, {type: (out, in)})}`` as kept in the store."""
        recs = self._read(q.GET_DEGREES, {"ids": list(ids)}, "degrees")
        return {r["id"]: (int(r["degree"]), dg.parse_degrees(r["degrees"])) for r in recs}

    def degree_values(self) -> list[int]:
        """Every entity's degree (what a hub percentile is taken over)."""
        return [int(r["degree"]) for r in self._read(q.DEGREE_VALUES, {}, "degree_values")]

    def edges_between(self, a: Sequence[str], b: Sequence[str]) -> list[StoredEdge]:
        """The stored edges joining a node of ``a`` to one of ``b``, either way, disputed ones included.

        ``a``'s edges are the ones read, so it should be the side with fewer edges.
        """
        if not a or not b:
            return []
        recs = self._read(q.EDGES_BETWEEN, {"a": list(a), "b": list(b)}, "edges_between")
        return [stored_edge_from_record(r) for r in recs]

    def weights_uniform(self) -> bool:
        """Whether every edge has the same weight (nothing learnt), one aggregate read."""
        recs = self._read(q.WEIGHT_RANGE, {}, "weights_uniform")
        return not recs or recs[0]["lightest"] is None or recs[0]["lightest"] == recs[0]["heaviest"]

    def bounded_edges(
        self, ids: Sequence[str], k: int, hidden: Collection[str] = (), small: Collection[str] = ()
    ) -> list[BoundedEdge]:
        """Per node, type and direction the first ``k`` edges: heaviest, then most specific, then by id.

        ``small`` (nodes known to have at most ``k`` edges) is a LadybugDB shortcut; one statement
        reads every node here.
        """
        if not ids or k <= 0:
            return []
        types = sorted({r["type"] for r in self._read(q.RELATIONSHIP_TYPES, {}, "bounded_edges")})
        params = {"ids": list(ids), "types": types, "k": k, "hidden": sorted(hidden)}
        out: list[BoundedEdge] = []
        for r in self._read(q.BOUNDED_EDGES, params, "bounded_edges"):
            side = "out" if r["outgoing"] else "in"
            out.append((r["node"], edge_row_from_record(r), side, int(r["degree"]), bool(r["back"])))
        return out
