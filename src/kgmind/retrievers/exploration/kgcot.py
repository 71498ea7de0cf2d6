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


def _step(gi: GraphIndex, weights: WeightSnapshot, nodes: list[int], u: float) -> tuple[int, float] | None:
    """The edge a chain at ``nodes[-1]`` takes for the draw ``u`` (first with cumulative p > u), if any."""
    leaving = gi.out_array(nodes[-1])
    cand = leaving[~np.isin(gi.edge_tail_array[leaving], nodes)] if len(leaving) else leaving
    if not len(cand):
        return None
    w = weights.weights[cand]
    p = w / w.sum()
    k = min(int(np.searchsorted(np.cumsum(p), u, side="right")), len(cand) - 1)
    return int(cand[k]), float(p[k])


def _walk(
    gi: GraphIndex,
    weights: WeightSnapshot,
    starts: Sequence[int],
    offsets: Sequence[int],
    u: np.ndarray,
    max_depth: int,
) -> list[_Draw]:
    """Walk every chain one depth at a time, chain ``j`` reading the draws ``u[offsets[j]:]``.

    All chains take their step ``d`` before any takes ``d + 1``, and the nodes they stand on
    are read first in one go (:meth:`GraphIndex.prefetch`): pushed down, a depth costs one
    store query instead of one per chain.
    """
    draws: list[_Draw] = [(s, [s], [], []) for s in starts]
    alive = list(range(len(starts)))
    for d in range(max_depth):
        gi.prefetch(draws[j][1][-1] for j in alive)
        going = []
        for j in alive:
            _, nodes, edges, probs = draws[j]
            got = _step(gi, weights, nodes, float(u[offsets[j] + d]))
            if got is not None:
                edges.append(got[0])
                probs.append(got[1])
                nodes.append(gi.edge_tail[got[0]])
                going.append(j)
        alive = going
    return draws


def _draw_all(
    gi: GraphIndex, weights: WeightSnapshot, starts: Sequence[int], max_depth: int, rng: np.random.Generator
) -> list[_Draw]:
    """One chain per entry of ``starts``, exactly as drawing them one after another from ``rng`` would.

    Drawn one after another, a chain of ``L`` edges uses the next ``L`` numbers of the
    stream, so where chain ``j``'s numbers start depends on how long the chains before it
    ran. The chains are walked together (:func:`_walk`) assuming every earlier chain runs
    ``max_depth`` edges; the chains after the first one that stopped short are walked again
    from their true start in the stream, until every start is right (the first chain's always
    is, so this ends). A dead end is rare on a KG read both ways, so one pass is the rule.
    """
    u = rng.random(len(starts) * max_depth)
    offsets = [j * max_depth for j in range(len(starts))]
    draws = _walk(gi, weights, starts, offsets, u, max_depth)
    while True:
        true = [0]
        for d in draws[:-1]:
            true.append(true[-1] + len(d[2]))
        wrong = next((j for j, (a, b) in enumerate(zip(offsets, true, strict=True)) if a != b), None)
        if wrong is None:
            return draws
        offsets = true
        draws[wrong:] = _walk(gi, weights, starts[wrong:], offsets[wrong:], u, max_depth)


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
    starts = [s for s in resolve(gi, entity_ids) for _ in range(n_chains)]
    for draw in _draw_all(gi, weights, starts, max_depth, rng):
        s = draw[0]
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
