"""Tolerant parsers for LLM text that missed the schema (tiny local models do).

Each parser tries, in order: a JSON object anywhere in the text (``json-repair``:
code fences and chatter ignored, quotes, commas and truncation repaired), then the
sectioned plain-text layout the prompts describe ("Output1: …", "Summary:",
bulleted/indented mind maps). They never raise: the worst case is the whole text as
the answer with empty structure.
"""

from __future__ import annotations

import json
import re
from typing import Any

import json_repair

from kgmind.prompts.schemas import HypothesisOut, InferenceStep, MindMapAnswer, MindMapNode

__all__ = ["extract_json", "find_evidence_ids", "parse_hypothesis", "parse_mindmap_answer"]

_ID = re.compile(r"(?<![A-Za-z0-9])([PNCKD]\d{1,3})(?![0-9])")


def find_evidence_ids(text: str) -> list[str]:
    """Evidence ids (P1, N2, C3, K1, D4 …) in order of first appearance."""
    seen: dict[str, None] = {}
    for m in _ID.finditer(text):
        seen.setdefault(m.group(1), None)
    return list(seen)


def extract_json(text: str) -> dict[str, Any] | None:
    """Return the largest JSON object in ``text``, repaired by ``json-repair``, or None.

    ``json-repair`` skips chatter and code fences, fixes single quotes, trailing commas
    and stray closers, and closes output cut off at ``max_tokens``.
    """
    try:
        value = json_repair.loads(text)
    except (ValueError, RecursionError):  # the parsers never raise; plain text is tried next
        return None
    found = (
        [value]
        if isinstance(value, dict)
        else [v for v in value if isinstance(v, dict)]
        if isinstance(value, list)
        else []
    )
    return max(found, key=lambda d: len(json.dumps(d)), default=None)


def _as_list_of_str(value: Any) -> list[str]:
    if isinstance(value, str):
        return [s.strip() for s in re.split(r"[,;，；、\n]", value) if s.strip()]
    if isinstance(value, list):
        return [str(v).strip() for v in value if str(v).strip()]
    return []


def parse_hypothesis(text: str) -> HypothesisOut:
    """Parse the hypothesis call's output; never raises."""
    data = extract_json(text)
    if data is not None:
        hyp = data.get("hypothesis") or data.get("answer") or data.get("假设") or ""
        ents = data.get("entities") or data.get("实体") or []
        if hyp or ents:
            return HypothesisOut(hypothesis=str(hyp).strip(), entities=_as_list_of_str(ents))
    entities: list[str] = []
    m = re.search(r"(?im)^\s*(?:entities|the extracted entities are|实体)\s*[:：]\s*(.+)$", text)
    hyp_text = text
    if m:
        entities = _as_list_of_str(m.group(1))
        hyp_text = text[: m.start()] + text[m.end() :]
    hyp_text = re.sub(r"(?im)^\s*(?:hypothesis|answer|假设|回答)\s*[:：]\s*", "", hyp_text).strip()
    return HypothesisOut(hypothesis=hyp_text, entities=entities)


def _node_from_any(value: Any) -> MindMapNode:
    if isinstance(value, dict):
        label = value.get("label") or value.get("name") or value.get("node") or value.get("title") or ""
        ids = _as_list_of_str(value.get("evidence_ids") or value.get("evidence") or [])
        kids = value.get("children") or value.get("nodes") or []
        if not isinstance(kids, list):
            kids = [kids]
        ids = [i for i in ids if _ID.fullmatch(i)] or find_evidence_ids(" ".join(ids))
        return MindMapNode(
            label=str(label).strip() or "answer",
            evidence_ids=ids or find_evidence_ids(str(label)),
            children=[_node_from_any(k) for k in kids],
        )
    if isinstance(value, list):
        return MindMapNode(label="answer", children=[_node_from_any(v) for v in value])
    text = str(value)
    return MindMapNode(label=text.strip() or "answer", evidence_ids=find_evidence_ids(text))


