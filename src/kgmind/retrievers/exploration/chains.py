"""HyKGE's reasoning chains (§4.4) between every pair of linked entities, over a :class:`GraphIndex`.

For each pair: undirected shortest paths within ``max_hops``, co-ancestor chains
``a → x ← b`` and co-occurrence chains ``a ← x → b``, with the end entities'
descriptions.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

from kgmind.models import Evidence
from kgmind.relations import REVERSE_MARK
from kgmind.retrievers.exploration.items import evidence_item, resolve, triple_text
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.retrievers.graph_paths import BfsMemo

__all__ = ["hykge_chains"]


def _chain(
    gi: GraphIndex, a: int, b: int, edges: Sequence[int], nodes: Sequence[int], ctype: str
) -> Evidence:
    descs = {gi.names[n]: gi.descriptions[n] for n in (a, b) if gi.descriptions[n]}
    meta: dict[str, Any] = {"chain_type": ctype, "pair": (gi.ids[a], gi.ids[b])}
    if descs:
        meta["descriptions"] = descs
    score = 1.0 / max(len(edges), 1)
    text = triple_text(gi, edges)
    return evidence_item(gi, "chain", edges, nodes, text=text, score=score, source="hykge_chains", meta=meta)


#: A HyKGE chain candidate: (edge indices, node indices, chain type, (a, b) pair).
_Cand = tuple[tuple[int, ...], tuple[int, ...], str, tuple[int, int]]


def _meetings(
    first_a: dict[int, int], first_b: dict[int, int], a: int, b: int, ctype: str, cap: int
) -> list[_Cand]:
    """Two-edge chains ``a – x – b`` through every shared neighbor ``x`` (first edges), at most ``cap``."""
    out: list[_Cand] = []
    for x, ea in first_a.items():
        if x in first_b and x not in (a, b):
            out.append(((ea, first_b[x]), (a, x, b), ctype, (a, b)))
            if len(out) >= cap:
                break
    return out


def _first_edges(adj: list[int], other: list[int], types: list[str]) -> dict[int, int]:
    """First stored edge (insertion order) to each neighbor, keyed by that neighbor.

    Reverse readings are left out: HyKGE names its chains by the stored directions
    (``a → x ← b`` is a co-ancestor), and the undirected paths already walk both ways.
    """
    out: dict[int, int] = {}
    for e in adj:
        if not types[e].startswith(REVERSE_MARK):
            out.setdefault(other[e], e)
    return out


def hykge_chains(
    gi: GraphIndex,
    entity_ids: Sequence[str],
    *,
    max_hops: int = 2,
    max_chains: int = 30,
    hub_percentile: float | None = None,
) -> list[Evidence]:
    """HyKGE reasoning chains between every pair of linked entities.

    For each pair ``(a, b)`` (in question order): undirected shortest paths of at
    most ``max_hops`` edges (``chain_type="path"``), co-ancestor chains ``a → x ← b``
    (``"co_ancestor"``) and co-occurrence chains ``a ← x → b`` (``"co_occurrence"``).
    The chains are taken round-robin over the pairs and chain types so one busy pair
    cannot fill the quota; a chain whose edges repeat an earlier one is dropped.
    ``meta["descriptions"]`` maps end-entity names to their descriptions when the KG
    has them.

    Args:
        gi: The graph index.
        entity_ids: Linked entities.
        max_hops: Longest path (HyKGE paper: 3, code: 2).
        max_chains: Total number of chains returned.
        hub_percentile: Paths walk through no node whose degree is above this
            percentile of the KG's degrees (:meth:`GraphIndex.hub_degree`; the linked
            entities themselves are always expanded); ``None``: through every node.

    Returns:
        Up to ``max_chains`` ``chain`` evidence items; score ``1 / length``.
    """
    nodes = resolve(gi, entity_ids)
    cap = gi.hub_degree(hub_percentile) if hub_percentile is not None else None
    if len(nodes) < 2 or max_chains <= 0:
        return []
    # candidates stay (edges, nodes, type, pair) tuples; only the selected ones become Evidence
    outs = {n: _first_edges(gi.out_adj[n], gi.edge_tail, gi.edge_type) for n in nodes}
    ins = {n: _first_edges(gi.in_adj[n], gi.edge_head, gi.edge_type) for n in nodes}
    queues: list[list[_Cand]] = []
    memo: BfsMemo = {}  # each entity's BFS levels, expanded once for all of its pairs
    for a, b in itertools.combinations(nodes, 2):
        anc = _meetings(outs[a], outs[b], a, b, "co_ancestor", max_chains)
        occ = _meetings(ins[a], ins[b], a, b, "co_occurrence", max_chains)
        co_keys = {frozenset(c[0]) for c in anc + occ}
        paths: list[_Cand] = [
            (p.edges, p.nodes, "path", (a, b))
            for p in gi.shortest_paths(
                a, b, max_hops, directed=False, limit=max_chains + len(co_keys), memo=memo, max_degree=cap
            )
        ]
        # an undirected 2-hop path may be a co-ancestor/co-occurrence chain: keep the specific type
        queues.append([c for c in paths if frozenset(c[0]) not in co_keys][:max_chains])
        queues.append(anc)
        queues.append(occ)
    out: list[Evidence] = []
    seen: set[frozenset[str]] = set()
    for group in itertools.zip_longest(*queues):
        for cand in group:
            if cand is None:
                continue
            edges, path_nodes, ctype, (a, b) = cand
            key = frozenset(gi.edge_id[e] for e in edges)
            if key in seen:
                continue
            seen.add(key)
            out.append(_chain(gi, a, b, edges, path_nodes, ctype))
            if len(out) >= max_chains:
                return out
    return out
