"""Evidence aggregation: rerank, dedupe, prune, fit a token budget, number and render.

:func:`aggregate_evidence` turns the raw output of the exploration tools into the
numbered, rendered evidence the LLM sees, with zero LLM calls:

1. **render** every item by template into one natural-language sentence
   (:func:`render_evidence`; the relation ids stay on the item);
2. **rerank**: a reranker scores each item against the question and the chunks of
   the hypothesis (HyKGE eq. 8: windows of ``lc=10`` words overlapping by ``oc=4``,
   :func:`chunk_text`); the final score is the rerank score plus ``prior_weight`` ×
   the exploration score normalised per kind (so the disease-vote order of ranked
   neighbor lines is not thrown away). Without a reranker the normalised
   exploration score alone orders the items (ties keep the input order).
   Two rerankers ship. :class:`EntityVectorReranker` (the default of
   :func:`aggregate_evidence`) embeds only the hypothesis chunks — by default not the
   question, which scored worse (see the class) — and compares them with the name
   vectors the entity index already holds for each item's entities: a handful of
   embeddings per question instead of one per evidence sentence.
   :class:`EmbeddingReranker` embeds every evidence sentence and scores against the
   question and the chunks (HyKGE-faithful, ~100× slower on CPU);
3. **dedupe** (same relation-id set or same text) and **prune** items whose edges are
   a subset of an item already kept;
4. **budget**: keep items in rank order while they fit ``budget_tokens``
   (:func:`count_tokens`), or, given an ``EvidenceValue`` (the graph's ``full`` mode),
   by expected value per token with a floor (:func:`kgmind.retrievers.packing.pack_by_value`);
   a neighbor line that does not fit is cut to the tails that do. A fact is paid for
   once: an item loses the triples whose two entities an item kept before it already
   joins (a relation and its inverse are one fact) and the descriptions or sources
   already shown, and is dropped when nothing new is left
   (five shortest paths that share their first hops otherwise repeat them five times);
5. **number** per kind in the order kept: ``P1…`` paths, ``N1…`` neighbor lines, ``C1…``
   HyKGE chains, ``K1…`` KGCoT chains, ``D1…`` documents.

Token counts are an approximation (no tokenizer can be downloaded offline):
``ceil(1.3 × words)`` for non-CJK text plus one token per CJK character; pass a
``tokenizer`` (any ``str -> sequence`` callable, e.g. the local LLM's) for exact counts. The
approximation undercounts medical names about twofold, so the full graph passes its local
model's tokenizer (:func:`kgmind.llm.local_tokenizer`).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

import numpy as np

from kgmind.models import EVIDENCE_PREFIX, Evidence, normalize_name
from kgmind.retrievers.embeddings import VectorCache
from kgmind.retrievers.exploration import PIPELINE
from kgmind.retrievers.packing import ANSWER_TYPES, EvidenceValue, pack_by_value
from kgmind.text import CJK, detect_language

if TYPE_CHECKING:
    from kgmind.retrievers.entity_index import EntityIndex

__all__ = [
    "EmbeddingReranker",
    "EntityVectorReranker",
    "EvidenceReranker",
    "Reranker",
    "ShownFacts",
    "aggregate_evidence",
    "chunk_text",
    "count_tokens",
    "dedupe_evidence",
    "default_reranker",
    "fit_budget",
    "format_evidence",
    "number_evidence",
    "prune_redundant",
    "rank_candidates",
    "render_evidence",
    "rerank_evidence",
    "select_evidence",
]

Tokenizer = Callable[[str], Sequence[Any]]

#: Tokens added per item for its citation id (``"N12: "``).
ID_OVERHEAD = 2

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


# -- text helpers --------------------------------------------------------------------
def _is_zh(text: str) -> bool:
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
    cjk = _is_zh(text)
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
    if _is_zh(text):
        return text if len(text) <= 2 * limit else text[: 2 * limit] + "…"
    words = text.split()
    return text if len(words) <= limit else " ".join(words[:limit]) + " …"


# -- rendering -----------------------------------------------------------------------
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
    zh = _is_zh("".join(h + t for h, _, t in ev.triples))
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


def format_evidence(evidence: Iterable[Evidence]) -> str:
    """The prompt block: one ``ID: text`` line per item (numbered, rendered evidence)."""
    return "\n".join(f"{ev.id}: {ev.text}" if ev.id else ev.text for ev in evidence)


# -- rerankers -----------------------------------------------------------------------
@runtime_checkable
class Reranker(Protocol):
    """Scores evidence sentences against query texts (higher = more relevant).

    Implement it to plug in a cross-encoder: ``score(queries, texts)`` returns one
    float per text (e.g. the best score over the queries).
    """

    def score(self, queries: Sequence[str], texts: Sequence[str]) -> list[float]:
        """One relevance score per text."""
        ...


class _Embedder(Protocol):
    def embed_documents(self, texts: list[str]) -> np.ndarray: ...

    def embed_queries(self, texts: list[str]) -> np.ndarray: ...


class EmbeddingReranker:
    """Bi-encoder reranker: a text's score is its best cosine over the queries.

    Evidence sentences repeat across questions (the same disease's test list), so
    their vectors are kept in an LRU cache of ``cache_size`` texts.

    Args:
        embedder: An embedder (``embed_queries``/``embed_documents`` returning
            L2-normalised arrays) or the name of one for
            :func:`kgmind.retrievers.embeddings.get_embedder` (loaded lazily).
        cache_size: Evidence-text vectors kept (``0``: no cache).
    """

    def __init__(self, embedder: _Embedder | str = "minilm", *, cache_size: int = 8192) -> None:
        self._embedder: _Embedder | None = None if isinstance(embedder, str) else embedder
        self._name = embedder if isinstance(embedder, str) else ""
        self.cache_size = cache_size
        self._cache = VectorCache(cache_size)

    @property
    def embedder(self) -> _Embedder:
        """The embedder, loaded on first use when given by name."""
        if self._embedder is None:
            from kgmind.retrievers.embeddings import get_embedder

            self._embedder = get_embedder(self._name)
        return self._embedder

    def _doc_vectors(self, texts: Sequence[str]) -> np.ndarray:
        return self._cache.fetch(texts, self.embedder.embed_documents)

    def score(self, queries: Sequence[str], texts: Sequence[str]) -> list[float]:
        """Best cosine of each text over the queries (``0.0`` each when no query)."""
        if not texts:
            return []
        queries = [q for q in queries if q.strip()]
        if not queries:
            return [0.0] * len(texts)
        q = np.asarray(self.embedder.embed_queries(list(queries)), dtype=np.float32)
        d = self._doc_vectors(texts)
        return [float(x) for x in (d @ q.T).max(axis=1)]


@runtime_checkable
class EvidenceReranker(Protocol):
    """Scores evidence items (not only their text) against query texts (higher = more relevant)."""

    def score_evidence(self, queries: Sequence[str], evidence: Sequence[Evidence]) -> list[float]:
        """One relevance score per item."""
        ...


class EntityVectorReranker:
    """Cheap reranker: hypothesis chunks vs the entity-index vectors of each item's entities.

    Every evidence entity already has its name (and alias) vectors in the
    :class:`~kgmind.retrievers.entity_index.EntityIndex`, so no evidence text is
    embedded. The queries are ``[question, *hypothesis chunks]`` (as
    :func:`rerank_evidence` passes them); the chunks are embedded in one batch
    through an LRU cache. What happens to the question is the ``question`` setting:

    - ``ignore`` (default): it is not used. The evidence already starts from the
      entities the question linked to; scoring tails against the question favours
      lines that restate its symptoms over the tests, drugs and diseases an answer
      needs. Without a hypothesis every item scores 0 and the exploration order
      stands. Measured on GenMedGPT-5k dev, 800-token budget, ChatGPT entities:
      with the local LLM's hypotheses (30 questions, seed 1) evidence recall /
      disease hit 0.681 / 0.778 ignoring the question, 0.647 / 0.741 embedding it,
      0.678 / 0.741 with no reranking; without a hypothesis (800 questions, seed 1)
      0.688 with no reranking vs 0.654 embedding the question and 0.637 with anchors.
    - ``embed``: embedded like the chunks (HyKGE eq. 8 scores against question and
      chunks).
    - ``anchors``: stood in for by the index vectors of the *anchor* entities — the
      first entity of each item, i.e. the linked entities the explorations started
      from (no embedding).

    An entity's relevance is its best cosine over the query vectors and its names;
    an item's score is ``tail_max_weight × max + (1 − tail_max_weight) × mean`` over
    its *tail* entities (every entity but the first; all of them when the item has
    one). Items without known entities score 0.

    Args:
        index: The entity index whose vectors are used (its ``model`` names the
            embedder the queries need).
        embedder: Query embedder; default :func:`~kgmind.retrievers.embeddings.get_embedder`
            of ``index.model`` (loaded on first use).
        tail_max_weight: Blend between the best and the mean tail relevance.
        cache_size: Query vectors kept.
        question: ``ignore``, ``embed`` or ``anchors`` (see above).
    """

    def __init__(
        self,
        index: EntityIndex,
        embedder: _Embedder | None = None,
        *,
        tail_max_weight: float = 0.5,
        cache_size: int = 1024,
        question: Literal["ignore", "embed", "anchors"] = "ignore",
    ) -> None:
        if not 0.0 <= tail_max_weight <= 1.0:
            raise ValueError("tail_max_weight must be in [0, 1]")
        if question not in ("ignore", "embed", "anchors"):
            raise ValueError("question must be 'ignore', 'embed' or 'anchors'")
        self.index = index
        self.question = question
        self._embedder = embedder
        self.tail_max_weight = tail_max_weight
        self.cache_size = cache_size
        self._cache = VectorCache(cache_size)

    @property
    def embedder(self) -> _Embedder:
        """The query embedder (the index's model unless one was given)."""
        if self._embedder is None:
            from kgmind.retrievers.embeddings import get_embedder

            self._embedder = get_embedder(self.index.model)
        return self._embedder

    def query_vectors(self, queries: Sequence[str]) -> np.ndarray:
        """Embed ``queries`` (one batch for the uncached ones) as ``(n, dim)`` float32."""
        return self._cache.fetch(queries, self.embedder.embed_queries)

    def entity_relevance(self, queries: Sequence[str], entity_ids: Sequence[str]) -> dict[str, float]:
        """``{entity id: best cosine over queries × its names}`` for the ids the index knows."""
        if not queries:
            return {}
        return self._relevance(self.query_vectors(queries), entity_ids)

    def _relevance(self, q: np.ndarray, entity_ids: Sequence[str]) -> dict[str, float]:
        uniq = list(dict.fromkeys(entity_ids))
        vecs, groups = self.index.entity_vectors(uniq)
        if not len(vecs) or not len(q):
            return {}
        best_row = (vecs @ q.T).max(axis=1)
        return {eid: float(best_row[g].max()) for eid, g in zip(uniq, groups, strict=True) if g}

    def _question_vectors(self, queries: Sequence[str], evidence: Sequence[Evidence]) -> np.ndarray:
        """Query vectors: the embedded chunks, plus the question as the ``question`` setting says."""
        question, chunks = queries[0], [c for c in queries[1:] if c.strip()]
        parts: list[np.ndarray] = []
        texts = list(chunks)
        if self.question == "anchors":
            heads = list(dict.fromkeys(ev.entity_ids[0] for ev in evidence if ev.entity_ids))
            anchors, _ = self.index.entity_vectors(heads)
            if len(anchors):
                parts.append(anchors)
            elif question.strip():
                texts.insert(0, question)  # no known anchor: fall back to the question's text
        elif self.question == "embed" and question.strip():
            texts.insert(0, question)
        if texts:
            parts.append(self.query_vectors(texts))
        if not parts:
            return np.zeros((0, 0), dtype=np.float32)
        return np.vstack(parts) if len(parts) > 1 else parts[0]

    def score_evidence(self, queries: Sequence[str], evidence: Sequence[Evidence]) -> list[float]:
        """One score per item (see the class docstring); ``0.0`` each when no query.

        ``queries[0]`` is the question, the rest hypothesis chunks (blank ones ignored).
        """
        if not evidence or not any(q.strip() for q in queries):
            return [0.0] * len(evidence)
        q = self._question_vectors(list(queries), evidence)
        if not len(q):
            return [0.0] * len(evidence)
        rel = self._relevance(q, [e for ev in evidence for e in ev.entity_ids])
        out: list[float] = []
        for ev in evidence:
            ids = ev.entity_ids[1:] if len(ev.entity_ids) > 1 else ev.entity_ids
            vals = [rel[e] for e in ids if e in rel]
            if not vals:
                out.append(0.0)
                continue
            w = self.tail_max_weight
            out.append(w * max(vals) + (1.0 - w) * sum(vals) / len(vals))
        return out


_default_rerankers: OrderedDict[int, EntityVectorReranker] = OrderedDict()
_default_lock = threading.Lock()


#: What the default reranker does with the question (see :class:`EntityVectorReranker`); fitted on
#: the calibration split by ``benchmarks/calibrate_reranker.py``.
DEFAULT_QUESTION_MODE: Literal["ignore", "embed", "anchors"] = "ignore"


def default_reranker(
    evidence: Sequence[Evidence], question: Literal["ignore", "embed", "anchors"] | None = None
) -> EntityVectorReranker | None:
    """The :class:`EntityVectorReranker` for ``evidence``, or ``None`` when no index fits.

    Uses the entity index already loaded in this process that knows most of the
    evidence's entities (:func:`~kgmind.retrievers.entity_index.find_cached_index`);
    nothing is loaded or built here. One reranker (and query cache) per index.
    ``question`` is its question mode (``None``: :data:`DEFAULT_QUESTION_MODE`; a
    calibration run passes the others).
    """
    from kgmind.retrievers.entity_index import find_cached_index

    index = find_cached_index(e for ev in evidence for e in ev.entity_ids)
    if index is None:
        return None
    with _default_lock:
        mode = question or DEFAULT_QUESTION_MODE
        rr = _default_rerankers.get(id(index))
        if rr is None or rr.index is not index or rr.question != mode:
            rr = EntityVectorReranker(index, question=mode)
            _default_rerankers[id(index)] = rr
            while len(_default_rerankers) > 8:
                _default_rerankers.popitem(last=False)
        return rr


# -- pipeline steps ------------------------------------------------------------------
def _normalised_prior(evidence: Sequence[Evidence]) -> list[float]:
    top: dict[str, float] = {}
    for ev in evidence:
        top[ev.kind] = max(top.get(ev.kind, 0.0), ev.score)
    return [ev.score / top[ev.kind] if top[ev.kind] > 0 else 0.0 for ev in evidence]


def rerank_evidence(
    evidence: Sequence[Evidence],
    question: str,
    hypothesis: str = "",
    *,
    reranker: Reranker | EvidenceReranker | None = None,
    prior_weight: float = 0.5,
) -> list[Evidence]:
    """Score and sort evidence (copies; ``meta`` gains ``prior_score``/``rerank_score``).

    Args:
        evidence: Items with rendered ``text``.
        question: The user question.
        hypothesis: The hypothesis output, chunked with :func:`chunk_text`.
        reranker: Scores items (:class:`EvidenceReranker`) or their texts
            (:class:`Reranker`) against ``[question, *chunks]``; ``None``: prior only.
        prior_weight: Weight of the per-kind normalised exploration score.

    Returns:
        New items sorted by final score (stable on ties).
    """
    prior = _normalised_prior(evidence)
    if reranker is not None and evidence:
        queries = [question, *chunk_text(hypothesis)] if hypothesis else [question]
        if isinstance(reranker, EvidenceReranker):
            rr = reranker.score_evidence(queries, evidence)
        else:
            rr = reranker.score(queries, [ev.text for ev in evidence])
    else:
        rr = [0.0] * len(evidence)
    out = []
    for ev, p, r in zip(evidence, prior, rr, strict=True):
        final = r + prior_weight * p if reranker is not None else p
        meta = {**ev.meta, "prior_score": ev.score, "rerank_score": r}
        out.append(ev.model_copy(update={"score": final, "meta": meta}))
    order = sorted(range(len(out)), key=lambda i: -out[i].score)
    return [out[i] for i in order]


def dedupe_evidence(evidence: Sequence[Evidence]) -> list[Evidence]:
    """Drop items repeating an earlier item's relation-id set or (normalised) text."""
    seen_rel: set[frozenset[str]] = set()
    seen_text: set[str] = set()
    out: list[Evidence] = []
    for ev in evidence:
        key = frozenset(ev.relation_ids)
        text = " ".join(ev.text.split()).casefold()
        if (key and key in seen_rel) or (text and text in seen_text):
            continue
        if key:
            seen_rel.add(key)
        if text:
            seen_text.add(text)
        out.append(ev)
    return out


def prune_redundant(evidence: Sequence[Evidence]) -> list[Evidence]:
    """Drop items whose edges are all in one item kept before them (no new facts)."""
    kept: list[Evidence] = []
    kept_sets: list[frozenset[str]] = []
    for ev in evidence:
        s = frozenset(ev.relation_ids)
        if s and any(s <= k for k in kept_sets):
            continue
        kept.append(ev)
        kept_sets.append(s)
    return kept


def _cut_line(ev: Evidence, n: int) -> Evidence:
    """The neighbor line ``ev`` (one head, many tails) cut to its first ``n`` tails."""
    cut = ev.model_copy(
        update={
            "triples": ev.triples[:n],
            "relation_ids": ev.relation_ids[:n],
            "entity_ids": ev.entity_ids[: n + 1],
            "meta": {**ev.meta, "truncated_from": len(ev.triples)},
        }
    )
    return cut.model_copy(update={"text": render_evidence(cut)})


def _cuttable(ev: Evidence) -> bool:
    return (
        ev.kind == "neighbor"
        and len(ev.triples) > 1
        and len({h for h, _, _ in ev.triples}) == 1
        and len(ev.entity_ids) == len(ev.triples) + 1
    )


def fit_budget(
    evidence: Sequence[Evidence],
    budget_tokens: int,
    *,
    render: Callable[[Evidence], str] | None = None,
    tokenizer: Tokenizer | None = None,
    id_overhead: int = ID_OVERHEAD,
    stop_at_first_miss: bool = False,
    truncate: bool = True,
    share_facts: bool = False,
) -> list[Evidence]:
    """Keep items in order while their rendered total fits the token budget.

    Each item costs ``count_tokens(render(item)) + id_overhead``. An item that does
    not fit is skipped, so later, shorter ones may still fit; ``stop_at_first_miss``
    keeps only the leading run instead (the evaluation's baselines, whose units are
    ordered documents). With ``truncate``:

    * a neighbor line (one head, many tails) that does not fit is first cut to the
      longest prefix of its tails that does;
    * if nothing at all fits, the first item is kept with its rendered text cut to
      the longest run of whole words (Chinese: characters) that fits, marked
      ``meta["truncated"] = True``, so a caller never gets nothing only because its
      first unit is long. Its ``text`` is then that cut rendering.

    Args:
        evidence: Items in rank order.
        budget_tokens: Token budget for all items together.
        render: The text the LLM sees for an item (default: its ``text``).
        tokenizer: Optional exact tokenizer for :func:`count_tokens`.
        id_overhead: Tokens added per item for its citation id (``"N12: "``).
        stop_at_first_miss: Stop at the first item that does not fit.
        truncate: Cut neighbor lines at the budget edge, and the first item when
            nothing fits.
        share_facts: Show each fact once (:meth:`ShownFacts.without_shown`): items lose what
            the items kept before them already show, and are re-rendered by template.

    Returns:
        The kept (possibly cut) items, in order.
    """
    show = render or _text_of

    def cost(ev: Evidence) -> int:
        return count_tokens(show(ev), tokenizer) + id_overhead

    out: list[Evidence] = []
    used = 0
    shown = ShownFacts()
    for item in evidence:
        ev = shown.without_shown(item) if share_facts else item
        if ev is None:
            continue
        kept: Evidence | None = None
        if used + cost(ev) <= budget_tokens:
            kept = ev
        elif truncate:
            kept = _longest_fitting_line(ev, budget_tokens - used, cost)
        if kept is not None:
            out.append(kept)
            used += cost(kept)
            if share_facts:
                shown.add(kept)
        if kept is not ev and stop_at_first_miss:
            break
    if not out and evidence and truncate:
        first = _cut_to_words(evidence[0], show(evidence[0]), budget_tokens - id_overhead, tokenizer)
        if first is not None:
            out.append(first)
    return out


def _text_of(ev: Evidence) -> str:
    return ev.text


def _fact(head: str, tail: str) -> frozenset[str]:
    """The pair of entities a triple joins: ``A has_symptom B`` and ``B possible_disease A`` are one fact."""
    return frozenset((normalize_name(head), normalize_name(tail)))


class ShownFacts:
    """The facts, descriptions and sources the evidence kept so far already shows."""

    def __init__(self) -> None:
        self.facts: set[frozenset[str]] = set()
        self.notes: set[str] = set()
        # an item asked for again with the same part left shown is not copied and re-rendered
        # again (value packing re-asks for each item after every keep)
        self._cut: dict[tuple[Any, ...], Evidence] = {}

    def add(self, ev: Evidence) -> None:
        """Record what ``ev`` shows."""
        self.facts.update(_fact(h, t) for h, _r, t in ev.triples)
        self.notes.update(normalize_name(n) for n in (ev.meta.get("descriptions") or {}))
        self.notes.update(normalize_name(k) for k in ev.meta.get("knowledge") or [] if k)

    def without_shown(self, ev: Evidence) -> Evidence | None:
        """``ev`` without the triples and notes already shown; ``None`` when nothing new is left.

        The kept triples keep their relation ids (feedback credits what was shown), and
        the item is re-rendered by template. Items without triples (documents) pass.
        """
        if not ev.triples:
            return ev
        n = len(ev.triples)
        keep = [i for i, (h, _r, t) in enumerate(ev.triples) if _fact(h, t) not in self.facts]
        if not keep:
            return None
        meta = dict(ev.meta)
        descriptions = meta.get("descriptions") or {}
        fresh = {name: d for name, d in descriptions.items() if normalize_name(name) not in self.notes}
        # one source per edge stays one per kept edge; a source shown before becomes "" (not rendered)
        knowledge = list(meta.get("knowledge") or [])
        fresh_knowledge = [
            k if not k or normalize_name(k) not in self.notes else ""
            for k in ([knowledge[i] for i in keep] if len(knowledge) == n else knowledge)
        ]
        if len(keep) == n and fresh == descriptions and fresh_knowledge == knowledge:
            return ev
        memo = (ev.kind, ev.text, tuple(ev.relation_ids), tuple(keep), tuple(fresh), tuple(fresh_knowledge))
        if memo in self._cut:
            return self._cut[memo]
        if descriptions:
            meta["descriptions"] = fresh
        if "knowledge" in meta:
            meta["knowledge"] = fresh_knowledge
        for key in ("probabilities",):  # other per-edge lists follow the kept edges
            values = meta.get(key)
            if isinstance(values, list) and len(values) == n:
                meta[key] = [values[i] for i in keep]
        if len(keep) < n:
            meta["facts_shown_before"] = n - len(keep)
        cut = ev.model_copy(
            update={
                "triples": [ev.triples[i] for i in keep],
                "relation_ids": (
                    [ev.relation_ids[i] for i in keep] if len(ev.relation_ids) == n else ev.relation_ids
                ),
                "entity_ids": _kept_entity_ids(ev, keep),
                "meta": meta,
            }
        )
        self._cut[memo] = cut.model_copy(update={"text": render_evidence(cut)})
        return self._cut[memo]


def _kept_entity_ids(ev: Evidence, keep: Sequence[int]) -> list[str]:
    """The entity ids of ``ev`` that its kept triples still show.

    Neighbor lines list ``[head, *tails]`` (one head) or ``[*heads, tail]`` (one tail, the
    symptoms voting for a disease): the shared end and the kept others stay, so a line can
    still be cut at the budget edge. Paths and chains list their nodes in order, edge ``i``
    joining nodes ``i`` and ``i + 1``: both ends of each kept edge stay. Any other shape
    keeps its ids.
    """
    ids, n = list(ev.entity_ids), len(ev.triples)
    if len(ids) != n + 1:
        return ids
    if ev.kind == "neighbor":
        if len({h for h, _r, _t in ev.triples}) == 1:
            return [ids[0], *(ids[i + 1] for i in keep)]
        if len({t for _h, _r, t in ev.triples}) == 1:
            return [*(ids[i] for i in keep), ids[-1]]
        return ids
    return list(dict.fromkeys(e for i in keep for e in (ids[i], ids[i + 1])))


def _longest_fitting_line(ev: Evidence, room: int, cost: Callable[[Evidence], int]) -> Evidence | None:
    """``ev`` cut to the most tails whose cost fits ``room`` (neighbor lines only), else None."""
    if not _cuttable(ev):
        return None
    lo, hi, best = 1, len(ev.triples) - 1, None
    while lo <= hi:  # longest prefix that fits
        mid = (lo + hi) // 2
        cand = _cut_line(ev, mid)
        if cost(cand) <= room:
            best, lo = cand, mid + 1
        else:
            hi = mid - 1
    return best


def _cut_to_words(ev: Evidence, text: str, room: int, tokenizer: Tokenizer | None) -> Evidence | None:
    """A copy of ``ev`` whose text is the longest whole-word prefix of ``text`` within ``room`` tokens."""
    zh = _is_zh(text)
    units = [c for c in text if not c.isspace()] if zh else text.split()
    sep = "" if zh else " "
    lo, hi = 0, len(units)
    while lo < hi:  # the longest prefix within the room
        mid = (lo + hi + 1) // 2
        if count_tokens(sep.join(units[:mid]), tokenizer) <= room:
            lo = mid
        else:
            hi = mid - 1
    if lo == 0:
        return None
    return ev.model_copy(update={"text": sep.join(units[:lo]), "meta": {**ev.meta, "truncated": True}})


def number_evidence(evidence: Sequence[Evidence]) -> list[Evidence]:
    """Copies with citation ids per kind in list order (``P1``, ``N1``, ``C1``, ``K1``, ``D1``)."""
    counters: dict[str, int] = {}
    out = []
    for ev in evidence:
        n = counters.get(ev.kind, 0) + 1
        counters[ev.kind] = n
        out.append(ev.model_copy(update={"id": f"{EVIDENCE_PREFIX[ev.kind]}{n}"}))
    return out


def rank_candidates(
    evidence: Sequence[Evidence],
    question: str,
    hypothesis: str = "",
    *,
    reranker: Reranker | EvidenceReranker | Literal["auto", "prior"] | None = None,
    prior_weight: float = 0.5,
) -> list[Evidence]:
    """Render, rerank, dedupe and prune: the candidates a budget is then spent on, best first.

    Args:
        evidence: Raw items from the exploration tools.
        question: The user question.
        hypothesis: The hypothesis output (HyKGE), may be empty.
        reranker: A reranker (e.g. :class:`EmbeddingReranker` for HyKGE's sentence
            reranking); ``None`` or ``"auto"`` (default): :func:`default_reranker`
            (an :class:`EntityVectorReranker` on the loaded entity index of the
            evidence's KG; prior only when none is loaded); ``"prior"``: no reranker.
        prior_weight: Weight of the normalised exploration score next to the rerank score.

    Returns:
        Rendered items in rank order, repeats and items inside earlier ones dropped.
    """
    rendered = [ev.model_copy(update={"text": render_evidence(ev)}) for ev in evidence]
    chosen: Reranker | EvidenceReranker | None
    if reranker is None or reranker == "auto":
        chosen = default_reranker(rendered)
    elif reranker == "prior":
        chosen = None
    elif isinstance(reranker, str):
        raise ValueError(f"unknown reranker {reranker!r}: pass a reranker, 'auto' or 'prior'")
    else:
        chosen = reranker
    ranked = rerank_evidence(rendered, question, hypothesis, reranker=chosen, prior_weight=prior_weight)
    return prune_redundant(dedupe_evidence(ranked))


def select_evidence(
    candidates: Sequence[Evidence],
    budget_tokens: int,
    *,
    tokenizer: Tokenizer | None = None,
    share_facts: bool = True,
    value: EvidenceValue | None = None,
    types: Mapping[str, str] | None = None,
) -> list[Evidence]:
    """Spend the budget on ``candidates``: by value per token, or in rank order while they fit.

    Args:
        candidates: Rendered items in rank order (:func:`rank_candidates`).
        budget_tokens: Token budget for the kept items.
        tokenizer: Optional exact tokenizer for the budget.
        share_facts: Pay for each fact once (see :func:`fit_budget`).
        value: Pack by expected value per token (:func:`~kgmind.retrievers.packing.pack_by_value`)
            instead of keeping items in rank order while they fit; needs ``types``, and
            falls back to rank order when they name no answer type (a non-medical KG).
        types: ``normalize_name(name) -> entity type`` of the evidence's entities.

    Returns:
        The kept items, not yet numbered.
    """
    if value is None or not types or not ANSWER_TYPES & set(types.values()):
        return fit_budget(candidates, budget_tokens, tokenizer=tokenizer, share_facts=share_facts)
    shown = ShownFacts()

    def cost(ev: Evidence) -> int:
        return count_tokens(ev.text, tokenizer) + ID_OVERHEAD

    return pack_by_value(
        candidates,
        budget_tokens,
        value,
        types,
        cost=cost,
        without_shown=shown.without_shown if share_facts else (lambda ev: ev),
        on_keep=shown.add,
        cut_to=lambda ev, room: _longest_fitting_line(ev, room, cost),
    )


def aggregate_evidence(
    evidence: Sequence[Evidence],
    question: str,
    hypothesis: str = "",
    *,
    reranker: Reranker | EvidenceReranker | Literal["auto", "prior"] | None = None,
    budget_tokens: int = PIPELINE.budget_tokens,
    max_items: int | None = None,
    prior_weight: float = 0.5,
    tokenizer: Tokenizer | None = None,
    share_facts: bool = True,
    value: EvidenceValue | None = None,
    types: Mapping[str, str] | None = None,
) -> list[Evidence]:
    """Render, rerank, dedupe, prune, spend the budget and number (see the module docstring).

    Args:
        evidence: Raw items from the exploration tools.
        question: The user question.
        hypothesis: The hypothesis output (HyKGE), may be empty.
        reranker: See :func:`rank_candidates`.
        budget_tokens: Token budget for the kept items.
        max_items: Cap on the number of items (before the budget).
        prior_weight: Weight of the normalised exploration score next to the rerank score.
        tokenizer: Optional exact tokenizer for the budget.
        share_facts: Pay for each fact once (see :func:`fit_budget`).
        value: Pack by expected value per token (see :func:`select_evidence`).
        types: ``normalize_name(name) -> entity type`` of the evidence's entities.

    Returns:
        The final evidence: rendered ``text``, numbered ``id``; rank order, or best value
        per token first when packed by value.
    """
    kept = rank_candidates(evidence, question, hypothesis, reranker=reranker, prior_weight=prior_weight)
    if max_items is not None:
        kept = kept[:max_items]
    chosen = select_evidence(
        kept, budget_tokens, tokenizer=tokenizer, share_facts=share_facts, value=value, types=types
    )
    return number_evidence(chosen)
