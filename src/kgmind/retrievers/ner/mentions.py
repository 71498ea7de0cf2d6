"""All mentions of a question: gazetteer ∪ embedding spans ∪ names given (an LLM's, a data set's).

:func:`extract_mentions` takes the union, filters characters, stop-words and degenerate
spans, and deduplicates. :func:`parse_entity_list` reads the entity lists of MindMap-style
answers (the data sets' stored ChatGPT NER).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Literal

from kgmind.models import Mention, normalize_name
from kgmind.retrievers.linker import EntityLinker, get_linker
from kgmind.retrievers.ner.cleaning import clean_mention
from kgmind.retrievers.ner.gazetteer import Gazetteer
from kgmind.retrievers.ner.spans import embedding_spans, span_threshold
from kgmind.stores.protocol import GraphStore
from kgmind.text import detect_language

__all__ = ["extract_mentions", "mask_spans", "parse_entity_list"]

_MARKERS = (
    "the extracted entities are",
    "extracted entities are",
    "the entities are",
    "entities:",
    "抽取的实体是",
    "提取的实体是",
    "实体是",
    "实体：",
)
_SPLIT = re.compile(r"<EntityMarker>|[,，、;；\n]")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)、])\s*")


def parse_entity_list(text: str) -> list[str]:
    """Read entities from a MindMap-style answer, tolerantly.

    Accepts ``<CLS>…<SEP>The extracted entities are a, b, c<EOS>``, the same without
    tags, ``<EntityMarker>`` separators, Chinese separators (，、；), bullet lists
    and a bare comma list.

    Args:
        text: The model's answer.

    Returns:
        Cleaned, deduplicated entity strings in order.
    """
    body = text
    low = body.casefold()
    cut_at = -1
    for marker in _MARKERS:
        pos = low.rfind(marker)
        if pos >= 0:
            cut_at = max(cut_at, pos + len(marker))
    if cut_at >= 0:
        body = body[cut_at:]
    elif "<SEP>" in body:
        body = body.rsplit("<SEP>", 1)[1]
    body = body.split("<EOS>", 1)[0]
    body = re.sub(r"</?(?:CLS|SEP|EOS)>", " ", body)
    out: list[str] = []
    seen: set[str] = set()
    for part in _SPLIT.split(body):
        part = _BULLET.sub("", part).strip().strip("\"'`")
        cleaned = clean_mention(part)
        if cleaned and normalize_name(cleaned) not in seen:
            seen.add(normalize_name(cleaned))
            out.append(cleaned)
    return out


def mask_spans(text: str, spans: Iterable[tuple[int, int]]) -> str:
    """``text`` with the characters of ``spans`` replaced by ``|`` (same length: offsets stay valid)."""
    chars = list(text)
    for start, end in spans:
        for i in range(start, end):
            chars[i] = "|"
    return "".join(chars)


def _dedupe(mentions: Sequence[Mention]) -> list[Mention]:
    by_text: dict[str, list[Mention]] = {}
    order: list[tuple[str, str | None]] = []
    best: dict[tuple[str, str | None], Mention] = {}
    for m in mentions:
        key = normalize_name(m.text)
        k = (key, m.entity_id)
        if k in best:
            if m.score > best[k].score:
                best[k] = m
            continue
        best[k] = m
        order.append(k)
        by_text.setdefault(key, []).append(m)
    out: list[Mention] = []
    for k in order:
        if k[1] is None and any(o.entity_id for o in by_text[k[0]]):
            continue  # the same text is already linked by the gazetteer or the embedding spans
        out.append(best[k])
    return out


def extract_mentions(
    text: str,
    store: GraphStore,
    *,
    extra: Sequence[str] = (),
    spans: Literal["always", "unnamed", "never"] = "always",
    language: str | None = None,
    linker: EntityLinker | None = None,
) -> list[Mention]:
    """All mentions of ``text``: gazetteer ∪ embedding spans ∪ ``extra``, filtered and deduplicated.

    Embedding spans cost one embedding pass over the question (MiniLM; e5 scores no
    spans by default, see :data:`kgmind.tuning.MAX_SPANS`), about half of English retrieval's
    time. They pay for themselves even when an LLM has named the mentions: without them
    GenMedGPT-5k evidence recall fell from 0.773 to 0.739 on the calibration split with
    the stored ChatGPT mentions, so they run by default.

    Args:
        text: The question.
        store: The KG (gazetteer, entity index).
        extra: More entity strings, e.g. from the LLM or the hypothesis call
            (``source="given"``).
        spans: Embedding spans: score n-grams against the entity index (needs the embedding
            model; spans the gazetteer matched are skipped): ``always``, ``never``, or
            ``unnamed`` = only when ``extra`` holds no usable mention.
        language: ``en`` or ``zh``; detected from ``text`` when ``None``.
        linker: The linker scoring embedding spans; default :func:`get_linker` of the
            store with e5 for Chinese text and the KG's own model otherwise.

    Returns:
        Gazetteer mentions, then embedding mentions, then the cleaned ``extra`` strings,
        without duplicates (an unlinked string is dropped when the same text is linked).
    """
    if spans not in ("always", "unnamed", "never"):
        raise ValueError(f"spans must be always, unnamed or never, not {spans!r}")
    lang = language or detect_language(text)
    gaz = Gazetteer.for_store(store)
    found = gaz.find_spans(text)
    out: list[Mention] = []
    for _, _, m in found:
        cleaned = clean_mention(m.text)
        if cleaned:
            out.append(m.model_copy(update={"text": cleaned}))
    named = [c for c in map(clean_mention, extra) if c]
    wanted = spans == "always" or (spans == "unnamed" and not named)
    if wanted and text.strip():
        if linker is None:
            linker = get_linker(store, "e5" if lang == "zh" else None)
        threshold = span_threshold(linker)
        masked = mask_spans(text, [(s, e) for s, e, _ in found])
        # the extra strings the linker cannot match exactly will be embedded when they
        # are linked: embed them now, in the spans' batch
        unmatched = [c for c in named if not linker.exact_ids(c)]
        out.extend(
            embedding_spans(masked, linker, threshold, language=lang, prefetch=unmatched, context=text)
        )
    for item in extra:
        cleaned = clean_mention(item)
        if cleaned:
            out.append(Mention(text=cleaned, source="given", score=1.0))
    return _dedupe(out)
