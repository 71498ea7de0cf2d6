"""Node ``reason_mindmap``: MindMap's final call — answer, inference chain and mind map.

By default (``Context.answer_schema="grounded"``) the output schema is built from the
evidence shown (:mod:`kgmind.prompts.grounded`): every step and mind-map node cites a
shown id, and the conclusions are evidence entities; the model's own points go to a
separate field. With ``"free"`` the evidence is shown as the assistant's own retrieved
knowledge in MindMap's prompt and the fixed :class:`~kgmind.prompts.schemas.MindMapAnswer`
schema leaves citing to the model. Tiny models that miss the schema are read by the
tolerant parser. Without evidence (``llm_only`` or nothing linked) the prompt says so
and the answer comes from the LLM alone.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.runtime import Runtime

from kgmind.graphs import services
from kgmind.graphs.aggregate_evidence import evidence_block
from kgmind.graphs.context import Context, context_of
from kgmind.graphs.mind_map import branch_reasons, build_mind_map, question_findings
from kgmind.graphs.readable import consistent_summary, readable_steps, without_echoes
from kgmind.graphs.state import State
from kgmind.llm import invoke_structured
from kgmind.models import SUPPORT_RELATION, Evidence, LinkedEntity, evidence_entity_types, normalize_name
from kgmind.prompts.grounded import (
    CONCLUSION_CHARS,
    MEDICAL_CONCLUSIONS,
    NODE_CHARS,
    OWN_CHARS,
    STEP_CHARS,
    SUMMARY_CHARS,
    build_answer_schema,
    evidence_names,
    grounded_prompt,
    list_bounds,
    render_conclusions,
)
from kgmind.prompts.mindmap import NO_EVIDENCE_EN, NO_EVIDENCE_ZH, mindmap_prompt
from kgmind.prompts.parsing import parse_mindmap_answer
from kgmind.prompts.schemas import GroundedAnswer, InferenceStep, MindMapAnswer, MindMapNode
from kgmind.text import end_cut, shorten

__all__ = [
    "answer_schema",
    "answer_types",
    "answer_with_evidence",
    "derive_structure",
    "end_cut_texts",
    "present_grounded",
    "reason_mindmap",
    "root_label",
    "run_reasoning",
]

_SENTENCE = re.compile(r"(?<=[.!?。！？])\s+")
#: Longest root label of a mind map (characters of the patient's input).
ROOT_CHARS = 80


def _mentions(text: str, evidence: Sequence[Evidence]) -> list[tuple[str, list[str]]]:
    """Evidence entity names found in ``text`` (first-occurrence order) with the ids citing them."""
    low = normalize_name(text)
    found: dict[str, tuple[int, str, list[str]]] = {}
    for ev in evidence:
        for head, _rel, tail in ev.triples:
            for name in (head, tail):
                key = normalize_name(name)
                pos = low.find(key) if len(key) >= 3 else -1
                if pos < 0:
                    continue
                _pos, _shown, ids = found.setdefault(key, (pos, name, []))
                if ev.id and ev.id not in ids:
                    ids.append(ev.id)
    return [(name, ids[:3]) for _pos, name, ids in sorted(found.values(), key=lambda t: t[0])]


def root_label(question: str, max_chars: int = ROOT_CHARS) -> str:
    """The mind map's root: the patient's input, cut at a word boundary to ``max_chars`` (``…`` marks a cut).

    A reader sees the case the tree is about; cut inside the text when it has no space to cut at (Chinese).
    """
    return shorten(" ".join(question.split()), max_chars)


def derive_structure(answer: MindMapAnswer, question: str, evidence: Sequence[Evidence]) -> MindMapAnswer:
    """Fill an empty inference chain / mind map from the evidence entities the answer names.

    Tiny models often answer in prose only. Then every evidence entity named in the
    answer becomes a mind-map child citing the evidence that contains it, and each
    sentence of the answer an inference step citing the evidence of the entities it
    names — so the structure is grounded by construction.
    """
    text = " ".join([answer.summary, *(s.step for s in answer.inference_chain)])
    if not answer.inference_chain:
        steps = []
        for sentence in _SENTENCE.split(answer.summary.strip()):
            ids = sorted({i for _n, cited in _mentions(sentence, evidence) for i in cited})
            if sentence.strip():
                steps.append(InferenceStep(step=sentence.strip(), evidence_ids=ids))
        answer = answer.model_copy(update={"inference_chain": steps})
    if not answer.mind_map.children:
        children = [MindMapNode(label=name, evidence_ids=ids) for name, ids in _mentions(text, evidence)[:8]]
        root = MindMapNode(
            label=root_label(question) or answer.mind_map.label,
            evidence_ids=answer.mind_map.evidence_ids,
            children=children,
        )
        answer = answer.model_copy(update={"mind_map": root})
    return answer


def _parse_grounded(text: str) -> GroundedAnswer:
    """The tolerant parser for grounded answers: MindMap's, read into the grounded model."""
    return GroundedAnswer.model_validate(parse_mindmap_answer(text).model_dump())


