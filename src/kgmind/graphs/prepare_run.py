"""Node ``prepare_run``: give the run its id, language and store, and clear per-question state."""

from __future__ import annotations

import uuid
from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context, check_context, context_of
from kgmind.graphs.state import RESET, State
from kgmind.settings import default_store_uri

__all__ = ["check_input", "prepare_run"]


def check_input(state: State) -> None:
    """Refuse an input whose fields have the wrong type, before anything runs.

    A LangGraph server or ``graph.invoke`` passes the input on unchecked; without this a
    question that is a number fails deep inside with an ``AttributeError``.

    Raises:
        ValueError: ``question`` or ``reference`` is not a string, or ``entities`` is not a
            list of strings.

    """
    for key in ("question", "reference"):
        value = state.get(key)
        if value is not None and not isinstance(value, str):
            raise ValueError(f"the {key} must be a string, got {type(value).__name__}")
    entities = state.get("entities")
    if entities is not None and not (
        isinstance(entities, list) and all(isinstance(e, str) for e in entities)
    ):
        raise ValueError(f"entities must be a list of strings, got {entities!r:.200}")


def prepare_run(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Start a run.

    The run id is the thread id when a checkpointer is used (so ``kgmind feedback RUN_ID``
    finds the thread), else a fresh uuid. Reduced keys are reset, so a reused thread
    answers a new question from scratch.

    Args:
        state: Needs ``question``.
        runtime: LangGraph runtime with the :class:`Context`.

    Returns:
        ``run_id``, ``language``, ``store_uri`` and resets.

    Raises:
        ValueError: An empty question, an input field of the wrong type (:func:`check_input`) or
            a Context field of the wrong type or outside its choices (``check_context``).
        StoreNotFoundError: ``ctx.store`` names an embedded store that does not exist.

    """
    ctx = context_of(runtime)
    check_context(ctx)
    check_input(state)
    question = (state.get("question") or "").strip()
    if not question:
        raise ValueError("the question must not be empty")
    if not ctx.store:  # the shipped demo KG, imported on first use: the run's one write of this kind
        services.ensure_default_store()
    else:  # a mistyped store is an error, not an empty KG and an LLM-only answer
        services.require_store(ctx.store)
    info = runtime.execution_info
    run_id = (info.thread_id if info is not None else None) or uuid.uuid4().hex
    services.emit({"node": "prepare_run", "status": "start", "run_id": run_id, "mode": ctx.mode})
    return {
        "question": question,
        "run_id": run_id,
        "mode": ctx.mode,
        "language": services.resolve_language(ctx, question),
        "store_uri": ctx.store or default_store_uri(),
        "hypothesis": "",
        "hypothesis_entities": [],
        "mentions": [],
        "linked_entities": [],
        "selected_evidence": [],
        "conclusions": {},
        "own_knowledge": [],
        "feedback": {},
        "path_evidence": RESET,
        "neighbor_evidence": RESET,
        "chain_evidence": RESET,
        "kgcot_evidence": RESET,
        "llm_calls": RESET,
        "timings_ms": RESET,
        "flags": RESET,
    }
