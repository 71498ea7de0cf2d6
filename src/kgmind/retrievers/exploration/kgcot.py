"""KGCoT's chains of thought (§2.3): a probabilistic DFS over the learnt edge weights of the graph.

At each step the next edge is drawn with ``p_i = w_i / Σ_j w_j`` over the edges to
unvisited nodes, so feedback that raises an edge's weight makes its chains likelier.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from kgmind.models import Evidence, KnowledgeDoc
from kgmind.retrievers.exploration.items import arrow_path, evidence_item, resolve
from kgmind.retrievers.graph_index import GraphIndex
from kgmind.retrievers.graph_weights import WeightSnapshot

__all__ = ["DocSource", "weighted_dfs_chains"]

#: One drawn chain: (start node, its nodes, its edges, the step probabilities).
_Draw = tuple[int, list[int], list[int], list[float]]


class DocSource(Protocol):
    """What :func:`weighted_dfs_chains` needs from a store to attach edge knowledge."""

    def get_docs(self, ids: Sequence[str]) -> list[KnowledgeDoc]:
        """Knowledge documents by id."""
        ...


def _draw(gi: GraphIndex, weights: WeightSnapshot, s: int, max_depth: int, rng: np.random.Generator) -> _Draw:
    """A chain from ``s``: each step, ``u = rng.random()`` picks the first edge with cumulative p > u."""
    visited = {s}
    cur = s
    path_nodes = [s]
    edges: list[int] = []
    probs: list[float] = []
    for _depth in range(max_depth):
        leaving = gi.out_array(cur)
        cand = leaving[~np.isin(gi.edge_tail_array[leaving], list(visited))] if len(leaving) else leaving
        if not len(cand):
            break
        w = weights.weights[cand]
        p = w / w.sum()
        u = rng.random()
        k = min(int(np.searchsorted(np.cumsum(p), u, side="right")), len(cand) - 1)
        e = int(cand[k])
        edges.append(e)
        probs.append(float(p[k]))
        cur = gi.edge_tail[e]
        visited.add(cur)
        path_nodes.append(cur)
    return s, path_nodes, edges, probs


def _knowledge(gi: GraphIndex, store: DocSource, found: Sequence[_Draw]) -> dict[str, str]:
    """``doc id -> text`` of the documents the drawn edges name as their source."""
    sources = list(dict.fromkeys(gi.edge_source[e] for _, _, es, _ in found for e in es if gi.edge_source[e]))
    return {d.id: d.text for d in store.get_docs(sources)} if sources else {}


def weighted_dfs_chains(
    gi: GraphIndex,
    entity_ids: Sequence[str],
    *,
    n_chains: int = 3,
    max_depth: int = 3,
    seed: int = 0,
    store: DocSource | None = None,
) -> list[Evidence]:
    """KGCoT probabilistic DFS chains from each linked entity.

    At each step the next edge is drawn among the current node's outgoing edges with
    ``p_i = w_i / Σ_j w_j`` (edges into the chain's visited set ``N`` have ``p = 0``):
    one ``u = rng.random()`` per step picks the first edge whose cumulative
    probability exceeds ``u``. A chain stops at ``max_depth`` edges or a dead end.
    One ``numpy.random.default_rng(seed)`` serves the whole call, so results are
    reproducible; duplicate chains from the same start are kept once
    (``meta["draws"]`` counts them).

    Args:
        gi: The graph index (its weights as published when the call starts).
        entity_ids: Start entities.
        n_chains: Draws per start entity.
        max_depth: Longest chain in edges.
        seed: Random seed.
        store: When given, ``meta["knowledge"]`` holds, per edge, the text of the doc
            named by the edge's ``source`` (or the source itself when it is not a doc
            id, ``""`` when the edge has none).

    Returns:
        ``kgcot`` evidence items; score = probability of drawing the chain;
        ``meta["probabilities"]`` the step probabilities.
    """
    rng = np.random.default_rng(seed)
    weights = gi.weight_snapshot()  # one set of weights for the whole call, whatever feedback lands
    found: list[_Draw] = []
    counts: dict[tuple[int, ...], int] = {}
    for s in resolve(gi, entity_ids):
        for _ in range(n_chains):
            draw = _draw(gi, weights, s, max_depth, rng)
            if not draw[2]:
                continue
            key = (s, *draw[2])
            if key in counts:
                counts[key] += 1
                continue
            counts[key] = 1
            found.append(draw)
    knowledge = _knowledge(gi, store, found) if store is not None else {}
    out: list[Evidence] = []
    for s, path_nodes, edges, probs in found:
        meta: dict[str, Any] = {
            "start": gi.names[s],
            "probabilities": probs,
            "draws": counts[(s, *edges)],
            "seed": seed,
        }
        if store is not None:
            meta["knowledge"] = [knowledge.get(gi.edge_source[e], gi.edge_source[e]) for e in edges]
        text = arrow_path(gi, path_nodes, edges)
        score = float(np.prod(probs))
        out.append(
            evidence_item(
                gi,
                "kgcot",
                edges,
                path_nodes,
                text=text,
                score=score,
                source="weighted_dfs_chains",
                meta=meta,
            )
        )
    return out