def _steps_from_any(value: Any) -> list[InferenceStep]:
    if isinstance(value, str):
        value = [s for s in re.split(r"\n|->|→", value) if s.strip()]
    steps: list[InferenceStep] = []
    if isinstance(value, list):
        for item in value:
            if isinstance(item, dict):
                text = str(item.get("step") or item.get("text") or item.get("content") or "").strip()
                ids = _as_list_of_str(item.get("evidence_ids") or item.get("evidence") or [])
                ids = [i for i in ids if _ID.fullmatch(i)] or find_evidence_ids(text)
            else:
                text = str(item).strip()
                ids = find_evidence_ids(text)
            if text:
                steps.append(InferenceStep(step=text, evidence_ids=ids))
    return steps


_SECTION = re.compile(
    r"(?im)^\s*(?:#+\s*)?\**\s*(output\s*1|output\s*2|output\s*3|summary|answer|inference(?:\s+(?:chain|process))?"
    r"|mind\s*map|decision\s*tree|输出\s*[123一二三]|回答|总结|推理(?:过程|链)?|思维导图)\s*\**\s*[:：]?\s*\**",
)


def _sections(text: str) -> dict[str, str]:
    keys = {"summary": "", "chain": "", "map": ""}
    matches = list(_SECTION.finditer(text))
    for i, m in enumerate(matches):
        name = m.group(1).lower().replace(" ", "")
        body = text[m.end() : matches[i + 1].start() if i + 1 < len(matches) else len(text)].strip()
        if name in {"output1", "summary", "answer", "输出1", "输出一", "回答", "总结"}:
            keys["summary"] = keys["summary"] or body
        elif name.startswith(("output2", "inference", "输出2", "输出二", "推理")):
            keys["chain"] = keys["chain"] or body
        else:
            keys["map"] = keys["map"] or body
    return keys


def _tree_from_lines(text: str) -> MindMapNode:
    root = MindMapNode(label="answer")
    stack: list[tuple[int, MindMapNode]] = [(-1, root)]
    for raw in text.splitlines():
        if not raw.strip():
            continue
        indent = len(raw) - len(raw.lstrip(" \t│├└─|"))
        label = raw.strip().lstrip("-*+•│├└─| ").strip()
        label = re.sub(r"^\d+[.)]\s*", "", label)
        if not label:
            continue
        node = MindMapNode(label=label, evidence_ids=find_evidence_ids(label))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    if len(root.children) == 1:
        return root.children[0]
    return root


def parse_mindmap_answer(text: str) -> MindMapAnswer:
    """Parse the reasoning call's output into :class:`MindMapAnswer`; never raises."""
    data = extract_json(text)
    if data is not None and any(k in data for k in ("summary", "answer", "inference_chain", "mind_map")):
        summary = str(data.get("summary") or data.get("answer") or "").strip()
        chain = _steps_from_any(data.get("inference_chain") or data.get("inference") or [])
        mm_raw = data.get("mind_map") or data.get("mindmap") or data.get("tree")
        mind_map = _node_from_any(mm_raw) if mm_raw else MindMapNode(label="answer")
        if not mind_map.children and not mind_map.evidence_ids and chain:
            mind_map = MindMapNode(
                label="answer",
                children=[MindMapNode(label=s.step[:80], evidence_ids=s.evidence_ids) for s in chain],
            )
        return MindMapAnswer(summary=summary or text.strip()[:1000], inference_chain=chain, mind_map=mind_map)
    sec = _sections(text)
    summary = sec["summary"] or (text.strip().split("\n\n")[0] if text.strip() else "")
    chain = _steps_from_any(sec["chain"]) if sec["chain"] else []
    if not chain:
        chain = [
            InferenceStep(step=line.strip(), evidence_ids=find_evidence_ids(line))
            for line in text.splitlines()
            if find_evidence_ids(line)
        ]
    mind_map = (
        _tree_from_lines(sec["map"])
        if sec["map"]
        else MindMapNode(
            label="answer",
            children=[MindMapNode(label=s.step[:80], evidence_ids=s.evidence_ids) for s in chain],
        )
    )
    return MindMapAnswer(summary=summary, inference_chain=chain, mind_map=mind_map)
