"""Node ``request_feedback``: obtain a rating — pause for a human, or score against a reference.

``feedback="human"`` calls ``interrupt()`` with the answer, its citations and the ids of
the claims a person can flag; the run resumes with
``Command(resume={"rating": "excellent" | "poor", "wrong": ["N3"], "right": ["S1"]})``
(each key optional; claim ids as in :mod:`kgmind.graphs.claims`). A bad payload changes
nothing: the run pauses again with the same question plus ``error`` saying what was wrong
(a raised error would not do: LangGraph keeps a resume value, so the run could never be
resumed with a corrected one). ``feedback="auto"``
rates the answer by ROUGE-L against the input's ``reference`` (KGCoT's automatic
feedback); without a reference no rating is given.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.runtime import Runtime
from langgraph.types import interrupt

from kgmind.graphs import services
from kgmind.graphs.check_grounding import cited_ids
from kgmind.graphs.claims import claim_edges, parse_claim_ids, resolve_claims
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.state import State

__all__ = [
    "AUTO_EXCELLENT_AT",
    "AUTO_POOR_AT",
    "RESUME_KEYS",
    "auto_rating",
    "human_reply",
    "request_feedback",
]

#: The keys a human-feedback resume payload may hold.
RESUME_KEYS = ("rating", "wrong", "right")

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


def human_reply(reply: Any, values: Mapping[str, Any]) -> dict[str, Any]:
    """Check a resume payload and return the feedback it gives: ``rating``, ``wrong``, ``right``.

    ``reply`` is a rating string, or a dict with any of :data:`RESUME_KEYS`.

    Raises:
        ValueError: Another type or key, a rating other than excellent / poor / neutral, or
            claim ids the run does not show (the message lists the valid ones).

    """
    from kgmind.stores.feedback import normalize_rating

    if reply is None or isinstance(reply, str):
        reply = {"rating": reply}
    if not isinstance(reply, Mapping):
        raise ValueError(f"feedback must be a rating or {{'rating', 'wrong', 'right'}}, got {reply!r}")
    extra = sorted(str(k) for k in reply if k not in RESUME_KEYS)
    if extra:
        raise ValueError(f"unknown feedback key(s) {', '.join(extra)}; expected {', '.join(RESUME_KEYS)}")
    rating = normalize_rating(reply.get("rating"))
    wrong, right = parse_claim_ids(reply.get("wrong")), parse_claim_ids(reply.get("right"))
    resolve_claims(values, wrong, right)
    return {"rating": rating, "wrong": wrong, "right": right}


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
        ask: dict[str, Any] = {
            "run_id": state.get("run_id"),
            "question": state.get("question"),
            "answer": state.get("answer"),
            "cited_ids": cited_ids(state.get("inference_chain") or [], state.get("mind_map")),
            "claim_ids": list(claim_edges(state)),
            "prompt": "Rate the answer (excellent or poor) and/or flag claims: "
            '{"rating": "poor", "wrong": ["N3"], "right": ["S1"]}',
        }
        while True:  # a bad reply is answered by asking again, saying what was wrong with it
            try:
                return {"feedback": {**human_reply(interrupt(ask), state), "source": "human"}}
            except ValueError as exc:
                ask = {**ask, "error": str(exc)}
    if ctx.feedback == "auto":
        rating, score = auto_rating(state.get("answer") or "", state.get("reference") or "")
        return {"feedback": {"rating": rating, "source": "auto", "score": score}}
    return {"feedback": {"rating": None, "source": "off"}}