def _dedupe_ids(answer: MindMapAnswer) -> MindMapAnswer:
    """The answer with each step's and node's cited ids made unique (a grammar cannot forbid repeats)."""

    def node(n: MindMapNode) -> MindMapNode:
        ids = list(dict.fromkeys(n.evidence_ids))
        return n.model_copy(update={"evidence_ids": ids, "children": [node(c) for c in n.children]})

    steps = [
        s.model_copy(update={"evidence_ids": list(dict.fromkeys(s.evidence_ids))})
        for s in answer.inference_chain
    ]
    return answer.model_copy(update={"inference_chain": steps, "mind_map": node(answer.mind_map)})


def end_cut_texts(answer: GroundedAnswer, evidence: bool, cut: Collection[str] = ()) -> GroundedAnswer:
    """The answer with each free text its bound cut ended where a reader can stop.

    The grounded schema bounds every free text (:mod:`kgmind.prompts.grounded`), and the 0.5B
    model rarely ends one before its bound: 36 of 50 summaries on the committed test sample
    stopped inside a sentence, often inside a word. :func:`~kgmind.text.end_cut` ends them
    after their last full sentence or word; ``cut`` holds the texts the decoder reports it
    stopped (it may stop a few characters short of the bound). Only what the model wrote
    freely is touched: with ``evidence``, node labels and conclusions are evidence names.
    """

    def end(text: str, limit: int) -> str:
        return end_cut(text, limit, cut=text in cut)

    update: dict[str, Any] = {
        "summary": end(answer.summary, SUMMARY_CHARS),
        "inference_chain": [
            s.model_copy(update={"step": end(s.step, STEP_CHARS)}) for s in answer.inference_chain
        ],
        "own_knowledge": [end(p, OWN_CHARS) for p in answer.own_knowledge],
    }
    if not evidence:
        children = [
            c.model_copy(update={"label": end(c.label, NODE_CHARS)}) for c in answer.mind_map.children
        ]
        update["mind_map"] = answer.mind_map.model_copy(update={"children": children})
        update["conclusions"] = [end(c, CONCLUSION_CHARS) for c in answer.conclusions]
    return answer.model_copy(update=update)


def answer_types(evidence: Sequence[Evidence], ctx: Context) -> dict[str, str]:
    """``normalize_name(name) -> entity type`` of the evidence entities.

    The types are the ones the evidence carries (the exploration had them); only items
    that carry none while naming entities (a checkpoint written before ``Evidence`` had
    types) send the run's store a lookup.
    """
    types = evidence_entity_types(evidence)
    untyped = [ev for ev in evidence if ev.entity_ids and not ev.entity_types]
    if untyped:
        types = {**services.entity_types(ctx.store, untyped), **types}
    return types


def answer_schema(evidence: Sequence[Evidence], ctx: Context) -> dict[str, Any]:
    """The per-question JSON schema of a grounded answer (entity types by :func:`answer_types`)."""
    return build_answer_schema(evidence, answer_types(evidence, ctx))


