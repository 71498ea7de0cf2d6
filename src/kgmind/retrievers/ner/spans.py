"""Embedding spans: n-grams of a question whose vector is close to a KG entity name.

Candidate n-grams (English 1–4 words; Chinese jieba words and adjacent pairs) are
scored against the entity index and kept above δ_span. To bound the cost per question
(each new span is one embedding), spans the gazetteer matched are masked out, n-grams
starting or ending with a stop-word or holding a conjunction are never candidates, at
most :data:`kgmind.tuning.MAX_SPANS` candidates are scored (shortest first), and span
vectors and nearest-entity results are cached by the linker (LRU).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from kgmind import tuning
from kgmind.models import Mention, normalize_name
from kgmind.retrievers.linker import EntityLinker
from kgmind.retrievers.ner.cleaning import EN_JOINERS, EN_STOPWORDS, PUNCT, ZH_STOPWORDS, clean_mention
from kgmind.retrievers.ner.gazetteer import Gazetteer
from kgmind.text import detect_language

__all__ = ["candidate_spans", "contextual_span_embedder", "embedding_spans", "span_threshold"]

_EN_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9'\-]*")


def candidate_spans(
    text: str,
    *,
    language: str | None = None,
    max_words: int = 4,
    max_candidates: int = 128,
    cut: Any = None,
) -> list[tuple[int, int, str]]:
    """Candidate mention spans of ``text``: ``(start, end, span)``.

    English: 1–``max_words``-word n-grams inside punctuation-free segments that
    neither start nor end with a stop-word nor hold a conjunction (``and``, ``or``…).
    Chinese: jieba words and adjacent word pairs (no stop-words, no punctuation).
    Spans that :func:`clean_mention` rejects are dropped; the first
    ``max_candidates`` distinct spans are returned.

    Args:
        text: The text.
        language: ``en`` or ``zh``; detected when ``None``.
        max_words: Longest English n-gram.
        max_candidates: Most spans returned.
        cut: A callable segmenting Chinese text (default: jieba's global ``lcut``).

    Returns:
        Distinct candidate spans in text order (shorter first at one position).
    """
    lang = language or detect_language(text)
    found = _Candidates(text, max_candidates)
    if lang == "zh":
        _zh_candidates(text, cut, found.push)
    else:
        _en_candidates(text, max_words, found.push)
    return found.spans


class _Candidates:
    """Distinct clean spans of ``text`` in the order pushed, up to ``cap``."""

    def __init__(self, text: str, cap: int) -> None:
        self.text, self.cap = text, cap
        self.spans: list[tuple[int, int, str]] = []
        self.seen: set[str] = set()

    def push(self, start: int, end: int) -> bool:
        """Add ``text[start:end]`` if it is a clean, new span; whether there is room for more."""
        span = self.text[start:end]
        cleaned = clean_mention(span)
        if cleaned is None or cleaned != span:
            return len(self.spans) < self.cap
        key = normalize_name(span)
        if key not in self.seen:
            self.seen.add(key)
            self.spans.append((start, end, span))
        return len(self.spans) < self.cap


def _zh_candidates(text: str, cut: Any, push: Callable[[int, int], bool]) -> None:
    """Push jieba words and adjacent word pairs (no stop-words, no punctuation) until ``push`` is full."""
    if cut is None:
        import jieba

        logging.getLogger("jieba").setLevel(logging.WARNING)
        cut = jieba.lcut
    words: list[tuple[int, int, str]] = []
    pos = 0
    for tok in cut(text):
        words.append((pos, pos + len(tok), tok))
        pos += len(tok)

    def good(tok: str) -> bool:
        return (
            bool(tok.strip())
            and not any(ch in PUNCT or ch.isspace() for ch in tok)
            and (tok not in ZH_STOPWORDS)
        )

    for i, (s, e, tok) in enumerate(words):
        if not good(tok):
            continue
        if not push(s, e):
            break
        if i + 1 < len(words) and good(words[i + 1][2]) and not push(s, words[i + 1][1]):
            break


def _en_candidates(text: str, max_words: int, push: Callable[[int, int], bool]) -> None:
    """Push the n-grams of punctuation-free segments (no stop-word ends, no joiner) until ``push`` is full."""
    tokens = [(m.start(), m.end(), m.group(0)) for m in _EN_TOKEN.finditer(text)]
    segments: list[list[tuple[int, int, str]]] = []
    for tok in tokens:
        if segments and segments[-1] and not text[segments[-1][-1][1] : tok[0]].strip():
            segments[-1].append(tok)
        else:
            segments.append([tok])
    for seg in segments:
        for i in range(len(seg)):
            if seg[i][2].casefold() in EN_STOPWORDS:
                continue
            for n in range(1, max_words + 1):
                if i + n > len(seg):
                    break
                if seg[i + n - 1][2].casefold() in EN_JOINERS:
                    break  # every longer n-gram from i holds the joiner too
                if seg[i + n - 1][2].casefold() in EN_STOPWORDS:
                    continue
                if not push(seg[i][0], seg[i + n - 1][1]):
                    return


def _span_units(span: str, lang: str) -> int:
    """Length of a candidate for the shortest-first cap: words (English) or characters (Chinese)."""
    return len(span) if lang == "zh" else len(span.split())


def contextual_span_embedder(linker: EntityLinker) -> Any:
    """The linker embedder's ``embed_in_context`` method, or ``None`` when it has none."""
    fn = getattr(linker.embedder, "embed_in_context", None)
    return fn if callable(fn) else None


def span_threshold(linker: EntityLinker, *, contextual: bool | None = None) -> float:
    """The calibrated δ_span of ``linker``'s model for per-span or contextual span vectors.

    Args:
        linker: The linker whose model and embedder decide.
        contextual: Force the kind; ``None``: contextual when the embedder supports it.

    Returns:
        The threshold.
    """
    if contextual is None:
        contextual = contextual_span_embedder(linker) is not None
    if contextual and linker.model in tuning.CONTEXT_SPAN_THRESHOLD:
        return tuning.CONTEXT_SPAN_THRESHOLD[linker.model]
    return tuning.SPAN_THRESHOLD.get(linker.model, tuning.SPAN_THRESHOLD_FALLBACK)


def embedding_spans(
    text: str,
    linker: EntityLinker,
    threshold: float,
    *,
    language: str | None = None,
    max_candidates: int | None = None,
    prefetch: Sequence[str] = (),
    context: str | None = None,
) -> list[Mention]:
    """Spans of ``text`` whose embedding is close to a KG entity name.

    Per-span (default): candidate spans (:func:`candidate_spans`) are capped to
    ``max_candidates`` (shortest first, then text order: single words and pairs are
    the likeliest names), embedded in one batch through the linker's caches and
    compared with its entity index. Contextual (``context`` given and the embedder
    has ``embed_in_context``): ``context`` — the unmasked text, same length as
    ``text`` — is embedded once and every candidate span is scored by the mean of
    its token states (no cap unless ``max_candidates`` is given); use
    :func:`span_threshold` for the matching δ. Either way, spans whose nearest entity
    scores ≥ ``threshold`` are kept, best first, without overlaps.

    Args:
        text: The question (English or Chinese).
        linker: The linker of the KG (its embedder and index are used).
        threshold: δ_span, minimum cosine.
        language: ``en`` or ``zh``; detected from ``text`` when ``None``.
        max_candidates: Most spans scored; default :data:`kgmind.tuning.MAX_SPANS` of the
            linker's model.
        prefetch: More texts to embed in the spans' batch into the linker's cache
            (e.g. the mentions it will link next): one model call instead of two. With
            no span to score they are left to the linker, which embeds them only if
            they can still change the linked entities (:meth:`EntityLinker.link`).
        context: The unmasked text for contextual span vectors (see above).

    Returns:
        Mentions with ``source="embedding"``, ``entity_id`` and ``score`` set, in text order.

    Raises:
        ValueError: ``context`` is not as long as ``text``.
    """
    lang = language or detect_language(text)
    cut = Gazetteer.for_store(linker.store).cut if lang == "zh" else None
    in_context = contextual_span_embedder(linker) if context is not None else None
    if context is not None and len(context) != len(text):
        raise ValueError("context must be the unmasked text, as long as text")
    if in_context is not None and max_candidates is None:
        cap = 1 << 30
    else:
        cap = (
            max_candidates
            if max_candidates is not None
            else tuning.MAX_SPANS.get(linker.model, tuning.MAX_SPANS_FALLBACK)
        )
    if cap <= 0:
        return []
    cands = candidate_spans(text, language=lang, cut=cut)
    if len(cands) > cap:
        ranked = sorted(range(len(cands)), key=lambda i: (_span_units(cands[i][2], lang), cands[i][0]))
        keep = set(ranked[: max(0, cap)])
        cands = [c for i, c in enumerate(cands) if i in keep]
    if not cands:  # nothing to batch them with: the linker embeds them when (and if) it needs them
        return []
    if in_context is not None:
        hits = _contextual_nearest(linker, in_context, context or text, cands, prefetch)
    else:
        if prefetch:
            linker.embed([*(c[2] for c in cands), *prefetch])
        hits = linker.nearest([c[2] for c in cands], k=1)
    return _best_without_overlaps(len(text), cands, hits, threshold)


def _contextual_nearest(
    linker: EntityLinker,
    in_context: Any,
    context: str,
    cands: Sequence[tuple[int, int, str]],
    prefetch: Sequence[str],
) -> list[list[tuple[str, float]]]:
    """Nearest entity per span from one contextual pass over ``context`` (the ``prefetch`` texts cached)."""
    todo = linker.uncached(prefetch)
    got = in_context(context, [(a, b) for a, b, _ in cands], todo)
    linker.remember(todo, got.extra)
    vecs = got.spans
    found = linker.index.search(vecs, 1)
    return [row if float(np.abs(v).sum()) > 0 else [] for row, v in zip(found, vecs, strict=True)]


def _best_without_overlaps(
    length: int,
    cands: Sequence[tuple[int, int, str]],
    hits: Sequence[list[tuple[str, float]]],
    threshold: float,
) -> list[Mention]:
    """The spans whose nearest entity scores ≥ ``threshold``, best first without overlaps, in text order."""
    scored = [
        (row[0][1], start, end, span, row[0][0])
        for (start, end, span), row in zip(cands, hits, strict=True)
        if row and row[0][1] >= threshold
    ]
    scored.sort(key=lambda x: (-x[0], x[1]))
    taken = bytearray(length)
    chosen: list[tuple[int, int, Mention]] = []
    for score, start, end, span, eid in scored:
        if any(taken[start:end]):
            continue
        taken[start:end] = b"\x01" * (end - start)
        chosen.append(
            (start, end, Mention(text=span, source="embedding", entity_id=eid, score=min(1.0, score)))
        )
    chosen.sort(key=lambda c: c[0])
    return [m for _, _, m in chosen]
