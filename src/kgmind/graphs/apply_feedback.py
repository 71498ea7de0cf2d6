"""Node ``apply_feedback``: turn a rating into KGCoT edge-weight updates on the cited edges.

The edges are those behind the evidence the answer cited
(:func:`kgmind.tools.feedback.cited_relation_ids`); the update runs in one store
transaction and is idempotent per (run, rating, edges). Where the feedback module is
not available the rating is only recorded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.check_grounding import cited_ids
from kgmind.graphs.context import Context
from kgmind.graphs.state import State
from kgmind.tools.store import GraphStore

__all__ = ["apply_feedback", "apply_rating"]


def apply_rating(store: GraphStore, values: Mapping[str, Any], rating: str | None) -> dict[str, Any]:
    """Apply ``rating`` to the edges cited by the run whose state is ``values``.

    Args:
        store: The store the run read.
        values: The run's state (``run_id``, ``selected_evidence``, ``inference_chain``, ``mind_map``).
        rating: ``excellent``, ``poor`` or None (recorded, nothing changes).

    Returns:
        ``{"rating", "relation_ids", "changes", "applied"}`` (``changes`` = number of edges
        whose weight changed).

    """
    cited = cited_ids(values.get("inference_chain") or [], values.get("mind_map"))
    evidence = values.get("selected_evidence") or []
    result: dict[str, Any] = {"rating": rating, "cited_ids": cited, "relation_ids": [], "changes": 0}
    try:
        from kgmind.tools import feedback as fb
    except ImportError:  # pragma: no cover - the feedback module ships with kgmind
        return {**result, "applied": False, "reason": "kgmind.tools.feedback is not available"}
    relation_ids = fb.cited_relation_ids(evidence, cited)
    result["relation_ids"] = relation_ids
    if not rating or not relation_ids:
        return {**result, "applied": False}
    changes = fb.apply_feedback(store, str(values.get("run_id") or ""), rating, relation_ids)
    return {**result, "changes": len(changes), "applied": True}


def apply_feedback(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Apply the rating found by ``request_feedback``.

    Args:
        state: ``feedback`` and the run's evidence and citations.
        runtime: LangGraph runtime with the :class:`Context` (``store``).

    Returns:
        ``feedback`` extended with the weight-update result, and timing.

    """
    ctx = runtime.context or Context()
    fb_state = dict(state.get("feedback") or {})
    timings: dict[str, float] = {}
    with services.timed("apply_feedback", timings):
        rating = fb_state.get("rating")
        if rating:
            result = apply_rating(services.get_store(ctx.store), state, rating)
        else:
            result = {"rating": None, "applied": False, "changes": 0}
    services.emit({"node": "apply_feedback", "rating": rating, "changes": result.get("changes", 0)})
    return {"feedback": {**fb_state, **result}, "timings_ms": timings}
