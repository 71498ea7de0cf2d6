"""Node ``request_feedback``: obtain a rating — pause for a human, or score against a reference.

``feedback="human"`` calls ``interrupt()`` with the answer and its citations; the run
resumes with ``Command(resume={"rating": "excellent" | "poor"})``. ``feedback="auto"``
rates the answer by ROUGE-L against the input's ``reference`` (KGCoT's automatic
feedback); without a reference no rating is given.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from kgmind.graphs import services
from kgmind.graphs.check_grounding import cited_ids
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.state import State

__all__ = ["AUTO_EXCELLENT_AT", "AUTO_POOR_AT", "auto_rating", "request_feedback"]

#: ROUGE-L thresholds of the automatic rating.
AUTO_EXCELLENT_AT = 0.35
AUTO_POOR_AT = 0.10


def auto_rating(answer: str, reference: str) -> tuple[str | None, float | None]:
    """Rate ``answer`` against ``reference`` with ROUGE-L; ``(None, None)`` without a reference."""
    if not reference.strip() or not answer.strip():
        return None, None
    from kgmind.scoring import RougeLScorer, rate

    score = RougeLScorer().score(answer, reference)
    return rate(score, AUTO_EXCELLENT_AT, AUTO_POOR_AT), score


def _rating_of(reply: Any) -> str | None:
    if isinstance(reply, dict):
        reply = reply.get("rating")
    if reply is None:
        return None
    text = str(reply).strip().lower()
    return text or None


def request_feedback(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Get the rating of this answer.

    Args:
        state: ``run_id``, ``answer``, ``inference_chain``, ``mind_map``, ``reference``.
        runtime: LangGraph runtime with the :class:`Context` (``feedback``).

    Returns:
        ``feedback`` = ``{"rating", "source", ...}`` (rating may be None).

    """
    ctx = context_of(runtime)
    if ctx.feedback == "human":
        services.emit({"node": "request_feedback", "status": "waiting"})
        reply = interrupt(
            {
                "run_id": state.get("run_id"),
                "question": state.get("question"),
                "answer": state.get("answer"),
                "cited_ids": cited_ids(state.get("inference_chain") or [], state.get("mind_map")),
                "prompt": "Rate the answer: excellent or poor",
            }
        )
        return {"feedback": {"rating": _rating_of(reply), "source": "human"}}
    if ctx.feedback == "auto":
        rating, score = auto_rating(state.get("answer") or "", state.get("reference") or "")
        return {"feedback": {"rating": rating, "source": "auto", "score": score}}
    return {"feedback": {"rating": None, "source": "off"}}
