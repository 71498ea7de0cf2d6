"""Node ``prepare_run``: give the run its id, language and store, and clear per-question state."""

from __future__ import annotations

import uuid
from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.state import RESET, State
from kgmind.settings import default_store_uri

__all__ = ["prepare_run"]


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
        ValueError: An empty question.
        StoreNotFoundError: ``ctx.store`` names an embedded store that does not exist.

    """
    ctx = context_of(runtime)
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
