"""Node ``explore_chains``: HyKGE path, co-ancestor and co-occurrence chains (C…, HyKGE §4.4)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context
from kgmind.graphs.state import ExploreTask

__all__ = ["explore_chains"]


def explore_chains(task: ExploreTask, runtime: Runtime[Context]) -> dict[str, Any]:
    """Chains between every pair of linked entities (reranked later by ``aggregate_evidence``).

    Args:
        task: The ``Send`` payload (entity ids).
        runtime: LangGraph runtime with the :class:`Context` (``max_hops``, ``max_chains``).

    Returns:
        ``chain_evidence`` and timing.

    """
    from kgmind.retrievers import exploration

    ctx = runtime.context or Context()
    timings: dict[str, float] = {}
    with services.timed("explore_chains", timings):
        gi = services.get_graph_index(services.get_store(ctx.store))
        evidence = exploration.hykge_chains(
            gi,
            task["entity_ids"],
            max_hops=min(ctx.max_hops, exploration.PIPELINE.max_chain_hops),
            max_chains=ctx.max_chains,
        )
    services.trace_evidence("explore_chains.evidence", evidence)
    return {"chain_evidence": evidence, "timings_ms": timings}
