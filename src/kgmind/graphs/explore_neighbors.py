"""Node ``explore_neighbors``: MindMap neighbor-based evidence of the linked entities (N…).

``mindmap`` mode is faithful to MindMap; the other modes rank candidate diseases by
the votes of the linked entities and, optionally, by learned edge weights.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context
from kgmind.graphs.state import ExploreTask

__all__ = ["explore_neighbors"]


def explore_neighbors(task: ExploreTask, runtime: Runtime[Context]) -> dict[str, Any]:
    """One line per relation type around each linked entity.

    Args:
        task: The ``Send`` payload (entity ids).
        runtime: LangGraph runtime with the :class:`Context` (``max_neighbors``, ``mode``).

    Returns:
        ``neighbor_evidence`` and timing.

    """
    from kgmind.retrievers import exploration

    ctx = runtime.context or Context()
    faithful = ctx.mode == "mindmap"
    timings: dict[str, float] = {}
    with services.timed("explore_neighbors", timings):
        gi = services.get_graph_index(services.get_store(ctx.store))
        evidence = exploration.neighbor_evidence(
            gi,
            task["entity_ids"],
            max_lines=ctx.max_neighbors,
            weight_aware=ctx.weight_aware and not faithful,
            ranked=not faithful,
        )
    services.trace_evidence("explore_neighbors.evidence", evidence)
    return {"neighbor_evidence": evidence, "timings_ms": timings}
