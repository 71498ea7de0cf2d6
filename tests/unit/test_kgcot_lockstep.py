"""KGCoT's chains walked together draw exactly the chains drawn one after another (issue 42).

Walking every chain one depth at a time lets a pushed-down index read a depth's nodes in one
store query. The draws must not change: a seed gives the same chains, and so the same
evidence, as the one-chain-at-a-time walk it replaces (kept here as the reference). The
graphs have dead ends (stored directions only), where a chain stops short and the chains after
it start elsewhere in the random stream.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from kgmind.models import Entity, Relation
from kgmind.retrievers.exploration import weighted_dfs_chains
from kgmind.retrievers.graph_index import GraphIndex


def _reference(
    gi: GraphIndex, starts: list[int], n_chains: int, max_depth: int, seed: int
) -> list[list[int]]:
    """The edges of each chain, drawn one chain after another (the walk before issue 42)."""
    rng = np.random.default_rng(seed)
    weights = gi.weight_snapshot()
    out = []
    for s in starts:
        for _ in range(n_chains):
            visited, cur, edges = {s}, s, []
            for _depth in range(max_depth):
                leaving = gi.out_array(cur)
                cand = (
                    leaving[~np.isin(gi.edge_tail_array[leaving], list(visited))] if len(leaving) else leaving
                )
                if not len(cand):
                    break
                p = weights.weights[cand] / weights.weights[cand].sum()
                k = min(int(np.searchsorted(np.cumsum(p), rng.random(), side="right")), len(cand) - 1)
                edges.append(int(cand[k]))
                cur = gi.edge_tail[int(cand[k])]
                visited.add(cur)
            out.append(edges)
    return out


def _graph(seed: int, nodes: int = 40, edges: int = 70) -> GraphIndex:
    """A random weighted graph read in stored directions only: many chains stop short."""
    rnd = random.Random(seed)
    ents = [Entity(id=f"e{i:03d}", name=f"node {i}", type="disease") for i in range(nodes)]
    rels = {}
    for _ in range(edges):
        h, t = rnd.sample(range(nodes), 2)
        r = Relation(
            head=f"e{h:03d}", type="related_to", tail=f"e{t:03d}", weight=rnd.choice([0.5, 1.0, 2.0])
        )
        rels[r.id] = r
    return GraphIndex(ents, sorted(rels.values(), key=lambda r: r.id), reverse_readings=False)


@pytest.mark.parametrize("graph_seed", range(6))
def test_chains_walked_together_are_the_chains_drawn_one_by_one(graph_seed: int) -> None:
    gi = _graph(graph_seed)
    seeds = [gi.ids[i] for i in random.Random(graph_seed).sample(range(gi.num_nodes), 6)]
    starts = [gi.index_of[s] for s in seeds]
    stopped_short = 0
    for seed in range(5):
        ref = _reference(gi, starts, n_chains=4, max_depth=3, seed=seed)
        stopped_short += sum(0 < len(e) < 3 for e in ref)
        got = weighted_dfs_chains(gi, seeds, n_chains=4, max_depth=3, seed=seed)
        kept = list(dict.fromkeys((starts[i // 4], *e) for i, e in enumerate(ref) if e))
        assert [tuple(_edges(gi, ev)) for ev in got] == [k[1:] for k in kept]
    assert stopped_short, "the graphs must make some chains stop short, or the re-walk is untested"


def _edges(gi: GraphIndex, ev: object) -> list[int]:
    """The index edges behind a ``kgcot`` evidence item, in chain order."""
    rel_ids = ev.relation_ids  # type: ignore[attr-defined]
    return [gi.edge_index_of[r] for r in rel_ids]
