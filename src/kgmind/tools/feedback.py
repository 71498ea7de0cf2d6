"""The tool through which feedback writes edge weights: ``update_edge_weights`` (KGCoT §2.4).

It wraps :func:`kgmind.stores.feedback.apply_feedback` (one transaction, idempotent by
feedback id, audited) as a LangChain ``StructuredTool``, so an agent or the graph's
feedback node can rate the edges behind an answer's cited evidence.
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from kgmind.stores.feedback import apply_feedback, feedback_key, normalize_rating

if TYPE_CHECKING:
    from langchain_core.tools import StructuredTool

__all__ = [
    "UpdateEdgeWeightsInput",
    "get_update_edge_weights_tool",
    "update_edge_weights",  # noqa: F822 - built lazily by the module __getattr__
]


class UpdateEdgeWeightsInput(BaseModel):
    """Arguments of the ``update_edge_weights`` tool."""

    run_id: str = Field(description="Id of the pipeline run whose answer is being rated.")
    rating: str = Field(description="'excellent' (reinforce the edges) or 'poor' (weaken them).")
    relation_ids: list[str] = Field(description="KG relation ids behind the evidence the answer cited.")
    feedback_id: str | None = Field(
        default=None, description="Idempotency key; default derived from run, rating and edges."
    )
    store: str | None = Field(default=None, description="Store URI; default the embedded demo store.")


def _update_edge_weights(
    run_id: str,
    rating: str,
    relation_ids: list[str],
    feedback_id: str | None = None,
    store: str | None = None,
) -> dict[str, Any]:
    """Apply a rating to KG edges and return a JSON-able summary."""
    from kgmind.stores.factory import open_store

    canon = normalize_rating(rating)
    ids = sorted({rid for rid in relation_ids if rid})
    gs = open_store(store)
    fid = feedback_id or (feedback_key(run_id, canon, ids) if canon else None)
    changes = apply_feedback(gs, run_id, canon, ids, feedback_id=fid)
    return {
        "feedback_id": fid,
        "run_id": run_id,
        "rating": canon,
        "relation_ids": ids,
        "applied": bool(changes),
        "changes": [c.model_dump() for c in changes],
    }


@lru_cache(maxsize=1)
def get_update_edge_weights_tool() -> StructuredTool:
    """Return the ``update_edge_weights`` LangChain tool (built once, on first use).

    The tool takes :class:`UpdateEdgeWeightsInput` and returns a JSON-able dict with
    ``feedback_id``, ``run_id``, ``rating``, ``relation_ids``, ``applied`` and ``changes``
    (the committed :class:`~kgmind.models.WeightChange` rows as dicts). It is also the
    module attribute :data:`update_edge_weights`; it is built lazily so that importing
    this module does not import LangChain.
    """
    from langchain_core.tools import StructuredTool

    return StructuredTool.from_function(
        func=_update_edge_weights,
        name="update_edge_weights",
        description=(
            "Reinforce ('excellent') or weaken ('poor') the knowledge-graph edges behind an answer's "
            "cited evidence. Idempotent per feedback_id. Returns the feedback id and the weight changes made."
        ),
        args_schema=UpdateEdgeWeightsInput,
    )


def __getattr__(name: str) -> Any:
    if name == "update_edge_weights":
        return get_update_edge_weights_tool()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
