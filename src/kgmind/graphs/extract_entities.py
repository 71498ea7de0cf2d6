"""Node ``extract_entities``: candidate mentions from gazetteer, embedding spans and the LLM.

The hypothesis call's entities and the mentions given with the question are passed as
``extra`` mentions, so MindMap's LLM NER costs no separate call.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.state import State

__all__ = ["extract_entities"]


def extract_entities(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Find entity mentions in the question (plus the hypothesis entities).

    Args:
        state: Needs ``question``; uses ``hypothesis_entities``, the given ``entities``
            and ``language``.
        runtime: LangGraph runtime with the :class:`Context`.

    Returns:
        ``mentions`` and timing.

    """
    ctx = context_of(runtime)
    timings: dict[str, float] = {}
    with services.timed("extract_entities", timings):
        store = services.get_store(ctx.store)
        mentions = services.extract_mentions(
            state["question"],
            store,
            extra=[*(state.get("hypothesis_entities") or []), *(state.get("entities") or [])],
            language=state.get("language"),
            embedding_spans=ctx.embedding_spans,
        )
    return {"mentions": mentions, "timings_ms": timings}