def present_grounded(
    out: GroundedAnswer,
    question: str,
    evidence: Sequence[Evidence],
    types: Mapping[str, str],
    linked: Sequence[LinkedEntity] = (),
    language: str = "en",
    reasons: Sequence[Evidence] = (),
) -> tuple[str, list[dict[str, Any]], dict[str, Any], list[Evidence]]:
    """What a reader is shown of a grounded answer: summary, inference chain, mind map, added evidence.

    Derived from the model's choices and the evidence, with no further model call: fragment
    steps show their cited evidence sentence, and the summary loses the patient's words pasted
    into it and names the chosen first diagnosis first (:mod:`kgmind.graphs.readable`); the mind
    map is the reasoning tree (:mod:`kgmind.graphs.mind_map`), or the model's own tree where the
    answer chose nothing the evidence names (no evidence, a reply the fallback parser read).

    Args:
        out: The model's answer (its root already the patient's input).
        question: The question (its findings).
        evidence: The evidence shown.
        types: ``normalize_name(name) -> entity type`` (:func:`answer_types`).
        linked: The run's linked entities (a lay word of the question reaching a KG name).
        language: ``zh`` or English (the summary's added sentence).
        reasons: The exploration's support lines: a chosen diagnosis the evidence ties to
            none of the question's findings gets its line, for the mind map only
            (:func:`~kgmind.graphs.mind_map.branch_reasons`).

    Returns:
        ``(summary, inference_chain as dicts, mind_map as a dict, the evidence added for the
        mind map)``.

    """
    chain = [s.model_dump(exclude=None if s.about else {"about"}) for s in out.inference_chain]
    conclusions = out.conclusion_map()
    tree = None
    added: list[Evidence] = []
    if evidence:
        chain = readable_steps(chain, evidence, question)
        diagnoses = conclusions.get("diagnoses") or []
        added = branch_reasons(diagnoses, evidence, reasons, question, linked, types)
        shown = [*evidence, *added]
        findings = question_findings(question, shown, linked)
        types = {**evidence_entity_types(added), **types}
        tree = build_mind_map(out.mind_map.label, conclusions, shown, findings, types)
    disease = MEDICAL_CONCLUSIONS["diagnoses"]
    diseases = [n for ev in evidence for n in evidence_names(ev) if types.get(normalize_name(n)) == disease]
    summary = consistent_summary(out.summary.strip(), out.diagnoses, diseases, language)
    if conclusions:  # an answer that chose nothing keeps its words, pasted or not: it has no list to stand on
        # made consistent first, so a disease named in a pasted sentence stays (as also considered), and
        # again after, in case the paste was what named the first diagnosis
        summary = consistent_summary(without_echoes(summary, question), out.diagnoses, diseases, language)
    return summary, chain, tree or out.mind_map.model_dump(), added if tree else []


