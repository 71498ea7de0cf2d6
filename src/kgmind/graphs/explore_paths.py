"""Node ``explore_paths``: MindMap path-based evidence between the linked entities (P…)."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context
from kgmind.graphs.state import ExploreTask

__all__ = ["explore_paths"]


def explore_paths(task: ExploreTask, runtime: Runtime[Context]) -> dict[str, Any]:
    """Shortest paths linking the entities, weight-ranked unless the mode is ``mindmap``.

    Args:
        task: The ``Send`` payload (entity ids).
        runtime: LangGraph runtime with the :class:`Context` (``max_hops``, ``max_paths``).

    Returns:
        ``path_evidence`` and timing.

    """
    from kgmind.retrievers import exploration

    ctx = runtime.context or Context()
    timings: dict[str, float] = {}
    with services.timed("explore_paths", timings):
        gi = services.get_graph_index(services.get_store(ctx.store))
        evidence = exploration.path_evidence(
            gi,
            task["entity_ids"],
            max_hops=ctx.max_hops,
            max_paths=ctx.max_paths,
            weight_aware=ctx.weight_aware and ctx.mode != "mindmap",
        )
    services.trace_evidence("explore_paths.evidence", evidence)
    return {"path_evidence": evidence, "timings_ms": timings}
