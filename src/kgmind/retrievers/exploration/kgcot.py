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


class _Chain:
    """One chain being drawn: its nodes, edges and step probabilities, and the nodes it visited."""

    def __init__(self, start: int) -> None:
        self.nodes = [start]
        self.edges: list[int] = []
        self.probs: list[float] = []
        self.visited = {start}
        self.done = False

    def step(self, gi: GraphIndex, weights: WeightSnapshot, u: float) -> None:
        """Draw the next edge with ``u`` (the first whose cumulative p exceeds it); a dead end ends it."""
        cur = self.nodes[-1]
        leaving = gi.out_array(cur)
        cand = leaving[~np.isin(gi.edge_tail_array[leaving], list(self.visited))] if len(leaving) else leaving
        if not len(cand):
            self.done = True
            return
        w = weights.weights[cand]
        p = w / w.sum()
        k = min(int(np.searchsorted(np.cumsum(p), u, side="right")), len(cand) - 1)
        e = int(cand[k])
        self.edges.append(e)
        self.probs.append(float(p[k]))
        nxt = gi.edge_tail[e]
        self.visited.add(nxt)
        self.nodes.append(nxt)


class _Uniforms:
    """The call's ``rng.random()`` values by position, drawn in order as positions are asked for."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.drawn: list[float] = []

    def at(self, i: int) -> float:
        while len(self.drawn) <= i:
            self.drawn.append(self.rng.random())
        return self.drawn[i]


def _draws(
    gi: GraphIndex, weights: WeightSnapshot, starts: Sequence[int], max_depth: int, seed: int
) -> list[_Chain]:
    """One chain from each of ``starts``, exactly as drawn one after another with one ``rng``.

    One after another, chain ``c``'s step ``t`` uses the ``(steps of the chains before c) + t``-th
    ``rng.random()``, and a chain stops at a dead end without using one. Here the chains step
    together, level by level, so that a pushed-down index reads the nodes of a level in one
    store query (:meth:`GraphIndex.prefetch`) instead of one per step: each chain is first taken
    to run ``max_depth`` steps, and where one stops sooner the chains after it are drawn again
    from their true positions (at most once per chain that stops early).
    """
    us = _Uniforms(np.random.default_rng(seed))
    done: list[_Chain] = []  # the first chains, drawn from their true positions
    at = 0  # the position of the first chain not done
    while len(done) < len(starts):
        chains = [_Chain(s) for s in starts[len(done) :]]
        for t in range(max_depth):
            alive = [c for c, ch in enumerate(chains) if not ch.done]
            if not alive:
                break
            gi.prefetch(chains[c].nodes[-1] for c in alive)
            for c in alive:
                chains[c].step(gi, weights, us.at(at + c * max_depth + t))
        short = next((c for c, ch in enumerate(chains) if len(ch.edges) < max_depth), len(chains) - 1)
        done += chains[: short + 1]  # right up to the first that stopped early: the rest moved
        at += short * max_depth + len(chains[short].edges)
    return done


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
    weights = gi.weight_snapshot()  # one set of weights for the whole call, whatever feedback lands
    found: list[_Draw] = []
    counts: dict[tuple[int, ...], int] = {}
    starts = [s for s in resolve(gi, entity_ids) for _ in range(n_chains)]
    for ch in _draws(gi, weights, starts, max_depth, seed):
        if not ch.edges:
            continue
        key = (ch.nodes[0], *ch.edges)
        if key in counts:
            counts[key] += 1
            continue
        counts[key] = 1
        found.append((ch.nodes[0], ch.nodes, ch.edges, ch.probs))
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
