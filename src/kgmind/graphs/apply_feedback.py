"""Node ``apply_feedback``: turn a rating and per-claim verdicts into KGCoT edge-weight updates.

What a rating credits (:func:`credited_evidence`): the evidence the answer cited; if it
cited nothing, every evidence item it was shown (what KGCoT rates: the chains it fed
the model); in ``kgcot`` mode only the K chains (cited ones, else all shown). The
update runs in one store transaction and is idempotent per (run, rating, edges): a
repeat is reported as already applied, never as a silent "0 weights changed".

Per-claim verdicts (:func:`apply_verdicts`: "N3 is wrong", "S2 is right") credit exactly
the edges behind each claim (:mod:`kgmind.graphs.claims`), one store transaction per
claim, idempotent per (run, claim, verdict), and feed the edges' dispute states.

The weights are written by :func:`kgmind.stores.feedback.apply_feedback`, the function
that the weight-writing tool ``update_edge_weights`` (:mod:`kgmind.tools.feedback`) wraps,
rather than by invoking the tool, so that behaviour stays as it was: the tool opens its
store from a URI (the node writes to the store the run read, ``services.get_store``) and
returns the changes as dicts, while the node needs the committed rows to say which rated
edges kept their weight.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.check_grounding import cited_ids
from kgmind.graphs.claims import parse_claim_ids, resolve_claims
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.state import State
from kgmind.models import Evidence
from kgmind.stores import feedback as fb
from kgmind.stores.protocol import GraphStore

__all__ = ["apply_feedback", "apply_rating", "apply_verdicts", "credited_evidence", "verdict_feedback_id"]


def _as_evidence(items: Sequence[Evidence | Mapping[str, Any]]) -> list[Evidence]:
    return [e if isinstance(e, Evidence) else Evidence.model_validate(e) for e in items]


def credited_evidence(values: Mapping[str, Any]) -> tuple[list[Evidence], str, str]:
    """The evidence a rating of this run applies to, the rule that chose it and why.

    Args:
        values: The run's state (``selected_evidence``, ``inference_chain``, ``mind_map``, ``mode``).

    Returns:
        ``(items, credit, reason)``; ``credit`` is ``cited``, ``shown``, ``kgcot_cited``
        or ``kgcot_shown``; ``items`` is empty only when the run showed no evidence.

    """
    evidence = _as_evidence(values.get("selected_evidence") or [])
    cited = set(cited_ids(values.get("inference_chain") or [], values.get("mind_map")))
    if values.get("mode") == "kgcot":
        chains = [e for e in evidence if e.kind == "kgcot"]
        chosen = [e for e in chains if e.id in cited]
        if chosen:
            return (
                chosen,
                "kgcot_cited",
                "the KGCoT chains the answer cited: " + ", ".join(e.id for e in chosen),
            )
        return chains, "kgcot_shown", "every KGCoT chain shown (the answer cited none)"
    chosen = [e for e in evidence if e.id in cited]
    if chosen:
        return chosen, "cited", "the evidence the answer cited: " + ", ".join(e.id for e in chosen)
    if not evidence:
        return [], "none", "the run showed no KG evidence"
    return evidence, "shown", "all evidence shown (the answer cited none)"


def apply_rating(store: GraphStore, values: Mapping[str, Any], rating: str | None) -> dict[str, Any]:
    """Apply ``rating`` to the edges credited by the run whose state is ``values``.

    Args:
        store: The store the run read.
        values: The run's state (``run_id``, ``mode``, ``selected_evidence``, ``inference_chain``,
            ``mind_map``).
        rating: ``excellent``, ``poor`` or None (recorded, nothing changes).

    Returns:
        ``{"rating", "credit", "reason", "credited_ids", "cited_ids", "relation_ids",
        "feedback_id", "changes", "applied", "already_applied"}`` (``changes`` = number of
        edges whose weight changed), and, once applied, ``unchanged_ids``: the rated edges
        that kept their weight (each its head's only out-edge). ``reason`` says why no
        weight moved when none did.

    """
    items, credit, reason = credited_evidence(values)
    relation_ids = fb.cited_relation_ids(items, [e.id for e in items])
    run_id = str(values.get("run_id") or "")
    result: dict[str, Any] = {
        "rating": rating,
        "credit": credit,
        "reason": reason,
        "credited_ids": [e.id for e in items],
        "cited_ids": cited_ids(values.get("inference_chain") or [], values.get("mind_map")),
        "relation_ids": relation_ids,
        "feedback_id": None,
        "changes": 0,
        "applied": False,
        "already_applied": False,
    }
    canon = fb.normalize_rating(rating)
    if canon is None or not relation_ids:
        if canon is not None:
            result["reason"] = f"{reason}: no KG edges behind it"
        return result
    fid = fb.feedback_key(run_id, canon, relation_ids)
    result["feedback_id"] = fid
    if store.weight_changes(fid):
        return {**result, "already_applied": True, "reason": f"already applied (feedback id {fid})"}
    changes = fb.apply_feedback(store, run_id, canon, relation_ids, feedback_id=fid)
    moved = {c.relation_id for c in changes}
    # KGCoT's rule moves an edge's share of its head's out-weight; a head's only out-edge
    # already has share 1, so a user who sees "4 edges, 2 changed" is told which and why
    unchanged = [rid for rid in relation_ids if rid not in moved]
    result.update(changes=len(changes), applied=bool(changes), unchanged_ids=unchanged)
    if not changes:
        result["reason"] = f"{reason}: each rated edge is its head's only out-edge, so no weight can move"
    return result


def verdict_feedback_id(run_id: str, claim: str, verdict: str) -> str:
    """The idempotency key of one verdict on one claim of one run: ``RUN:CLAIM:VERDICT``."""
    return f"{run_id}:{claim}:{verdict}"


def apply_verdicts(
    store: GraphStore,
    values: Mapping[str, Any],
    wrong: Sequence[str] = (),
    right: Sequence[str] = (),
    *,
    source: str = "cli",
) -> list[dict[str, Any]]:
    """Record "this claim is wrong / right" for claims of the run whose state is ``values``.

    Every id is checked before anything is written; then each claim is one
    :func:`kgmind.stores.feedback.apply_verdicts` (its own transaction, feedback id
    :func:`verdict_feedback_id`), so a repeat changes nothing and says so.

    Args:
        store: The store the run read.
        values: The run's state (``run_id``, ``selected_evidence``, ``inference_chain``, ``mind_map``).
        wrong: Claim ids (``N3``, ``S1``, ``M2``; comma-separated allowed) called wrong.
        right: Claim ids called right.
        source: Where the verdicts came from (audited).

    Returns:
        One dict per claim: ``claim``, ``verdict``, ``feedback_id``, ``relation_ids``,
        ``already_applied``, ``changes`` (weights moved) and ``disputed`` (its edges the
        dispute rule now marks disputed).

    Raises:
        ValueError: An unknown, contradictory or edgeless claim id; nothing was written.
        StoreError: The store refused a claim's verdicts (that claim wrote nothing).

    """
    wrong_ids, right_ids = parse_claim_ids(wrong), parse_claim_ids(right)
    edges = resolve_claims(values, wrong_ids, right_ids)
    run_id = str(values.get("run_id") or "")
    if not run_id.strip():
        raise ValueError("the run has no run id: its verdicts could not be told apart")
    out: list[dict[str, Any]] = []
    for claim, verdict in [*((c, "wrong") for c in wrong_ids), *((c, "right") for c in right_ids)]:
        fid = verdict_feedback_id(run_id, claim, verdict)
        pairs = [(rid, verdict) for rid in edges[claim]]
        result = fb.apply_verdicts(store, fid, run_id, pairs, source=source)
        out.append(
            {
                "claim": claim,
                "verdict": verdict,
                "feedback_id": fid,
                "relation_ids": edges[claim],
                "already_applied": result.already_applied,
                "changes": len(result.changes),
                "disputed": [rid for rid, st in result.states.items() if st.disputed],
            }
        )
    return out


def apply_feedback(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Apply the rating found by ``request_feedback``.

    Args:
        state: ``feedback`` and the run's evidence and citations.
        runtime: LangGraph runtime with the :class:`Context` (``store``).

    Returns:
        ``feedback`` extended with the weight-update result (``verdicts``: one entry per
        flagged claim), and timing.

    """
    ctx = context_of(runtime)
    fb_state = dict(state.get("feedback") or {})
    timings: dict[str, float] = {}
    with services.timed("apply_feedback", timings):
        rating = fb_state.get("rating")
        if rating:
            result = apply_rating(services.get_store(ctx.store), state, rating)
        else:
            result = {"rating": None, "applied": False, "changes": 0}
        if fb_state.get("wrong") or fb_state.get("right"):
            result["verdicts"] = apply_verdicts(
                services.get_store(ctx.store),
                state,
                fb_state.get("wrong") or [],
                fb_state.get("right") or [],
                source=str(fb_state.get("source") or "human"),
            )
    services.emit({"node": "apply_feedback", "rating": rating, "changes": result.get("changes", 0)})
    return {"feedback": {**fb_state, **result}, "timings_ms": timings}
