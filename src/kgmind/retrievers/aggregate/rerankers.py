"""Rerankers: how relevant each evidence item is to the question and the hypothesis chunks.

Two ship. :class:`EntityVectorReranker` (the default, :func:`default_reranker`) embeds only
the hypothesis chunks — by default not the question, which scored worse (see the class) —
and compares them with the name vectors the entity index already holds for each item's
entities: a handful of embeddings per question instead of one per evidence sentence.
:class:`EmbeddingReranker` embeds every evidence sentence and scores against the question
and the chunks (HyKGE-faithful, ~100× slower on CPU). Any :class:`Reranker` (a
cross-encoder) or :class:`EvidenceReranker` plugs in.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np
from cachetools import LRUCache

from kgmind import tuning
from kgmind.models import Evidence
from kgmind.retrievers.embeddings.vector_cache import VectorCache

if TYPE_CHECKING:
    from kgmind.retrievers.entity_index import EntityIndex

__all__ = [
    "EmbeddingReranker",
    "EntityVectorReranker",
    "EvidenceReranker",
    "QuestionMode",
    "Reranker",
    "default_reranker",
]

#: What :class:`EntityVectorReranker` does with the question.
QuestionMode = Literal["ignore", "embed", "anchors"]


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


#: One default reranker (and query cache) per loaded entity index and question mode. Keyed by the
#: index object's id, checked against the reranker's own index (a reused id is a new index).
_default_rerankers: LRUCache[tuple[int, str], EntityVectorReranker] = LRUCache(maxsize=8)
_default_lock = threading.Lock()


def default_reranker(
    evidence: Sequence[Evidence], *, question: QuestionMode | None = None
) -> EntityVectorReranker | None:
    """The :class:`EntityVectorReranker` for ``evidence``, or ``None`` when no index fits.

    Uses the entity index already loaded in this process that knows most of the
    evidence's entities (:func:`~kgmind.retrievers.entity_index_cache.find_cached_index`);
    nothing is loaded or built here. One reranker (and query cache) per index and mode.

    Args:
        evidence: The items to rerank (their entity ids choose the index).
        question: What the reranker does with the question; ``None``: the fitted
            :data:`kgmind.tuning.RERANK_QUESTION_MODE`.
    """
    from kgmind.retrievers.entity_index_cache import find_cached_index

    mode = question or tuning.RERANK_QUESTION_MODE
    index = find_cached_index(e for ev in evidence for e in ev.entity_ids)
    if index is None:
        return None
    with _default_lock:
        rr = _default_rerankers.get((id(index), mode))
        if rr is None or rr.index is not index:
            rr = EntityVectorReranker(index, question=mode)
            _default_rerankers[(id(index), mode)] = rr
        return rr
