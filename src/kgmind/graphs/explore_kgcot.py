"""Node ``explore_kgcot``: KGCoT weighted-DFS chains with their edge knowledge (K…, KGCoT §2.3)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context
from kgmind.graphs.state import ExploreTask

__all__ = ["explore_kgcot"]


def explore_kgcot(task: ExploreTask, runtime: Runtime[Context]) -> dict[str, Any]:
    """Sample chains by edge probability ``p_i = w_i / Σ w`` from the linked entities.

    Args:
        task: The ``Send`` payload (entity ids).
        runtime: LangGraph runtime with the :class:`Context` (``dfs_chains``, ``dfs_depth``, ``seed``).

    Returns:
        ``kgcot_evidence`` and timing.

    """
    from kgmind.retrievers import exploration

    ctx = runtime.context or Context()
    timings: dict[str, float] = {}
    with services.timed("explore_kgcot", timings):
        store = services.get_store(ctx.store)
        gi = services.get_graph_index(store)
        evidence = exploration.weighted_dfs_chains(
            gi,
            task["entity_ids"],
            n_chains=ctx.dfs_chains,
            max_depth=ctx.dfs_depth,
            seed=ctx.seed,
            store=store,
        )
    services.trace_evidence("explore_kgcot.evidence", evidence)
    return {"kgcot_evidence": evidence, "timings_ms": timings}
