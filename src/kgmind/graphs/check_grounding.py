"""Node ``check_grounding``: flag every cited id and mind-map entity the evidence does not support.

A cited id is grounded when it is the id of a selected evidence item. A mind-map
node is grounded when it cites a valid id, or when its label (normalised) names an
entity of the evidence or occurs in an evidence sentence. The root node (the
question or "answer") is not checked.

Unknown ids are reported (``unknown_ids``, ``flagged``) and removed from the returned
inference chain and mind map, so every citation the run outputs — and every edge a
later rating touches — exists in the evidence; the report keeps what the model wrote.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context
from kgmind.graphs.state import State
from kgmind.models import Evidence, normalize_name

__all__ = ["check_grounding", "cited_ids", "drop_unknown_ids", "grounding_report", "iter_mind_map"]


def iter_mind_map(node: dict[str, Any] | None, depth: int = 0) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(depth, node)`` for every node of a mind-map tree, depth first."""
    if not isinstance(node, dict):
        return
    yield depth, node
    for child in node.get("children") or []:
        yield from iter_mind_map(child, depth + 1)


def cited_ids(inference_chain: Sequence[dict[str, Any]], mind_map: dict[str, Any] | None) -> list[str]:
    """Every evidence id cited by the inference chain or the mind map, in order of appearance."""
    seen: dict[str, None] = {}
    for step in inference_chain or []:
        for i in step.get("evidence_ids") or []:
            seen.setdefault(str(i), None)
    for _depth, node in iter_mind_map(mind_map):
        for i in node.get("evidence_ids") or []:
            seen.setdefault(str(i), None)
    return list(seen)


def grounding_report(
    evidence: Sequence[Evidence], inference_chain: Sequence[dict[str, Any]], mind_map: dict[str, Any] | None
) -> dict[str, Any]:
    """Compare the answer's citations and mind-map labels with the evidence.

    Args:
        evidence: The selected (numbered) evidence.
        inference_chain: ``[{step, evidence_ids}]``.
        mind_map: ``{label, evidence_ids, children}``.

    Returns:
        ``{"evidence_ids", "cited_ids", "unknown_ids", "ungrounded_nodes", "flagged",
        "grounded"}``; ``flagged`` lists unknown ids then ungrounded labels.

    """
    ev_ids = [e.id for e in evidence if e.id]
    valid = set(ev_ids)
    cited = cited_ids(inference_chain, mind_map)
    unknown = [i for i in cited if i not in valid]
    names: set[str] = set()
    texts: list[str] = []
    for e in evidence:
        texts.append(normalize_name(e.text))
        for head, rel, tail in e.triples:
            names.update({normalize_name(head), normalize_name(tail), normalize_name(rel)})
    ungrounded: list[str] = []
    for depth, node in iter_mind_map(mind_map):
        if depth == 0:
            continue
        label = str(node.get("label") or "").strip()
        if any(str(i) in valid for i in node.get("evidence_ids") or []):
            continue
        key = normalize_name(label)
        if key and (key in names or any(key in t for t in texts)):
            continue
        ungrounded.append(label)
    flagged = [*unknown, *ungrounded]
    return {
        "evidence_ids": ev_ids,
        "cited_ids": cited,
        "unknown_ids": unknown,
        "ungrounded_nodes": ungrounded,
        "flagged": flagged,
        "grounded": not flagged,
    }


def drop_unknown_ids(
    inference_chain: Sequence[dict[str, Any]], mind_map: dict[str, Any] | None, valid: set[str]
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Return copies of chain and mind map citing only ids in ``valid``."""

    def clean(node: dict[str, Any]) -> dict[str, Any]:
        return {
            **node,
            "evidence_ids": [i for i in node.get("evidence_ids") or [] if str(i) in valid],
            "children": [clean(c) for c in node.get("children") or [] if isinstance(c, dict)],
        }

    chain = [
        {**step, "evidence_ids": [i for i in step.get("evidence_ids") or [] if str(i) in valid]}
        for step in inference_chain or []
    ]
    return chain, clean(mind_map) if isinstance(mind_map, dict) else {}


def check_grounding(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Build the grounding report of the answer.

    Args:
        state: ``selected_evidence``, ``inference_chain`` and ``mind_map``.
        runtime: LangGraph runtime (unused settings; kept for a uniform node signature).

    Returns:
        ``grounding``, the chain and mind map without unknown ids, timing and the
        ``ungrounded`` flag.

    """
    timings: dict[str, float] = {}
    with services.timed("check_grounding", timings):
        evidence = (
            [] if (runtime.context or Context()).mode == "llm_only" else state.get("selected_evidence") or []
        )
        chain, mind_map = state.get("inference_chain") or [], state.get("mind_map")
        report = grounding_report(evidence, chain, mind_map)
        chain, mind_map = drop_unknown_ids(chain, mind_map, set(report["evidence_ids"]))
    return {
        "grounding": report,
        "inference_chain": chain,
        "mind_map": mind_map,
        "timings_ms": timings,
        "flags": {"ungrounded": bool(report["flagged"])},
    }
