"""Evidence as text: one sentence per item by template, and the token counts a budget is spent in.

No LLM: relation types with a template read naturally, others fall back to
``head relation words tail``; Chinese names get Chinese templates.

Token counts are an approximation (no tokenizer can be downloaded offline):
``ceil(1.3 × words)`` for non-CJK text plus one token per CJK character; pass a
``tokenizer`` (any ``str -> sequence`` callable, e.g. the local LLM's) for exact counts. The
approximation undercounts medical names about twofold, so the full graph passes its local
model's tokenizer (:func:`kgmind.llm.local_tokenizer`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from kgmind.models import Evidence
from kgmind.text import CJK, detect_language

__all__ = [
    "EN_PHRASES",
    "MAX_NOTE_WORDS",
    "ZH_TEMPLATES",
    "Tokenizer",
    "chunk_text",
    "count_tokens",
    "is_zh",
    "render_evidence",
]

#: An exact tokenizer: text in, its tokens out (only their number is used).
Tokenizer = Callable[[str], Sequence[Any]]

#: English clause per relation type: ``{h} <phrase> {t}``.
EN_PHRASES: dict[str, str] = {
    "has_symptom": "may present with",
    "possible_disease": "may be a sign of",
    "need_medical_test": "can be checked with",
    "can_check_disease": "can help diagnose",
    "need_medication": "can be treated with",
    "possible_cure_disease": "may be used to treat",
    "has_complication": "may lead to the complication",
    "belongs_to_department": "is treated in",
    "department_of_disease": "treats",
    "good_food": "is helped by eating",
    "food_good_for": "is good for",
    "avoid_food": "should avoid eating",
    "food_avoided_by": "should be avoided with",
}

#: Chinese clause per relation type (``{h}``/``{t}`` placeholders).
ZH_TEMPLATES: dict[str, str] = {
    "has_symptom": "{h}的症状包括{t}",
    "possible_disease": "{h}可能提示{t}",
    "need_medical_test": "{h}可做的检查包括{t}",
    "can_check_disease": "{h}可用于检查{t}",
    "need_medication": "{h}的常用药物包括{t}",
    "possible_cure_disease": "{h}可用于治疗{t}",
    "has_complication": "{h}的并发症包括{t}",
    "belongs_to_department": "{h}的就诊科室是{t}",
    "department_of_disease": "{t}在{h}就诊",
    "good_food": "{h}宜吃{t}",
    "food_good_for": "{h}适合{t}患者食用",
    "avoid_food": "{h}忌吃{t}",
    "food_avoided_by": "{t}患者应忌食{h}",
}

#: Longest description / knowledge text attached to a rendered item, in words (CJK: characters).
MAX_NOTE_WORDS = 40


def is_zh(text: str) -> bool:
    """Whether ``text`` is Chinese (:func:`kgmind.text.detect_language`)."""
    return detect_language(text) == "zh"


def chunk_text(text: str, lc: int = 10, oc: int = 4) -> list[str]:
    """Split text into overlapping windows (HyKGE eq. 8).

    English text is split into words, Chinese text (see :func:`kgmind.text.detect_language`) into
    characters (whitespace dropped). Windows hold ``lc`` units and start every
    ``lc - oc`` units; the last window ends at the last unit.

    Args:
        text: The text (e.g. the hypothesis output).
        lc: Window length in units.
        oc: Overlap between consecutive windows.

    Returns:
        The chunks, ``[]`` for blank text.

    Raises:
        ValueError: ``lc`` < 1 or ``oc`` not in ``[0, lc)``.
    """
    if lc < 1 or not 0 <= oc < lc:
        raise ValueError("chunk_text needs lc >= 1 and 0 <= oc < lc")
    cjk = is_zh(text)
    units = [c for c in text if not c.isspace()] if cjk else text.split()
    if not units:
        return []
    sep = "" if cjk else " "
    if len(units) <= lc:
        return [sep.join(units)]
    stride = lc - oc
    starts = list(range(0, len(units) - lc + 1, stride))
    if starts[-1] + lc < len(units):
        starts.append(len(units) - lc)
    return [sep.join(units[s : s + lc]) for s in starts]


def count_tokens(text: str, tokenizer: Tokenizer | None = None) -> int:
    """Approximate the number of LLM tokens in ``text``.

    Args:
        text: Any text.
        tokenizer: Optional exact tokenizer (a callable returning the tokens).

    Returns:
        ``len(tokenizer(text))`` when given, else ``ceil(1.3 × words)`` over the
        non-CJK text plus one per CJK character.
    """
    if tokenizer is not None:
        return len(tokenizer(text))
    n_cjk = len(CJK.findall(text))
    rest = CJK.sub(" ", text)
    return n_cjk + math.ceil(1.3 * len(rest.split()))


def _truncate(text: str, limit: int = MAX_NOTE_WORDS) -> str:
    text = " ".join(text.split())
    if is_zh(text):
        return text if len(text) <= 2 * limit else text[: 2 * limit] + "…"
    words = text.split()
    return text if len(words) <= limit else " ".join(words[:limit]) + " …"


def _join_names(names: Sequence[str], zh: bool) -> str:
    if zh:
        return "、".join(names)
    if len(names) <= 2:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _clause(head: str, rel: str, tails: Sequence[str], zh: bool) -> str:
    t = _join_names(tails, zh)
    if zh:
        tpl = ZH_TEMPLATES.get(rel)
        return tpl.format(h=head, t=t) if tpl else f"{head} {rel.replace('_', ' ')} {t}"
    phrase = EN_PHRASES.get(rel, rel.replace("_", " "))
    return f"{head} {phrase} {t}"


def _clauses(triples: Sequence[tuple[str, str, str]], zh: bool) -> list[str]:
    """One clause per run of triples sharing head and relation; shared tail → joined heads."""
    if not triples:
        return []
    rels = {r for _, r, _ in triples}
    tails = {t for _, _, t in triples}
    heads = list(dict.fromkeys(h for h, _, _ in triples))
    if len(rels) == 1 and len(tails) == 1 and len(heads) > 1:
        rel = next(iter(rels))
        tail = next(iter(tails))
        if zh:
            return [_clause(_join_names(heads, zh), rel, [tail], zh)]
        return [f"{_join_names(heads, zh)} {EN_PHRASES.get(rel, rel.replace('_', ' '))} {tail}"]
    out: list[str] = []
    group: list[tuple[str, str, str]] = []
    for tr in triples:
        if group and (tr[0], tr[1]) != (group[0][0], group[0][1]):
            out.append(_clause(group[0][0], group[0][1], [g[2] for g in group], zh))
            group = []
        group.append(tr)
    out.append(_clause(group[0][0], group[0][1], [g[2] for g in group], zh))
    return out


def render_evidence(ev: Evidence) -> str:
    """One natural-language sentence for an evidence item, by template (no LLM).

    Relation types with a template (``has_symptom``, ``need_medication`` …) read
    naturally; others fall back to ``head relation words tail``. Chinese names get
    Chinese templates. HyKGE chains append the end entities' descriptions and KGCoT
    chains the knowledge behind their edges, each cut to :data:`MAX_NOTE_WORDS`.
    Items without triples (documents) keep their text.

    Args:
        ev: The item.

    Returns:
        The sentence.
    """
    if not ev.triples:
        return ev.text.strip()
    zh = is_zh("".join(h + t for h, _, t in ev.triples))
    clauses = _clauses(ev.triples, zh)
    sentence = "；".join(clauses) + "。" if zh else ", and ".join(clauses) + "."  # names keep their case
    notes: list[str] = []
    if ev.kind == "chain":
        for name, desc in (ev.meta.get("descriptions") or {}).items():
            notes.append(f"{name}：{_truncate(desc)}" if zh else f"About {name}: {_truncate(desc)}")
    if ev.kind == "kgcot":
        for k in dict.fromkeys(ev.meta.get("knowledge") or []):
            if k:
                notes.append(("依据：" if zh else "Source: ") + _truncate(k))
    if notes:
        sep = "" if zh else " "
        end = "。" if zh else "."
        sentence += sep + sep.join(n if n.endswith((".", "。", "…")) else n + end for n in notes)
    return sentence
