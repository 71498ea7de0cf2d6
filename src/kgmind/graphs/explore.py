"""The four exploration nodes, run in parallel (``Send``) on the linked entities.

Each node runs one exploration of :mod:`kgmind.retrievers.exploration` with the run's
``Context`` (``explore_paths_with`` …, also what the latency benchmark times);
:func:`kgmind.graphs.services.explore` times it, opens the store and its graph index
and traces the evidence. The LangChain tools over the same explorations are
:mod:`kgmind.tools.exploration`.

- ``explore_paths``: MindMap path-based evidence between the linked entities (P…),
  weight-ranked unless the mode is ``mindmap``.
- ``explore_neighbors``: MindMap neighbor lines (N…); faithful in ``mindmap`` mode, else
  candidate diseases ranked by the linked entities' votes and learned weights.
- ``explore_chains``: HyKGE path, co-ancestor and co-occurrence chains (C…, HyKGE §4.4),
  reranked later by ``aggregate_evidence``.
- ``explore_kgcot``: KGCoT weighted-DFS chains with their edge knowledge (K…, KGCoT §2.3),
  drawn by edge probability ``p_i = w_i / Σ w``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context
from kgmind.graphs.state import ExploreTask
from kgmind.models import Evidence
from kgmind.retrievers import exploration
from kgmind.retrievers.packing import ANSWER_TYPES
from kgmind.stores.protocol import GraphStore
from kgmind.tuning import PIPELINE

__all__ = [
    "explore_chains",
    "explore_chains_with",
    "explore_kgcot",
    "explore_kgcot_with",
    "explore_neighbors",
    "explore_neighbors_with",
    "explore_paths",
    "explore_paths_with",
]

#: An exploration with the run's settings: ``(ctx, store, graph index, seed ids) -> evidence``
#: (the neighbours' also take the seeds' ``phrases``).
Exploration = Callable[..., list[Evidence]]


def explore_paths_with(ctx: Context, store: GraphStore, gi: Any, ids: list[str]) -> list[Evidence]:
    """Path evidence with the run's settings (what ``explore_paths`` and the latency benchmark run)."""
    ranked = ctx.mode != "mindmap"
    return exploration.path_evidence(
        gi,
        ids,
        max_hops=ctx.max_hops,
        max_paths=ctx.max_paths,
        weight_aware=ctx.weight_aware and ranked,
        hub_percentile=ctx.hub_percentile if ranked else None,
    )


def explore_neighbors_with(
    ctx: Context,
    store: GraphStore,
    gi: Any,
    ids: list[str],
    phrases: list[str] | None = None,
    named: list[str] | None = None,
) -> list[Evidence]:
    """Neighbor lines with the run's settings (what ``explore_neighbors`` and the latency benchmark run).

    ``phrases``: per seed, the words of the question it was linked from; ``named``: the seeds
    the question names word for word (both for the diseases' votes, ``rank_diseases``).
    """
    ranked = ctx.mode != "mindmap"
    lines, types = ctx.max_neighbors, None
    if ctx.packs_by_value:  # packing keeps only what is worth its tokens
        lines, types = max(lines, PIPELINE.candidate_lines), ANSWER_TYPES
    return exploration.neighbor_evidence(
        gi,
        ids,
        max_lines=lines,
        weight_aware=ctx.weight_aware and ranked,
        ranked=ranked,
        tail_types=types,
        phrases=phrases,
        named=named or (),
    )


def explore_chains_with(ctx: Context, store: GraphStore, gi: Any, ids: list[str]) -> list[Evidence]:
    """HyKGE chains with the run's settings (what ``explore_chains`` and the latency benchmark run)."""
    hops = min(ctx.max_hops, PIPELINE.max_chain_hops)
    return exploration.hykge_chains(
        gi, ids, max_hops=hops, max_chains=ctx.max_chains, hub_percentile=ctx.hub_percentile
    )


def explore_kgcot_with(ctx: Context, store: GraphStore, gi: Any, ids: list[str]) -> list[Evidence]:
    """KGCoT's weighted DFS with the run's settings (what ``explore_kgcot`` and the latency benchmark run)."""
    depth, draws = ctx.dfs_depth, ctx.dfs_chains
    return exploration.weighted_dfs_chains(
        gi, ids, n_chains=draws, max_depth=depth, seed=ctx.seed, store=store
    )


def _node(
    name: str, key: str, explore_with: Exploration, doc: str, *, by_phrase: bool = False
) -> Callable[[ExploreTask, Runtime[Context]], dict[str, Any]]:
    def node(task: ExploreTask, runtime: Runtime[Context]) -> dict[str, Any]:
        ids = list(task["entity_ids"])
        more = {"phrases": task.get("phrases"), "named": task.get("named")} if by_phrase else {}
        return services.explore(
            name, key, runtime, lambda ctx, store, gi: explore_with(ctx, store, gi, ids, **more), ids
        )

    node.__name__ = node.__qualname__ = name
    node.__doc__ = f"{doc}\n\nReturns ``{key}`` and timing."
    return node


explore_paths = _node(
    "explore_paths", "path_evidence", explore_paths_with, "MindMap path-based evidence (P…)."
)
explore_neighbors = _node(
    "explore_neighbors",
    "neighbor_evidence",
    explore_neighbors_with,
    "MindMap neighbor lines (N…).",
    by_phrase=True,
)
explore_chains = _node(
    "explore_chains", "chain_evidence", explore_chains_with, "HyKGE chains between entity pairs (C…)."
)
explore_kgcot = _node(
    "explore_kgcot", "kgcot_evidence", explore_kgcot_with, "KGCoT weighted-DFS chains (K…)."
)
