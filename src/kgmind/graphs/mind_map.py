"""The mind map as the reasoning: a tree built from the grounded answer's choices and the evidence.

MindMap's third output is a tree of the reasoning. The 0.5B model, held to a schema, wrote
one node there (the root and a single cited entity), so the tree is now derived after the
model answers, from what it chose, with no extra model tokens (the answer call and its
schema stay as they were; the model's own tree is replaced):

- root: the patient's problem (the question, cut to a label);
- one branch per diagnosis the answer chose, in its order (a non-medical KG: per conclusion);
- under each: the question's findings the evidence ties to it, then its chosen tests and
  medications (those the evidence ties to it);
- chosen tests and medications the evidence ties to no chosen diagnosis (a medical KG
  without such ties) become branches of their own.

Every node below the root is an evidence entity citing one item that names it: a
diagnosis the first item naming it, a node under a diagnosis the first item whose triple
joins the two (it names both and shows the relation). So the grounding check
(:mod:`kgmind.graphs.check_grounding`) finds every node supported. Each node carries a
``kind`` (``diagnosis``, ``conclusion``, ``finding``, ``test``, ``medication``) the
renderers show before its label (:func:`kind_word`).

A diagnosis the shown evidence ties to none of the question's findings gets the ones the
exploration found pointing to it (:func:`branch_reasons`): its support line, added after the
answer and marked as not read by the model. Value packing values an item by the answer
entities it adds, so it rarely shows a support line once the disease's test line names it;
shown to the model instead, on calib, the lines took Chinese answer recall 1.5 points lower
(docs/results.md, "Findings under every diagnosis").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kgmind.graphs.check_grounding import mention_position
from kgmind.models import MIND_MAP_ONLY, SUPPORT_RELATION, Evidence, LinkedEntity, normalize_name
from kgmind.prompts.grounded import MEDICAL_CONCLUSIONS, evidence_names
from kgmind.retrievers.aggregate import kept_triples
from kgmind.text import has_cjk

__all__ = [
    "KIND_WORDS",
    "branch_reasons",
    "build_mind_map",
    "kind_word",
    "question_findings",
]

#: What a node is, in the reader's language: ``kind -> (English, Chinese)``.
KIND_WORDS: dict[str, tuple[str, str]] = {
    "diagnosis": ("diagnosis", "诊断"),
    "conclusion": ("conclusion", "结论"),
    "finding": ("finding", "表现"),
    "test": ("test", "检查"),
    "medication": ("medication", "药物"),
}

#: The child kinds under a diagnosis, in the order they are listed, with their conclusion field.
_CHILD_FIELDS: tuple[tuple[str, str], ...] = (("test", "tests"), ("medication", "medications"))


def kind_word(kind: str, label: str) -> str:
    """The word for a node's ``kind`` in the label's language (Chinese for a CJK label); ``""`` if unknown."""
    words = KIND_WORDS.get(kind)
    return "" if words is None else words[1 if has_cjk(label) else 0]


def question_findings(
    question: str, evidence: Sequence[Evidence], linked: Sequence[LinkedEntity] = ()
) -> list[str]:
    """The evidence entities the question names, in the order the question names them.

    An entity counts when the question names it, or when a linked entity's mention is in the
    question (a lay word linked to the KG's clinical name: ``发烧`` → ``发热``). Names keep
    the evidence's spelling.
    """
    spelled: dict[str, str] = {}
    for ev in evidence:
        for name in evidence_names(ev):
            spelled.setdefault(normalize_name(name), name)
    at: dict[str, int] = {}
    for key, name in spelled.items():
        pos = mention_position(question, name)
        if pos >= 0:
            at[key] = pos
    for le in linked:
        key = normalize_name(le.name)
        pos = mention_position(question, le.mention)
        if key in spelled and pos >= 0:
            at[key] = min(pos, at.get(key, pos))
    return [spelled[key] for key in sorted(at, key=lambda k: at[k])]


class _Citer:
    """The first evidence id naming an entity, and the first whose triple joins two entities."""

    def __init__(self, evidence: Sequence[Evidence]) -> None:
        self.naming: dict[str, str] = {}
        self.joining: dict[frozenset[str], str] = {}
        for ev in evidence:
            if not ev.id:
                continue
            for name in evidence_names(ev):
                self.naming.setdefault(normalize_name(name), ev.id)
            for head, _rel, tail in ev.triples:
                pair = frozenset((normalize_name(head), normalize_name(tail)))
                self.joining.setdefault(pair, ev.id)

    def names(self, name: str) -> str | None:
        return self.naming.get(normalize_name(name))

    def joins(self, a: str, b: str) -> str | None:
        if normalize_name(a) == normalize_name(b):
            return None
        return self.joining.get(frozenset((normalize_name(a), normalize_name(b))))


def _node(label: str, ev_id: str, kind: str) -> dict[str, Any]:
    return {"label": label, "evidence_ids": [ev_id], "kind": kind, "children": []}


def _branch(
    head: str,
    kind: str,
    citer: _Citer,
    findings: Sequence[str],
    chosen: Mapping[str, Sequence[str]],
    placed: set[str],
) -> dict[str, Any] | None:
    """One diagnosis (or conclusion) with its findings, then its tests and medications, each cited.

    A test or medication goes under the first diagnosis the evidence ties it to (``placed``
    holds those already shown); a finding goes under every diagnosis it supports.
    """
    ev_id = citer.names(head)
    if ev_id is None:
        return None
    node = _node(head, ev_id, kind)
    for finding in findings:
        joined = citer.joins(head, finding)
        if joined is not None:
            node["children"].append(_node(finding, joined, "finding"))
    for child_kind, field in _CHILD_FIELDS:
        for name in chosen.get(field, ()):
            joined = citer.joins(head, name)
            if joined is not None and normalize_name(name) not in placed:
                placed.add(normalize_name(name))
                node["children"].append(_node(name, joined, child_kind))
    return node


def build_mind_map(
    root: str,
    conclusions: Mapping[str, Sequence[str]],
    evidence: Sequence[Evidence],
    findings: Sequence[str] = (),
    entity_types: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """The reasoning tree of a grounded answer (see the module docstring).

    Args:
        root: The root's label (the patient's problem).
        conclusions: The answer's chosen entities by field (``diagnoses``/``tests``/
            ``medications`` or ``conclusions``), as :meth:`GroundedAnswer.conclusion_map` gives.
        evidence: The numbered evidence shown.
        findings: Entities the question names (:func:`question_findings`), in its order.
        entity_types: ``normalize_name(name) -> type``; a finding that is a test or a
            medication is not listed as a finding (it is advice, not what the patient shows).

    Returns:
        ``{label, evidence_ids: [], children: [...]}``, children ``{label, evidence_ids:
        [id], kind, children}``; ``None`` when no chosen entity is named by the evidence
        (the caller keeps the model's own tree).

    """
    citer = _Citer(evidence)
    types = entity_types or {}
    advice = {t for f, t in MEDICAL_CONCLUSIONS.items() if f != "diagnoses"}
    heads, kind = list(conclusions.get("diagnoses") or ()), "diagnosis"
    if not heads:
        heads, kind = list(conclusions.get("conclusions") or ()), "conclusion"
    heads_key = {normalize_name(h) for h in heads}
    chosen = {f: list(conclusions.get(f) or ()) for _k, f in _CHILD_FIELDS}
    chosen_keys = {normalize_name(n) for names in chosen.values() for n in names}
    shown = [
        f
        for f in findings
        if normalize_name(f) not in heads_key | chosen_keys and types.get(normalize_name(f)) not in advice
    ]
    placed: set[str] = set()
    branches = [b for h in heads if (b := _branch(h, kind, citer, shown, chosen, placed)) is not None]
    for child_kind, field in _CHILD_FIELDS:
        for name in chosen[field]:
            ev_id = citer.names(name)
            if normalize_name(name) not in placed and ev_id is not None:
                placed.add(normalize_name(name))
                branches.append(_node(name, ev_id, child_kind))
    if not branches:
        return None
    return {"label": root, "evidence_ids": [], "children": branches}


def branch_reasons(
    diagnoses: Sequence[str],
    evidence: Sequence[Evidence],
    reasons: Sequence[Evidence],
    question: str,
    linked: Sequence[LinkedEntity] = (),
    entity_types: Mapping[str, str] | None = None,
) -> list[Evidence]:
    """Support lines for the chosen diagnoses the shown evidence ties to none of the question's findings.

    Each keeps only its triples joining the diagnosis to a finding the question names (a
    test or medication the patient mentions is advice, not a finding), is numbered after
    the evidence (``N…``) and carries ``meta[MIND_MAP_ONLY]``: shown after the answer, it
    was not read by the model. A diagnosis with no such line gets none.

    Args:
        diagnoses: The answer's diagnoses, in its order.
        evidence: The numbered evidence the model read.
        reasons: The exploration's support lines (``meta["relation"] == SUPPORT_RELATION``,
            ``meta["disease"]``); other items are passed over.
        question: The question (its findings).
        linked: The run's linked entities (a lay word reaching a KG name).
        entity_types: ``normalize_name(name) -> type`` of the evidence's entities.

    Returns:
        The added items, in the diagnoses' order.
    """
    advice = {t for f, t in MEDICAL_CONCLUSIONS.items() if f != "diagnoses"}
    types = dict(entity_types or {})
    by_disease: dict[str, Evidence] = {}
    for ev in reasons:
        name = ev.meta.get("disease")
        if ev.meta.get("relation") == SUPPORT_RELATION and isinstance(name, str):
            by_disease.setdefault(normalize_name(name), ev)
            types.update({normalize_name(k): v for k, v in ev.entity_types.items()})
    citer = _Citer(evidence)
    stated = [
        f for f in question_findings(question, evidence, linked) if types.get(normalize_name(f)) not in advice
    ]
    last = max((int(e.id[1:]) for e in evidence if e.id[:1] == "N" and e.id[1:].isdigit()), default=0)
    out: list[Evidence] = []
    for head in diagnoses:
        line = by_disease.get(normalize_name(head))
        if line is None or any(citer.joins(head, f) for f in stated):
            continue
        own = {
            normalize_name(f)
            for f in question_findings(question, [line], linked)
            if types.get(normalize_name(f)) not in advice and normalize_name(f) != normalize_name(head)
        }
        keep = [
            i for i, (h, _r, t) in enumerate(line.triples) if {normalize_name(h), normalize_name(t)} & own
        ]
        if not keep:
            continue
        last += 1
        out.append(
            kept_triples(line, keep, {**line.meta, MIND_MAP_ONLY: True}).model_copy(update={"id": f"N{last}"})
        )
    return out
