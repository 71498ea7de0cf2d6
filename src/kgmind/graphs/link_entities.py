"""Node ``link_entities``: link mentions to KG entities above the threshold δ (HyKGE §4.3).

Runs with a ``RetryPolicy`` (index building may hit a transient store error). When
nothing links, the run continues without KG evidence and flags ``no_kg_evidence``.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.state import State
from kgmind.models import LinkedEntity

__all__ = ["link_entities"]


def link_entities(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Link the mentions; one entry per KG entity (the best-scoring mention wins).

    Args:
        state: Needs ``mentions``.
        runtime: LangGraph runtime with the :class:`Context` (``top_k``, ``threshold``,
            ``max_linked``).

    Returns:
        ``linked_entities``, timing, and the ``no_kg_evidence`` flag when empty.

    """
    ctx = context_of(runtime)
    timings: dict[str, float] = {}
    with services.timed("link_entities", timings):
        mentions = state.get("mentions") or []
        linked: list[LinkedEntity] = []
        if mentions:
            store = services.get_store(ctx.store)
            linked = services.link_mentions(
                store, mentions, top_k=ctx.top_k, threshold=ctx.threshold, max_entities=ctx.max_linked
            )
        best: dict[str, LinkedEntity] = {}
        for le in linked:
            if le.entity_id not in best or le.score > best[le.entity_id].score:
                best[le.entity_id] = le
        ordered = [le for le in linked if best.get(le.entity_id) is le]
    services.emit({"node": "link_entities", "linked": [le.name for le in ordered]})
    return {
        "linked_entities": ordered,
        "timings_ms": timings,
        "flags": {"no_kg_evidence": not ordered},
    }
