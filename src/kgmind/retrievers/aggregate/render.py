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
from collections.abc import Callable, Mapping, Sequence
from importlib import resources
from typing import Any

from kgmind.models import Evidence
from kgmind.relations import stored_name
from kgmind.text import CJK, detect_language

__all__ = [
    "EN_PHRASES",
    "EN_ROLE_PHRASES",
    "MAX_NOTE_WORDS",
    "ZH_ROLE_TEMPLATES",
    "ZH_TEMPLATES",
    "Tokenizer",
    "chunk_text",
    "count_tokens",
    "is_zh",
    "render_evidence",
]

#: An exact tokenizer: text in, its tokens out (only their number is used).
Tokenizer = Callable[[str], Sequence[Any]]

#: English clause per medical reading (:attr:`kgmind.relations.Reading.phrase_key`): ``{h} <phrase> {t}``.
#: By role and direction, not by name, so every KG's symptom relation reads the same.
EN_ROLE_PHRASES: dict[str, str] = {
    "disease>symptom": "may present with",
    "symptom>disease": "may be a sign of",
    "disease>test": "can be checked with",
    "test>disease": "can help diagnose",
    "disease>medication": "can be treated with",
    "medication>disease": "may be used to treat",
}

#: Chinese clause per medical reading (``{h}``/``{t}`` placeholders).
ZH_ROLE_TEMPLATES: dict[str, str] = {
    "disease>symptom": "{h}的症状包括{t}",
    "symptom>disease": "{h}可能提示{t}",
    "disease>test": "{h}可做的检查包括{t}",
    "test>disease": "{h}可用于检查{t}",
    "disease>medication": "{h}的常用药物包括{t}",
    "medication>disease": "{h}可用于治疗{t}",
}


def _load_named_phrases() -> tuple[dict[str, str], dict[str, str]]:
    """Phrases of common relations without a medical role, by name (``data/relation_phrases.tsv``)."""
    en: dict[str, str] = {}
    zh: dict[str, str] = {}
    text = resources.files("kgmind.data").joinpath("relation_phrases.tsv").read_text(encoding="utf-8")
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        name, en_phrase, zh_template = line.split("\t")
        en[name], zh[name] = en_phrase, zh_template
    return en, zh


#: English clause (``{h} <phrase> {t}``) and Chinese template of named relations without a role.
EN_PHRASES, ZH_TEMPLATES = _load_named_phrases()

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


def _clause(head: str, rel: str, tails: Sequence[str], zh: bool, key: str = "") -> str:
    """One clause: by the reading's medical role, else by name; a reverse walk with no role reads forward."""
    relation, reverse = stored_name(rel)
    if zh:
        tpl = ZH_ROLE_TEMPLATES.get(key) or ZH_TEMPLATES.get(relation)
    else:
        phrase = EN_ROLE_PHRASES.get(key) or EN_PHRASES.get(relation, relation.replace("_", " "))
    if reverse and not key:  # no role: say the stored fact, ``tails <relation> head``
        head, tails = _join_names(tails, zh), [head]
    t = _join_names(tails, zh)
    if zh:
        return tpl.format(h=head, t=t) if tpl else f"{head} {relation.replace('_', ' ')} {t}"
    return f"{head} {phrase} {t}"


def _clauses(triples: Sequence[tuple[str, str, str]], zh: bool, readings: Mapping[str, str]) -> list[str]:
    """One clause per run of triples sharing head and relation; shared tail → joined heads."""
    if not triples:
        return []
    rels = {r for _, r, _ in triples}
    tails = {t for _, _, t in triples}
    heads = list(dict.fromkeys(h for h, _, _ in triples))
    if len(rels) == 1 and len(tails) == 1 and len(heads) > 1:
        rel = next(iter(rels))
        tail = next(iter(tails))
        if zh or not stored_name(rel)[1] or readings.get(rel):
            return [_clause(_join_names(heads, zh), rel, [tail], zh, readings.get(rel, ""))]
    out: list[str] = []
    group: list[tuple[str, str, str]] = []
    for tr in triples:
        if group and (tr[0], tr[1]) != (group[0][0], group[0][1]):
            out.append(
                _clause(group[0][0], group[0][1], [g[2] for g in group], zh, readings.get(group[0][1], ""))
            )
            group = []
        group.append(tr)
    out.append(_clause(group[0][0], group[0][1], [g[2] for g in group], zh, readings.get(group[0][1], "")))
    return out


def _readings_by_type(ev: Evidence) -> dict[str, str]:
    """Readings from the entity types an item carries, for items built without roles (older checkpoints).

    A relation whose triples all join a disease and a symptom, test or drug (either way)
    reads by that role; others by name.
    """
    types = ev.entity_types
    keys: dict[str, set[str]] = {}
    for h, r, t in ev.triples:
        keys.setdefault(r, set()).add(f"{types.get(h, '')}>{types.get(t, '')}")
    return {r: k.pop() for r, k in keys.items() if len(k) == 1 and next(iter(k)) in EN_ROLE_PHRASES}


def render_evidence(ev: Evidence) -> str:
    """One natural-language sentence for an evidence item, by template (no LLM).

    Relations with a medical role read by role and direction (``Fever may be a sign of
    Measles`` for any symptom relation walked toward the disease, however it is named);
    named relations without a role use ``data/relation_phrases.tsv``; others fall back to
    ``head relation words tail`` (a reverse walk says the stored fact). Chinese names get
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
    clauses = _clauses(ev.triples, zh, ev.readings or _readings_by_type(ev))
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
