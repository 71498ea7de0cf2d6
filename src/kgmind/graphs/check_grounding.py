"""Node ``check_grounding``: flag every cited id and mind-map entity the evidence does not support.

A cited id is valid when it is the id of a selected evidence item. A citation is
*supported* when the cited item names an entity that the citing step or node names
(the step's ``about`` entity or its text, the node's label). A mind-map node is
grounded when it cites a valid id, or when its label (normalised) names an entity of
the evidence or occurs in an evidence sentence. The root node (the question or
"answer") is not checked. Per run the report gives ``citation_rate`` (share of steps
and nodes below the root citing at least one valid id) and ``citation_support``
(share of valid citations that are supported). A structure the fallback parser
derived from free text is marked ``derived`` and never counts as grounded.

Unknown ids are reported (``unknown_ids``, ``flagged``) and removed from the returned
inference chain and mind map, so every citation the run outputs — and every edge a
later rating touches — exists in the evidence; the report keeps what the model wrote.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.state import State
from kgmind.models import Evidence, normalize_name
from kgmind.prompts.grounded import evidence_names
from kgmind.text import has_cjk

__all__ = [
    "check_grounding",
    "cited_ids",
    "citing_items",
    "drop_unknown_ids",
    "grounding_report",
    "iter_mind_map",
    "mention_position",
    "names_in",
]

#: Shortest entity name matched inside a text (shorter keys match by accident).
MIN_NAME_CHARS = 3


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


def citing_items(
    inference_chain: Sequence[dict[str, Any]], mind_map: dict[str, Any] | None
) -> list[tuple[str, list[str], list[str]]]:
    """``(kind, texts, cited ids)`` for every step and every mind-map node below the root.

    A step's texts are its ``about`` entity and its sentence; a node's text is its label.
    """
    items: list[tuple[str, list[str], list[str]]] = []
    for step in inference_chain or []:
        texts = [str(step.get(k) or "").strip() for k in ("about", "step")]
        items.append(("step", [x for x in texts if x], [str(i) for i in step.get("evidence_ids") or []]))
    for depth, node in iter_mind_map(mind_map):
        if depth:
            ids = [str(i) for i in node.get("evidence_ids") or []]
            items.append(("node", [str(node.get("label") or "")], ids))
    return items


def mention_position(text: str, name: str) -> int:
    """Where ``text`` names ``name``: the offset of its first occurrence (normalised), ``-1`` if none.

    A text names an entity when, normalised, it equals the name or contains it; a name
    must have at least :data:`MIN_NAME_CHARS` characters to count inside a longer text
    (two for Chinese, whose names are often two characters).
    """
    low, key = normalize_name(text), normalize_name(name)
    if not key:
        return -1
    if key == low:
        return 0
    shortest = 2 if has_cjk(key) else MIN_NAME_CHARS
    return low.find(key) if len(key) >= shortest else -1


def names_in(texts: Sequence[str], names: Sequence[str]) -> bool:
    """Whether one of ``texts`` names one of ``names`` (by :func:`mention_position`)."""
    return any(mention_position(text, name) >= 0 for text in texts for name in names)


def grounding_report(
    evidence: Sequence[Evidence],
    inference_chain: Sequence[dict[str, Any]],
    mind_map: dict[str, Any] | None,
    *,
    derived: bool = False,
) -> dict[str, Any]:
    """Compare the answer's citations and mind-map labels with the evidence.

    Args:
        evidence: The selected (numbered) evidence.
        inference_chain: ``[{step, evidence_ids, about?}]``.
        mind_map: ``{label, evidence_ids, children}``.
        derived: The structure was rebuilt by the fallback parser from free text.

    Returns:
        ``{"evidence_ids", "cited_ids", "unknown_ids", "ungrounded_nodes",
        "unsupported_citations", "citation_rate", "citation_support", "derived",
        "flagged", "grounded"}``; ``flagged`` lists unknown ids, ungrounded labels, then
        unsupported citations as ``"ID (step|node: text)"``. The rates are ``None`` when
        there is nothing to rate (no steps or nodes; no valid citation).

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
    # without evidence there is nothing to ground a label in: the run is flagged no_kg_evidence instead
    for depth, node in iter_mind_map(mind_map if ev_ids else None):
        if depth == 0:
            continue
        label = str(node.get("label") or "").strip()
        if any(str(i) in valid for i in node.get("evidence_ids") or []):
            continue
        key = normalize_name(label)
        if key and (key in names or any(key in t for t in texts)):
            continue
        ungrounded.append(label)
    by_id = {e.id: e for e in evidence if e.id}
    items = citing_items(inference_chain, mind_map)
    citing = 0
    citations = 0
    unsupported: list[str] = []
    for kind, texts, ids in items:
        valid_ids = [i for i in ids if i in by_id]
        citing += bool(valid_ids)
        for i in valid_ids:
            citations += 1
            if not names_in(texts, evidence_names(by_id[i]) or [by_id[i].text]):
                unsupported.append(f"{i} ({kind}: {' '.join(texts)[:60]})")
    flagged = [*unknown, *ungrounded, *unsupported]
    return {
        "evidence_ids": ev_ids,
        "cited_ids": cited,
        "unknown_ids": unknown,
        "ungrounded_nodes": ungrounded,
        "unsupported_citations": unsupported,
        "citation_rate": round(citing / len(items), 4) if items else None,
        "citation_support": round(1 - len(unsupported) / citations, 4) if citations else None,
        "derived": derived,
        "flagged": flagged,
        "grounded": not flagged and not derived and bool(ev_ids),
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
        evidence = [] if context_of(runtime).mode == "llm_only" else state.get("selected_evidence") or []
        chain, mind_map = state.get("inference_chain") or [], state.get("mind_map")
        derived = bool((state.get("flags") or {}).get("fallback_parse"))
        report = grounding_report(evidence, chain, mind_map, derived=derived)
        chain, mind_map = drop_unknown_ids(chain, mind_map, set(report["evidence_ids"]))
    return {
        "grounding": report,
        "inference_chain": chain,
        "mind_map": mind_map,
        "timings_ms": timings,
        "flags": {"ungrounded": bool(report["flagged"])},
    }
