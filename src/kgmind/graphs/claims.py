"""The claims of a run a person can flag as wrong or right, and the KG edges behind each (issue 41).

A run shows three kinds of claim, each with an id ``kgmind show`` prints:

* an evidence item (``P1``, ``N3``, ``K2``…): every edge behind it (a cited KGCoT chain:
  the whole walked chain, as a rating credits it);
* an inference step, ``S1``, ``S2``… in chain order: the edges of the items the step cites
  that name the step's entities (its ``about`` entity and its sentence), those naming two
  of them first; every edge of its cited items when none is named;
* a mind-map node below the root, ``M1``, ``M2``… depth first: the edges of the node's
  cited items that name its label, those also naming its parent's label first; every edge
  of its cited items when none names the label.

Flagging a step or a node thus credits the fact it states, not every fact its evidence
happens to carry. Ids are matched ignoring case and surrounding punctuation.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from kgmind.graphs.check_grounding import mention_position
from kgmind.models import Evidence
from kgmind.stores.feedback import cited_relation_ids

__all__ = ["claim_edges", "claim_key", "mind_map_ids", "parse_claim_ids", "resolve_claims", "step_ids"]

_NOISE = re.compile(r"[^0-9A-Za-z]+")


def claim_key(claim: str) -> str:
    """A claim id as compared: letters and digits only, upper case (``[n3]`` → ``N3``)."""
    return _NOISE.sub("", claim).upper()


def parse_claim_ids(given: Iterable[Any] | str | None) -> list[str]:
    """Claim ids from a list and/or comma-separated strings (``["N3,S1", "M2"]``), deduplicated.

    Raises:
        ValueError: Not a string or a list of them (a resume payload's ``{"wrong": 5}`` must
            re-pause the run with an error, which only a ValueError does), an entry that is
            not a string, or an empty id (``"N3,,S1"``).

    """
    if given is None:
        return []
    if isinstance(given, Mapping | bytes) or not isinstance(given, Iterable):
        raise ValueError(f"claim ids are a list such as ['N3', 'S1'] or a string, got {given!r}")
    items = [given] if isinstance(given, str) else list(given)
    out: dict[str, None] = {}
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"claim ids are strings such as 'N3' or 'S1', got {item!r}")
        for part in item.split(","):
            key = claim_key(part)
            if not key:
                raise ValueError(f"empty claim id in {item!r}")
            out.setdefault(key, None)
    return list(out)


def step_ids(chain: Sequence[Mapping[str, Any]]) -> list[str]:
    """The ids of the inference steps: ``S1``, ``S2``… in chain order."""
    return [f"S{n}" for n in range(1, len(chain) + 1)]


def _nodes(mind_map: Mapping[str, Any] | None) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
    """``(node, parent)`` for every mind-map node below the root, depth first."""
    if not isinstance(mind_map, Mapping):
        return

    def walk(node: Mapping[str, Any]) -> Iterator[tuple[Mapping[str, Any], Mapping[str, Any]]]:
        for child in node.get("children") or []:
            if isinstance(child, Mapping):
                yield child, node
                yield from walk(child)

    yield from walk(mind_map)


def mind_map_ids(mind_map: Mapping[str, Any] | None) -> dict[int, str]:
    """``{id(node): "M<n>"}`` for the nodes below the root, numbered depth first (for renderers)."""
    return {id(node): f"M{n}" for n, (node, _parent) in enumerate(_nodes(mind_map), 1)}


def _item_edges(ev: Evidence) -> list[tuple[tuple[str, str, str] | None, str]]:
    """``(triple or None, relation id)`` of every edge behind ``ev`` (the triple where ids align)."""
    ids = cited_relation_ids([ev], [ev.id])
    if len(ev.relation_ids) != len(ev.triples):
        return [(None, rid) for rid in ids]
    pairs = [(triple, rid) for triple, rid in zip(ev.triples, ev.relation_ids, strict=True) if rid]
    aligned = {rid for _triple, rid in pairs}
    return [*pairs, *((None, rid) for rid in ids if rid not in aligned)]


def _named(texts: Sequence[str], name: str) -> bool:
    return any(mention_position(text, name) >= 0 for text in texts if text)


def _pick(
    items: Sequence[Evidence], texts: Sequence[str], prefer: Sequence[str] = (), both_ends: bool = False
) -> list[str]:
    """The edges of ``items`` that best match a claim's ``texts`` (see the module docstring)."""
    scored: list[tuple[int, str]] = []
    everything: dict[str, None] = {}
    for ev in items:
        for triple, rid in _item_edges(ev):
            everything.setdefault(rid, None)
            if triple is None:
                continue
            ends = sum(_named(texts, name) for name in (triple[0], triple[2]))
            if ends == 0:
                continue
            bonus = ends if both_ends else sum(_named(prefer, name) for name in (triple[0], triple[2]))
            scored.append((bonus, rid))
    if not scored:
        return list(everything)
    best = max(score for score, _ in scored)
    return list(dict.fromkeys(rid for score, rid in scored if score == best))