def run_reasoning(
    node: str,
    messages: Sequence[BaseMessage],
    evidence: Sequence[Evidence],
    ctx: Context,
    question: str = "",
    linked: Sequence[LinkedEntity] = (),
    reasons: Sequence[Evidence] = (),
) -> dict[str, Any]:
    """Make the reasoning call and turn its output into state updates (shared by both reasoners).

    With ``ctx.answer_schema == "grounded"`` the model is held to :func:`answer_schema`, and
    what a reader sees is derived by :func:`present_grounded`.

    Args:
        node: Node name (timings, run names).
        messages: The prompt.
        evidence: The evidence shown (its ids go into the LLM run's metadata).
        ctx: Run settings.
        question: The question (root of the mind map, its findings).
        linked: The run's linked entities (a lay word in the question reaching a KG name).
        reasons: The exploration's support lines (see :func:`present_grounded`).

    Returns:
        ``answer``, ``inference_chain``, ``mind_map``, ``conclusions``, ``own_knowledge``,
        one LLM call, timing, flags; ``selected_evidence`` with the items added for the
        mind map, when there are any.

    """
    timings: dict[str, float] = {}
    ids = [e.id for e in evidence]
    grounded = ctx.answer_schema == "grounded"
    types = answer_types(evidence, ctx) if grounded else {}
    schema = build_answer_schema(evidence, types) if grounded else None
    # the lists' bounds travel with the call, so a streaming client can say "test 2 of 3-4"
    metadata = {"kgmind_evidence_ids": ids, "kgmind_list_bounds": list_bounds(schema) if schema else {}}
    with services.timed(node, timings):
        result = invoke_structured(
            services.get_llm(ctx, "reason"),
            GroundedAnswer if grounded else MindMapAnswer,
            messages,
            _parse_grounded if grounded else parse_mindmap_answer,
            config={"run_name": f"{node}_llm", "metadata": metadata},
            json_schema=schema,
        )
    out: MindMapAnswer = result.value
    if result.used_fallback:
        out = derive_structure(out, question, evidence)
    if not out.summary.strip():  # a cut-off answer: keep what the model did say
        said = [s.step for s in out.inference_chain if s.step.strip()]
        out = out.model_copy(update={"summary": " ".join(said) or out.mind_map.label})
    services.trace_evidence(f"{node}.evidence", evidence)
    out = _dedupe_ids(out)
    if isinstance(out, GroundedAnswer) and not result.used_fallback:
        out = end_cut_texts(out, bool(evidence), result.cut)
    if grounded:
        # The model still writes a root (left out of the schema, answer recall fell 2-3 points on calib),
        # but the 0.5B model writes the instruction's words there ("Patient's problem as the root"), so
        # a reader is shown the patient's input; nothing measures the root (it cites nothing).
        root = out.mind_map.model_copy(update={"label": root_label(question) or out.mind_map.label})
        out = out.model_copy(update={"mind_map": root})
    answer = out.summary.strip()
    chain = [s.model_dump(exclude=None if s.about else {"about"}) for s in out.inference_chain]
    mind_map = out.mind_map.model_dump()
    conclusions: dict[str, list[str]] = {}
    own: list[str] = []
    added: list[Evidence] = []
    if isinstance(out, GroundedAnswer):
        language = services.resolve_language(ctx, question)
        answer, chain, mind_map, added = present_grounded(
            out, question, evidence, types, linked, language, reasons
        )
        conclusions = out.conclusion_map()
        own = [p.strip() for p in out.own_knowledge if p.strip()]
        chosen = render_conclusions(conclusions, language)
        answer = f"{answer}\n{chosen}".strip() if chosen else answer
    update: dict[str, Any] = {
        "answer": answer,
        "inference_chain": chain,
        "mind_map": mind_map,
        "conclusions": conclusions,
        "own_knowledge": own,
        "llm_calls": 1,
        "timings_ms": timings,
        "flags": {"fallback_parse": result.used_fallback, "no_kg_evidence": not evidence},
    }
    if added:
        update["selected_evidence"] = [*evidence, *added]
    return update


def answer_with_evidence(
    question: str,
    evidence: Sequence[Evidence],
    ctx: Context,
    language: str | None = None,
    linked: Sequence[LinkedEntity] = (),
    reasons: Sequence[Evidence] = (),
) -> dict[str, Any]:
    """MindMap's reasoning call over ``evidence``: the node's work, callable outside the graph.

    ``kgmind eval`` answers the baselines' evidence with this, so every method's answer
    comes from the prompt that ships.

    Args:
        question: The question.
        evidence: Numbered evidence to show (may be empty).
        ctx: Run settings (model, generation limit).
        language: Prompt language; detected from the question when ``None``.
        linked: The run's linked entities (findings of the mind map).
        reasons: The exploration's support lines (see :func:`present_grounded`).

    Returns:
        See :func:`run_reasoning`.

    """
    language = language or services.resolve_language(ctx, question)
    block = evidence_block(evidence) or (NO_EVIDENCE_ZH if language == "zh" else NO_EVIDENCE_EN)
    prompt = grounded_prompt(language) if ctx.answer_schema == "grounded" else mindmap_prompt(language)
    messages = prompt.format_messages(question=question, evidence=block)
    return run_reasoning("reason_mindmap", messages, evidence, ctx, question, linked, reasons)


def reason_mindmap(state: State, runtime: Runtime[Context]) -> dict[str, Any]:
    """Answer with MindMap's prompt over the selected evidence.

    Args:
        state: ``question``, ``language``, ``selected_evidence``, ``linked_entities`` and
            ``neighbor_evidence`` (its support lines, for the mind map).
        runtime: LangGraph runtime with the :class:`Context`.

    Returns:
        See :func:`run_reasoning`.

    """
    ctx = context_of(runtime)
    evidence = [] if ctx.mode == "llm_only" else list(state.get("selected_evidence") or [])
    linked = list(state.get("linked_entities") or [])
    reasons = [e for e in state.get("neighbor_evidence") or [] if e.meta.get("relation") == SUPPORT_RELATION]
    return answer_with_evidence(state["question"], evidence, ctx, state.get("language"), linked, reasons)