def claim_edges(values: Mapping[str, Any]) -> dict[str, list[str]]:
    """Every claim id of a run with the relation ids behind it (see the module docstring).

    Args:
        values: The run's state (``selected_evidence``, ``inference_chain``, ``mind_map``).

    Returns:
        ``{claim id: relation ids}``: evidence ids first, then ``S1``…, then ``M1``…; a
        claim that rests on no KG edge (a document, an uncited node) maps to ``[]``.

    """
    evidence = [
        e if isinstance(e, Evidence) else Evidence.model_validate(e)
        for e in values.get("selected_evidence") or []
    ]
    by_id = {claim_key(e.id): e for e in evidence if e.id}
    out = {key: list(dict.fromkeys(rid for _t, rid in _item_edges(ev))) for key, ev in by_id.items()}

    def cited(ids: Iterable[Any]) -> list[Evidence]:
        return [by_id[k] for k in dict.fromkeys(claim_key(str(i)) for i in ids) if k in by_id]

    chain = list(values.get("inference_chain") or [])
    for sid, step in zip(step_ids(chain), chain, strict=True):
        texts = [str(step.get(k) or "") for k in ("about", "step")]
        out[sid] = _pick(cited(step.get("evidence_ids") or []), texts, both_ends=True)
    for n, (node, parent) in enumerate(_nodes(values.get("mind_map")), 1):
        label, above = str(node.get("label") or ""), str(parent.get("label") or "")
        out[f"M{n}"] = _pick(cited(node.get("evidence_ids") or []), [label], prefer=[above])
    return out


def resolve_claims(
    values: Mapping[str, Any], wrong: Sequence[str], right: Sequence[str]
) -> dict[str, list[str]]:
    """The edges behind each flagged claim, every id checked before anything is written.

    Args:
        values: The run's state.
        wrong: Claim ids called wrong (already parsed by :func:`parse_claim_ids`).
        right: Claim ids called right.

    Returns:
        ``{claim id: relation ids}`` for the flagged claims, wrong ones first.

    Raises:
        ValueError: An id the run does not show (the message lists the valid ones), a claim
            both wrong and right, or a claim that rests on no KG edge.

    """
    edges = claim_edges(values)
    asked = [*wrong, *right]
    unknown = [c for c in asked if c not in edges]
    if unknown:
        valid = ", ".join(edges) or "none: the run showed no evidence"
        raise ValueError(f"unknown claim id(s) {', '.join(unknown)}; this run's ids: {valid}")
    both = sorted(set(wrong) & set(right))
    if both:
        raise ValueError(f"claim(s) {', '.join(both)} called both wrong and right")
    bare = [c for c in asked if not edges[c]]
    if bare:
        raise ValueError(f"claim(s) {', '.join(bare)} rest on no KG edge: nothing to flag")
    return {c: edges[c] for c in asked}
